/* SPDX-License-Identifier: MIT */
/* The positions-file line parser (eval/positions.h): split a line into at most three blank-
 * separated fields and check each one strictly, so that a malformed file is reported with the
 * field and the problem instead of being half-read. */
#include "eval/positions.h"
#include "base/az_err.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIELDS_MAX 3
#define SHOW_MAX 24 /* bytes of an offending field quoted in a message */

/* A field as it may be quoted in a one-line message: non-printable bytes become '?', long
 * fields are cut with "...". */
static void show(char *buf, size_t len, const char *field)
{
	size_t n = 0;

	for (; field[n] && n < SHOW_MAX && n + 4 < len; n++)
		buf[n] = isprint((unsigned char)field[n]) ? field[n] : '?';
	buf[n] = '\0';
	if (field[n] && n + 4 <= len)
		memcpy(buf + n, "...", 4);
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Split `text` in place into fields; returns their count, or FIELDS_MAX + 1 when there are
 * more. */
static int split(char *text, char *field[FIELDS_MAX])
{
	int n = 0;
	char *p = text;

	for (;;) {
		while (is_blank(*p))
			*p++ = '\0';
		if (!*p)
			return n;
		if (n == FIELDS_MAX)
			return FIELDS_MAX + 1;
		field[n++] = p;
		while (*p && !is_blank(*p))
			p++;
	}
}

/* A finite decimal number: digits, sign, point and exponent only (no "inf", "nan", hex). */
static int parse_score(const char *s, double *out, char *err, size_t errlen)
{
	char shown[SHOW_MAX + 4];
	char *end = NULL;
	double v;

	show(shown, sizeof(shown), s);
	if (strspn(s, "0123456789+-.eE") != strlen(s)) {
		az_set_err(err, errlen, "score '%s': not a decimal number", shown);
		return -EINVAL;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end) {
		az_set_err(err, errlen, "score '%s': not a decimal number", shown);
		return -EINVAL;
	}
	if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0)) {
		az_set_err(err, errlen, "score '%s': out of range", shown);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Comma-separated moves, each in the game's notation and legal in p->state. */
static int parse_best(const struct az_game *g, char *list, struct az_position *p, char *err,
		      size_t errlen)
{
	char shown[SHOW_MAX + 4];
	char *item = list;
	int k = 1;

	memset(p->best, 0, sizeof(p->best));
	p->n_best = 0;
	for (;;) {
		char *comma = strchr(item, ',');
		int a;

		if (comma)
			*comma = '\0';
		show(shown, sizeof(shown), item);
		if (!*item) {
			az_set_err(err, errlen,
				   "best: move %d is empty (expected moves separated by "
				   "single commas)",
				   k);
			return -EINVAL;
		}
		a = g->parse_action(p->state, item);
		if (a < 0 || (uint32_t)a >= g->actions || a >= AZ_GAME_ACTIONS_MAX) {
			int known = g->parse_action(NULL, item) >= 0;
			az_set_err(err, errlen, "best: move %d ('%s'): %s", k, shown,
				   known ? "illegal in this position" : "not a move of this game");
			return -EINVAL;
		}
		if (!p->best[a]) {
			p->best[a] = 1;
			p->n_best++;
		}
		if (!comma)
			return 0;
		item = comma + 1;
		k++;
	}
}

int az_positions_parse_line(const struct az_game *g, const char *line, struct az_position *out,
			    char *err, size_t errlen)
{
	char text[AZ_POSITIONS_LINE_MAX + 1], msg[160];
	char *field[FIELDS_MAX];
	struct az_position p;
	size_t len;
	int n, rc;

	if (err && errlen)
		err[0] = '\0';
	if (!g || !line || !out) {
		az_set_err(err, errlen, "no game, line or output");
		return -EINVAL;
	}
	len = strlen(line);
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len > AZ_POSITIONS_LINE_MAX) {
		az_set_err(err, errlen, "line longer than %d bytes", AZ_POSITIONS_LINE_MAX);
		return -EINVAL;
	}
	memcpy(text, line, len);
	text[len] = '\0';
	n = split(text, field);
	if (n == 0 || field[0][0] == '#')
		return 0; /* empty, or a comment (as aztangled's files allow) */
	if (n > FIELDS_MAX) {
		az_set_err(err, errlen, "more than 3 fields (expected <moves> [<score> [<best>]])");
		return -EINVAL;
	}
	memset(&p, 0, sizeof(p));
	rc = az_game_play_moves(g, p.state, field[0], msg, sizeof(msg));
	if (rc < 0) {
		az_set_err(err, errlen, "moves: %s", msg);
		return -EINVAL;
	}
	p.plies = rc;
	if (g->terminal(p.state, NULL)) {
		az_set_err(err, errlen, "moves: the game is already over after move %d", rc);
		return -EINVAL;
	}
	if (n >= 2 && strcmp(field[1], "?") != 0) { /* "?": score unknown, best may follow */
		if (parse_score(field[1], &p.score, err, errlen) < 0)
			return -EINVAL;
		p.has_score = 1;
	}
	if (n >= 3) {
		if (parse_best(g, field[2], &p, err, errlen) < 0)
			return -EINVAL;
		p.has_best = 1;
	}
	*out = p;
	return 1;
}

