#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of `azbench infer`, `azbench pipeline` and `azbench train` on tiny budgets: each
# mode runs, stays near its --seconds, prints well-formed JSON rows with sane values, writes
# --csv, and leaves no shared-memory segment or temporary files behind.
# Usage: test_azbench_modes.sh AZBENCH
set -euo pipefail
AZBENCH=$1
. "$(dirname "$0")/lib.sh"
mkdir "$T/tmp"
export TMPDIR="$T/tmp"

# check.py FILE MODE: validate the JSON lines of one mode.
cat > "$T/check.py" <<'PY'
import json, sys
path, mode = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.strip()]
objs = [json.loads(l) for l in lines]
rows = [o for o in objs if "recommendation" not in o]
recs = [o for o in objs if "recommendation" in o]
assert len(recs) == 1, recs
def pos(r, k):
    assert isinstance(r[k], (int, float)) and r[k] > 0, (k, r)
if mode == "infer":
    assert [r["batch"] for r in rows] == [1, 8, 64], rows
    for r in rows:
        assert r["game"] == "tictactoe" and r["net"] == "mlp:64x2", r   # azrun's default net
        assert r["kernel"] in ("avx512", "bf16", "amx", "blas", "cuda"), r
        pos(r, "evals_per_s"); pos(r, "us_per_batch")
    assert rows[0]["vs_batch1"] == 1.0, rows[0]
elif mode == "pipeline":
    serial = [r for r in rows if r["setup"] == "serial"]
    pipe = [r for r in rows if r["setup"] == "pipeline"]
    dflt = [r for r in rows if r["setup"] == "defaults"]
    assert len(serial) == 1 and len(pipe) == 1, rows
    s, p = serial[0], pipe[0]
    assert s["mean_batch"] == 1 and s["speedup"] == 1 and s["ring_occupancy"] is None, s
    assert s["sims_speedup"] == 1, s
    assert p["workers"] == int(sys.argv[3]) and p["G"] == 4, p
    # azrun's defaults, --default-runs 2: two runs at W = cores, G = 128 (never the listed one).
    assert len(dflt) == 2 and all(r["G"] == 128 for r in dflt), rows
    # The finite phases (--phases 1): self-play and arena, adaptive and fixed-deadline.
    phase = {r["setup"]: r for r in rows if "/" in r["setup"]}
    assert sorted(phase) == ["arena/adaptive", "arena/fixed", "selfplay/adaptive",
                             "selfplay/fixed"], rows
    for r in phase.values():
        for k in ("evals_per_s", "sims_per_s", "mean_batch", "ring_occupancy", "seconds"):
            pos(r, k)
        assert r["ceiling_evals_per_s"] is None and 0 < r["server_busy"] <= 1.05, r
        assert r["limit_evals_per_s"] is None, r
    for r in rows:
        keys = ("evals_per_s", "sims_per_s", "speedup", "sims_speedup", "seconds")
        if r["setup"] in ("serial", "pipeline", "defaults"):
            keys += ("ceiling_evals_per_s", "ceiling_frac", "limit_evals_per_s", "limit_frac")
        for k in keys:
            pos(r, k)
        assert r["sims_per_s"] >= r["evals_per_s"] * 0.99, r   # terminal visits add sims
        assert abs(r["sims_speedup"] - r["sims_per_s"] / s["sims_per_s"]) < \
            0.01 * r["sims_speedup"] + 0.01, r
        if r["limit_evals_per_s"] is not None:   # cores / (1 / ceiling + search per eval)
            assert r["limit_frac"] > 0 and abs(r["limit_frac"] - r["evals_per_s"] /
                                               r["limit_evals_per_s"]) < 0.002, r
    # Occupancy is sampled while the window runs: a loaded machine can give a short window no
    # sample (0), so only its range is what the code guarantees.
    assert p["mean_batch"] >= 1 and p["ring_occupancy"] >= 0, p
    assert 0 < p["server_busy"] <= 1.05, p
    assert abs(p["speedup"] - p["evals_per_s"] / s["evals_per_s"]) < 0.01 * p["speedup"] + 0.01
    rec = recs[0]
    text = rec["recommendation"]
    assert "azrun's defaults (--workers" in text and "serial batch-1, the seed's design" in text
    assert "machine limit" in text, text
    # The recommended W x G: the listed one only when it beat the defaults beyond their noise.
    med = sorted(r["sims_per_s"] for r in dflt)
    noise = (med[1] - med[0]) / ((med[0] + med[1]) / 2)
    assert abs(rec["tictactoe_noise"] - noise) < 1e-3, (rec, noise)
    beats = p["sims_per_s"] > (med[0] + med[1]) / 2 * (1 + noise)
    assert rec["tictactoe_beats_defaults"] == int(beats), (rec, p, dflt)
    want = (p["workers"], 4) if beats else (dflt[0]["workers"], 128)
    assert (rec["tictactoe_workers"], rec["tictactoe_G"]) == want, rec
    assert ("recommended --workers" in text) == beats, text
