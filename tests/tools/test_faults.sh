#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fault injection: SIGKILL of workers, of the inference process and of azrun itself at random
# moments, SIGINT, a file-size limit (write errors), an unwritable run directory and a model the
# inference process cannot load. After each
# trial the run directory is verified (every checksum, every checkpoint, metrics), and no shared
# memory segment or process of the run may be left behind.
# Usage: test_faults.sh AZRUN [TRIALS [FAIL_REALLOC_SO]]
set -uo pipefail
AZRUN=$1 TRIALS=${2:-3} SHIM=${3:-}
T=$(mktemp -d)
trap 'pkill -9 -P $$ 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
RANDOM=${AZ_FAULT_SEED:-7}
args=(--game tictactoe --workers 2 --games-per-worker 8 --games-per-iter 300 --sims 24
      --arena-games 16 --quiet)
declare -A survived=()

# No segment of a finished azrun pid may remain, and no process whose parent was it may run.
check_clean() {
	local pid=$1
	[ -n "$(ls /dev/shm 2>/dev/null | grep "^az-$(id -u)-$pid-")" ] && fail "segment of $pid left behind"
	sleep 0.3
	if ps -eo ppid=,stat=,comm= | awk -v p="$pid" '$1 == p && $2 !~ /^Z/ { n++ } END { exit !n }'; then
		fail "processes of azrun $pid still running"
	fi
	return 0
}

verify_run() {
	"$AZRUN" verify --out "$1" > "$T/verify.log" || { cat "$T/verify.log"; fail "verify $1"; }
	local want=$2 have
	have=$(wc -l < "$1/metrics.jsonl")
	[ "$have" -eq "$want" ] || fail "$1: $have metrics lines, want $want"
}

rand_sleep() { sleep "$(awk -v r=$RANDOM -v lo="$1" -v hi="$2" 'BEGIN{print lo+(hi-lo)*r/32767}')"; }

for t in $(seq 1 "$TRIALS"); do
	# 1. Kill workers and the inference process mid-run; the run must complete by itself.
	D="$T/kill-$t"
	"$AZRUN" "${args[@]}" --out "$D" --iterations 3 --seed "$t" 2> "$D.log" &
	pid=$!
	for k in 1 2 3 4 5 6; do
		rand_sleep 0.1 0.6
		victim=$(pgrep -P $pid -x "az-worker-$((RANDOM % 2))" | head -n1)
		[ $((RANDOM % 3)) -eq 0 ] && victim=$(pgrep -P $pid -x az-infer | head -n1)
		if [ -n "$victim" ]; then
			name=$(ps -o comm= -p "$victim")
			kill -9 "$victim" 2>/dev/null && survived[${name%-[0-9]*}]=$(( ${survived[${name%-[0-9]*}]:-0} + 1 ))
		fi
	done
	wait $pid || { cat "$D.log"; fail "azrun did not survive killed children (trial $t)"; }
	verify_run "$D" 3
	# positions in the metrics = records in the store (a dead worker's staged games are not
	# counted)
	want=$(grep -o '"positions": [0-9]*' "$D/metrics.jsonl" | awk '{ n += $2 } END { print n }')
	have=$(grep -o "with [0-9]* records" "$T/verify.log" | grep -o "[0-9]*")
	[ "$have" = "$want" ] || fail "trial $t: store holds $have records, metrics say $want"
	check_clean $pid

	# 2. Kill azrun itself; its children must exit; --resume finishes with nothing lost.
	D="$T/parent-$t"
	"$AZRUN" "${args[@]}" --out "$D" --iterations 3 --seed "$t" 2> "$D.log" &
	pid=$!
	# Kill only once the run exists (before state.json there is nothing to resume).
	for w in $(seq 1 100); do [ -f "$D/state.json" ] && break; sleep 0.1; done
	rand_sleep 0.2 2.0
	kids=$(pgrep -P $pid | tr '\n' ' ')
	kill -9 $pid; wait $pid 2>/dev/null
	survived[azrun]=$(( ${survived[azrun]:-0} + 1 ))
	sleep 0.5
	for k in $kids; do
		st=$(ps -o stat= -p "$k" 2>/dev/null)
		case "$st" in ""|Z*) ;; *) fail "child $k of a killed azrun kept running ($st)";; esac
	done
	done_before=$(grep -o '"completed": [0-9]*' "$D/state.json" | grep -o '[0-9]*$')
	"$AZRUN" --resume --out "$D" --quiet 2> "$D.resume.log" || { cat "$D.resume.log"; fail "resume after kill -9"; }
	verify_run "$D" 3
	[ "$done_before" -le 3 ] || fail "state.json damaged"

	# 3. SIGINT: clean stop within a bounded time, exit 130, resumable.
	D="$T/int-$t"
	"$AZRUN" "${args[@]}" --out "$D" --iterations 3 --seed "$t" 2> "$D.log" &
	pid=$!
	# once the run exists (a stop before state.json leaves nothing to resume)
	for w in $(seq 1 100); do [ -f "$D/state.json" ] && break; sleep 0.1; done
	rand_sleep 0.2 1.4
	kill -INT $pid
	start=$(date +%s)
	wait $pid; rc=$?
	[ $(( $(date +%s) - start )) -le 10 ] || fail "SIGINT took more than 10 s"
	[ $rc -eq 130 ] || [ $rc -eq 0 ] || { cat "$D.log"; fail "SIGINT exit code $rc"; }
	check_clean $pid
	survived[sigint]=$(( ${survived[sigint]:-0} + 1 ))
	"$AZRUN" --resume --out "$D" --quiet 2> /dev/null || fail "resume after SIGINT"
	verify_run "$D" 3
done

