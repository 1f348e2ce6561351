#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of the user tools: azplay (scripted through stdin), azrun status and
# azrun report on a tiny finished tic-tac-toe run, and status on a run "in progress".
# Usage: test_usertools.sh AZRUN AZPLAY
set -euo pipefail
AZRUN=$1 AZPLAY=$2
. "$(dirname "$0")/lib.sh"
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 12 --sims 12 --arena-games 4 --quiet)

"$AZRUN" --game tictactoe --out "$T/ttt" --iterations 2 --seed 7 "${tiny[@]}" 2> "$T/log"
C=$T/ttt/best.safetensors
[ -s "$C" ] || fail "the tiny run left no best.safetensors"

# Human (X) against the agent, moves from stdin. Trying every cell in order ends any game: an
# occupied cell is refused and the next line is read.
printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n' | "$AZPLAY" --checkpoint "$C" --sims 16 > "$T/p1" 2>&1 \
	|| fail "azplay exited non-zero: $(tail -3 "$T/p1")"
grep -Eq '^result: (X wins|O wins|draw)' "$T/p1" || fail "no result line: $(tail -3 "$T/p1")"
grep -q '^human (X) plays 1$' "$T/p1" || fail "the human's first move was not played"
grep -q '^agent (O): value [-+][0-9.]*, top moves: [1-9] [0-9]*%' "$T/p1" \
	|| fail "the agent's top moves and value are not shown"
grep -q '^X \. \.    1 2 3$' "$T/p1" || fail "the board after 1 is not shown"
# The board carries the cells' numbers beside it, the moves' key (it showed none).
key='^\. \. \.    1 2 3|\. \. \.    4 5 6|\. \. \.    7 8 9|$'
head -4 "$T/p1" | tail -3 | tr '\n' '|' | grep -q "$key" ||
	fail "no cell numbers beside the board: $(head -5 "$T/p1")"

# An illegal move is refused with a message and asked again; so is a word that is no move.
printf '5\n5\nfoo\n1\n2\n3\n4\n6\n7\n8\n9\n' | "$AZPLAY" --checkpoint "$C" --sims 16 \
	> "$T/p2" 2>&1 || fail "azplay exited non-zero on illegal input"
grep -q "^illegal move '5': not legal in this position; legal moves:" "$T/p2" \
	|| fail "occupied cell 5 not refused: $(cat "$T/p2")"
grep -q "^illegal move 'foo': not a move" "$T/p2" || fail "'foo' not refused"
# Asked again: after the refusal of '5' the next line is a prompt for X again.
grep -A1 "^illegal move '5'" "$T/p2" | tail -1 | grep -q '^your move as X' \
	|| fail "the move was not asked again after the refusal"
[ "$(grep -c '^human (X) plays 5$' "$T/p2")" -eq 1 ] || fail "5 was played twice"
grep -q '^result: ' "$T/p2" || fail "no result after illegal input"

# The human plays second: the agent opens. End of input and 'quit' end cleanly (exit 0).
printf '' | "$AZPLAY" --checkpoint "$C" --human second --sims 8 > "$T/p3" 2>&1 \
	|| fail "azplay failed at end of input"
grep -q '^agent (X) plays [1-9]$' "$T/p3" || fail "the agent did not open as X"
grep -q '^result: abandoned (end of input)' "$T/p3" || fail "end of input not reported"
echo quit | "$AZPLAY" --checkpoint "$C" --sims 8 > "$T/p4" 2>&1 || fail "quit: non-zero exit"
grep -q '^result: abandoned (quit)' "$T/p4" || fail "quit not reported"

# Agent against random (a 2-iteration network is too weak to assert wins: check that the games
# end, colours alternate and the tally is printed) and against rollout MCTS.
"$AZPLAY" --checkpoint "$C" --human none --opponent random --games 4 --sims 16 < /dev/null \
	> "$T/p5" 2>&1 || fail "agent vs random failed"
[ "$(grep -c '^result: ' "$T/p5")" -eq 4 ] || fail "expected 4 results against random"
grep -Eq '^summary: agent [0-4] wins?, [0-4] draws?, [0-4] loss(es)? against random in 4 games' \
	"$T/p5" || fail "no summary line against random"
grep -q '^random (O) plays' "$T/p5" && grep -q '^random (X) plays' "$T/p5" \
	|| fail "colours were not alternated"
"$AZPLAY" --checkpoint "$C" --human none --opponent rollout --sims 32 < /dev/null \
	> "$T/p6" 2>&1 || fail "agent vs rollout failed"
