#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the real azrun and azeval binaries on tiny settings.
# Usage: test_azrun.sh AZRUN AZEVAL SHARED_DIR
set -euo pipefail
AZRUN=$1 AZEVAL=$2 SHARED=$3
. "$(dirname "$0")/lib.sh"
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 12 --sims 12 --arena-games 4 --quiet)

# A two-iteration tic-tac-toe run.
"$AZRUN" --game tictactoe --out "$T/ttt" --iterations 2 --seed 3 "${tiny[@]}" 2> "$T/log1"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 2 ] || fail "metrics.jsonl should have 2 lines"
for k in iteration games positions policy_loss value_loss arena_score promoted evals_per_s \
	mean_batch selfplay_s train_s arena_s arena_evals_per_s eval_cache_hit_rate; do
	grep -q "\"$k\"" "$T/ttt/metrics.jsonl" || fail "metrics.jsonl lacks $k"
done
python3 - "$T/ttt/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["iteration"] for r in rows] == [1, 2], rows
for r in rows:
    assert r["games"] == 12, r
    assert r["positions"] >= 12 * 5, r          # a tic-tac-toe game lasts 5..9 plies
    assert r["evals_per_s"] > 0 and r["mean_batch"] >= 1, r
    assert r["arena_evals_per_s"] > 0, r
    assert 0 <= r["arena_score"] <= 1, r
    # every game starts from the same position: the cache answers some leaves, not all
    assert 0 < r["eval_cache_hit_rate"] < 1, r