/* path opened for reading when it is a regular file (a FIFO is not waited on, a device such as
 * /dev/zero not read), else NULL. */
static FILE *open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	FILE *f = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* Whether line is a board line; then the board in s[0..*n), blanks at its end removed. */
static int board_line(const char *line, const char **s, size_t *n)
{
	const size_t k = strlen(AZ_POSITIONS_BOARD);
	const char *b = line + strspn(line, " \t");
	size_t m;

	if (strncmp(b, AZ_POSITIONS_BOARD, k) != 0)
		return 0;
	b += k;
	m = strcspn(b, "\r\n");
	while (m > 0 && (b[m - 1] == ' ' || b[m - 1] == '\t'))
		m--;
	*s = b;
	*n = m;
	return 1;
}

int az_positions_check_board(const char *path, const char *board, char *err, size_t errlen)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	FILE *f = open_regular(path);
	long lineno = 0;
	int rc = 0, whole = 1;

	while (rc == 0 && f && fgets(line, sizeof(line), f)) {
		const char *s;
		size_t n = strlen(line);

		lineno += whole; /* a line longer than the buffer comes in pieces */
		whole = n > 0 && line[n - 1] == '\n';
		if (!board_line(line, &s, &n))
			continue;
		if (n == strlen(board) && strncmp(s, board, n) == 0)
			continue;
		if (n == 0)
			az_set_err(err, errlen,
				   "%s:%ld: its board line names no board (expected "
				   "\"%s%s\"): name it, or delete the line",
				   path, lineno, AZ_POSITIONS_BOARD, board);
		else
			az_set_err(
				err, errlen,
				"%s:%ld: its positions are of %.*s (its board line), "
				"and this evaluation plays %s: give a positions file written for "
				"this board, or evaluate that board (its checkpoint, or its game "
				"options)",
				path, lineno, (int)(n > 200 ? 200 : n), s, board);
		rc = -EINVAL;
	}
	if (f)
		fclose(f);
	return rc;
}

int az_positions_board(const char *path, char *buf, size_t n)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	FILE *f = open_regular(path);
	int found = 0, lines = 0;

	while (!found && f && lines++ < 64 && fgets(line, sizeof(line), f)) {
		const char *s = line + strspn(line, " \t\r\n");
		size_t m;

		if (*s && *s != '#')
			break; /* a position: a board line below it is not this file's header */
		if ((found = board_line(line, &s, &m)) != 0)
			snprintf(buf, n, "%.*s", (int)m, s);
	}
	if (f)
		fclose(f);
	return found;
}
