#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of azrun --bench: a tiny Connect Four run benchmarked on a small folder of
# lines copied from Pascal Pons' sets; the metrics lines carry the keys (fractions in [0, 1]),
# a resume with --bench-every 2 writes lines without them, an unchanged best network repeats
# its results, azrun status / report / verify show and accept them; a failed benchmark leaves
# its iteration without the keys; a bad --bench is one line and exit 2 before anything is
# written.
# Usage: test_bench.sh AZRUN SHARED (skips, exit 77, without SHARED/data/connect4)
set -euo pipefail
AZRUN=$1 SHARED=$2
. "$(dirname "$0")/lib.sh"
D=$SHARED/data/connect4
[ -r "$D/Test_L3_R1" ] && [ -r "$D/Test_L2_R1" ] || { echo "SKIP: no $D"; exit 77; }

# Late positions only (they solve in milliseconds), five per file.
B=$T/bench
mkdir "$B"
sed -n 1,5p "$D/Test_L3_R1" > "$B/Test_L1_R1"
sed -n 6,10p "$D/Test_L3_R1" > "$B/Test_L1_R2"
sed -n 11,15p "$D/Test_L3_R1" > "$B/Test_L1_R3"
sed -n 1,5p "$D/Test_L2_R1" > "$B/Test_L2_R1"
sed -n 6,10p "$D/Test_L2_R1" > "$B/Test_L2_R2"
sed -n 16,20p "$D/Test_L3_R1" > "$B/Test_L3_R1"
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 8 --sims 8 --arena-games 2 --hidden 16
      --blocks 1 --quiet)
R=$T/run

# Two iterations, every candidate promoted: each benchmark measures a new network.
"$AZRUN" --game connect4 --out "$R" --iterations 2 --arena-threshold 0 "${tiny[@]}" \
	--bench "$B" --bench-positions 5 2> "$T/err1" || fail "the run failed: $(tail -3 "$T/err1")"
cp "$R/azrun.log" "$T/log1"
for it in 1 2; do
	grep -q "iter $it bench: best network (iteration $it), [0-9.]*s: 5 positions per set" \
		"$T/log1" || fail "no benchmark log line of iteration $it: $(cat "$T/log1")"
done
[ -s "$R/bench/tactic_win1.txt" ] && [ -s "$R/bench/tactic_block.txt" ] \
	|| fail "the tactical sets were not written into the run directory"
[ "$(wc -l < "$R/bench/tactic_win1.txt")" -eq 5 ] || fail "tactic_win1.txt: not 5 positions"
for s in L1_R1 L1_R2 L1_R3 L2_R1 L2_R2 L3_R1; do
	[ "$(wc -l < "$R/bench/Test_$s.labels")" -eq 5 ] || fail "no labels cache for $s"
	grep -q '?' "$R/bench/Test_$s.labels" && fail "$s: unsolved moves left in the labels"
done
cp "$R/bench/Test_L1_R1.labels" "$T/labels.before"
# The first benchmark's labelling is logged (minutes with no line before), once per run.
grep -q "bench: labelling 5 positions of each of Pons' 6 sets with the exact solver" "$T/log1" ||
	fail "the first benchmark's labelling is not logged: $(cat "$T/log1")"
grep -q "bench: labelled Pons' sets; this benchmark took [0-9.]* s, labelling included" \
	"$T/log1" || fail "the labelling's end is not logged: $(cat "$T/log1")"
[ "$(grep -c "bench: labelling" "$T/log1")" -eq 1 ] || fail "labelling logged twice"

# Resumed: iteration 3 is not a multiple of --bench-every 2 (no keys), 4 is; then every
# iteration, with promotion all but impossible: an unchanged best network repeats its results.
"$AZRUN" --resume --out "$R" --iterations 4 --bench-every 2 --arena-threshold 1 --quiet \
	2> "$T/err2" || fail "the resume failed: $(tail -3 "$T/err2")"