elif mode in ("train", "train-torch"):
    c = [r for r in rows if r["impl"] == "c"]
    t = [r for r in rows if r["impl"] == "torch"]
    assert [r["batch"] for r in c] == [16, 32], rows
    for r in rows:
        pos(r, "samples_per_s"); pos(r, "ms_per_step")
    if mode == "train" or not t:   # --no-torch, or no torch on this machine
        assert not t and all(r["torch"] == "not available" for r in rows), rows
        assert all(r["c_over_torch"] is None for r in c), c
        assert "torch not available" in recs[0]["recommendation"], recs
    else:
        assert len(t) == 2 and all(r["c_over_torch"] > 0 for r in c), rows
        for a, b in zip(c, t):
            assert abs(a["c_over_torch"] - a["samples_per_s"] / b["samples_per_s"]) < 0.02 * \
                a["c_over_torch"] + 0.01, (a, b)
print(mode, "ok:", len(rows), "rows")
PY

# run SECONDS_LIMIT OUT ARGS...: azbench with a wall-clock bound.
run() {
	local limit=$1 out=$2
	shift 2
	local t0=$SECONDS
	"$AZBENCH" "$@" > "$out" 2> "$out.err" || { cat "$out.err" >&2; fail "azbench $*"; }
	[ $((SECONDS - t0)) -le "$limit" ] || fail "azbench $* took $((SECONDS - t0))s"
}

for m in infer pipeline train; do
	"$AZBENCH" $m --help >"$T/help-$m" || fail "$m --help exited non-zero"
	grep -q -- "--seconds" "$T/help-$m" || fail "$m --help lacks --seconds"
	"$AZBENCH" --help >"$T/help" || fail "azbench --help exited non-zero"
	grep -q "^  $m " "$T/help" || fail "azbench --help does not list $m"
done

run 15 "$T/infer.json" infer --game tictactoe --batches 1,8,64 --seconds 0.5 --json \
	--csv "$T/infer.csv"
python3 "$T/check.py" "$T/infer.json" infer
[ "$(wc -l < "$T/infer.csv")" -eq 4 ] || fail "infer CSV should have a header and 3 rows"
# --kernels all: a row per kernel this CPU runs (blas always), and whole recommendation keys
# ("connect4_avx512_peak_evals_per_s" once came out cut at 31 characters)
run 15 "$T/kernels.json" infer --game connect4 --kernels all --batches 1 --seconds 0.3 --json
python3 - "$T/kernels.json" <<'PY' || fail "infer --kernels all: $(cat "$T/kernels.json")"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [o for o in objs if "kernel" in o]
assert "blas" in [r["kernel"] for r in rows], rows
rec = [o for o in objs if "recommendation" in o][0]
for r in rows:
    assert "connect4_%s_peak_evals_per_s" % r["kernel"] in rec, (r, rec)
    assert "connect4_%s_batch90" % r["kernel"] in rec, (r, rec)
