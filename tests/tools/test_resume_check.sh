#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One check behind verify and resume (run/rundir_verify.c), replayed on tiny tic-tac-toe runs:
# each kind of damage is reported by `azrun verify` (exit 1, one message naming it) and refused
# by `azrun --resume` (exit 2, one line, the directory byte for byte unchanged); leftovers of an
# iteration that never committed are notes that resume rolls back. Also: a diverging run keeps
# valid metrics, stop signals exit 128 + signal and leave nothing behind, --sims 1 and INI
# booleans are validated, an unusable lock file is named as such.
# Usage: test_resume_check.sh AZRUN
set -uo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
args=(--game tictactoe --workers 1 --games-per-worker 4 --games-per-iter 8 --sims 8
      --arena-games 4 --quiet)
snap() { (cd "$1" && find . -type f ! -name azrun.log -print0 | sort -z | xargs -0 sha256sum); }

"$AZRUN" "${args[@]}" --iterations 2 --out "$T/base" 2> "$T/base.log" ||
	{ cat "$T/base.log"; fail "base run"; }

# damage NAME WHAT-VERIFY-SAYS COMMAND...: apply COMMAND in a copy of the base run, then
# verify must name the damage in one message and resume must refuse without changing a byte.
damage() {
	local name=$1 says=$2 D="$T/$1"
	shift 2
	rm -rf "$D"
	cp -a "$T/base" "$D"
	(cd "$D" && eval "$*")
	"$AZRUN" verify --out "$D" > "$T/v.out"
	[ $? -eq 1 ] || { cat "$T/v.out"; fail "$name: verify does not report it"; }
	[ "$(grep -c '^DAMAGED' "$T/v.out")" -eq 1 ] || { cat "$T/v.out"; fail "$name: not one message"; }
	grep '^DAMAGED' "$T/v.out" | grep -q -- "$says" || { cat "$T/v.out"; fail "$name: unclear"; }
	snap "$D" > "$T/before"
	"$AZRUN" --resume --out "$D" --iterations 3 2> "$T/r.err"
	rc=$?
	[ $rc -eq 2 ] || { cat "$T/r.err"; fail "$name: resume exit $rc, want 2"; }
	[ "$(wc -l < "$T/r.err")" -eq 1 ] || { cat "$T/r.err"; fail "$name: not one line"; }
	grep -q -- "$says" "$T/r.err" || { cat "$T/r.err"; fail "$name: resume message unclear"; }
	# the way out is azrun's to name (run/ reports the damage, tools/azrun.c the commands)
	grep -q "^azrun: cannot resume: .*(1 problem: azrun verify --out $D lists it, azrun repair \
--out $D " "$T/r.err" || { cat "$T/r.err"; fail "$name: resume names no verify and repair"; }
	snap "$D" | diff -q - "$T/before" > /dev/null || fail "$name: resume changed the directory"
	echo "damage refused: $name"
}

damage no-state "state.json: missing, but" 'rm state.json'
damage state-garbage "state.json" 'echo "{broken" > state.json'
damage best-deleted "best.safetensors: missing" 'rm best.safetensors'
damage best-other-arch "architecture 8x1" \
	'"$AZRUN" --game tictactoe --workers 1 --games-per-worker 2 --games-per-iter 2 --sims 4 \
	 --arena-games 2 --quiet --iterations 1 --hidden 8 --blocks 1 --out o8 2> /dev/null &&
	 cp o8/best.safetensors best.safetensors && rm -rf o8'
damage checkpoint-missing "iter-0001.safetensors: missing" 'rm checkpoints/iter-0001.safetensors'
damage checkpoint-corrupt "content hash" \
	'printf "\x55" | dd of=checkpoints/iter-0001.safetensors bs=1 seek=3000 conv=notrunc 2>/dev/null'
damage replay-deleted "replay: cannot open" 'rm -rf replay'
damage metrics-garbage "line 1 is not a metrics object" \
	'sed -i "1s/.*/garbage/" metrics.jsonl'
damage metrics-truncated "line 2 is cut short" 'truncate -s -20 metrics.jsonl'
damage metrics-missing-line "has the line of iteration 1 only" 'sed -i "2d" metrics.jsonl'