grep -q '^rollout (O): value' "$T/p6" || fail "rollout search output missing"
grep -q '^result: ' "$T/p6" || fail "agent vs rollout did not end"
# An agent that loses: the untrained network with a 2-simulation search against random. Losses
# are tallied and the exit status stays 0.
"$AZPLAY" --checkpoint "$T/ttt/checkpoints/iter-0000.safetensors" --human none \
	--opponent random --games 20 --sims 2 < /dev/null > "$T/p7" 2>&1 \
	|| fail "azplay failed when the agent lost: $(tail -3 "$T/p7")"
[ "$(grep -c '^result: ' "$T/p7")" -eq 20 ] || fail "expected 20 results"
grep -Eq '^summary: agent [0-9]+ wins?, [0-9]+ draws?, ([1-9]|1[0-9]|20) loss(es)?' "$T/p7" \
	|| fail "no loss tallied: $(tail -1 "$T/p7")"
# Wrong game for the checkpoint, and --opponent with a human: refused (exit 2).
set +e
"$AZPLAY" --checkpoint "$C" --game connect4 < /dev/null > /dev/null 2> "$T/e1"; rc1=$?
"$AZPLAY" --checkpoint "$C" --human first --opponent random < /dev/null > /dev/null \
	2> "$T/e2"; rc2=$?
set -e
[ $rc1 -eq 2 ] && grep -q "tictactoe network" "$T/e1" || fail "game mismatch not refused"
[ $rc2 -eq 2 ] && grep -q -- "--human none" "$T/e2" || fail "--opponent with a human accepted"

# azrun status on the finished run.
"$AZRUN" status --out "$T/ttt" > "$T/s1" || fail "azrun status failed"
grep -q '^iterations: 2 of 2 complete' "$T/s1" || fail "status: $(cat "$T/s1")"
grep -q 'not running (finished)' "$T/s1" || fail "status does not say finished"
[ "$(grep -Ec '^ +[12] +[0-9]+-[0-9]+-[0-9]+ ' "$T/s1")" -eq 2 ] || fail "no arena history"

# A progress.json whose pid is alive (pid 1 always is) but no azrun holding the lock: not running
# (status trusted the pid and said "running (pid 1)").
now=$(date +%s)
cat > "$T/ttt/progress.json" <<EOF
{"pid": 1, "iteration": 3, "iterations": 4, "phase": "selfplay", "phase_started": $((now - 5)),
 "done": 6, "total": 12, "evals_per_s": 1234.5, "updated": $now}
EOF
"$AZRUN" status --out "$T/ttt" > "$T/s0" || fail "azrun status (stale pid) failed"
grep -q '^state: *not running' "$T/s0" || fail "status trusts progress.json's pid: $(cat "$T/s0")"

# azrun status on a run in progress: this shell holds the lock, as azrun does, with its pid.
echo $$ > "$T/ttt/azrun.lock"
exec 9< "$T/ttt/azrun.lock"
flock -x 9
sed -i 's/"pid": 1,/"pid": 2,/' "$T/ttt/progress.json" # the lock's pid is the one shown
"$AZRUN" status --out "$T/ttt" > "$T/s2" || fail "azrun status (running) failed"
grep -q "running (pid $$), iteration 3 of 4, phase selfplay" "$T/s2" \
	|| fail "live status: $(cat "$T/s2")"
grep -q '6 of 12 (50%)' "$T/s2" || fail "live progress missing"
grep -Eq '^eta: +[0-9.]+s for this phase' "$T/s2" || fail "no ETA: $(cat "$T/s2")"
# A progress.json a moment older than state.json (it is written about once a second): its
# iteration has committed, so status names the next one instead of a phase already over.
sed -i 's/"iteration": 3,/"iteration": 2,/' "$T/ttt/progress.json"
"$AZRUN" status --out "$T/ttt" > "$T/s3" || fail "azrun status (lagging progress) failed"
grep -q "running (pid $$), iteration 3 of 4 starting (iteration 2 has committed)" "$T/s3" ||
	fail "lagging progress.json: $(cat "$T/s3")"
sed -i 's/"iteration": 2,/"iteration": 3,/' "$T/ttt/progress.json"

