#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Crash-point test, in the manner of SQLite's crash tests: AZ_CRASH_AT=N (base/util.h,
# az_fault_init) SIGKILLs azrun and its children just before the N-th write, fsync, rename or
# directory fsync of the run's files. For N = 1, 2, ... until a run completes without reaching
# N (so every point is enumerated), kill a fresh run at point N, then check: `azrun verify`
# finds no damage; every record committed at the kill (state.json's iterations: their metrics
# lines and checkpoints) is still there, byte for byte, after `--resume` finishes the run; the
# finished directory looks like an uninterrupted run's (every iteration present, one valid JSON
# line each, best.safetensors = checkpoints/iter-B for state's B, no temporary file). The first
# resume after each kill is itself killed at one of its own first points.
# --arena-threshold 0 promotes every candidate, so each iteration replaces best.safetensors.
# Usage: test_crashpoints.sh AZRUN [ITERATIONS]
set -uo pipefail
AZRUN=$1 ITERS=${2:-2}
. "$(dirname "$0")/lib.sh"
args=(--game tictactoe --workers 1 --games-per-worker 4 --games-per-iter 8 --sims 8
      --arena-games 4 --arena-threshold 0 --quiet)

state_field() { jq -r ".$2" "$1/state.json" 2> /dev/null; }

# The children of a killed azrun die with it (PR_SET_PDEATHSIG), but not at the same instant;
# until then they hold its lock.
wait_unlocked() {
	[ -f "$1/azrun.lock" ] || return 0
	for w in $(seq 1 100); do flock -n "$1/azrun.lock" true && return 0; sleep 0.05; done
	fail "$1: still locked 5 s after the kill"
}

# A finished run directory, as an uninterrupted run leaves it.
check_finished() {
	local D=$1 b
	"$AZRUN" verify --out "$D" > "$T/verify.out" || { cat "$T/verify.out"; fail "$D: verify"; }
	grep -q " 0 problems$" "$T/verify.out" ||
		{ cat "$T/verify.out"; fail "$D: leftovers"; }
	[ "$(state_field "$D" completed)" = "$ITERS" ] || fail "$D: state.json: $(cat "$D/state.json")"
	b=$(state_field "$D" best_iteration)
	cmp -s "$D/best.safetensors" "$D/checkpoints/iter-$(printf %04d "$b").safetensors" ||
		fail "$D: best.safetensors is not iteration $b's network"
	[ "$(wc -l < "$D/metrics.jsonl")" -eq "$ITERS" ] || fail "$D: metrics.jsonl line count"
	for i in $(seq 1 "$ITERS"); do
		[ "$(sed -n "${i}p" "$D/metrics.jsonl" | jq -e .iteration 2> /dev/null)" = "$i" ] ||
			fail "$D: metrics line $i is not valid JSON of iteration $i"
	done
	for i in $(seq 0 "$ITERS"); do
		[ -f "$D/checkpoints/iter-$(printf %04d "$i").safetensors" ] || fail "$D: iteration $i lost"
	done
	[ -z "$(find "$D" -name '*.tmp*')" ] ||
		fail "$D: temporary files left: $(find "$D" -name '*.tmp*')"
}

"$AZRUN" "${args[@]}" --iterations "$ITERS" --out "$T/ref" 2> "$T/ref.log" ||
	{ cat "$T/ref.log"; fail "the uninterrupted run"; }
check_finished "$T/ref"