PY
"$AZRUN" status "$T/ttt" | grep -q "^eval cache: " || fail "azrun status lacks the cache line"
# Issue 23: each record's policy marks exactly the occupied cells illegal (-0.0f, the legal mask
# of train/replay.h): record = features[18], policy[9], z, info, crc after a 32-byte header.
python3 - "$T"/ttt/replay/*.rpl <<'PY'
import math, struct, sys
D, A = 18, 9
size = (D + A + 1) * 4 + 8
marked = 0
for path in sys.argv[1:]:
    b = open(path, "rb").read()
    for off in range(32, len(b) - size + 1, size):
        rec = struct.unpack_from("<%df" % (D + A), b, off)
        for c in range(A):
            taken = rec[c] != 0 or rec[A + c] != 0
            illegal = math.copysign(1.0, rec[D + c]) < 0
            assert taken == illegal, (path, off, rec)
            marked += illegal
assert marked > 0, "no illegal move marked"
PY
[ -s "$T/ttt/best.safetensors" ] || fail "no best.safetensors"
[ -s "$T/ttt/checkpoints/iter-0002.safetensors" ] || fail "no iteration checkpoint"
ls "$T/ttt/replay/"iter-0001-w0[01].rpl > /dev/null || fail "no replay segments"
grep -q '"completed": 2' "$T/ttt/state.json" || fail "state.json not at iteration 2"

# Starting again in the same directory without --resume is refused; --resume continues.
if "$AZRUN" --game tictactoe --out "$T/ttt" --iterations 3 --quiet 2> "$T/log2"; then
	fail "azrun reused a run directory without --resume"
fi
grep -q -- "--resume" "$T/log2" || fail "refusal does not mention --resume"
"$AZRUN" --resume --out "$T/ttt" --iterations 3 --quiet 2> "$T/log3"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 3 ] || fail "resume did not add iteration 3"
grep -Eq '"games-per-iter":[[:space:]]*"12"' "$T/ttt/run.json" || fail "resume lost the saved configuration"
if "$AZRUN" --resume --out "$T/ttt" --game connect4 --quiet 2> /dev/null; then
	fail "resume accepted a different game"
fi

# A run from a config file; resume reuses the saved configuration and refuses a new architecture.
printf '[azrun]\ngame = tictactoe\niterations = 1\nsims = 10\ngames-per-iter = 8\n' > "$T/run.ini"
"$AZRUN" --config "$T/run.ini" --out "$T/cfg" --workers 1 --games-per-worker 4 --arena-games 2 \
	--quiet 2> /dev/null
grep -Eq '"sims":[[:space:]]*"10"' "$T/cfg/run.json" || fail "config file value not used"
"$AZRUN" --resume --out "$T/cfg" --iterations 2 --quiet 2> /dev/null
[ "$(wc -l < "$T/cfg/metrics.jsonl")" -eq 2 ] || fail "resume of a config-file run failed"
grep -Eq '"sims":[[:space:]]*"10"' "$T/cfg/run.json" || fail "resume lost the config values"
printf 'hidden = 16\n' > "$T/arch.ini"
set +e
"$AZRUN" --resume --out "$T/cfg" --config "$T/arch.ini" --iterations 3 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "cannot change" "$T/err" || fail "resume accepted a new architecture"
"$AZRUN" verify --out "$T/ttt" > /dev/null || fail "azrun verify found damage in a clean run"

# One azrun per run directory: a second one is refused while the first runs.
"$AZRUN" --game tictactoe --out "$T/busy" --iterations 50 "${tiny[@]}" 2> /dev/null &
busy=$!
for w in $(seq 1 100); do [ -s "$T/busy/state.json" ] && break; sleep 0.1; done
set +e
"$AZRUN" --resume --out "$T/busy" --iterations 60 --quiet 2> "$T/err"; rc=$?
set -e
kill -INT $busy; wait $busy || true
[ $rc -eq 2 ] && grep -q "in use by another azrun" "$T/err" || fail "two azruns shared a run"

# Bad input: clear error, exit 2.
set +e
"$AZRUN" --game chess --out "$T/x" 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "unknown game" "$T/err" || fail "unknown game not rejected (rc $rc)"
set +e
"$AZRUN" --game tictactoe --out "$T/x" --ring-capacity 48 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "power of two" "$T/err" || fail "bad ring capacity not rejected"
"$AZRUN" --help >"$T/help" || fail "--help exited non-zero"
grep -q -- "--games-per-worker" "$T/help" || fail "--help lacks options"
grep -qF -- "$(dirname "$AZRUN")" "$T/help" && fail "--help names the build path"
grep -q "^Usage: azrun " "$T/help" || fail "--help usage line does not name azrun"

# azeval: the exact labels and both evaluation modes.
"$AZEVAL" --game tictactoe --write-labelled "$T/ttt.txt" 2> /dev/null
[ "$(wc -l < "$T/ttt.txt")" -eq 4520 ] || fail "expected 4520 labelled positions"
grep -q '^- 0 ' "$T/ttt.txt" || fail "start position should be labelled a draw"
"$AZEVAL" --game tictactoe --checkpoint "$T/ttt/best.safetensors" --positions "$T/ttt.txt" \
	--sims 0 --json > "$T/e0.json"
"$AZEVAL" --game tictactoe --checkpoint "$T/ttt/best.safetensors" --positions "$T/ttt.txt" \
	--sims 8 --json > "$T/e8.json"
python3 - "$T/e0.json" "$T/e8.json" <<'PY'
import json, sys
for p in sys.argv[1:]:
    r = json.load(open(p))
    assert r["positions"] == 4520, r
    assert 0 < r["move_accuracy"] <= 1 and 0 <= r["value_sign_accuracy"] <= 1, r
PY
# Without --game, azeval plays the checkpoint's game; '#' lines are comments; without a draw
# band the headline value accuracy scores decisive positions only (a draw cannot be predicted).
printf '# comment\n- 0\n  # indented comment\n1 0\n15 1\n152 -1\n' > "$T/mixed.txt"
"$AZEVAL" --checkpoint "$T/ttt/best.safetensors" --positions "$T/mixed.txt" --json > "$T/m0.json"
"$AZEVAL" --checkpoint "$T/ttt/best.safetensors" --positions "$T/mixed.txt" --json \
	--draw-band 0.5 > "$T/m5.json"
python3 - "$T/m0.json" "$T/m5.json" <<'PY'
import json, sys
r0, r5 = (json.load(open(p)) for p in sys.argv[1:])
assert r0["positions"] == 4 and r0["value_scored"] == 2, r0
assert r0["value_sign_accuracy"] == r0["decisive_sign_accuracy"], r0
assert r5["positions"] == 4 and r5["value_scored"] == 4, r5
PY
# Only draws labelled, no draw band: the table says why nothing is scored, not "no labels".
printf '1 0 5\n' > "$T/draw.txt"
"$AZEVAL" --checkpoint "$T/ttt/best.safetensors" --positions "$T/draw.txt" --sims 0 \
	2> /dev/null > "$T/draw.out" || fail "azeval on a draw"
grep -q "^$T/draw.txt: 1 position, 0 simulations per move" "$T/draw.out" &&
	grep -q "^value_sign_accuracy *n/a (only draws labelled: they are scored with --draw-band X)" \
		"$T/draw.out" || fail "azeval on a draw: $(cat "$T/draw.out")"
for vs in random rollout; do
	"$AZEVAL" --game tictactoe --checkpoint "$T/ttt/best.safetensors" --vs $vs --games 4 \
		--sims 4 --json > "$T/vs.json"
	python3 - "$T/vs.json" $vs <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["opponent"] == sys.argv[2] and r["games"] == 4, r
assert r["wins"] + r["draws"] + r["losses"] == 4, r
PY
done
# A corrupt checkpoint is refused with a message.
head -c 300 "$T/ttt/best.safetensors" > "$T/bad.safetensors"
if "$AZEVAL" --game tictactoe --checkpoint "$T/bad.safetensors" --positions "$T/ttt.txt" \
	2> "$T/err"; then
	fail "azeval accepted a truncated checkpoint"
fi
grep -q "bad.safetensors" "$T/err" || fail "error does not name the file"

# Connect Four end to end, one tiny iteration, and the benchmark positions load.
# --eval-cache-mb 0: no cache, no hits.
"$AZRUN" --game connect4 --out "$T/c4" --iterations 1 --hidden 32 --blocks 1 "${tiny[@]}" \
	--eval-cache-mb 0 2> "$T/log4"
[ "$(wc -l < "$T/c4/metrics.jsonl")" -eq 1 ] || fail "connect4 metrics missing"
grep -q '"eval_cache_hit_rate": 0.0000' "$T/c4/metrics.jsonl" || fail "cache off, yet hits"

# --eval-cache worker (the default is shared): each worker's own table answers some leaves, not
# all; resumed with --eval-cache off (the option may change on resume, and is saved): no hits.
"$AZRUN" --game tictactoe --out "$T/shc" --iterations 1 "${tiny[@]}" --eval-cache worker \
	2> "$T/log5"
python3 - "$T/shc/metrics.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][0]
assert 0 < r["eval_cache_hit_rate"] < 1 and r["games"] == 12, r
PY
"$AZRUN" --resume --out "$T/shc" --iterations 2 --eval-cache off --quiet 2> "$T/log6"
grep -Eq '"eval-cache":[[:space:]]*"off"' "$T/shc/run.json" || fail "--eval-cache not saved"
[ "$(sed -n 2p "$T/shc/metrics.jsonl" | grep -c '"eval_cache_hit_rate": 0.0000')" -eq 1 ] \
	|| fail "cache off on resume, yet hits: $(sed -n 2p "$T/shc/metrics.jsonl")"
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" \
	--positions "$SHARED/data/connect4/Test_L3_R1" --json > "$T/c4.json"
grep -q '"positions": 1000' "$T/c4.json" || fail "Test_L3_R1 did not load 1000 positions"
# The mistake metric: labels solved once, cached beside a writable file, reused, and correct.
head -300 "$SHARED/data/connect4/Test_L2_R1" > "$T/l2.txt"
for run in 1 2; do
	"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l2.txt" \
		--mistakes --sims 0 --json > "$T/m$run.json"
done
cmp -s "$T/m1.json" "$T/m2.json" || fail "mistake rate changed with cached labels"
[ "$(wc -l < "$T/l2.txt.labels")" -eq 300 ] || fail "labels cache should have 300 lines"
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l2.txt" \
	--mistakes --sims 8 --json > "$T/m3.json"
python3 - "$T/l2.txt" "$T/l2.txt.labels" "$T/m1.json" <<'PY'
import json, sys
src = [l.split() for l in open(sys.argv[1])]
lab = [l.split() for l in open(sys.argv[2])]
m = json.load(open(sys.argv[3]))
assert len(src) == len(lab) == m["positions"] == 300, (len(src), len(lab), m)
solved = 0
for (mv, score), (mv2, outcome, keeps) in zip(src, lab):
    assert mv == mv2 and int(outcome) == (int(score) > 0) - (int(score) < 0), (mv, score, outcome)
    assert len(keeps) == 7 and set(keeps) <= set("+x?-"), keeps
    if int(outcome) < 0:
        assert "x" not in keeps, keeps   # nothing loses a lost position
    solved += 7 - keeps.count("?") - keeps.count("-")
assert solved >= 300, solved            # at least the move played in each position
assert 0 <= m["mistake_rate"] <= 1 and m["mistakes"] <= 300 - m["lost_positions"], m
assert m["unsolved"] == 0, m            # the same keys as Tangled's; nothing is left unsolved
PY
# --list-mistakes: one line per mistake, the same count, each against the solver's labels.
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l2.txt" \
	--mistakes --sims 0 --list-mistakes > "$T/list.txt" || fail "--list-mistakes"
python3 - "$T/l2.txt" "$T/l2.txt.labels" "$T/m1.json" "$T/list.txt" <<'PY'
import json, re, sys
src = [l.split() for l in open(sys.argv[1])]
lab = [l.split() for l in open(sys.argv[2])]
m = json.load(open(sys.argv[3]))
pat = re.compile(r"mistake at line (\d+): (\d+) \((a win|a draw) for the side to move\) "
                 r"played ([1-7]);"
                 r" keep it: ([1-7](, [1-7])*)$")
lines = [l.rstrip("\n") for l in open(sys.argv[4]) if l.startswith("mistake ")]
# l2.txt has no comment lines: line n is position n
assert len(lines) == m["mistakes"] > 0, (len(lines), m)
for l in lines:
    g = pat.match(l)
    assert g, l
    i, keep = int(g[1]) - 1, g[5].split(", ")
    assert g[2] == src[i][0] == lab[i][0], l
    assert (g[3] == "a win") == (int(src[i][1]) > 0), (l, src[i])
    assert g[4] not in keep and lab[i][2][int(g[4]) - 1] == "x", (l, lab[i])
    assert all(lab[i][2][int(k) - 1] == "+" for k in keep), (l, lab[i])
    assert lab[i][2].count("+") == len(keep), (l, lab[i])
PY
# A stop signal during --mistakes keeps what was solved: the first two Beginning-Hard positions
# labelled, then a run over 40 stopped while it solves the third or a later one (seconds each).
head -40 "$SHARED/data/connect4/Test_L1_R3" > "$T/l1.txt"
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l1.txt" \
	--mistakes --sims 0 --limit 2 > /dev/null || fail "--mistakes --limit 2"
cp "$T/l1.txt.labels" "$T/l1.before"
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l1.txt" \
	--mistakes --sims 0 --list-mistakes > "$T/stop.out" 2> "$T/stop.err" &
pid=$!
sleep 2
kill -TERM $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 143 ] && grep -q "interrupted after [0-9]* of 40 positions (no report); the labels" \
	"$T/stop.err" || fail "--mistakes stopped: exit $rc: $(cat "$T/stop.err")"
! grep -q mistake_rate "$T/stop.out" || fail "a stopped --mistakes printed a report"
python3 - "$T/l1.before" "$T/l1.txt.labels" <<'PY' || fail "a stop lost solved labels"
import sys
before, after = ([l.split() for l in open(p)] for p in sys.argv[1:])
assert len(before) == 2 and len(after) == 40, (before, after)  # saved by the stopped run
for b, a in zip(before, after):  # the same position and outcome, every solved move kept
    assert a[:2] == b[:2] and all(y == x for x, y in zip(b[2], a[2]) if x in "+x"), (b, a)
PY
# Read-only folder: the cache goes under XDG_CACHE_HOME. The test makes its own read-only copy
# (../shared may be writable for the user; nothing here writes into it).
mkdir -p "$T/ro"
head -50 "$SHARED/data/connect4/Test_L3_R1" > "$T/ro/Test_L3_R1"
chmod a-w "$T/ro/Test_L3_R1" "$T/ro"
RINGZERO_CACHE_DIR= XDG_CACHE_HOME="$T/cache" "$AZEVAL" --game connect4 \
	--checkpoint "$T/c4/best.safetensors" --positions "$T/ro/Test_L3_R1" --limit 50 \
	--mistakes --sims 0 --json > /dev/null
[ "$(find "$T/cache/ringzero" -name '*Test_L3_R1.labels' | wc -l)" -eq 1 ] ||
	fail "no labels cache under XDG_CACHE_HOME for a read-only positions folder"
[ ! -e "$T/ro/Test_L3_R1.labels" ] || fail "labels written into a read-only positions folder"
# RINGZERO_CACHE_DIR comes first, as for Tangled's tables.
RINGZERO_CACHE_DIR="$T/rzlab" XDG_CACHE_HOME="$T/cache" "$AZEVAL" --game connect4 \
	--checkpoint "$T/c4/best.safetensors" --positions "$T/ro/Test_L3_R1" --limit 5 \
	--mistakes --sims 0 --json > /dev/null || fail "azeval with RINGZERO_CACHE_DIR"
[ "$(find "$T/rzlab" -name '*Test_L3_R1.labels' | wc -l)" -eq 1 ] ||
	fail "no labels cache under RINGZERO_CACHE_DIR"
# No cache folder at all: a clear refusal, never a shared one such as /tmp/.cache.
rc=0
env -u HOME -u XDG_CACHE_HOME RINGZERO_CACHE_DIR=none "$AZEVAL" --game connect4 \
	--checkpoint "$T/c4/best.safetensors" --positions "$T/ro/Test_L3_R1" --limit 5 \
	--mistakes --sims 0 > /dev/null 2> "$T/nocache.err" || rc=$?
[ $rc -ne 0 ] && grep -q "no cache folder for its labels.*--labels FILE" "$T/nocache.err" ||
	fail "no cache folder: exit $rc: $(cat "$T/nocache.err")"
chmod u+w "$T/ro"
# A long read-only path: the cache file's name stays within NAME_MAX (255 bytes).
long="$T/$(printf 'p%.0s' {1..120})/$(printf 'q%.0s' {1..120})"
mkdir -p "$long"
cp "$T/ro/Test_L3_R1" "$long/Test_L3_R1"
chmod a-w "$long"
RINGZERO_CACHE_DIR="$T/rzlong" "$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" \
	--positions "$long/Test_L3_R1" --limit 5 --mistakes --sims 0 --json > /dev/null ||
	fail "azeval on a long read-only path"
chmod u+w "$long"
name=$(ls "$T/rzlong")
[ -n "$name" ] && [ ${#name} -le 255 ] && [ "${name%.labels}" != "$name" ] ||
	fail "labels cache name for a long path: '$name' (${#name} bytes)"
# An unwritable --labels: the result is printed, exit 1, and no claim that the labels were kept.
rc=0
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l2.txt" \
	--limit 5 --mistakes --sims 0 --labels /proc/ringzero.labels > "$T/nolab" 2> "$T/nolab.err" ||
	rc=$?
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/l2.txt" \
	--limit 5 --mistakes --sims 0 --labels /proc/ringzero.labels --json > "$T/nolab.json" \
	2> /dev/null || true
[ "$rc" -eq 1 ] && grep -q "cannot write the labels cache" "$T/nolab.err" &&
	grep -q "^mistake_rate " "$T/nolab" && ! grep -q "labels cached in" "$T/nolab" &&
	grep -q '"labels": null}' "$T/nolab.json" ||
	fail "unwritable --labels: exit $rc, $(cat "$T/nolab" "$T/nolab.err" "$T/nolab.json")"
# Tactics: with the solver in the search, a win in one is always taken, whatever the network.
"$AZEVAL" --game connect4 --write-labelled "$T/win.txt" --tactic win --games 40 2> /dev/null
[ "$(wc -l < "$T/win.txt")" -eq 40 ] || fail "expected 40 win-in-one positions"
"$AZEVAL" --game connect4 --checkpoint "$T/c4/best.safetensors" --positions "$T/win.txt" \
	--sims 4 --json > "$T/win.json"
grep -q '"move_accuracy": 1.000000' "$T/win.json" || fail "search missed a win in one"
# Tangled on K3: a tiny run, exact labels of every reachable position (dotted move strings).
"$AZRUN" --game tangled --graph 2 --out "$T/tg" --iterations 1 "${tiny[@]}" 2> "$T/log5"
"$AZEVAL" --game tangled --graph 2 --write-labelled "$T/k3.txt" 2> /dev/null
[ "$(grep -vc '^#' "$T/k3.txt")" -eq $((721 - 162)) ] ||
	fail "K3: expected 559 non-terminal positions"
head -1 "$T/k3.txt" | grep -q "^# board: tangled graph=2;variant=free;" ||
	fail "K3: no board line: $(head -1 "$T/k3.txt")"
# no --graph: the checkpoint records the graph it was trained on
"$AZEVAL" --game tangled --checkpoint "$T/tg/best.safetensors" \
	--positions "$T/k3.txt" --sims 4 --json > "$T/tg.json"
grep -q '"positions": 559' "$T/tg.json" || fail "azeval on K3 labels"
"$AZRUN" verify --out "$T/tg" > /dev/null || fail "verify of a tangled run"
# --time-limit: stops cleanly after the iteration during which the limit passes (exit 0,
# resumable), counts earlier azruns' iterations on resume, and status shows it.
"$AZRUN" --game tictactoe --out "$T/tl" --iterations 200 --time-limit 2s "${tiny[@]}" \
	2> /dev/null || fail "--time-limit run failed"
n1=$(wc -l < "$T/tl/metrics.jsonl")
[ "$n1" -ge 1 ] && [ "$n1" -lt 200 ] || fail "--time-limit 2s ran $n1 iterations"
grep -q "run: time limit reached" "$T/tl/azrun.log" || fail "no time-limit log line"
grep -q "azrun: stopped at --time-limit; --resume --out $T/tl --time-limit LONGER continues" \
	"$T/tl/azrun.log" || fail "no advice after the time limit"
"$AZRUN" status --out "$T/tl" | grep -q "^time limit: .* of 2.0s used" ||
	fail "status shows no time limit: $("$AZRUN" status --out "$T/tl")"
"$AZRUN" --resume --out "$T/tl" --time-limit 2s --quiet 2> /dev/null || fail "resume at the limit"
grep "azrun: done" "$T/tl/azrun.log" | tail -1 | grep -q "done, no iteration run after resuming, $n1 in all" ||
	fail "resume at the limit, the last line: $(grep "azrun: done" "$T/tl/azrun.log" | tail -1)"
[ "$(wc -l < "$T/tl/metrics.jsonl")" -eq "$n1" ] || fail "a resume past the limit ran iterations"
# A longer limit continues (1h, far above what the first azrun used however loaded the machine
# is; one more iteration bounds it).
"$AZRUN" --resume --out "$T/tl" --time-limit 1h --iterations $((n1 + 1)) --quiet 2> /dev/null ||
	fail "resume, longer limit"
[ "$(wc -l < "$T/tl/metrics.jsonl")" -eq $((n1 + 1)) ] || fail "a longer limit ran no iteration"
"$AZRUN" verify --out "$T/tl" > /dev/null || fail "verify after --time-limit"
# status and report never show numbers read from a damaged state.json: the damage, exit 1.
cp "$T/tl/state.json" "$T/state.keep"
sed -i 's/"completed": [0-9]*/"completed": 0/' "$T/tl/state.json"
rc=0; "$AZRUN" status --out "$T/tl" > "$T/st.out" 2> "$T/st.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "state.json is damaged" "$T/st.err" && [ ! -s "$T/st.out" ] ||
	fail "status on a damaged state.json: exit $rc, $(cat "$T/st.out" "$T/st.err")"
