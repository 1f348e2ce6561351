#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test (issue 23): the arena's results by colour and its distinct games, in
# metrics.jsonl, the log and azrun status. A greedy arena (--arena-temp-plies 0) repeats games;
# azrun says so.
# Usage: test_arena_stats.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"

"$AZRUN" --game tictactoe --out "$T/a" --iterations 2 --seed 3 --workers 2 --games-per-worker 4 \
	--games-per-iter 12 --sims 12 --arena-games 8 --arena-temp-plies 0 2> "$T/log"
python3 - "$T/a/metrics.jsonl" "$T/log" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
log = open(sys.argv[2]).read()
assert len(rows) == 2, rows
for r in rows:
    for x in ("wins", "draws", "losses"):
        assert r["arena_first_" + x] + r["arena_second_" + x] == r["arena_" + x], r
    # colours alternate: 4 games each
    assert sum(r["arena_first_" + x] for x in ("wins", "draws", "losses")) == 4, r
    assert sum(r["arena_second_" + x] for x in ("wins", "draws", "losses")) == 4, r
    d = r["arena_distinct_games"]
    assert 2 <= d <= 8, r
    it = r["iteration"]
    # azrun warns when fewer than half of the games are distinct (run/loop.c): 4 of 8 is not
    # yet a warning (the test asked for d < 8 and failed whenever 4-7 games differed)
    warned = re.search(r"warning: iter %d arena: %d of 8 games repeat" % (it, 8 - d), log)
    assert bool(warned) == (2 * d < 8), (r, log)
    assert ("iter %d arena:" % it) in log and "moving first" in log, log
# greedy play with the same two networks: at most one game per colour and tie-break draw
assert any(r["arena_distinct_games"] < 8 for r in rows), rows
PY
"$AZRUN" status "$T/a" > "$T/status"
grep -q "first   second  distinct" "$T/status" || fail "azrun status lacks the colour columns"
last=$(tail -n 1 "$T/a/metrics.jsonl")
d=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["arena_distinct_games"])' "$last")
grep -Eq "^ +2 .* $d\$" "$T/status" || fail "azrun status: no distinct count $d: $(cat "$T/status")"
echo "ok"
