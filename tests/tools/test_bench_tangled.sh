#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of azrun --bench auto on Tangled K4: the first benchmark says it labels and
# writes the sets into OUT/bench/ once; a resume reuses them (--bench-every 2 skips iteration
# 3); the metrics lines carry bench_policy_u<K> / bench_agent_u<K> per depth and
# bench_vs_rollout, fractions counted over the sets' positions and the games; azrun status,
# report and verify and the TensorBoard events show and accept them; a failed benchmark
# leaves its iteration without keys; bad --bench combinations exit 2 before anything is
# written.
# Usage: test_bench_tangled.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
export RINGZERO_CACHE_DIR=$T/cache OPENBLAS_NUM_THREADS=1
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 8 --sims 8 --arena-games 2 --hidden 16
      --blocks 1 --quiet)
R=$T/run

"$AZRUN" --game tangled --graph 3 --out "$R" --iterations 2 --arena-threshold 0 "${tiny[@]}" \
	--bench auto --bench-positions 6 2> "$T/err1" || fail "the run failed: $(tail -3 "$T/err1")"
cp "$R/azrun.log" "$T/log1"
# K4 has 6 edges: depths round(3E/4) = 5, and 3, 4; 6 positions each.
grep -q "bench: labelling 18 Tangled positions at depths 3, 4, 5 (uncoloured edges of 6, K4)" \
	"$T/log1" || fail "no labelling line: $(cat "$T/log1")"
[ "$(grep -c 'bench: labelling' "$T/log1")" -eq 1 ] || fail "labelled more than once"
for it in 1 2; do
	grep -q "iter $it bench: best network (iteration $it), [0-9.]*s: 6 positions per depth; \
mistakes % policy/agent u3 [0-9]*/[0-9]* u4 [0-9]*/[0-9]* u5 [0-9]*/[0-9]*; vs rollout \
[0-9]*% ([0-9]*-[0-9]*-[0-9]* in 6 games)" "$T/log1" ||
		fail "no benchmark log line of iteration $it: $(cat "$T/log1")"
done
for k in 3 4 5; do
	f=$R/bench/tangled_u$k.txt
	[ -s "$f" ] || fail "no set $f"
	# the board line first (azeval refuses to judge the set on another board)
	[ "$(head -1 "$f")" = "# board: tangled graph=3;variant=free;adjudicator=table:exact" ] ||
		fail "$f: no board line: $(head -1 "$f")"
	n=$(grep -vc '^#' "$f")
	[ "$n" -ge 1 ] && [ "$n" -le 6 ] || fail "$f: $n positions, not 1-6"
	# every line: moves, value, optimal moves (the labels the mistakes are counted on)
	awk '/^#/ { next } NF != 3 || ($2 != -1 && $2 != 0 && $2 != 1) { exit 1 }' "$f" ||
		fail "$f: a line without its solved value and best moves: $(cat "$f")"
	cp "$f" "$T/u$k.before"
done
grep -qx 'tangled-bench 1 graph=K4 edges=6 positions=6 depths=3,4,5' "$R/bench/tangled_sets.txt" \
	|| fail "manifest: $(cat "$R/bench/tangled_sets.txt")"
touch -d '2000-01-01' "$R"/bench/tangled_u*.txt

# Resumed: 3 is not a multiple of --bench-every 2 (no keys), 4 is; the sets are reused.
"$AZRUN" --resume --out "$R" --iterations 4 --bench-every 2 --quiet 2> "$T/err2" ||
	fail "the resume failed: $(tail -3 "$T/err2")"
tail -n +"$(($(wc -l < "$T/log1") + 1))" "$R/azrun.log" > "$T/log2"
grep -q 'bench: labelling' "$T/log2" && fail "the resume labelled the sets again"
grep -q "iter 3 bench" "$T/log2" && fail "iteration 3 ran the benchmark with --bench-every 2"
grep -q "iter 4 bench: best network" "$T/log2" || fail "iteration 4 has no benchmark"
for k in 3 4 5; do
	cmp -s "$R/bench/tangled_u$k.txt" "$T/u$k.before" || fail "the resume changed u$k"
	[ -z "$(find "$R/bench/tangled_u$k.txt" -newer "$T/log1")" ] ||
		fail "the resume rewrote tangled_u$k.txt"
done

python3 - "$R/metrics.jsonl" "$R/bench" <<'PYEOF' || fail "metrics lines: see above"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["iteration"] for r in rows] == [1, 2, 3, 4], rows
n = {k: sum(1 for l in open("%s/tangled_u%d.txt" % (sys.argv[2], k)) if not l.startswith("#"))
     for k in (3, 4, 5)}