# Leftovers of an iteration that never committed: notes, rolled back by resume, logged.
D="$T/leftover"
cp -a "$T/base" "$D"
# state.json as an azrun writes it after iteration 1: sealed with its crc32 (run/rundir.h); one
# without would be an edit, which verify calls damage
python3 -c 'import sys, zlib; b = sys.argv[1]
print("%s, \"crc32\": \"%08x\"}" % (b, zlib.crc32(b.encode())))' \
	'{"completed": 1, "best_iteration": 1' > "$D/state.json"
cp "$D/checkpoints/iter-0002.safetensors" "$D/best.safetensors" # a promotion half-applied
cp "$D/state.json" "$D/state.json.tmp.99999"
"$AZRUN" verify --out "$D" > "$T/v.out" || { cat "$T/v.out"; fail "leftovers reported as damage"; }
for w in "state.json.tmp.99999" "iter-0002.safetensors: iteration 2 never committed" \
	 "line 2 is of iteration 2" "iter-0002-w00.rpl: of iteration 2" "a promotion cut short"; do
	grep -q "^note: .*$w" "$T/v.out" || { cat "$T/v.out"; fail "verify does not note '$w'"; }
done
"$AZRUN" --resume --out "$D" --iterations 1 2> "$T/r.err" || { cat "$T/r.err"; fail "rollback"; }
for w in "removed .*state.json.tmp.99999" "rolled back .*iter-0002.safetensors" \
	 "rolled back 1 replay files" "rolled back 1 metrics lines" "completed the promotion"; do
	grep -q "$w" "$D/azrun.log" || { cat "$D/azrun.log"; fail "the log does not say '$w'"; }
done
cmp -s "$D/best.safetensors" "$D/checkpoints/iter-0001.safetensors" || fail "best not repaired"
"$AZRUN" verify --out "$D" | grep -q " 0 problems$" || fail "not clean after rollback"
head -n 1 "$T/base/metrics.jsonl" | cmp -s - "$D/metrics.jsonl" || fail "metrics line 1 changed"
echo "leftovers rolled back"

# A diverging run: a clear stop before the commit, valid JSON for each completed iteration, no
# network with non-finite weights anywhere.
D="$T/diverge"
"$AZRUN" "${args[@]}" --iterations 3 --lr 1e30 --out "$D" 2> "$T/d.err"
[ $? -eq 1 ] || { cat "$T/d.err"; fail "--lr 1e30 did not stop"; }
grep -qi "diverged" "$T/d.err" || { cat "$T/d.err"; fail "--lr 1e30: no clear message"; }
done_its=$(jq -r .completed "$D/state.json")
lines=$( (cat "$D/metrics.jsonl" 2> /dev/null || true) | wc -l)
[ "$lines" -eq "$done_its" ] || fail "$lines metrics lines for $done_its iterations"
[ "$done_its" -eq 0 ] || jq -e . "$D/metrics.jsonl" > /dev/null || fail "invalid JSON in metrics"
"$AZRUN" verify --out "$D" > /dev/null || fail "a diverged run fails verify"
echo "divergence stopped before commit ($done_its iterations complete)"

# --lr-late reaches the trainer from its fraction of the run on: iterations 1 and 2 (0 and 1/3
# of 3 done) train at --lr, iteration 3 (2/3 done) at --lr-late 1e30, which diverges there.
D="$T/lr-late"
"$AZRUN" "${args[@]}" --iterations 3 --lr-late 1e30 --lr-late-at 0.5 --out "$D" 2> "$T/l.err"
[ $? -eq 1 ] || { cat "$T/l.err"; fail "--lr-late 1e30 did not stop the run"; }
[ "$(jq -r .completed "$D/state.json")" -eq 2 ] || fail "--lr-late applied before iteration 3"
grep -q "iter 3 train: learning rate 1e+30 from here on" "$D/azrun.log" ||
	fail "the switch to --lr-late is not logged"
echo "--lr-late applies from its fraction of the run on"

# Stop signals: 128 + signal, logged, no segment left, resumable.
sargs=(--game tictactoe --workers 2 --games-per-worker 8 --games-per-iter 300 --sims 24
       --arena-games 16 --quiet)
for sig in HUP TERM PIPE INT; do
	D="$T/sig-$sig"
	"$AZRUN" "${sargs[@]}" --iterations 3 --out "$D" 2> /dev/null &
	pid=$!
	# Signal once the run exists and its handler is installed (SigCgt bit), however slowly a
	# loaded machine starts it: before main() a signal meets the default action or the
	# SIG_IGN a background job inherits, which no program can catch.
	n=$(kill -l "$sig")
	for _ in $(seq 1 2000); do
		cgt=$(awk '/^SigCgt:/ {print $2}' /proc/$pid/status 2> /dev/null || echo 0)
		[ $(( (0x${cgt:-0} >> (n - 1)) & 1 )) -ne 0 ] && [ -f "$D/state.json" ] && break
		kill -0 $pid 2> /dev/null || break
		sleep 0.01
	done
	kill -"$sig" $pid
	wait $pid
	rc=$?
	want=$((128 + $(kill -l "$sig")))
	[ $rc -eq $want ] || [ $rc -eq 0 ] || fail "SIG$sig: exit $rc, want $want"
	[ $rc -eq 0 ] || grep -q "stopped by" "$D/azrun.log" || fail "SIG$sig: not logged"
	ls /dev/shm | grep -q "^az-$(id -u)-$pid-" && fail "SIG$sig: segment left behind"
	"$AZRUN" --resume --out "$D" --quiet 2> "$T/r.err" || { cat "$T/r.err"; fail "SIG$sig: resume"; }
	echo "SIG$sig: exit $rc, resumed"
done
# An early stop signal is not lost (before, azrun installed its handlers late, and a background
# job starts with SIGINT ignored: the run went on to its end).
# A signal that arrives before the dynamic loader has handed over to main() (a CUDA build loads
# cuBLAS first: tens of ms) meets the SIG_IGN a background job inherits, which no program can
# catch; so wait for the handler (SigCgt bit of SIGINT in /proc) and signal at once: from then on
# no stop may be lost.
# The handler must be azrun's: until the forked shell has exec'd azrun, the SigCgt bit can be
# the shell's own SIGINT handler (the test then lost its signal before azrun existed, rarely).
exe=$(readlink -f "$AZRUN")
"$AZRUN" "${sargs[@]}" --iterations 3 --out "$T/early" 2> /dev/null &
pid=$!
for _ in $(seq 1 2000); do
	cgt=0
	[ "$(readlink /proc/$pid/exe 2> /dev/null)" = "$exe" ] &&
		cgt=$(awk '/^SigCgt:/ {print $2}' /proc/$pid/status 2> /dev/null || echo 0)
	[ $(( 0x${cgt:-0} & 2 )) -ne 0 ] && break
	sleep 0.005
done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "an early SIGINT was ignored (exit $rc)"
echo "early SIGINT: exit $rc"

# Validation: --sims 1 refused, INI booleans take their value.
"$AZRUN" "${args[@]}" --sims 1 --out "$T/s1" 2> "$T/e" && fail "--sims 1 accepted"
[ $? -eq 2 ] && grep -q -- "--sims" "$T/e" && [ ! -e "$T/s1" ] || fail "--sims 1: unclear"
printf 'quiet = banana\n' > "$T/b.ini"
"$AZRUN" "${args[@]}" --config "$T/b.ini" --out "$T/b" 2> "$T/e"
[ $? -eq 2 ] && grep -q "quiet" "$T/e" || fail "quiet = banana accepted"
printf 'quiet = 0\n' > "$T/b.ini"
"$AZRUN" --game tictactoe --workers 1 --games-per-worker 2 --games-per-iter 2 --sims 4 \
	--arena-games 2 --iterations 1 --config "$T/b.ini" --out "$T/b0" 2> "$T/e" || fail "quiet = 0"
grep -q "iter 1 selfplay" "$T/e" || fail "quiet = 0 was quiet"
# A lock file that cannot be opened is not "another azrun".
D="$T/lockdir"
cp -a "$T/base" "$D"
rm "$D/azrun.lock" && mkdir "$D/azrun.lock"
"$AZRUN" --resume --out "$D" --iterations 3 2> "$T/e"
grep -q "in use by another" "$T/e" && fail "unopenable lock reported as another azrun"
grep -q "cannot open .*azrun.lock" "$T/e" || { cat "$T/e"; fail "unopenable lock: unclear"; }
echo "resume check: all checks passed"