# 4. Write errors (file-size limit: EFBIG as for a full disk): clear error, nothing completed is
# damaged, and the run resumes once space is back.
D="$T/full"
"$AZRUN" "${args[@]}" --out "$D" --iterations 1 2> /dev/null || fail "first iteration"
( ulimit -f 40; exec "$AZRUN" --resume --out "$D" --iterations 3 --quiet ) 2> "$T/full.log"
rc=$?
[ $rc -ne 0 ] || fail "a write error went unnoticed"
grep -Eqi "too large|no space" "$T/full.log" || { cat "$T/full.log"; fail "no clear error"; }
[ "$(grep -c "restarting" "$T/full.log")" -eq 0 ] || fail "restarted workers after a write error"
verify_run "$D" 1
"$AZRUN" --resume --out "$D" --iterations 2 --quiet 2> /dev/null || fail "resume after EFBIG"
verify_run "$D" 2
survived[write-error]=1

# 5. An unwritable run directory: clear error, exit non-zero.
touch "$T/file"
"$AZRUN" "${args[@]}" --out "$T/file/run" 2> "$T/err" && fail "ran under a regular file"
grep -q "cannot create" "$T/err" || fail "unwritable directory: unclear error"

# 6. A failed model load: the inference process dies during self-play and its successor cannot
# load best.safetensors (damaged meanwhile). The workers must stop at once with a clear error,
# not expand their leaves with policies nobody wrote until the phase ends.
D="$T/noload"
"$AZRUN" "${args[@]}" --games-per-iter 100000 --out "$D" --iterations 1 2> "$T/noload.log" &
pid=$!
for w in $(seq 1 100); do
	grep -q '"phase": "selfplay"' "$D/progress.json" 2> /dev/null && break
	sleep 0.1
done
sleep 0.3
printf 'garbage' > "$D/best.safetensors"
kill -9 "$(pgrep -P $pid -x az-infer | head -n1)"
start=$(date +%s)
wait $pid
rc=$?
[ $rc -eq 1 ] || { cat "$T/noload.log"; fail "failed model load: exit $rc, want 1"; }
[ $(( $(date +%s) - start )) -le 10 ] || fail "failed model load: the phase ran on to its end"
grep -q "has not loaded the model" "$T/noload.log" ||
	{ cat "$T/noload.log"; fail "failed model load: unclear"; }
check_clean $pid
survived[model-load]=1

# 7. Out of memory in a worker's search tree (an LD_PRELOAD shim fails its large reallocs): the
# worker stops with ENOMEM; it never publishes the leaf it could not add (which aborted on the
# answer, signal 6, restart after restart).
if [ -n "$SHIM" ]; then
	D="$T/oom"
	AZ_TEST_FAIL_REALLOC=65536 LD_PRELOAD="$SHIM" "$AZRUN" --game tictactoe --workers 1 \
		--games-per-worker 8 --games-per-iter 16 --sims 800 --arena-games 4 --quiet \
		--iterations 1 --out "$D" 2> "$T/oom.log"
	rc=$?
	[ $rc -eq 1 ] || { cat "$T/oom.log"; fail "worker out of memory: exit $rc, want 1"; }
	grep -q "worker 0: failed: Cannot allocate memory" "$T/oom.log" ||
		{ cat "$T/oom.log"; fail "worker out of memory: unclear"; }
	grep -q "signal 6\|assertion" "$T/oom.log" && { cat "$T/oom.log"; fail "worker aborted"; }
	survived[worker-oom]=1
fi

# 8. Out of memory at start-up names what did not fit: a worker's evaluation cache larger than
# the address space left (ulimit -v), and a network too large for the inference backend.
D="$T/oom-cache"
(ulimit -v 2500000 && "$AZRUN" --game connect4 --workers 1 --games-per-iter 8 --iterations 1 \
	--eval-cache worker --eval-cache-mb 4000 --quiet --out "$D" 2> "$T/oom-cache.log")
rc=$?
[ $rc -eq 1 ] || { cat "$T/oom-cache.log"; fail "cache out of memory: exit $rc, want 1"; }
grep -q "worker 0: cannot set up its evaluation cache (4000 MiB): Cannot allocate memory" \
	"$T/oom-cache.log" || { cat "$T/oom-cache.log"; fail "cache out of memory: unclear"; }
D="$T/oom-net"
(ulimit -v 2500000 && "$AZRUN" --game connect4 --workers 1 --games-per-iter 8 --iterations 1 \
	--net resnet:512x20 --max-batch 4096 --quiet --out "$D" 2> "$T/oom-net.log")
rc=$?
[ $rc -eq 1 ] || { cat "$T/oom-net.log"; fail "network out of memory: exit $rc, want 1"; }
grep -q "out of memory for network resnet:512x20 (.* M parameters) with batches of up to 4096" \
	"$T/oom-net.log" || { cat "$T/oom-net.log"; fail "network out of memory: unclear"; }
D="$T/oom-first"
(ulimit -v 2500000 && "$AZRUN" --game tictactoe --hidden 8192 --blocks 128 --iterations 1 \
	--quiet --out "$D" 2> "$T/oom-first.log")
rc=$?
[ $rc -eq 1 ] || { cat "$T/oom-first.log"; fail "first network out of memory: exit $rc"; }
grep -q "cannot create the first network, mlp:8192x128 (.* M parameters, .* GB)" \
	"$T/oom-first.log" && grep -q "stopped before the first iteration: .* another --out" \
	"$T/oom-first.log" || { cat "$T/oom-first.log"; fail "first network out of memory: unclear"; }
survived[startup-oom]=1

for k in "${!survived[@]}"; do echo "faults survived: $k ${survived[$k]}"; done
echo "fault injection: all checks passed"