printf '%-5s %-50s %-9s %-9s %-14s %s\n' point "killed before" committed leftovers resumed lost
points=0 survived=0 lost_total=0 half_promotions=0 second=0
for ((k = 1; ; k++)); do
	D="$T/k$k"
	# (In a subshell, so that the shell's "Killed" notice stays out of the table.)
	( AZ_CRASH_AT=$k "$AZRUN" "${args[@]}" --iterations "$ITERS" --out "$D" 2> "$T/crash.log"
	  echo $? > "$T/rc" ) 2> /dev/null
	rc=$(cat "$T/rc")
	if ! grep -q "^az-fault: crash point $k:" "$T/crash.log"; then
		[ $rc -eq 0 ] || { cat "$T/crash.log"; fail "point $k: not reached, yet exit $rc"; }
		break # point k does not exist: all points enumerated
	fi
	[ $rc -eq 137 ] || { cat "$T/crash.log"; fail "point $k: exit $rc, not SIGKILL"; }
	points=$k
	what=$(sed -n "s/^az-fault: crash point $k: before \(.*\) of .*\/k$k\/\(.*\)/\1 \2/p" \
		"$T/crash.log" | sed 's/\.tmp\.[0-9]*//')
	wait_unlocked "$D"
	done=0 leftovers=-
	if [ -f "$D/run.json" ]; then
		"$AZRUN" verify --out "$D" > "$T/verify.out"
		vrc=$?
		[ $vrc -eq 0 ] || { cat "$T/verify.out"; fail "point $k ($what): verify found damage"; }
		leftovers=$(sed -n 's/.* problems\?, \([0-9]*\) leftovers\? .*/\1/p' "$T/verify.out")
		leftovers=${leftovers:-0}
		grep -q "a promotion cut short" "$T/verify.out" && half_promotions=$((half_promotions + 1))
		[ -f "$D/state.json" ] && done=$(state_field "$D" completed)
	fi
	# The records committed at the kill: their metrics lines and checkpoints.
	head -n "$done" "$D/metrics.jsonl" > "$T/lines.before" 2> /dev/null || : > "$T/lines.before"
	: > "$T/ckpt.before"
	if [ -f "$D/state.json" ]; then
		for i in $(seq 0 "$done"); do
			sha256sum "$D/checkpoints/iter-$(printf %04d "$i").safetensors" >> "$T/ckpt.before"
		done
	fi
	# A second crash, inside the first resume (at its point 1..6 in turn: run.json, the
	# roll-back or the completion of best, the next iteration), must be as harmless.
	again=$((1 + k % 6)) resumed=yes
	for crash in "$again" ""; do
		if [ -f "$D/run.json" ]; then
			( AZ_CRASH_AT=$crash "$AZRUN" --resume --out "$D" --quiet 2> "$T/resume.log"
			  echo $? > "$T/rc" ) 2> /dev/null
		else
			( AZ_CRASH_AT=$crash "$AZRUN" "${args[@]}" --iterations "$ITERS" --out "$D" \
				2> "$T/resume.log"
			  echo $? > "$T/rc" ) 2> /dev/null
		fi
		rc=$(cat "$T/rc")
		if [ -n "$crash" ] && [ $rc -eq 137 ]; then
			second=$((second + 1)) resumed="after kill $crash"
			wait_unlocked "$D"
			continue
		fi
		[ $rc -eq 0 ] || { cat "$T/resume.log"; fail "point $k ($what): resume exit $rc"; }
	done
	check_finished "$D"
	lost=0
	while IFS= read -r line; do
		grep -qxF -- "$line" "$D/metrics.jsonl" || lost=$((lost + 1))
	done < "$T/lines.before"
	sha256sum --quiet -c "$T/ckpt.before" > /dev/null 2>&1 ||
		lost=$((lost + $(sha256sum -c "$T/ckpt.before" 2> /dev/null | grep -vc ': OK$')))
	lost_total=$((lost_total + lost))
	survived=$((survived + 1))
	printf '%-5s %-50s %-9s %-9s %-14s %s\n' "$k" "$what" "$done" "$leftovers" "$resumed" "$lost"
	rm -rf "$D"
done
echo "crash points enumerated: $points; kills survived: $survived (and $second second kills" \
     "inside the resume); records lost: $lost_total; promotions found cut short and" \
     "completed: $half_promotions"
[ "$points" -ge $((16 * ITERS)) ] || fail "only $points crash points: the hook misses writes"
[ "$survived" -eq "$points" ] || fail "survived $survived of $points"
[ "$lost_total" -eq 0 ] || fail "$lost_total records lost"
echo "crash points: all checks passed"
