/* SPDX-License-Identifier: MIT */
/* Backend dispatch (auto/cpu/cuda selection, argument checks, model bookkeeping), the slot path
 * for backends without their own forward_slots (staging fallback), and the cpu backend's ops
 * table, which wraps the reference forward pass of gpu/cpu_forward.c.
 * A backend handle is used by one thread at a time (the server thread that owns it). */
#include "gpu/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "base/az_err.h"
#include "base/nvtx.h"
#include "gpu/backend_impl.h"
#include "gpu/cpu_forward.h"
#include "gpu/cpu_packed.h"
#include "gpu/cuda_kernels.h"
#include "shm/slot.h"

struct az_backend {
	const struct az_backend_ops *ops;
	void *ctx;
	struct az_arch arch;
	uint32_t max_batch;
	uint8_t loaded[AZ_BACKEND_MODELS];
	void *host_base; /* registered for the slot path, or NULL */
	size_t host_size;
	int zero_copy; /* host_base is registered with the backend's own register_host */
	/* staging fallback of the slot path: allocated at create (no allocation on the
	 * steady-state path) */
	struct az_stage_bufs stage;
};

/* The scatter kernel writes these header fields at fixed offsets (gpu/cuda_gather.cu). */
_Static_assert(offsetof(struct az_slot_hdr, status) == 12, "slot header: status offset");
_Static_assert(offsetof(struct az_slot_hdr, value) == 16, "slot header: value offset");
_Static_assert(offsetof(struct az_slot_hdr, draw) == 24, "slot header: draw offset");

void az_cuda_slot_geom_init(struct az_cuda_slot_geom *g, uint32_t features, uint32_t actions)
{
	struct az_slot_layout l;

	az_slot_layout_init(&l, features, actions);
	g->features = l.features;
	g->actions = l.actions;
	g->off_features = l.off_features;
	g->off_legal = l.off_legal;
	g->off_policy = l.off_policy;
	g->off_status = (uint32_t)offsetof(struct az_slot_hdr, status);
	g->off_value = (uint32_t)offsetof(struct az_slot_hdr, value);
	g->off_draw = (uint32_t)offsetof(struct az_slot_hdr, draw);
	g->bytes = l.bytes;
}

/* ---- cpu backend: one model copy per slot (and its packed weights) and one activation
 * buffer ---- */

struct cpu_ctx {
	struct az_model *models[AZ_BACKEND_MODELS];
	/* AZ_CPU_GEMM_AVX512 / _BF16: each slot's weights packed at load (gpu/cpu_packed.h) */
	struct az_packed packed[AZ_BACKEND_MODELS];
	enum az_cpu_gemm gemm;
	struct az_acts acts;
};

static void cpu_destroy(void *ctx)
{
	struct cpu_ctx *c = ctx;

	if (!c)
		return;
	az_acts_destroy(&c->acts);
	for (int i = 0; i < AZ_BACKEND_MODELS; i++) {
		az_packed_destroy(&c->packed[i]);
		az_model_destroy(c->models[i]);
	}
	free(c);
}

static int cpu_create(const struct az_arch *a, uint32_t max_batch, void **ctx)
{
	struct cpu_ctx *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = az_cpu_gemm_select(&c->gemm); /* -EINVAL / -ENOTSUP: a bad AZ_CPU_GEMM */
	if (ret)
		goto err_destroy;
	for (int i = 0; i < AZ_BACKEND_MODELS; i++) {
		ret = az_model_create(a, &c->models[i]);
		if (ret)
			goto err_destroy;
		if (az_cpu_gemm_packed(c->gemm)) {
			ret = az_packed_create(c->models[i], c->gemm, &c->packed[i]);
			if (ret)
				goto err_destroy;
		}
	}
	ret = az_acts_create(a, max_batch, &c->acts);
	if (ret)
		goto err_destroy;
	*ctx = c;
	return 0;

err_destroy:
	cpu_destroy(c); /* frees whatever part was built: every field starts NULL */
	return ret;
}

static int cpu_load(void *ctx, uint32_t model, const struct az_model *m)
{
	struct cpu_ctx *c = ctx;
	struct az_model *dst = c->models[model];

	memcpy(dst->params, m->params, dst->n_params * sizeof(float));
	memcpy(dst->game, m->game, sizeof(dst->game));
	dst->iteration = m->iteration;
	if (az_cpu_gemm_packed(c->gemm))
		az_packed_update(dst, &c->packed[model]);
	return 0;
}

