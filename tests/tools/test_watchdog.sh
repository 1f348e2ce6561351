#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The supervisor's watchdog (run/watchdog.h), issue 23 items 3 and 5. In the middle of a
# self-play phase: a worker is stopped (SIGSTOP) until the watchdog restarts it; then the
# inference process is stopped and, while it is, a worker is killed with kill -9 (its successor
# must wait for the inference process, not end the run) until the watchdog restarts the
# inference process. The run must log both stalls by name, complete, pass `azrun verify`, and
# its metrics must count the games the store holds (the killed workers' staged games are not
# counted). The watchdog's floor is lowered to 12 s (AZ_WATCHDOG_FLOOR_S): above the 10 s after
# which a worker used to give up on a stopped inference process.
# Usage: test_watchdog.sh AZRUN
set -uo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
trap 'pkill -9 -P $$ 2>/dev/null; rm -rf "$T"' EXIT
export AZ_WATCHDOG_FLOOR_S=${AZ_WATCHDOG_FLOOR_S:-12}
D="$T/run"
LOG="$D/azrun.log"

# The first pid of child NAME of azrun $1 (waits up to 20 s for it).
child() {
	local p
	for _ in $(seq 1 200); do
		p=$(pgrep -P "$1" -x "$2" | head -n1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}

# Wait up to $2 seconds for the log to contain $1.
wait_log() {
	for _ in $(seq 1 $(($2 * 10))); do
		grep -q "$1" "$LOG" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# About 15 s of self-play on an idle machine, so that both stops fall inside it.
"$AZRUN" --game connect4 --workers 2 --games-per-worker 8 --games-per-iter 700 --sims 200 \
	--arena-games 8 --iterations 1 --seed 3 --quiet --out "$D" 2> "$T/err.log" &
pid=$!

# 1. A stopped worker: logged by name, killed and restarted by the watchdog.
w=$(child $pid az-worker-0) || fail "no worker started"
sleep 1
kill -STOP "$w"
t0=$SECONDS
wait_log "supervisor: watchdog: worker 0 (pid $w) made no progress" 40 || {
	kill -CONT "$w"; cat "$T/err.log" "$LOG"; fail "the stopped worker was not noticed"; }
kill -CONT "$w" 2>/dev/null # it is dead already (SIGKILL); harmless
echo "worker stall noticed after $((SECONDS - t0)) s"
wait_log "worker 0 died (signal 9).*restarting it" 10 || fail "the stalled worker was not restarted"

# 2. A stopped inference process, and a worker killed while it is stopped: the restarted
# worker waits (no "Connection timed out"), the watchdog restarts the inference process.
s=$(child $pid az-infer) || fail "no inference process"
grep -q "iter 1 selfplay:" "$LOG" && fail "self-play ended before the inference process was stopped (slow down the test run)"
kill -STOP "$s"
t0=$SECONDS
sleep 1
w=$(child $pid az-worker-1) && kill -9 "$w"
wait_log "supervisor: watchdog: the inference process (pid $s) made no progress" 40 || {
	kill -CONT "$s"; cat "$T/err.log" "$LOG"; fail "the stopped inference process was not noticed"; }
kill -CONT "$s" 2>/dev/null
echo "inference stall noticed after $((SECONDS - t0)) s"
wait_log "supervisor: restarted the inference process" 10 || fail "the inference process was not restarted"

wait $pid || { cat "$T/err.log" "$LOG"; fail "azrun did not complete after the stalls"; }
grep -q "Connection timed out" "$T/err.log" "$LOG" && fail "a worker gave up on the inference process"
# Both stalls were in the middle of the self-play phase (before its summary line).
awk '/watchdog: the inference process/ { s = 1 } /iter 1 selfplay:/ { exit !s }' "$LOG" ||
	fail "the inference process's stall was not during self-play"
"$AZRUN" verify --out "$D" > "$T/verify.log" || { cat "$T/verify.log"; fail "verify"; }
grep -q " 0 problems" "$T/verify.log" || { cat "$T/verify.log"; fail "verify found problems"; }

# 3. Metrics games = the whole games in the store (kill -9 and watchdog kills above).
want=$(grep -o '"games": [0-9]*' "$D/metrics.jsonl" | head -n1 | grep -o '[0-9]*$')
have=$(python3 - "$D"/replay/iter-0001-*.rpl <<'PY'
import struct, sys
games = 0
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    rec = struct.unpack_from("<I", data, 16)[0]
    for off in range(32, len(data) - rec + 1, rec):
        if struct.unpack_from("<I", data, off + rec - 8)[0] & 0x80000000:
            games += 1
print(games)
PY
)
echo "metrics: $want games; store: $have games"
[ "$have" = "$want" ] || fail "the store holds $have games, metrics say $want"
grep -q "counted by the workers" "$LOG" || echo "note: no staged game was lost this time"
echo "PASS"
