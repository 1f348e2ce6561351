#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# azbench's output paths and terminal output: --csv and --plot are checked before anything is
# measured (bad paths: exit 2 at once, one line naming the path); `azbench ring`'s table fits
# 100 columns while --csv keeps every column; its progress does not flood stderr (a few lines
# into a file, one redrawn line on a terminal); the pipeline table and CSV agree; pipeline.png's
# key says what G is.
# Usage: test_azbench_output.sh AZBENCH
set -euo pipefail
AZBENCH=$1
. "$(dirname "$0")/lib.sh"
mkdir "$T/tmp" "$T/adir"
export TMPDIR="$T/tmp"

# Bad output paths: refused before the measurement (well under the --seconds budget).
bad() { # EXPECTED-TEXT ARGS...
	local want=$1; shift
	local t0=$SECONDS rc=0
	"$AZBENCH" "$@" --seconds 30 > "$T/out" 2> "$T/err" || rc=$?
	[ $rc -eq 2 ] || fail "azbench $*: exit $rc, want 2"
	[ $((SECONDS - t0)) -le 3 ] || fail "azbench $*: measured before refusing the path"
	[ ! -s "$T/out" ] || fail "azbench $*: printed results: $(head -2 "$T/out")"
	[ "$(wc -l < "$T/err")" -eq 1 ] || fail "azbench $*: not one line: $(cat "$T/err")"
	grep -q -- "$want" "$T/err" || fail "azbench $*: '$(cat "$T/err")' lacks '$want'"
}
bad "directory $T/nope does not exist" ring --csv "$T/nope/r.csv"
bad "directory $T/nope does not exist" infer --plot "$T/nope/i.png"
bad "is a directory" pipeline --csv "$T/adir"
bad "cannot create files in /proc" train --csv /proc/azbench-test.csv
[ -z "$(ls -A "$T/adir")" ] || fail "a probe file was left behind: $(ls -A "$T/adir")"

# The ring table within 100 columns, the CSV with all of them; ~10 progress lines at most.
ring=(ring --seconds 4 --producers 1 --capacities 16,256 --slots 64,512 --batches 1,16
	--transports ring,pipe --placement same --default-runs 0)
"$AZBENCH" "${ring[@]}" --csv "$T/ring.csv" > "$T/table" 2> "$T/progress"
awk -v f="$T/table" 'length > 100 { print "FAIL: " f ":" NR " is " length " columns"; bad = 1 }
	END { exit bad }' "$T/table" >&2 || fail "the ring table is wider than 100 columns"
head -1 "$T/table" | grep -q '^transport  place  P  cap' || fail "header: $(head -1 "$T/table")"
grep -q 'columns shown; --csv FILE or --json has them all' "$T/table" || fail "no column note"
head -1 "$T/ring.csv" | tr ',' '\n' | grep -qx rtt_p999_ns || fail "the CSV lost columns"
n=$(grep -c '^\[' "$T/progress")
[ "$n" -ge 2 ] && [ "$n" -le 11 ] || fail "$n progress lines for 20 configurations"
grep -q '^\[ *20/20\]' "$T/progress" || fail "the last configuration is not reported"
if command -v script > /dev/null; then
	script -qec "'$AZBENCH' ${ring[*]} > '$T/table2'" /dev/null > "$T/tty" < /dev/null
	# One line redrawn in place ("\r[ 7/20] ..." again and again), not 20 lines.
	[ "$(tr -d '\n' < "$T/tty" | grep -o $'\r\\[ *[0-9]*/20\\]' | wc -l)" -ge 20 ] \
		|| fail "no redrawn progress line"
	[ "$(grep -c '/20\]' "$T/tty")" -le 2 ] || fail "progress lines on a terminal: $(cat "$T/tty")"
fi