# azrun verify on the live run: the files of the iteration being written are that, not leftovers
# of an iteration that "never committed".
cp "$T/ttt/replay/iter-0002-w00.rpl" "$T/ttt/replay/iter-0003-w00.rpl"
: > "$T/ttt/checkpoints/iter-0003.safetensors.tmp.$$"
"$AZRUN" verify --out "$T/ttt" > "$T/v1" || fail "verify of the live run: $(cat "$T/v1")"
grep -q "never committed\|cut short" "$T/v1" && fail "live run called uncommitted: $(cat "$T/v1")"
grep -q "^note: $T/ttt is in use by azrun (pid $$)" "$T/v1" || fail "live verify: $(cat "$T/v1")"
grep -q "iter-0003-w00.rpl: of iteration 3, in progress$" "$T/v1" || fail "$(cat "$T/v1")"
grep -q "tmp.$$: the temporary file of a write in progress$" "$T/v1" || fail "$(cat "$T/v1")"
grep -q ", 2 files of the iteration in progress$" "$T/v1" || fail "$(cat "$T/v1")"
exec 9<&- # the "azrun" stops: the same files are leftovers again
"$AZRUN" verify --out "$T/ttt" > "$T/v2" || fail "verify: $(cat "$T/v2")"
grep -q "iter-0003-w00.rpl: of iteration 3, which never committed" "$T/v2" || fail "$(cat "$T/v2")"
rm "$T/ttt/replay/iter-0003-w00.rpl" "$T/ttt/checkpoints/iter-0003.safetensors.tmp.$$"
exec 9< "$T/ttt/azrun.lock"
flock -x 9

# azrun report: PNGs (non-empty, PNG magic), a page linking each (the in-progress note too).
"$AZRUN" report --out "$T/ttt" > "$T/r1" 2>&1 || fail "azrun report failed: $(cat "$T/r1")"
grep -q 'still in progress' "$T/r1" || fail "report does not note the run in progress"
for p in loss arena elo throughput time; do
	f=$T/ttt/report/$p.png
	[ -s "$f" ] || fail "$p.png missing or empty"
	[ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] \
		|| fail "$p.png is not a PNG"
	grep -q "src=\"$p.png\"" "$T/ttt/report/index.html" || fail "index.html lacks $p.png"
	grep -q "($p.png)" "$T/ttt/report/report.md" || fail "report.md lacks $p.png"
done
grep -q '400 log10' "$T/ttt/report/index.html" || fail "the Elo formula is not documented"
exec 9<&-
# Without gnuplot: a clear error.
rm "$T/ttt/progress.json"
if "$AZRUN" report --out "$T/ttt" --gnuplot "$T/no-such-gnuplot" > /dev/null 2> "$T/r2"; then
	fail "report succeeded without gnuplot"
fi
grep -q "gnuplot not found" "$T/r2" || fail "missing gnuplot not explained: $(cat "$T/r2")"

# A refused fresh run leaves the directory as it was: no azrun.lock of its own (it left one),
# an existing one untouched (its pid was rewritten).
cp "$T/ttt/azrun.lock" "$T/lock.orig"
"$AZRUN" --game tictactoe --out "$T/ttt" "${tiny[@]}" 2> "$T/f1" && fail "a fresh run over a run"
grep -q "already holds a run; continue it with --resume" "$T/f1" || fail "$(cat "$T/f1")"
cmp -s "$T/ttt/azrun.lock" "$T/lock.orig" || fail "a refused run rewrote azrun.lock"
rm "$T/ttt/azrun.lock"
"$AZRUN" --game tictactoe --out "$T/ttt" "${tiny[@]}" 2> "$T/f1" && fail "a fresh run over a run"
[ ! -e "$T/ttt/azrun.lock" ] || fail "a refused fresh run left azrun.lock behind"
# A fresh run into a directory of other files (a mistyped --out: ".", a home directory) is
# refused, writing nothing there; an empty existing directory is taken.
mkdir -p "$T/mine" "$T/empty"
echo "my notes" > "$T/mine/notes.txt"
rc=0; "$AZRUN" --game tictactoe --out "$T/mine" "${tiny[@]}" 2> "$T/f2" || rc=$?
[ "$rc" -eq 2 ] || fail "a fresh run into a folder of other files: exit $rc"
grep -q "already holds files that are not a run's ('notes.txt'; no run.json)" "$T/f2" ||
	fail "$(cat "$T/f2")"
[ "$(ls -A "$T/mine")" = "notes.txt" ] || fail "the refused run wrote into it: $(ls -A "$T/mine")"
"$AZRUN" --game tictactoe --out "$T/empty" "${tiny[@]}" 2> "$T/f3" ||
	fail "a fresh run into an empty directory: $(cat "$T/f3")"

# metrics.jsonl without a line while state.json counts 2: said in words, not "iterations 1-0".
cp -a "$T/ttt" "$T/nolines"
: > "$T/nolines/metrics.jsonl"
"$AZRUN" verify --out "$T/nolines" > "$T/v3" && fail "verify accepted a run without metrics"
grep -q "metrics.jsonl: has no iteration's line, but state.json says 2 are complete$" "$T/v3" ||
	fail "empty metrics: $(cat "$T/v3")"
echo "user tools integration: all checks passed"