static int cpu_forward(void *ctx, uint32_t model, uint32_t batch, const float *x, float *logits,
		       float *value, float *draw)
{
	struct cpu_ctx *c = ctx;
	const struct az_model *m = c->models[model];

	az_model_forward_packed(m, az_cpu_gemm_packed(c->gemm) ? &c->packed[model] : NULL, batch,
				x, &c->acts);
	memcpy(logits, c->acts.logits, (size_t)batch * m->arch.actions * sizeof(float));
	memcpy(value, c->acts.value, (size_t)batch * sizeof(float));
	memcpy(draw, c->acts.draw, (size_t)batch * sizeof(float));
	return 0;
}

static void cpu_describe(void *ctx, char *buf, size_t len)
{
	const struct cpu_ctx *c = ctx;

	snprintf(buf, len, "%s",
		 c->gemm == AZ_CPU_GEMM_AMX	 ? "AMX tiles, bf16 weights"
		 : c->gemm == AZ_CPU_GEMM_BF16	 ? "AVX-512 packed-weight kernels, bf16 weights"
		 : c->gemm == AZ_CPU_GEMM_AVX512 ? "AVX-512 packed-weight kernels"
						 : "OpenBLAS sgemm");
}

static uint32_t cpu_preferred_batch(void *ctx)
{
	const struct cpu_ctx *c = ctx;

	return az_cpu_gemm_packed(c->gemm) ? AZ_CPU_PACKED_BATCH : 0;
}

const struct az_backend_ops az_backend_cpu_ops = {
	.name = "cpu",
	AZ_BACKEND_OPS(cpu),
	.describe = cpu_describe,
	.preferred_batch = cpu_preferred_batch,
};

/* ---- dispatch ---- */

int az_backend_parse(const char *text, enum az_backend_kind *kind)
{
	static const struct {
		const char *name;
		enum az_backend_kind kind;
	} names[] = {
		{ "auto", AZ_BACKEND_AUTO },
		{ "cpu", AZ_BACKEND_CPU },
		{ "cuda", AZ_BACKEND_CUDA },
		{ "cpu-async", AZ_BACKEND_CPU_ASYNC },
	};

	if (!text || !kind)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(text, names[i].name) == 0) {
			*kind = names[i].kind;
			return 0;
		}
	}
	return -EINVAL;
}

/* What an init's -EINVAL means: the environment chose no valid CUDA mode. */
static const char bad_env[] =
	"AZ_CUDA_MATH must be fp32, tf32 or bf16, AZ_CUDA_FEED gather or dma";

/* The ops table for a request, or NULL with why filled (CUDA asked for but not usable). */
static const struct az_backend_ops *pick(enum az_backend_kind kind, char *why, size_t whylen)
{
	const char *no_cuda = az_cuda_unavailable(); /* NULL: CUDA usable */

	switch (kind) {
	case AZ_BACKEND_CPU:
		az_set_err(why, whylen, "cpu: requested");
		return &az_backend_cpu_ops;
	case AZ_BACKEND_CPU_ASYNC:
		az_set_err(why, whylen, "cpu-async: requested");
		return &az_backend_cpu_async_ops;
	case AZ_BACKEND_AUTO:
		if (no_cuda) {
			az_set_err(why, whylen, "cpu: CUDA not usable here (%s)", no_cuda);
			return &az_backend_cpu_ops;
		}
		/* fall through */
	case AZ_BACKEND_CUDA:
		if (no_cuda) {
			az_set_err(why, whylen, "cuda requested but unavailable: %s", no_cuda);
			return NULL;
		}
#ifdef AZ_HAVE_CUDA
		az_set_err(why, whylen, "cuda: %s",
		    kind == AZ_BACKEND_AUTO ? "device visible" : "requested");
		return &az_backend_cuda_ops;
#endif
	}
	return NULL;
}

static void backend_free(struct az_backend *b)
{
	az_stage_bufs_destroy(&b->stage);
	free(b);
}