rc=0; "$AZRUN" report --out "$T/tl" > /dev/null 2> "$T/st.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "state.json is damaged" "$T/st.err" || fail "report: exit $rc"
# A missing state.json beside metrics lines is damage too (a run writes state.json before its
# first line): status says so (exit 1, not "0 complete ... --resume"), and repair rebuilds it.
rm "$T/tl/state.json"
rc=0; "$AZRUN" status --out "$T/tl" > "$T/st.out" 2> "$T/st.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "state.json: missing, but metrics.jsonl records" "$T/st.err" &&
	[ ! -s "$T/st.out" ] ||
	fail "status on a missing state.json: exit $rc, $(cat "$T/st.out" "$T/st.err")"
"$AZRUN" repair --out "$T/tl" 2> "$T/rep.err" || fail "repair of a missing state.json: $(cat "$T/rep.err")"
cmp -s <(tr -d ' \n' < "$T/tl/state.json" | grep -o '"completed":[0-9]*') \
	<(tr -d ' \n' < "$T/state.keep" | grep -o '"completed":[0-9]*') ||
	fail "repair rebuilt state.json as $(cat "$T/tl/state.json"), was $(cat "$T/state.keep")"
"$AZRUN" verify --out "$T/tl" > /dev/null || fail "verify after repairing a missing state.json"
cp "$T/state.keep" "$T/tl/state.json"
# verify on a truncated run.json: damage (exit 1) that names the file, not a usage error (2).
cp "$T/tl/run.json" "$T/run.keep"
head -c 100 "$T/run.keep" > "$T/tl/run.json"
rc=0; "$AZRUN" verify --out "$T/tl" > /dev/null 2> "$T/v.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "run.json.*restore it from a backup" "$T/v.err" ||
	fail "verify on a truncated run.json: exit $rc, $(cat "$T/v.err")"