# --seconds is the whole budget, the pipeline runs against azrun's defaults included (a 10 s
# budget took 18.5 s: the runs came after it); three runs asked, fewer and shorter ones fit.
t0=$(date +%s.%N)
"$AZBENCH" ring --seconds 5 --producers 1 --capacities 16 --slots 64 --batches 1 \
	--transports ring --placement same --default-runs 3 > "$T/rtable" 2> "$T/rprogress" ||
	fail "ring --seconds 5 --default-runs 3: $(cat "$T/rprogress")"
secs=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$(echo "$secs <= 7" | bc)" -eq 1 ] || fail "ring --seconds 5 took $secs s"
grep -q "run 1 of [12]$" "$T/rprogress" || fail "no pipeline run within --seconds 5: \
$(cat "$T/rprogress")"
tr -d '\n' < "$T/rtable" | tr -s ' ' | grep -q "medians of [12] alternated runs" ||
	fail "ring recommendation: $(sed -n '/recommendation/,$p' "$T/rtable")"
# A budget with no time left for even one run says so instead of overrunning.
"$AZBENCH" ring --seconds 2 --producers 1 --capacities 16 --slots 64 --batches 1 \
	--transports ring --placement same --default-runs 3 > "$T/rtable" 2> "$T/rprogress"
tr -d '\n' < "$T/rtable" | tr -s ' ' | grep -q "too short to measure it against azrun's defaults \
(--ring-capacity 256 --max-batch 0 --batch-deadline-us 200) in the pipeline (--seconds 4 or more" ||
	fail "ring --seconds 2: $(sed -n '/recommendation/,$p' "$T/rtable")"

# The pipeline table and its --csv have the same columns, in the same order, and the same rows;
# pipeline.png's key says "G=4 games per worker": a gnuplot first in PATH keeps the script that
# azbench hands it, then runs the real one.
pipe=(pipeline --game tictactoe --workers 1 --games-per-worker 4 --seconds 3 --phases 0
	--default-runs 2 --csv "$T/p.csv")
if GNUPLOT=$(command -v gnuplot); then
	mkdir "$T/bin"
	printf '#!/bin/sh\ncp "$1" "%s/plot.gp"\nexec "%s" "$@"\n' "$T" "$GNUPLOT" > "$T/bin/gnuplot"
	chmod +x "$T/bin/gnuplot"
	PATH="$T/bin:$PATH" "$AZBENCH" "${pipe[@]}" --quiet --plot "$T/p.png" > "$T/ptable"
	[ "$(head -c 4 "$T/p.png" | od -An -tx1 | tr -d ' \n')" = 89504e47 ] || fail "no PNG"
	grep -q "title 'tictactoe, G=4 games per worker'" "$T/plot.gp" \
		|| fail "pipeline.png key: $(grep -o "title '[^']*'" "$T/plot.gp")"
else
	"$AZBENCH" "${pipe[@]}" --quiet > "$T/ptable"
fi
head -1 "$T/ptable" | tr -s ' ' '\n' | sed '/^$/d' > "$T/tcols"
head -1 "$T/p.csv" | tr ',' '\n' > "$T/ccols"
cmp -s "$T/tcols" "$T/ccols" || fail "table and CSV columns differ: $(paste -sd' ' "$T/tcols") \
vs $(paste -sd' ' "$T/ccols")"
grep -qx limit_evals_per_s "$T/ccols" || fail "no machine limit column"
# serial, 2 x defaults, 1 pipeline row in both.
[ "$(grep -c '^tictactoe ' "$T/ptable")" -eq 4 ] || fail "table rows: $(cat "$T/ptable")"
[ "$(grep -c '^tictactoe,' "$T/p.csv")" -eq 4 ] || fail "CSV rows: $(cat "$T/p.csv")"
awk '$1 == "tictactoe" && $4 == "defaults"' "$T/ptable" > "$T/tdef"
[ "$(wc -l < "$T/tdef")" -eq 2 ] || fail "defaults rows: $(cat "$T/ptable")"
echo "azbench output: all checks passed"
