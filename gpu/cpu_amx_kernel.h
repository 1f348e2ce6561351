/* SPDX-License-Identifier: MIT */
/* The AMX linear kernel's body (gpu/cpu_amx.c), included once per form of the tile instructions:
 * AMX_KERNEL_NAME, AMX_KERNEL_TARGET and TILE_* name them; undefined again at the end. */

/* az_amx_linear() (x, cp NULL) and az_amx_conv3() (cp, x NULL) of gpu/cpu_packed_impl.h: pm
 * packed for AMX (pm->amx: pm->np a multiple of 16 pairs, pm->in <= AZ_AMX_MAX_IN). */
AMX_KERNEL_TARGET static void AMX_KERNEL_NAME(const struct az_packed_mat *pm, uint32_t batch,
					      const float *x, const struct conv_pad *cp,
					      const float *b, const float *res, int relu, float *y)
{
	const size_t np = pm->np, kp = 2 * np, in = pm->in, out = pm->out;
	uint16_t xb[16 * AZ_AMX_MAX_IN] __attribute__((aligned(64)));
	float cb[16][32] __attribute__((aligned(64)));

	TILE_LOADCONFIG(&tile_cfg_used);
	for (size_t r0 = 0; r0 < batch; r0 += 16) {
		unsigned rows = batch - r0 < 16 ? (unsigned)(batch - r0) : 16u;

		if (cp)
			conv_rows_to_tile(cp, r0, rows, kp, xb);
		else
			rows_to_tile(x + r0 * in, in, rows, kp, xb);
		TILE_MEMORY_BARRIER();
		for (size_t p = 0; p < panels((uint32_t)out); p++) {
			const uint16_t *panel = pm->wb + p * np * 2 * AZ_PACKED_PANEL;

			TILE_ZERO(T_C0);
			TILE_ZERO(T_C1);
			for (size_t q = 0; q < np; q += AZ_AMX_PAIRS) {
				const uint16_t *wq = panel + q * 2 * AZ_PACKED_PANEL;

				TILE_LOAD(T_X, xb + 2 * q, kp * sizeof(uint16_t));
				TILE_LOAD(T_W0, wq, 2 * AZ_PACKED_PANEL * sizeof(uint16_t));
				TILE_LOAD(T_W1, wq + AZ_PACKED_PANEL,
					  2 * AZ_PACKED_PANEL * sizeof(uint16_t));
				TILE_DP(T_C0, T_X, T_W0);
				TILE_DP(T_C1, T_X, T_W1);
			}
			TILE_STORE(T_C0, &cb[0][0], sizeof(cb[0]));
			TILE_STORE(T_C1, &cb[0][16], sizeof(cb[0]));
			TILE_MEMORY_BARRIER();
			tile_epilogue((const float(*)[32])cb, rows, r0, p * AZ_PACKED_PANEL, out, b,
				      res, relu, y);
		}
	}
	TILE_RELEASE();
}

#undef AMX_KERNEL_NAME
#undef AMX_KERNEL_TARGET
#undef TILE_LOADCONFIG
#undef TILE_ZERO
#undef TILE_LOAD
#undef TILE_DP
#undef TILE_STORE
#undef TILE_RELEASE
