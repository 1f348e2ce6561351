#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: aztangled on the spot states of TANGLED.md 4.2 (text, JSON, stdin), its
# errors (invalid states exit 2 naming the state), graph files and --help.
# Usage: test_tangled_tool.sh AZTANGLED
set -euo pipefail
AZT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OPENBLAS_NUM_THREADS=1

# Text output, K3 spot states (G2 column).
"$AZT" --graph 2 0,1,2,1,2,1 0,1,2,2,3,2 0,1,2,3,3,3 > "$T/k3.txt"
[ "$(wc -l < "$T/k3.txt")" -eq 3 ] || fail "expected 3 lines: $(cat "$T/k3.txt")"
grep -q '^0,1,2,1,2,1  winner=blue  score=-0.999' "$T/k3.txt" ||
	fail "K3 blue spot: $(cat "$T/k3.txt")"
grep -q '^0,1,2,2,3,2  winner=red  score=+0.666' "$T/k3.txt" || fail "K3 red spot"
grep -q '^0,1,2,3,3,3  winner=draw' "$T/k3.txt" || fail "K3 draw spot"

# JSON, K4 spot states from stdin (blank and comment lines skipped).
printf '# K4 spots\n0,0,1,2,1,1,2,1,2,3\n\n[0, 0, 1, 2, 3, 2, 3, 2, 3, 2]\n' |
	"$AZT" --graph 3 --json > "$T/k4.json"
python3 - "$T/k4.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
for r in rows:
    assert set(r) == {"state", "winner", "score", "influence"}, r
    assert len(r["state"]) == 10 and len(r["influence"]) == 4, r
a, b = rows
assert a["state"] == [0, 0, 1, 2, 1, 1, 2, 1, 2, 3]
assert a["winner"] == "blue" and abs(a["score"] + 3.8935) < 1e-3, a
assert all(abs(x - y) < 1e-3 for x, y in zip(a["influence"], [0.9823, 0.9823, -2.9113, 0.9823])), a
assert b["winner"] == "red" and abs(b["score"] - 1.3331) < 1e-3, b
PY

# The other methods agree on the winner; anneal is reproducible from its seed.
"$AZT" --graph 3 --adjudicator exact-krylov --json 0,0,1,2,1,2,3,2,3,2 > "$T/kr"
grep -q '"winner": "red"' "$T/kr" || fail "krylov winner"
"$AZT" --graph 3 --adjudicator anneal --seed 5 0,0,1,2,1,2,3,2,3,2 > "$T/sa1"
"$AZT" --graph 3 --adjudicator anneal --seed 5 0,0,1,2,1,2,3,2,3,2 > "$T/sa2"
cmp -s "$T/sa1" "$T/sa2" || fail "anneal not reproducible"
grep -q 'winner=red' "$T/sa1" || fail "anneal winner: $(cat "$T/sa1")"
# A wider draw band turns the win into a draw.
"$AZT" --graph 3 --epsilon 2 0,0,1,2,3,2,3,2,3,2 >"$T/eps" || fail "--epsilon exited non-zero"
grep -q 'winner=draw' "$T/eps" || fail "--epsilon"

# Invalid states: named on stderr, exit 2, valid ones still adjudicated.
set +e
"$AZT" --graph 2 0,1,2,1,2 0,1,2,1,0,1 0,1,2,1,2,7 0,1,2,1,2,1 > "$T/out" 2> "$T/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "invalid states: exit $rc, want 2"
grep -q "invalid state '0,1,2,1,2'.*expected 6 entries" "$T/err" || fail "length: $(cat "$T/err")"
grep -q "invalid state '0,1,2,1,0,1'.*not terminal" "$T/err" || fail "not terminal"
grep -q "invalid state '0,1,2,1,2,7'.*edge 1-2.*7" "$T/err" || fail "range"
[ "$(wc -l < "$T/out")" -eq 1 ] || fail "the valid state was not adjudicated"

# A graph file (a triangle written out of order) behaves as K3.
printf '# triangle\n1-2\n0 2\n0-1\n' > "$T/tri.txt"
"$AZT" --graph-file "$T/tri.txt" 0,1,2,1,2,1 >"$T/gf" || fail "graph file exited non-zero"
grep -q 'winner=blue' "$T/gf" || fail "graph file"
printf '0-1\n1-1\n' > "$T/bad.txt"
if "$AZT" --graph-file "$T/bad.txt" 0,1,1 2> "$T/err"; then fail "bad graph file accepted"; fi
grep -q "bad.txt:2: self-loop 1-1" "$T/err" || fail "graph file error: $(cat "$T/err")"
# Unknown graph, method too small for the graph: clear errors.
if "$AZT" --graph 13 0 2> "$T/err"; then fail "graph 13 accepted"; fi
grep -q "unknown Tangled graph 13" "$T/err" || fail "graph 13 message"
if "$AZT" --graph 6 --adjudicator exact 0 2> "$T/err"; then fail "exact on 16 vertices"; fi
grep -q "at most 12 vertices" "$T/err" || fail "size message: $(cat "$T/err")"
# A schedule file with the annealer (which has none) is refused, not silently unused.
printf '0 1 0\n' > "$T/sched.txt"
if "$AZT" --graph 3 --adjudicator anneal --schedule "$T/sched.txt" 0,1,2,1,2,1 2> "$T/err"; then
	fail "--schedule accepted with the annealer"
fi
grep -q "applies to the exact adjudicators" "$T/err" || fail "schedule message: $(cat "$T/err")"

# --help documents the options.
"$AZT" --help > "$T/help"
for k in --graph --graph-file --adjudicator exact-krylov anneal --epsilon --json --reads --sweeps \
	--seed --schedule; do
	grep -q -- "$k" "$T/help" || fail "--help lacks $k"
done

# A bad option: one line of aztangled's own (not getopt's two), exit 2.
rc=0; "$AZT" --bogus > /dev/null 2> "$T/bad.err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/bad.err")" -eq 1 ] &&
	grep -q "^aztangled: unknown option '--bogus'" "$T/bad.err" ||
	fail "unknown option: exit $rc, $(cat "$T/bad.err")"
rc=0; "$AZT" --graph > /dev/null 2> "$T/bad.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "^aztangled: --graph needs a value N" "$T/bad.err" ||
	fail "missing value: exit $rc, $(cat "$T/bad.err")"
# aztangled table: the barbell's 56 canonical colourings into a file, then found as built; a
# graph too large for a complete table is refused.
"$AZT" table --graph 19 --adjudicator anneal --reads 20 --sweeps 4 --workers 2 --quiet \
	--cache-dir "$T/cache" > "$T/table.txt"
grep -q '2187 colourings, 56 canonical (8 automorphisms.*table:anneal.*(56 evaluated).*bytes' \
	"$T/table.txt" || fail "table: $(cat "$T/table.txt")"
ls "$T"/cache/tangled-g19-anneal-*.table > /dev/null || fail "no table file"
"$AZT" table --graph 19 --adjudicator anneal --reads 20 --sweeps 4 --quiet \
	--cache-dir "$T/cache" > "$T/table2.txt"
grep -q '(0 evaluated, already built)' "$T/table2.txt" || fail "rebuilt: $(cat "$T/table2.txt")"
set +e
"$AZT" table --graph 6 --cache-dir "$T/cache" 2> "$T/err"
[ $? -eq 2 ] || fail "tesseract table should exit 2"
set -e
grep -q 'up to 16' "$T/err" || fail "tesseract: $(cat "$T/err")"
echo "aztangled integration test passed"