PY

# Pipeline: one configuration each for W = 1 and W = 2 (real worker and inference processes).
for w in 1 2; do
	"$AZBENCH" pipeline --game tictactoe --workers $w --games-per-worker 4 --sims 16 \
		--phases 1 --default-runs 2 --seconds 3 --json > "$T/pipe$w.json" 2> "$T/pipe$w.err" &
	pid=$!
	t0=$SECONDS
	wait $pid || { cat "$T/pipe$w.err" >&2; fail "azbench pipeline --workers $w"; }
	[ $((SECONDS - t0)) -le 30 ] || fail "pipeline --seconds 3 took $((SECONDS - t0))s"
	python3 "$T/check.py" "$T/pipe$w.json" pipeline $w
	[ ! -e "/dev/shm/az-$(id -u)-$pid-bench" ] || fail "pipeline left its segment behind"
done
[ -z "$(ls -A "$T/tmp")" ] || fail "pipeline left temporary files: $(ls "$T/tmp")"

# A budget too short for the sweep names what it measured and what it skipped (stderr and the
# recommendation), with the --seconds that measures them all (was "skipped: 3 of 5 runs").
"$AZBENCH" pipeline --game tictactoe --workers 1,2 --games-per-worker 4,16 --phases 0 \
	--default-runs 1 --seconds 2 --json > "$T/short.json" 2> "$T/short.err" ||
	fail "pipeline --seconds 2: $(cat "$T/short.err")"
grep -Eq "^pipeline: --seconds 2 measured 2 of 5 runs: tictactoe \(azrun's defaults x1\) W x G \
1x4; not measured, no time left: tictactoe W x G 1x16 2x4 2x16 \(3 of 5 runs\); --seconds [0-9]+ \
or more measures them all$" "$T/short.err" || fail "pipeline --seconds 2: $(cat "$T/short.err")"
grep -q '\[skipped for time: tictactoe W x G 1x16 2x4 2x16 (3 of 5 runs)' "$T/short.json" ||
	fail "the recommendation does not name the skipped runs: $(tail -1 "$T/short.json")"

run 15 "$T/train.json" train --game tictactoe --batches 16,32 --seconds 1 --json --no-torch
python3 "$T/check.py" "$T/train.json" train
# With the PyTorch side when torch is importable; says "torch not available" otherwise.
run 60 "$T/train2.json" train --game tictactoe --batches 16,32 --seconds 2 --json
python3 "$T/check.py" "$T/train2.json" train-torch
grep -q "PyTorch side .*torch_train_bench.py (found" "$T/train2.json.err" ||
	fail "train does not say where it found the PyTorch script"

# Bad usage: exit 2 with a message.
for bad in "infer --batches 0" "pipeline --game chess" "train --seconds -1" "infer --bogus" \
	"pipeline --game connect4 --net resnet:5000x1" \
	"pipeline --game tictactoe --eval-cache shared --eval-cache-mb 5000" \
	"pipeline --phases 21" "pipeline --sims 1" "pipeline --sims 2,3"; do
	set +e
	# shellcheck disable=SC2086
	"$AZBENCH" $bad > /dev/null 2> "$T/err"; rc=$?
	set -e
	[ $rc -eq 2 ] && [ -s "$T/err" ] || fail "azbench $bad: exit $rc, expected 2 and a message"
done
# A single-number option says so, with its range and what it got (its option table's message).
grep -qx "azbench pipeline: --sims: expected a whole number in \[2, 100000\], got '2,3'" "$T/err" ||
	fail "pipeline --sims 2,3: $(cat "$T/err")"
# --backend's message lists every backend it accepts (cpu-async included).
set +e
"$AZBENCH" infer --backend tpu > /dev/null 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "auto, cpu, cpu-async or cuda" "$T/err" ||
	fail "infer --backend tpu: exit $rc, $(cat "$T/err")"
