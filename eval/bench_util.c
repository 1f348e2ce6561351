/* SPDX-License-Identifier: MIT */
/* What the benchmarks of eval/ share (eval/eval_impl.h). */
#include <errno.h>
#include <stdlib.h>

#include "eval/eval_impl.h"
#include "eval/net_open.h"

int az_eval_read_best(const struct az_game *g, FILE *f, const char *path, long limit,
		      struct az_position **out, long *n, char *err, size_t errlen)
{
	char line[AZ_POSITIONS_LINE_MAX + 2], e[300];
	long cap = 0, lineno = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	while (rc == 0 && (limit == 0 || *n < limit) && fgets(line, sizeof(line), f)) {
		struct az_position p;
		int k = az_positions_parse_line(g, line, &p, e, sizeof(e));
		lineno++;
		if (k == 1 && !p.has_best)
			snprintf(e, sizeof(e), "no best moves");
		if (k < 0 || (k == 1 && !p.has_best)) {
			snprintf(err, errlen, "%s:%ld: %s", path, lineno, e);
			rc = -EINVAL;
		} else if (k == 1) {
			if (*n == cap) {
				long c = cap ? 2 * cap : 64;
				struct az_position *np = realloc(*out, (size_t)c * sizeof(*np));
				if (!np) {
					rc = -ENOMEM;
					snprintf(err, errlen, "%s: out of memory", path);
					break;
				}
				*out = np;
				cap = c;
			}
			(*out)[(*n)++] = p;
		}
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

long az_eval_count_best(const struct az_game *g, const struct az_position *pos, long n,
			az_eval_fn fn, void *ctx, struct az_tree *t, uint32_t sims)
{
	long ok = 0;
	for (long i = 0; i < n; i++) {
		int a = az_eval_move(g, fn, ctx, t, sims, pos[i].state);
		if (a < 0)
			return a;
		ok += pos[i].best[a] != 0;
	}
	return ok;
}

int az_eval_open_cpu(const struct az_game *g, const char *ckpt, struct az_opened_net *net,
		     char *err, size_t errlen)
{
	struct az_net_open_args a = {
		.ckpt = ckpt, .game = g, .backend = AZ_BACKEND_CPU, .batch = 1};

	return az_net_open(&a, net, err, errlen);
}