tail -n +"$(($(wc -l < "$T/log1") + 1))" "$R/azrun.log" > "$T/log2"
grep -q "iter 3 bench" "$T/log2" && fail "iteration 3 ran the benchmark with --bench-every 2"
grep -q "bench: labelling" "$T/log2" && fail "a resumed run labelled again: $(cat "$T/log2")"
grep -q "iter 4 bench: best network" "$T/log2" || fail "iteration 4 has no benchmark"
"$AZRUN" --resume --out "$R" --iterations 6 --bench-every 1 --arena-games 10 --quiet 2> "$T/err3" \
	|| fail "the second resume failed: $(tail -3 "$T/err3")"
cp "$R/azrun.log" "$T/log3"
cmp -s "$R/bench/Test_L1_R1.labels" "$T/labels.before" \
	|| fail "a later benchmark changed the labels (solved once per run)"

python3 - "$R/metrics.jsonl" "$T/log3" <<'EOF' || fail "metrics lines: see above"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["iteration"] for r in rows] == [1, 2, 3, 4, 5, 6], rows
sets = ["L1_R1", "L1_R2", "L1_R3", "L2_R1", "L2_R2", "L3_R1", "win1", "block"]
keys = ["bench_%s_%s" % (w, s) for s in sets for w in ("policy", "agent")]
for r in rows:
    have = [k for k in keys if k in r]
    if r["iteration"] == 3:
        assert not have and "bench_s" not in r, r
        continue
    assert have == keys, (r["iteration"], have)
    for k in keys:
        v = r[k]
        assert 0 <= v <= 1 and abs(v * 5 - round(v * 5)) < 1e-9, (k, v)  # counts of 5
    assert r["bench_s"] >= 0, r
# Iteration 6 with the best network of iteration 5: the same results, logged as repeated.
log = open(sys.argv[2]).read()
if rows[5]["best_iteration"] == rows[4]["best_iteration"]:
    assert "iter 6 bench: best network unchanged (iteration %d)" % rows[5]["best_iteration"] \
        in log, log
    assert all(rows[5][k] == rows[4][k] for k in keys)
    print("iteration 6 repeated the benchmark of iteration 5")
EOF

# TensorBoard scalars of the five benchmarked iterations (run/tbevents.c).
n=$(grep -ao 'bench/agent/L1_R1' "$R/tb/events.out.tfevents.ringzero" | wc -l)
[ "$n" -eq 5 ] || fail "tb/: $n bench/agent/L1_R1 scalars, not 5"
"$AZRUN" verify --out "$R" > "$T/verify" 2>&1 || fail "verify: $(cat "$T/verify")"
grep -q ' 0 problems' "$T/verify" || fail "verify did not report 0 problems: $(cat "$T/verify")"
"$AZRUN" status --out "$R" > "$T/status" || fail "azrun status failed"
grep -Eq '^bench: +mistakes % policy/agent L1_R1 [0-9]+/[0-9]+ .* L3_R1 [0-9]+/[0-9]+$' \
	"$T/status" || fail "status: no benchmark line: $(cat "$T/status")"
grep -Eq '^ +tactics % policy/agent win1 [0-9]+/[0-9]+ block [0-9]+/[0-9]+ \(iteration 6' \
	"$T/status" || fail "status: no tactics line: $(cat "$T/status")"
# the network measured: iteration 6's best, named when it is an older one
b6=$(sed -n 6p "$R/metrics.jsonl" | grep -o '"best_iteration": [0-9]*' | grep -o '[0-9]*$')
if [ "$b6" -ne 6 ]; then
	grep -q "(iteration 6: the best network, of iteration $b6, " "$T/status" ||
		fail "status: the measured network (iteration $b6) not named: $(cat "$T/status")"
else
	grep -q "(iteration 6, " "$T/status" || fail "status: $(cat "$T/status")"
