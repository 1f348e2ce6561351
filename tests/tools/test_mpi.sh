#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# azrun --mpi over 3 ranks of one machine (docs/cluster.md), on tiny settings: the run completes
# and verifies, every rank's games of every iteration are in rank 0's replay store (the totals
# are --games-per-iter), promotions happen; a kill -9 of a non-zero rank's azrun stops the whole
# job within seconds, leaving no process, segment or scratch directory, and --resume finishes
# it both single-node and over 2 ranks. Skips (77) without mpirun or azrun-mpi.
# Usage: test_mpi.sh AZRUN
set -uo pipefail
AZRUN=$1
skip() { echo "SKIP: $*"; exit 77; }
command -v mpirun > /dev/null || skip "no mpirun (tools/install-deps.sh installs Open MPI)"
[ -x "$(dirname "$AZRUN")/azrun-mpi" ] || skip "built without MPI (no azrun-mpi)"
. "$(dirname "$0")/lib.sh"
step() { echo "$(date +%T.%N | cut -c1-12) $*"; }
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)
args=(--game tictactoe --workers 1 --games-per-worker 8 --sims 16 --arena-games 10
      --train-steps-max 40 --quiet)

# Games of iteration $2 in worker file pattern $3 of run $1, from metrics and from the files.
records_of() { "$AZRUN" verify --out "$1" | grep -o "with [0-9]* records" | grep -o "[0-9]*"; }
metric() { grep -o "\"$2\": [a-z0-9.]*" "$1/metrics.jsonl" | awk '{print $2}'; }
scratch_left() { ls -d "${TMPDIR:-/tmp}"/azrun-mpi-"$(id -u)"-"$1" 2> /dev/null; }

step "0: linkage"
# 0. The plain azrun needs no MPI at run time: MPI lives in azrun-mpi only.
plain=$(ldd "$AZRUN") with=$(ldd "$(dirname "$AZRUN")/azrun-mpi")
case $plain in *libmpi*) fail "azrun links libmpi: $plain" ;; esac
case $with in *libmpi*) ;; *) fail "azrun-mpi does not link libmpi: $with" ;; esac

step "1: 3-rank run"
# 1. A 3-rank run completes; the store holds every rank's games; every candidate is promoted
# (threshold 0), so new weights reached the ranks three times.
D="$T/run"
"${MPIRUN[@]}" -np 3 "$AZRUN" --mpi "${args[@]}" --out "$D" --iterations 3 --games-per-iter 60 \
	--arena-threshold 0 > "$T/run.log" 2>&1 || { cat "$T/run.log"; fail "3-rank run"; }
"$AZRUN" verify --out "$D" > "$T/verify.log" || { cat "$T/verify.log"; fail "verify"; }
grep -q " 0 problems" "$T/verify.log" || fail "verify found problems: $(cat "$T/verify.log")"
for it in 0001 0002 0003; do
	for w in w00 w100 w200; do
		f="$D/replay/iter-$it-$w.rpl"
		[ -s "$f" ] || fail "$f missing: no games of that rank in the store"
		[ "$(stat -c %s "$f")" -gt 32 ] || fail "$f holds no records"
	done
done
[ "$(metric "$D" games | sort -u)" = "60" ] || fail "games per iteration: $(metric "$D" games)"
[ "$(metric "$D" promoted | grep -c true)" -eq 3 ] || fail "promotions: $(metric "$D" promoted)"
grep -q '"best_iteration": 3' "$D/state.json" || fail "best is not iteration 3"
# the arena's results of all three ranks: wins + draws + losses = --arena-games
awk -F'[:,]' '{for (i = 1; i < NF; i++) { if ($i ~ /arena_(wins|draws|losses)/) n += $(i+1) }
	if (n != 10) exit 1; n = 0}' "$D/metrics.jsonl" || fail "arena games do not add up to 10"
grep -q "iter 3 mpi: records [1-9]" "$D/azrun.log" || fail "no MPI accounting in the log"
# positions in the metrics = records in the store
want=$(metric "$D" positions | awk '{ n += $1 } END { print n }')
[ "$(records_of "$D")" -eq "$want" ] || fail "store holds $(records_of "$D") records, metrics $want"

# rank_pid MPIRUN_PID K: the pid of rank K's azrun (empty when not found)
rank_pid() {
	local p
	for p in $(descendants "$1"); do
		[ "$(ps -o comm= -p "$p" 2> /dev/null)" = azrun-mpi ] &&
			tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
			echo "$p"
	done
}
descendants() { local p; for p in $(pgrep -P "$1"); do echo "$p"; descendants "$p"; done; }