# status on it: damage too (exit 1, pointing at verify), not "not a run directory" (2)
rc=0; "$AZRUN" status --out "$T/tl" > /dev/null 2> "$T/s.err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "run.json is damaged or unreadable (azrun verify --out" "$T/s.err" ||
	fail "status on a truncated run.json: exit $rc, $(cat "$T/s.err")"
# one flipped byte (its crc32 no longer matches): the advice is given once, not twice
sed -e '0,/"game"/s/"game"/"gamf"/' "$T/run.keep" > "$T/tl/run.json"
rc=0; "$AZRUN" verify --out "$T/tl" > /dev/null 2> "$T/v.err" || rc=$?
[ "$rc" -eq 1 ] && [ "$(grep -o "from a backup" "$T/v.err" | wc -l)" -eq 1 ] ||
	fail "verify on a run.json with a bad crc32: exit $rc, $(cat "$T/v.err")"
cp "$T/run.keep" "$T/tl/run.json"
# resume asking for fewer iterations than the run has: says so plainly (not "N of M"), exit 0.
"$AZRUN" --resume --out "$T/tl" --iterations 1 2> "$T/few.err" || fail "resume --iterations 1"
grep -q "has completed [0-9]* iterations, more than --iterations 1; nothing to do" "$T/few.err" ||
	fail "resume with fewer iterations: $(cat "$T/few.err")"
# Tangled's own promotion score (a drawish game: promote unless measurably worse).
grep -Eq '"arena-threshold":[[:space:]]*"0.5"' "$T/tg/run.json" ||
	fail "tangled's default arena threshold: $(grep -o '"arena-threshold":[^,]*' "$T/tg/run.json")"
# The self-play line and metrics: sims/s and the cache's hit rate beside evals/s, and the
# adjudicator's share of the workers' time (Tangled adjudicates; Connect Four does not).
grep -Eq "selfplay: .* [0-9]+ sims/s, [0-9]+ evals/s \(cache hits [0-9.]+ %\).*adjudication [0-9.]+ %" \
	"$T/tg/azrun.log" || fail "tangled self-play line: $(grep selfplay "$T/tg/azrun.log")"
python3 - "$T/tg/metrics.jsonl" "$T/c4/metrics.jsonl" <<'PY' || fail "adjudication_share"
import json, sys
tg = json.loads(open(sys.argv[1]).readline())
c4 = json.loads(open(sys.argv[2]).readline())
assert 0 < tg["adjudication_share"] < 1 and tg["sims_per_s"] > 0, tg
assert c4["adjudication_share"] == 0, c4
# the iteration's learning rate and the CPU trainer's threads
assert c4["train_lr"] > 0 and c4["train_threads"] >= 1, c4
PY
# Connect Four end to end on the cpu-async backend: the pipelined zero-copy server path.
"$AZRUN" --game connect4 --out "$T/c4async" --iterations 1 --backend cpu-async --workers 2 \
	--games-per-worker 4 --games-per-iter 12 --sims 12 --arena-games 4 2> "$T/log6" ||
	fail "azrun --backend cpu-async"
grep -q "backend cpu-async" "$T/log6" || fail "cpu-async: no backend line"
grep -q "zero-copy feed: segment registered, 2 stream(s)" "$T/log6" || fail "cpu-async: not pipelined"
[ "$(wc -l < "$T/c4async/metrics.jsonl")" -eq 1 ] || fail "cpu-async: metrics missing"
echo "azrun/azeval integration: all checks passed"
