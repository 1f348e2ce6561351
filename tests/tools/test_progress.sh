#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of azrun's terminal output: time-stamped log lines, an ETA after each
# iteration, progress bars that name the iteration (the train phase too) on a terminal, and the
# final line of a resumed run counting this azrun's iterations and the run's.
# Usage: test_progress.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
tiny=(--game tictactoe --workers 2 --games-per-worker 4 --games-per-iter 8 --sims 8
	--arena-games 2 --seed 3)

"$AZRUN" "${tiny[@]}" --out "$T/r" --iterations 2 2> "$T/log1"
ts='^[0-2][0-9]:[0-5][0-9]:[0-5][0-9] '
grep -Eq "${ts}iter 1 selfplay: " "$T/log1" || fail "no time stamp: $(head -3 "$T/log1")"
grep -Eq "${ts}iter 1/2 done in [0-9.hms]+; eta [0-9.hms]+ for the 1 iteration left$" "$T/log1" \
	|| fail "no ETA after iteration 1: $(cat "$T/log1")"
grep -Eq "${ts}azrun: done, 2 iterations in [0-9.hms]+; best network" "$T/log1" \
	|| fail "final line: $(tail -1 "$T/log1")"
# The log file has the date too.
grep -Eq '^20[0-9]{2}-[01][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9] iter 2 arena: ' \
	"$T/r/azrun.log" || fail "azrun.log lacks dated lines: $(head -3 "$T/r/azrun.log")"
# Not a terminal: no bar, no carriage return.
! grep -q $'\r' "$T/log1" || fail "a progress bar was drawn into a file"

# Resumed: the final line says which iterations this azrun ran and how many the run has.
"$AZRUN" "${tiny[@]}" --out "$T/r" --iterations 5 --resume 2> "$T/log2"
grep -Eq "${ts}azrun: done, 3 iterations \\(3-5\\) in [0-9.hms]+ after resuming, 5 in all; " \
	"$T/log2" || fail "resumed final line: $(tail -1 "$T/log2")"
grep -Eq "${ts}iter 3/5 done in [0-9.hms]+; eta [0-9.hms]+ for the 2 iterations left$" "$T/log2" \
	|| fail "resumed ETA: $(cat "$T/log2")"
# metrics.jsonl marks the first iteration after the resume (azrun report draws it).
[ "$(grep -c '"resumed": true' "$T/r/metrics.jsonl")" -eq 1 ] \
	|| fail "resume not marked once in metrics.jsonl"
grep '"iteration": 3,' "$T/r/metrics.jsonl" | grep -q '"resumed": true' \
	|| fail "iteration 3 is not marked as resumed"

# On a terminal (script(1) gives azrun a pty): bars with the iteration, the train phase's steps.
if command -v script > /dev/null; then
	script -qec "'$AZRUN' --game connect4 --workers 2 --games-per-worker 4 --games-per-iter 8 \
		--sims 16 --arena-games 2 --train-epochs 40 --out '$T/c' --iterations 1" \
		/dev/null > "$T/tty" < /dev/null
	tr '\r' '\n' < "$T/tty" > "$T/tty.lines"
	grep -Eq '^iter 1/1 selfplay \[[#-]+\] [0-9]+/8 games' "$T/tty.lines" \
		|| fail "no self-play bar with the iteration: $(head -c 600 "$T/tty.lines")"
	grep -Eq '^iter 1/1 train \[[#-]+\] [0-9]+/[0-9]+ steps' "$T/tty.lines" \
		|| fail "no train bar: $(head -c 600 "$T/tty.lines")"
	grep -Eq '^iter 1/1 arena \[[#-]+\] [0-9]+/2 games' "$T/tty.lines" \
		|| fail "no arena bar"
else
	echo "note: script(1) not installed; the terminal bars were not checked"
fi
echo "progress output: all checks passed"