/* The handle and its staging buffers, without a backend context yet. */
static int backend_alloc(const struct az_arch *a, uint32_t max_batch, struct az_backend **out)
{
	struct az_backend *b;

	if (!a || max_batch == 0 || !a->inputs || !a->hidden || !a->actions)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->arch = *a;
	b->max_batch = max_batch;
	if (az_stage_bufs_create(a, max_batch, &b->stage)) {
		free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

int az_backend_create_ops(const struct az_backend_ops *ops, const struct az_arch *a,
			  uint32_t max_batch, struct az_backend **out)
{
	struct az_backend *b;
	int ret;

	if (!ops || !out)
		return -EINVAL;
	ret = backend_alloc(a, max_batch, &b);
	if (ret)
		return ret;
	b->ops = ops;
	ret = ops->create(a, max_batch, &b->ctx);
	if (ret) {
		backend_free(b);
		return ret;
	}
	*out = b;
	return 0;
}

int az_backend_create(enum az_backend_kind kind, const struct az_arch *a, uint32_t max_batch,
		      struct az_backend **out, char *why, size_t whylen)
{
	struct az_backend *b;
	int ret;

	az_set_err(why, whylen, "invalid arguments");
	if (!out || (unsigned)kind > AZ_BACKEND_CPU_ASYNC)
		return -EINVAL;
	ret = backend_alloc(a, max_batch, &b);
	if (ret)
		return ret;
	b->ops = pick(kind, why, whylen);
	if (!b->ops) {
		ret = -ENODEV;
		goto err_free;
	}
	ret = b->ops->create(a, max_batch, &b->ctx);
	if (ret && kind == AZ_BACKEND_AUTO && b->ops != &az_backend_cpu_ops) {
		/* A visible device that fails to initialise still leaves the reference backend. */
		az_set_err(why, whylen, "cpu: CUDA init failed (%s)",
		    ret == -ENOMEM   ? "out of memory"
		    : ret == -EINVAL ? bad_env
				     : "device error");
		b->ops = &az_backend_cpu_ops;
		ret = b->ops->create(a, max_batch, &b->ctx);
	}
	if (ret) {
		if (ret == -ENOMEM) {
			char net[48];

			az_arch_format(a, net, sizeof(net));
			az_set_err(why, whylen, "%s: out of memory for network %s (%.1f M parameters) "
				   "with batches of up to %u: a smaller network or batch needs less",
				   b->ops->name, net, az_model_param_count(a) / 1e6, max_batch);
		}
		else if ((ret == -EINVAL || ret == -ENOTSUP) && (b->ops == &az_backend_cpu_ops ||
								 b->ops == &az_backend_cpu_async_ops)) {
			char msg[160];

			az_cpu_gemm_error(ret, msg, sizeof(msg));
			az_set_err(why, whylen, "%s: %s", b->ops->name, msg);
		}
		else if (ret == -EINVAL && b->ops != &az_backend_cpu_ops)
			az_set_err(why, whylen, "%s: %s", b->ops->name, bad_env);
		else
			az_set_err(why, whylen, "%s: init failed (%d)", b->ops->name, ret);
		goto err_free;
	}
	if (b->ops->describe && why && whylen) {
		char desc[160];
		size_t used = strlen(why);

		b->ops->describe(b->ctx, desc, sizeof(desc));
		if (used < whylen)
			snprintf(why + used, whylen - used, " (%s)", desc);
	}
	*out = b;
	return 0;

err_free:
	backend_free(b);
	return ret;
}

int az_backend_load(struct az_backend *b, uint32_t model, const struct az_model *m)
{
	int ret;

	if (!b || !m || model >= AZ_BACKEND_MODELS || !az_arch_equal(&b->arch, &m->arch) ||
	    m->n_params != az_model_param_count(&b->arch))
		return -EINVAL;
	ret = b->ops->load(b->ctx, model, m);
	if (ret)
		return ret;
	b->loaded[model] = 1;
	return 0;
}

int az_backend_forward(struct az_backend *b, uint32_t model, uint32_t batch, const float *x,
		       float *logits, float *value, float *draw)
{
	if (!b || model >= AZ_BACKEND_MODELS || !b->loaded[model] || batch > b->max_batch)
		return -EINVAL;
	if (batch == 0)
		return 0;
	if (!x || !logits || !value)
		return -EINVAL;
	/* the ops always write draw[]: a caller that wants none lends the staging row */
	return b->ops->forward(b->ctx, model, batch, x, logits, value,
			       draw ? draw : b->stage.draw);
}

/* ---- slot path: the backend's own (zero copy) or the staging fallback ---- */

int az_backend_register_host(struct az_backend *b, void *base, size_t size)
{
	int ret = 0;

	if (!b || !base || size == 0 || b->host_base)
		return -EINVAL;
	if (b->ops->forward_slots && b->ops->register_host) {
		ret = b->ops->register_host(b->ctx, base, size);
		b->zero_copy = ret == 0;
	}
	/* Registered either way: after a device failure the staging fallback reads host memory. */
	b->host_base = base;
	b->host_size = size;
	return ret;
}

void az_backend_unregister_host(struct az_backend *b)
{
	if (!b || !b->host_base)
		return;
	if (b->zero_copy)
		b->ops->unregister_host(b->ctx);
	b->zero_copy = 0;
	b->host_base = NULL;
	b->host_size = 0;
}

uint32_t az_backend_slot_streams(const struct az_backend *b)
{
	if (!b || !b->host_base)
		return 0;
	return b->zero_copy ? b->ops->slot_streams : 1;
}

uint32_t az_backend_preferred_batch(const struct az_backend *b)
{
	uint32_t want = b->ops->preferred_batch ? b->ops->preferred_batch(b->ctx) : 0;

	return want && want < b->max_batch ? want : b->max_batch;
}

int az_backend_zero_copy(const struct az_backend *b)
{
	return b && b->zero_copy;
}

int az_stage_bufs_create(const struct az_arch *a, uint32_t max_batch, struct az_stage_bufs *s)
{
	enum az_cpu_gemm kind;

	s->x = malloc((size_t)max_batch * a->inputs * sizeof(float));
	s->logits = malloc((size_t)max_batch * a->actions * sizeof(float));
	s->value = malloc((size_t)max_batch * sizeof(float));
	s->draw = malloc((size_t)max_batch * sizeof(float));
	if (!s->x || !s->logits || !s->value || !s->draw) {
		az_stage_bufs_destroy(s);
		return -ENOMEM;
	}
	s->vec_softmax = az_cpu_gemm_select(&kind) == 0 && az_cpu_gemm_packed(kind) &&
			 a->actions <= AZ_PACKED_SOFTMAX_MAX;
	return 0;
}

void az_stage_bufs_destroy(struct az_stage_bufs *s)
{
	free(s->x);
	free(s->logits);
	free(s->value);
	free(s->draw);
	s->x = s->logits = s->value = s->draw = NULL;
}

int az_stage_forward_slots(const struct az_backend_ops *ops, void *ctx, uint8_t *base,
			   uint32_t model, uint32_t n, const uint64_t *slot_offsets,
			   const struct az_slot_layout *l, const struct az_stage_bufs *s)
{
	int ret;

	/* The NVTX ranges of the staging path (docs/profiling.md): gather, forward, publish. */
	AZ_NVTX_PUSH("gather");
	for (uint32_t i = 0; i < n; i++)
		memcpy(s->x + (size_t)i * l->features,
		       az_slot_features(base + slot_offsets[i], l), sizeof(float) * l->features);
	AZ_NVTX_POP();
	AZ_NVTX_PUSH("forward");
	ret = ops->forward(ctx, model, n, s->x, s->logits, s->value, s->draw);
	AZ_NVTX_POP();
	if (ret)
		return ret;
	AZ_NVTX_PUSH("publish");
	void (*softmax)(const float *, const uint8_t *, uint32_t, float *) =
		s->vec_softmax ? az_packed_softmax : az_masked_softmax;

	for (uint32_t i = 0; i < n; i++) {
		void *slot = base + slot_offsets[i];
		struct az_slot_hdr *h = az_slot_hdr(slot);

		softmax(s->logits + (size_t)i * l->actions, az_slot_legal(slot, l), l->actions,
			az_slot_policy(slot, l));
		h->value = s->value[i];
		h->draw = s->draw[i];
		h->status = 0;
	}
	AZ_NVTX_POP();
	return 0;
}

/* The staging fallback: one staged pass on the caller's thread. Complete on return (one
 * synchronous stream). */
static int staged_forward_slots(struct az_backend *b, uint32_t model, uint32_t n,
				const uint64_t *slot_offsets, const struct az_slot_layout *l)
{
	return az_stage_forward_slots(b->ops, b->ctx, b->host_base, model, n, slot_offsets, l,
				      &b->stage);
}

int az_backend_forward_slots(struct az_backend *b, uint32_t model, uint32_t n,
			     const uint64_t *slot_offsets, const struct az_slot_layout *l,
			     uint32_t stream)
{
	struct az_slot_layout want;

	if (!b || stream >= az_backend_slot_streams(b) || model >= AZ_BACKEND_MODELS ||
	    !b->loaded[model] || n == 0 || n > b->max_batch || !slot_offsets || !l)
		return -EINVAL;
	az_slot_layout_init(&want, b->arch.inputs, b->arch.actions);
	if (memcmp(&want, l, sizeof(want)) != 0 || want.bytes > b->host_size)
		return -EINVAL;
	/* The device dereferences these: each slot must lie inside the registered segment. */
	for (uint32_t i = 0; i < n; i++)
		if (slot_offsets[i] > b->host_size - want.bytes)
			return -EINVAL;
	if (!b->zero_copy)
		return staged_forward_slots(b, model, n, slot_offsets, l);
	return b->ops->forward_slots(b->ctx, model, n, slot_offsets, l, stream);
}

int az_backend_wait_slots(struct az_backend *b, uint32_t stream, int block)
{
	if (!b || stream >= az_backend_slot_streams(b))
		return -EINVAL;
	if (!b->zero_copy)
		return 1; /* the staging fallback completes every batch before returning */
	return b->ops->wait_slots(b->ctx, stream, block);
}

const char *az_backend_name(const struct az_backend *b)
{
	return b ? b->ops->name : "none";
}

void az_backend_destroy(struct az_backend *b)
{
	if (!b)
		return;
	az_backend_unregister_host(b);
	b->ops->destroy(b->ctx);
	backend_free(b);
}