fi
if command -v gnuplot > /dev/null; then
	"$AZRUN" report --out "$R" > "$T/report" 2>&1 || fail "report: $(cat "$T/report")"
	for p in bench_agent bench_policy bench_tactics; do
		[ -s "$R/report/$p.png" ] || fail "report: no $p.png"
	done
	# bench.tsv: the five benchmarked iterations, 16 columns of percentages after the first.
	[ "$(grep -vc '^#' "$R/report/bench.tsv")" -eq 5 ] || fail "bench.tsv: not 5 rows"
	grep -q '^## Benchmark' "$R/report/report.md" || fail "report.md: no benchmark table"
	# time.png stacks the benchmark's seconds with the phases' (it left them out).
	grep -q "D using (valid(15) ? \$15 : 0) title 'benchmark'" "$R/report/plots.gp" ||
		fail "time.png leaves the benchmark out: $(grep -A3 time.png "$R/report/plots.gp")"
	head -1 "$R/report/data.tsv" | awk -F'\t' '{exit $15 != "bench_s"}' || fail "data.tsv: no bench_s column"
	grep -q "^- Time: self-play .*, benchmark [0-9]" "$R/report/report.md" ||
		fail "report.md: no benchmark time: $(grep Time: "$R/report/report.md")"
	grep -Eq '^\| 6 \| [0-9]+/[0-9]+ \|' "$R/report/report.md" \
		|| fail "report.md: no benchmark row of iteration 6"
fi

# A benchmark that fails (its folder in the run directory is a file) is logged and the
# iteration commits without its keys.
mv "$R/bench" "$T/bench.saved" && echo x > "$R/bench"
"$AZRUN" --resume --out "$R" --iterations 7 --quiet 2> "$T/err4" \
	|| fail "a failed benchmark failed the run: $(tail -3 "$T/err4")"
grep -q 'iter 7 bench: Test_L1_R1: cannot write .*; the iteration goes on without it' \
	"$R/azrun.log" || fail "the failed benchmark was not logged: $(tail -3 "$R/azrun.log")"
tail -1 "$R/metrics.jsonl" | grep -q '"iteration": 7,' || fail "iteration 7 did not commit"
tail -1 "$R/metrics.jsonl" | grep -q bench_ && fail "iteration 7 has benchmark keys"
"$AZRUN" verify --out "$R" > "$T/verify" 2>&1 || fail "verify after a failed benchmark"

# Bad --bench: one line, exit 2, nothing written.
bad() { # bad WHAT EXPECTED-TEXT ARGS... (lib.sh's refused)
	refused "$1" "$2" "$T/bad" "$AZRUN" --out "$T/bad" --iterations 1 "${tiny[@]}" "${@:3}"
}
bad "a missing folder" "--bench $T/none: No such file" --game connect4 --bench "$T/none"
mkdir "$T/part" && cp "$B"/Test_L1_* "$T/part/"
bad "a folder without Test_L2_R1" "Test_L2_R1" --game connect4 --bench "$T/part"
bad "another game" "the games with an exact solver" --game tictactoe --bench "$B"
bad "--bench-positions 0" "--bench-positions" --game connect4 --bench "$B" --bench-positions 0
# The sets moved after the run saved their path: a resume is refused, saying how to go on.
mv "$B" "$T/moved"
rc=0
"$AZRUN" --resume --out "$R" --iterations 8 --quiet 2> "$T/moved.err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/moved.err")" -eq 1 ] &&
	grep -q 'on --resume, --bench DIR names the sets anew and --bench "" turns' "$T/moved.err" ||
	fail "a resume with moved sets: exit $rc, $(cat "$T/moved.err")"
"$AZRUN" --resume --out "$R" --iterations 8 --quiet --bench "$T/moved" 2> "$T/moved.err" ||
	fail "a resume naming the moved sets failed: $(tail -3 "$T/moved.err")"
echo "PASS"
