/* SPDX-License-Identifier: MIT */
/* run.json: the options a run was started with, written from and read back through azrun's
 * option table (tools/config.c: the options marked saved), sealed with its own crc32 so that a
 * flipped bit is refused rather than obeyed. */
#include "tools/config.h"
#include "tools/config_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "base/version.h"
#include "run/rundir.h"

int az_config_save(const struct az_config *c, const char *path, char *err, size_t errlen)
{
	size_t nopts;
	const struct opt *opts = az_config_opts(&nopts);
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return -ENOMEM;
	for (size_t i = 0; i < nopts; i++) {
		char v[600];
		if (!opts[i].saved)
			continue;
		az_config_show_value(c, &opts[i], v, sizeof(v));
		cJSON_AddStringToObject(root, opts[i].o.name, v);
	}
	/* The build that wrote it (not an option: az_config_load ignores it). */
	cJSON_AddStringToObject(root, "version", az_version());
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	size_t cap = text ? strlen(text) + AZ_RUNDIR_SEAL_LEN + 1 : 0;
	char *sealed = text ? malloc(cap) : NULL;
	if (!sealed) {
		cJSON_free(text);
		return -ENOMEM;
	}
	memcpy(sealed, text, strlen(text) + 1);
	cJSON_free(text);
	/* its own checksum (run/rundir.h), so that a flipped bit is refused, not obeyed */
	int rc = az_rundir_seal(sealed, cap);
	if (rc > 0)
		rc = az_write_file_atomic(path, sealed, (size_t)rc, err, errlen);
	free(sealed);
	return rc;
}

int az_config_load(struct az_config *c, const char *path, char *err, size_t errlen)
{
	size_t len = 0;
	char *text = NULL;
	int rc = az_read_file(path, &text, &len);
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot read (%s)%s", path, strerror(-rc),
			 rc == -ENOENT ? ": is this a run directory?" : "");
		return rc;
	}
	int sealed = az_rundir_seal_check(text, len);
	cJSON *root =
		sealed >= 0 && az_rundir_seal_json_ok(text, len, sealed) ? cJSON_Parse(text) : NULL;
	free(text);
	if (sealed < 0) {
		snprintf(err, errlen,
			 "%s is damaged (its crc32 does not match: a flipped bit or an "
			 "edit); restore it from a backup (it holds the run's options)",
			 path);
		return -EINVAL;
	}
	cJSON *g = root ? cJSON_GetObjectItem(root, "game") : NULL;
	if (!cJSON_IsString(g) || az_config_defaults(c, g->valuestring) < 0) {
		snprintf(err, errlen,
			 "%s: not a RingZero run configuration (bad JSON or game); "
			 "restore it from a backup (it holds the run's options)",
			 path);
		cJSON_Delete(root);
		return -EINVAL;
	}
	size_t nopts;
	const struct opt *opts = az_config_opts(&nopts);

	rc = 0;
	for (size_t i = 0; i < nopts && rc == 0; i++) {
		cJSON *it = cJSON_GetObjectItem(root, opts[i].o.name);
		if (!opts[i].saved || !cJSON_IsString(it))
			continue;
		char e[256];
		if (config_set_value(c, &opts[i], it->valuestring, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "%s: %s", path, e);
			rc = -EINVAL;
		}
	}
	cJSON_Delete(root);
	c->game_opt_given = 0; /* the run's own, checked when it started */
	return rc;
}