step "2: rank 1's workers killed"
# 2. A worker of rank 1 killed mid-phase is restarted there; its unfinished games are played
# again and only whole games reach the store. Rank 0 counts a remote game when it arrives, so
# metrics and store agree exactly; games the dead worker had finished but its replay writer had
# not yet written (at most a staging buffer, ~45 tic-tac-toe games) are lost, as on one node.
# How fast the machine plays decides how long a phase lasts (about a second for 900 games on a
# fast one), so the scenario runs again with 3x the games until a kill lands inside a phase.
# A kill counts when rank 1 logs the death, not when kill(1) returns.
D="$T/worker"
G=0
for G in 300 900 2700; do
	rm -rf "$D"
	"${MPIRUN[@]}" -np 3 "$AZRUN" --mpi "${args[@]}" --out "$D" --iterations 3 \
		--games-per-iter $G > "$T/worker.log" 2>&1 &
	mpid=$!
	r1=""
	while [ -z "$r1" ] && kill -0 $mpid 2> /dev/null; do
		r1=$(rank_pid $mpid 1)
		[ -n "$r1" ] || sleep 0.02
	done
	sent=0
	while [ -n "$r1" ] && kill -0 $mpid 2> /dev/null; do
		# pkill: no gap between finding the worker and signalling it
		if pkill -9 -P "$r1" -x az-worker-0 2> /dev/null; then
			sent=$((sent + 1))
			[ $sent -ge 2 ] && break
			sleep 0.3
		fi
	done
	wait $mpid || { cat "$T/worker.log"; fail "the run did not survive a killed worker of rank 1"; }
	grep -q "worker 0 died (signal 9)" "$T/worker.log" && break
	echo "the run ended before a worker of rank 1 was killed; again with more games"
	G=0
done
[ $G -gt 0 ] || { cat "$T/worker.log"; fail "no worker of rank 1 was killed"; }
echo "killed a worker of rank 1 in a run of $G games per iteration"
"$AZRUN" verify --out "$D" | grep -q " 0 problems" || fail "verify after killed workers"
for g in $(metric "$D" games); do
	[ "$g" -le $G ] && [ "$g" -ge $((G * 2 / 3)) ] ||
		fail "games after killed workers: $(metric "$D" games)"
done
want=$(metric "$D" positions | awk '{ n += $1 } END { print n }')
[ "$(records_of "$D")" -eq "$want" ] || fail "store holds $(records_of "$D") records, metrics $want"

step "3: rank 2 killed"
# 3. kill -9 of rank 2's azrun mid-run: the job stops within seconds, nothing is left behind.
D="$T/kill"
# --iterations 50: the job is still running when the kill lands, however fast the machine.
"${MPIRUN[@]}" -np 3 "$AZRUN" --mpi "${args[@]}" --out "$D" --iterations 50 --games-per-iter 300 \
	> "$T/kill.log" 2>&1 &
mpid=$!
for _ in $(seq 1 300); do
	grep -qs '"completed": [1-9]' "$D/state.json" && break
	sleep 0.1
done
grep -qs '"completed": [1-9]' "$D/state.json" ||
	{ cat "$T/kill.log"; fail "no iteration completed"; }
all=$(descendants $mpid)
victim=$(rank_pid $mpid 2)
[ -n "$victim" ] || fail "rank 2's azrun not found among $all"
ranks=$(for p in $all; do [ "$(ps -o comm= -p "$p" 2> /dev/null)" = azrun-mpi ] && echo "$p"; done)
kill -9 "$victim"
t0=$(date +%s%N)
wait $mpid
rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
[ "$rc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
echo "job stopped ${dt}s after the kill (mpirun status $rc)"
awk -v t="$dt" 'BEGIN { exit !(t < 15) }' || fail "the job took ${dt}s to stop"
sleep 1
for p in $all; do # zombies are dead (their new parent may not reap them in a container)
	st=$(ps -o stat= -p "$p" 2> /dev/null)
	[ -n "$st" ] && [ "${st#Z}" = "$st" ] && fail "process $p ($(ps -o comm= -p "$p")) still runs"
done
# rank 0 says why it stopped (or was stopped before it could, when mpirun killed it at once)
grep -q "mpirun\|rank 0\|aborting\|interrupted" "$T/kill.log" "$D/azrun.log" ||
	fail "no message about the stop"
"$AZRUN" verify --out "$D" > "$T/verify.log" || { cat "$T/verify.log"; fail "verify after kill"; }

step "4: resume"
# 4. --resume without MPI finishes one more iteration than the killed job completed; then over
# 2 ranks one more.
done=$(grep -o '"completed": [0-9]*' "$D/state.json" | grep -o '[0-9]*$')
n1=$((done + 1)) n2=$((done + 2))
"$AZRUN" --resume --out "$D" --iterations $n1 --quiet > "$T/resume.log" 2>&1 ||
	{ cat "$T/resume.log"; fail "resume"; }
[ "$(wc -l < "$D/metrics.jsonl")" -eq $n1 ] || fail "single-node resume: not $n1 iterations"
"${MPIRUN[@]}" -np 2 "$AZRUN" --mpi --resume --out "$D" --iterations $n2 --quiet \
	> "$T/r2.log" 2>&1 || { cat "$T/r2.log"; fail "2-rank resume"; }
[ "$(wc -l < "$D/metrics.jsonl")" -eq $n2 ] || fail "2-rank resume: not $n2 iterations"
f=$(printf '%s/replay/iter-%04d-w100.rpl' "$D" $n2)
[ -s "$f" ] || fail "2-rank resume: no games of rank 1 in iteration $n2"
"$AZRUN" verify --out "$D" | grep -q " 0 problems" || fail "verify after the resumes"
# what the killed rank left (scratch directory, segment) is removed by the next run on this node
for p in $ranks; do
	[ -z "$(scratch_left "$p")" ] || fail "scratch of $p left: $(scratch_left "$p")"
	[ -z "$(ls /dev/shm | grep "^az-$(id -u)-$p-")" ] || fail "segment of rank pid $p left"
done
echo "PASS"