# A network azrun refuses is refused with azrun's reason, not "needs a board shape".
for m in infer train pipeline; do
	set +e
	"$AZBENCH" $m --game tictactoe --net resnet:5000x1 > /dev/null 2> "$T/err"; rc=$?
	set -e
	[ $rc -eq 2 ] && grep -q "^azbench $m: tictactoe: --net resnet: at most 1024 filters$" \
		"$T/err" || fail "$m --net resnet:5000x1: exit $rc, $(cat "$T/err")"
done
# Tangled, configured at run time: --graph and --variant choose the board (K4 here: 6 edges, 4
# vertices, so 4 + 3 x 6 = 22 actions and a network sized for it), named on stderr; infer and
# train adjudicate with a cheap annealer, pipeline as azrun does (K4's table is built at once).
export RINGZERO_CACHE_DIR="$T/cache"
run 20 "$T/tg.json" infer --game tangled --graph 3 --variant fixed --batches 1,8 --seconds 0.3 \
	--json
grep -q "^infer: tangled on K4, fixed tokens, adjudicator anneal$" "$T/tg.json.err" ||
	fail "infer --game tangled: $(cat "$T/tg.json.err")"
python3 - "$T/tg.json" <<'PY' || fail "infer --game tangled: $(cat "$T/tg.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if "recommendation" not in r]
assert [r["batch"] for r in rows] == [1, 8], rows
assert all(r["game"] == "tangled" and r["evals_per_s"] > 0 for r in rows), rows
assert all(r["board"] == "K4 fixed" for r in rows), rows   # the rows name the board
PY
"$AZBENCH" pipeline --game tangled --graph 3 --workers 1 --games-per-worker 4 --sims 8 \
	--phases 0 --seconds 2 --json > "$T/tgp.json" 2> "$T/tgp.err" ||
	fail "pipeline --game tangled: $(cat "$T/tgp.err")"
grep -q "^pipeline: tangled on K4, free tokens, adjudicator table:exact$" "$T/tgp.err" ||
	fail "pipeline --game tangled: $(cat "$T/tgp.err")"
grep -q '"game": *"tangled", *"board": *"K4 free".*"sims_per_s"' "$T/tgp.json" ||
	fail "pipeline --game tangled: no row: $(cat "$T/tgp.json")"
run 20 "$T/tgt.json" train --game tangled --graph 3 --batches 16 --seconds 0.5 --json --no-torch
grep -q '"game": *"tangled", *"board": *"K4 free"' "$T/tgt.json" ||
	fail "train --game tangled: $(cat "$T/tgt.json")"
# Tangled's options without Tangled, and a board that does not exist: refused before measuring.
printf '0-1 0-2 0-3 1-2 1-3 2-3\n' > "$T/k4.edges"
run 20 "$T/tgf.json" infer --game tangled --graph-file "$T/k4.edges" --batches 1 --seconds 0.2 \
	--json
grep -q '"board": *"[^"]*/k4.edges free"' "$T/tgf.json" || fail "--graph-file: $(cat "$T/tgf.json")"
for bad in "infer --game connect4 --graph 3" "pipeline --variant fixed" \
	"infer --game tangled --graph 3 --graph-file $T/k4.edges" \
	"train --game tangled --graph-file $T/no.edges" \
	"train --game tangled --graph 0" "infer --game tangled --variant blue"; do
	set +e
	# shellcheck disable=SC2086
	"$AZBENCH" $bad > /dev/null 2> "$T/err"; rc=$?
	set -e
	[ $rc -eq 2 ] && [ "$(wc -l < "$T/err")" -eq 1 ] ||
		fail "azbench $bad: exit $rc, $(cat "$T/err")"
done
grep -qx "azbench infer: --variant: free or fixed, not 'blue'" "$T/err" ||
	fail "infer --variant blue: $(cat "$T/err")"
echo "azbench modes: all checks passed"
