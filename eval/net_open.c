/* SPDX-License-Identifier: MIT */
/* A checkpoint opened for evaluation in one call (see eval/net_open.h). */
#include "eval/net_open.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "net/checkpoint.h"
#include "net/model.h"

/* Whether m is a network of g; if not, -EPROTO with the mismatch in err (path names m). */
static int check_game(const struct az_model *m, const struct az_game *g, const char *path,
		      char *err, size_t errlen)
{
	if (strcmp(m->game, g->name) != 0) {
		snprintf(err, errlen, "%s is a %s network, not %s", path, m->game, g->name);
		return -EPROTO;
	}
	if (m->arch.inputs != g->features || m->arch.actions != g->actions) {
		snprintf(err, errlen, "%s has %u inputs and %u actions, but %s needs %u and %u",
			 path, m->arch.inputs, m->arch.actions, g->name, g->features, g->actions);
		return -EPROTO;
	}
	return 0;
}

int az_net_open(const struct az_net_open_args *a, struct az_opened_net *out, char *err,
		size_t errlen)
{
	uint32_t batch = a->batch ? a->batch : 1;
	struct az_model *m;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!a->ckpt || !a->game) {
		snprintf(err, errlen, "open: no checkpoint or no game");
		return -EINVAL;
	}
	rc = az_ckpt_load(a->ckpt, &m, err, errlen);
	if (rc < 0)
		return rc;
	rc = check_game(m, a->game, a->ckpt, err, errlen);
	if (rc < 0)
		goto err_model;
	out->arch = m->arch;
	rc = az_backend_create(a->backend, &m->arch, batch, &out->be, out->backend,
			       sizeof(out->backend));
	if (rc < 0) {
		snprintf(err, errlen, "backend: %s", out->backend);
		goto err_model;
	}
	rc = az_backend_load(out->be, 0, m);
	if (rc < 0) {
		snprintf(err, errlen, "backend: %s: cannot load the network (%s)",
			 az_backend_name(out->be), strerror(-rc));
		goto err_backend;
	}
	rc = az_net_eval_init(&out->eval, a->game, out->be, batch);
	if (rc < 0) {
		snprintf(err, errlen, "backend: out of memory");
		goto err_backend;
	}
	az_model_destroy(m);
	return 0;

err_backend:
	az_backend_destroy(out->be);
err_model:
	az_model_destroy(m);
	memset(out, 0, sizeof(*out));
	return rc;
}

void az_net_close(struct az_opened_net *n)
{
	az_net_eval_fini(&n->eval);
	az_backend_destroy(n->be);
	n->be = NULL;
	n->eval.be = NULL;
}
