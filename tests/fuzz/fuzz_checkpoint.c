/* SPDX-License-Identifier: MIT */
/* Fuzz target: the safetensors checkpoint reader (az_ckpt_load_mem). An input is a whole file.
 * Accepted: the model must be consistent with its arch. Rejected: -EINVAL or -ENOMEM with one
 * printable line that names the source. */
#include <errno.h>
#include <string.h>

#include "net/checkpoint.h"
#include "net/model.h"
#include "tests/fuzz/fuzz.h"

#define NAME "fuzz.safetensors"

int az_fuzz_verdict;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct az_model *m = NULL;
	char err[512];
	int rc;

	memset(err, 'x', sizeof(err)); /* whatever the reader leaves must be NUL-terminated */
	err[sizeof(err) - 1] = '\0';
	rc = az_ckpt_load_mem(data, size, NAME, &m, err, sizeof(err));
	if (rc == 0) {
		AZ_ASSERT(m && m->params);
		AZ_ASSERT(m->n_params == az_model_param_count(&m->arch));
		AZ_ASSERT(memchr(m->game, '\0', sizeof(m->game)) != NULL);
		AZ_ASSERT(err[0] == '\0');
		az_model_destroy(m);
		az_fuzz_verdict = 1;
		return 0;
	}
	AZ_ASSERT(rc == -EINVAL || rc == -ENOMEM);
	AZ_ASSERT(m == NULL);
	if (!az_fuzz_one_line(err) || strncmp(err, "checkpoint " NAME ": ", 29) != 0) {
		fprintf(stderr, "bad error message: \"%.200s\"\n", err);
		AZ_ASSERT(!"one printable line naming the checkpoint");
	}
	az_fuzz_verdict = 0;
	return 0;
}
