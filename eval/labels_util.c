/* SPDX-License-Identifier: MIT */
/* What the labels caches of eval/ share (eval/eval_impl.h): reading a source of positions and
 * writing cache lines. */
#include <errno.h>
#include <string.h>

#include "eval/eval_impl.h"

void az_eval_first_field(const char *line, char *out, size_t n)
{
	size_t k = 0;

	while (*line == ' ' || *line == '\t')
		line++;
	while (line[k] && line[k] != ' ' && line[k] != '\t' && line[k] != '\n' && line[k] != '\r')
		k++;
	snprintf(out, n, "%.*s", (int)(k < n ? k : n - 1), line);
}

int az_eval_read_source(const struct az_game *g, const char *src, long limit,
			int (*add)(void *arg, const char *moves, const struct az_position *pos,
				   long line),
			void *arg, char *err, size_t errlen)
{
	struct az_position pos;
	char line[AZ_POSITIONS_LINE_MAX + 2], moves[sizeof(line)], perr[256];
	long n = 0, lineno = 0;
	int rc = 0;
	FILE *f = fopen(src, "r");

	if (!f) {
		rc = errno == ENOENT ? -ENOENT : -EIO;
		snprintf(err, errlen, "cannot open %s: %s", src, strerror(errno));
		return rc;
	}
	while (rc == 0 && (limit == 0 || n < limit) && fgets(line, sizeof(line), f)) {
		int k = az_positions_parse_line(g, line, &pos, perr, sizeof(perr));

		lineno++;
		if (k < 0) {
			snprintf(err, errlen, "%s:%ld: %s", src, lineno, perr);
			rc = -EINVAL;
		} else if (k > 0) {
			az_eval_first_field(line, moves, sizeof(moves));
			if ((rc = add(arg, moves, &pos, lineno)) == 0)
				n++;
		}
	}
	fclose(f);
	return rc;
}

int az_eval_write_label(FILE *f, const char *moves, int outcome, const char *keeps)
{
	int k = outcome == AZ_EVAL_LABEL_UNKNOWN ? fprintf(f, "%s ? %s\n", moves, keeps) :
						   fprintf(f, "%s %d %s\n", moves, outcome, keeps);
	return k < 0 ? -EIO : 0;
}
