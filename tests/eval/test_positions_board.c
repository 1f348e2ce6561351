/* SPDX-License-Identifier: MIT */
/* The board line of a positions file (eval/positions.h, az_positions_check_board): a file that
 * names another board anywhere is refused with both boards named, one that names this board (in
 * every board line) or names none passes; the line is a comment to the parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "eval/positions.h"
#include "games/game.h"
#include "tests/test_util.h"

AZ_TEST_TMPDIR_FIXTURE("/tmp/az-board-XXXXXX", "set.txt")

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static int check(const char *text, const char *board, char *err, size_t n)
{
	write_file(text);
	err[0] = '\0';
	return az_positions_check_board(path, board, err, n);
}

static void test_board_line(void **state)
{
	const char *ttt = "tictactoe";
	char err[600];

	(void)state;
	/* this board, no board line, an empty file */
	assert_int_equal(check("# board: tictactoe\n4 0 0\n", ttt, err, sizeof(err)), 0);
	assert_int_equal(check("4 0 0\n", ttt, err, sizeof(err)), 0);
	assert_int_equal(check("", ttt, err, sizeof(err)), 0);
	/* after other comments and blank lines, with a CRLF line end */
	assert_int_equal(
		check("# made by hand\n\n  # board: tictactoe\r\n4 0\n", ttt, err, sizeof(err)), 0);
	/* another board: refused, the line number and both boards named */
	assert_int_equal(check("# note\n# board: tangled graph=3;variant=free\n4 0\n", ttt, err,
			       sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2: its positions are of tangled graph=3;variant=free "));
	assert_non_null(strstr(err, "this evaluation plays tictactoe:"));
	/* a prefix of the board, or the board with more after it, is another board */
	assert_int_equal(check("# board: tictac\n", ttt, err, sizeof(err)), -EINVAL);
	assert_int_equal(check("# board: tictactoe;x=1\n", ttt, err, sizeof(err)), -EINVAL);
	/* every board line counts, wherever it is (files joined with cat), blanks at its end aside */
	assert_int_equal(check("4 0\n# board: tictactoe \t\n5 0\n# board: tictactoe\n", ttt, err,
			       sizeof(err)),
			 0);
	assert_int_equal(
		check("# board: tictactoe\n4 0\n# board: connect4\n5 0\n", ttt, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, ":3: its positions are of connect4 "));
	/* an empty board line names no board */
	assert_int_equal(check("# board: \n4 0\n", ttt, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":1: its board line names no board"));
	/* a file that cannot be opened passes: its reader reports that */
	unlink(path);
	assert_int_equal(az_positions_check_board(path, ttt, err, sizeof(err)), 0);
}

/* The board a file names, for evaluations without a checkpoint: the first board line's, blanks
 * at its end removed; none without one. */
static void test_board_read(void **state)
{
	char board[64], err[300];

	(void)state;
	(void)check("# x\n# board: tangled graph=3;variant=free  \r\n4 0\n# board: other\n",
		    "tangled graph=3;variant=free", err, sizeof(err));
	assert_int_equal(az_positions_board(path, board, sizeof(board)), 1);
	assert_string_equal(board, "tangled graph=3;variant=free");
	write_file("4 0\n");
	assert_int_equal(az_positions_board(path, board, sizeof(board)), 0);
	/* a board line below a position is not the file's header */
	write_file("4 0\n# board: tictactoe\n5 0\n");
	assert_int_equal(az_positions_board(path, board, sizeof(board)), 0);
	unlink(path);
	assert_int_equal(az_positions_board(path, board, sizeof(board)), 0);
}

/* The parser reads the board line as a comment, so files with it stay readable everywhere. */
static void test_board_line_is_a_comment(void **state)
{
	struct az_position p;
	char err[300];

	(void)state;
	assert_int_equal(az_positions_parse_line(&az_game_tictactoe, "# board: tictactoe\n", &p,
						 err, sizeof(err)),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AZ_TEST_IN_TMPDIR(test_board_line),
		AZ_TEST_IN_TMPDIR(test_board_read),
		cmocka_unit_test(test_board_line_is_a_comment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