keys = ["bench_%s_u%d" % (w, k) for k in (3, 4, 5) for w in ("policy", "agent")]
for r in rows:
    have = [k for k in r if k.startswith("bench_") and k != "bench_s"]
    if r["iteration"] == 3:
        assert not have and "bench_s" not in r, r
        continue
    assert have == keys + ["bench_vs_rollout"], (r["iteration"], have)
    for k in keys:
        v, m = r[k], n[int(k.rsplit("_u", 1)[1])]
        assert 0 <= v <= 1 and abs(v * m - round(v * m)) < 1e-3, (k, v, m)  # counts of m
    v = r["bench_vs_rollout"]
    assert 0 <= v <= 1 and abs(v * 12 - round(v * 12)) < 1e-3, v  # half points of 6 games
    assert r["bench_s"] >= 0, r
PYEOF

n=$(grep -ao 'bench/agent/u4' "$R/tb/events.out.tfevents.ringzero" | wc -l)
[ "$n" -eq 3 ] || fail "tb/: $n bench/agent/u4 scalars, not 3"
n=$(grep -ao 'bench/vs_rollout' "$R/tb/events.out.tfevents.ringzero" | wc -l)
[ "$n" -eq 3 ] || fail "tb/: $n bench/vs_rollout scalars, not 3"
"$AZRUN" verify --out "$R" > "$T/verify" 2>&1 || fail "verify: $(cat "$T/verify")"
grep -q ' 0 problems' "$T/verify" || fail "verify did not report 0 problems: $(cat "$T/verify")"
"$AZRUN" status --out "$R" > "$T/status" || fail "azrun status failed"
pp='[0-9]+/[0-9]+'
grep -Eq "^bench: +mistakes % policy/agent u3 $pp u4 $pp u5 $pp; vs rollout [0-9]+% \(iteration 4" \
	"$T/status" || fail "status: no benchmark line: $(cat "$T/status")"
if command -v gnuplot > /dev/null; then
	"$AZRUN" report --out "$R" > "$T/report" 2>&1 || fail "report: $(cat "$T/report")"
	for p in bench_tangled bench_rollout; do
		[ -s "$R/report/$p.png" ] || fail "report: no $p.png"
	done
	[ -e "$R/report/bench_tactics.png" ] && fail "report: Connect Four's plots for Tangled"
	[ "$(grep -vc '^#' "$R/report/bench.tsv")" -eq 3 ] || fail "bench.tsv: not 3 rows"
	grep -q '^# iteration	policy_u3	policy_u4	policy_u5	agent_u3	agent_u4	agent_u5	vs_rollout' \
		"$R/report/bench.tsv" || fail "bench.tsv header: $(head -1 "$R/report/bench.tsv")"
	grep -Eq '^\| 4 \| [0-9]+/[0-9]+ \| [0-9]+/[0-9]+ \| [0-9]+/[0-9]+ \| [0-9]+ \|$' \
		"$R/report/report.md" || fail "report.md: no benchmark row of iteration 4"
fi

# A set that cannot be written again (a folder in its place, the manifest gone): the benchmark
# fails, is logged, and the iteration commits without its keys.
rm "$R/bench/tangled_u3.txt" "$R/bench/tangled_sets.txt" && mkdir "$R/bench/tangled_u3.txt"
"$AZRUN" --resume --out "$R" --iterations 5 --bench-every 1 --quiet 2> "$T/err3" \
	|| fail "a failed benchmark failed the run: $(tail -3 "$T/err3")"
grep -q 'iter 5 bench: .*; the iteration goes on without it' "$R/azrun.log" ||
	fail "the failed benchmark was not logged: $(tail -3 "$R/azrun.log")"
tail -1 "$R/metrics.jsonl" | grep -q '"iteration": 5,' || fail "iteration 5 did not commit"
tail -1 "$R/metrics.jsonl" | grep -q bench_ && fail "iteration 5 has benchmark keys"
"$AZRUN" verify --out "$R" > "$T/verify" 2>&1 || fail "verify after a failed benchmark"

# Bad combinations: one line, exit 2, nothing written.
bad() { # bad WHAT EXPECTED-TEXT ARGS... (lib.sh's refused)
	refused "$1" "$2" "$T/bad" "$AZRUN" --out "$T/bad" --iterations 1 "${tiny[@]}" "${@:3}"
}
mkdir "$T/sets"
bad "tangled with a folder" "use --bench auto" --game tangled --graph 3 --bench "$T/sets"
bad "connect4 with auto" "--bench auto: Tangled only" --game connect4 --bench auto
bad "tictactoe" "the games with an exact solver" --game tictactoe --bench auto
bad "--bench-positions 0" "--bench-positions" --game tangled --graph 3 --bench auto \
	--bench-positions 0
rc=0
"$AZRUN" --resume --out "$R" --iterations 6 --quiet --bench "$T/sets" 2> "$T/bad.err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/bad.err")" -eq 1 ] || fail "resume with a folder: exit $rc"
[ "$(wc -l < "$R/metrics.jsonl")" -eq 5 ] || fail "the refused resume ran an iteration"
echo "PASS"
