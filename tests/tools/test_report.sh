#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of azrun report's plots on a tiny run resumed once: the loss and throughput
# axes start at 0, the Elo plot starts at iteration 0, the resume point is marked in every plot,
# and the key is not in the x label's row. The axes are read back from gnuplot itself
# (GPVAL_* after each plot). Skipped (exit 77) without gnuplot.
# Usage: test_report.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
command -v gnuplot > /dev/null || { echo "SKIP: gnuplot not installed"; exit 77; }
tiny=(--game tictactoe --workers 2 --games-per-worker 4 --games-per-iter 8 --sims 8
	--arena-games 2 --seed 9 --quiet --out "$T/r")

"$AZRUN" "${tiny[@]}" --iterations 2
"$AZRUN" "${tiny[@]}" --iterations 4 --resume
"$AZRUN" report --out "$T/r" > "$T/out" || fail "azrun report: $(cat "$T/out")"
R=$T/r/report
for p in loss arena elo throughput time; do
	[ -s "$R/$p.png" ] || fail "$p.png missing"
done
# throughput.png says sims/s and the evaluation cache's hit rate beside evals/s, from data.tsv
# columns of those names that hold numbers (a cache hit rate in %).
for t in "title 'sims/s'" "title 'evals/s'" "title 'cache hits (%)'"; do
	grep -qF "$t" "$R/plots.gp" || fail "throughput.png lacks $t"
done
awk -F'\t' 'NR == 1 { ok = $16 == "sims_per_s" && $17 == "eval_cache_hit_pct"; next }
	!($16 > 0 && $17 >= 0 && $17 <= 100) { ok = 0 } END { exit !ok }' "$R/data.tsv" ||
	fail "data.tsv: sims_per_s / eval_cache_hit_pct: $(head -3 "$R/data.tsv")"
# elo.tsv opens with iteration 0 at rating 0.
[ "$(grep -v '^#' "$R/elo.tsv" | head -1)" = $'0\t0\t?' ] || fail "elo.tsv: $(head -2 "$R/elo.tsv")"
# The resume before iteration 3: a line at 2.5 (at row index 1.5 in the histogram) and a key
# entry in each of the five plots.
grep -q "^set arrow 1 from 2.5, graph 0 to 2.5, graph 1 nohead" "$R/plots.gp" \
	|| fail "no resume line at 2.5"
grep -q "^set arrow 1 from 1.5, graph 0 to 1.5, graph 1 nohead" "$R/plots.gp" \
	|| fail "no resume line in the histogram"
[ "$(grep -c "title 'resumed (--resume)'" "$R/plots.gp")" -eq 5 ] || fail "resume key missing"
! grep -Eq 'set key (outside bottom|below)' "$R/plots.gp" || fail "the key shares the x label row"
grep -q 'resumed 1 time (dashed lines in the plots)' "$R/report.md" || fail "summary: no resume"
# What gnuplot drew: print each plot's axis ranges after it.
cd "$R"
awk '{print} /^plot /{p=1} p && !/\\$/ {
	print "print sprintf(\"AXES %s %g %g\", GPVAL_OUTPUT, GPVAL_Y_MIN, GPVAL_DATA_X_MIN)"; p=0}' \
	plots.gp > check.gp
gnuplot check.gp 2> "$T/axes" || fail "gnuplot: $(cat "$T/axes")"
axis() { awk -v f="$1" -v k="$2" '$1 == "AXES" && $2 == f {print $k}' "$T/axes"; }
[ "$(axis loss.png 3)" = 0 ] || fail "loss axis starts at $(axis loss.png 3), not 0"
[ "$(axis throughput.png 3)" = 0 ] || fail "throughput axis starts at $(axis throughput.png 3)"
[ "$(axis elo.png 4)" = 0 ] || fail "the Elo plot's data start at $(axis elo.png 4), not 0"
[ "$(axis loss.png 4)" = 1 ] || fail "the loss data start at $(axis loss.png 4), not 1"
echo "report plots: all checks passed"
