#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the training-target options (docs/targets.md), --search gumbel's improved
# policy among them, end to end, read back from the replay records a real --deterministic run
# wrote.
# Usage: test_targets.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
tiny=(--game tictactoe --iterations 1 --games-per-worker 4 --games-per-iter 16 --sims 16
	--arena-games 2 --deterministic --quiet)

"$AZRUN" --out "$T/plain" "${tiny[@]}" --value-mix 0
"$AZRUN" --out "$T/targets" "${tiny[@]}" --forced-playouts 2 --playout-cap-p 0.5 --sims-fast 4 \
	--value-mix 0.5 --sims-fresh 1
for k in '"forced-playouts":	"2"' '"playout-cap-p":	"0.5"' '"sims-fast":	"4"' \
	'"value-mix":	"0.5"' '"sims-fresh":	"1"'; do
	grep -qF "$k" "$T/targets/run.json" || fail "run.json lacks $k"
done

# Records: header of 32 bytes (magic, u32 features, u32 actions, ...), then per record
# float x[D], float pi[A], float z, u32 info, u32 crc.
python3 - "$T/plain/replay/iter-0001-w00.rpl" "$T/targets/replay/iter-0001-w00.rpl" <<'PY'
import struct, sys

def records(path):
    b = open(path, "rb").read()
    assert b[:8] == b"AZRPLAY1", path
    d, a = struct.unpack_from("<II", b, 8)
    size = (d + a + 1) * 4 + 8
    out = []
    for off in range(32, len(b), size):
        f = struct.unpack_from("<%df" % (d + a + 1), b, off)
        out.append((f[d:d + a], f[d + a]))
    return out

plain, targets = records(sys.argv[1]), records(sys.argv[2])
assert len(plain) >= 16 * 5 and len(targets) >= 16 * 5, (len(plain), len(targets))
# Without the options: every record is a policy target, every value target a game result.
for pi, z in plain:
    assert abs(sum(pi) - 1) < 1e-4, pi
    assert z in (-1.0, 0.0, 1.0), z
# With them: about half the records are value-only (an all-zero policy) ...
full = [abs(sum(pi) - 1) < 1e-4 for pi, z in targets]
zero = [all(p == 0 for p in pi) for pi, z in targets]
assert all(f or e for f, e in zip(full, zero)), "a policy is neither a target nor all zero"
share = sum(full) / len(targets)
assert 0.25 < share < 0.75, share
# ... and the value target is half game result, half search value: never a bare result only.
assert all(abs(z) <= 1 for pi, z in targets)
mixed = sum(z not in (-1.0, -0.5, 0.0, 0.5, 1.0) for pi, z in targets)
assert mixed > len(targets) // 2, (mixed, len(targets))
print("records %d / %d, full searches %.2f, mixed values %d"
      % (len(plain), len(targets), share, mixed))
PY
# --random-opening: games begin after up to R random plies, so some first records of a game
# (info's ply index 0) hold stones; without it every game's first record is the empty board.
"$AZRUN" --out "$T/opening" "${tiny[@]}" --random-opening 4
grep -qF '"random-opening":	"4"' "$T/opening/run.json" || fail "run.json lacks random-opening"
python3 - "$T/plain/replay/iter-0001-w00.rpl" "$T/opening/replay/iter-0001-w00.rpl" <<'PY'
import struct, sys

def first_records(path):
    b = open(path, "rb").read()
    d, a = struct.unpack_from("<II", b, 8)
    size = (d + a + 1) * 4 + 8
    firsts = []
    for off in range(32, len(b), size):
        x = struct.unpack_from("<%df" % d, b, off)
        (info,) = struct.unpack_from("<I", b, off + (d + a + 1) * 4)
        if info & 0xffff == 0:
            firsts.append(sum(x))
    return firsts

plain, opening = first_records(sys.argv[1]), first_records(sys.argv[2])
assert plain and all(s == 0 for s in plain), plain
assert len(opening) >= 8, len(opening)
random = sum(s > 0 for s in opening)
# r ~ U{0..4}: about 4 games in 5 start after a random ply or more
assert random >= len(opening) // 3, (random, len(opening))
print("games %d, %d of them after a random opening" % (len(opening), random))
PY
"$AZRUN" --out "$T/bad" "${tiny[@]}" --random-opening 65 2> "$T/err" && fail "--random-opening 65"
grep -q "random-opening" "$T/err" || fail "--random-opening 65: unclear"
# --explore: most moves random; with --value-mix 0 a record keeps the bare result only after its
# game's last random move, the ones before take the search value (no proofs: --mcts-solver 0,
# so a search value is rarely a whole number). Deterministic, so the counts are fixed.
"$AZRUN" --out "$T/explore" "${tiny[@]}" --explore 0.9 --value-mix 0 --mcts-solver 0
grep -qF '"explore":	"0.9"' "$T/explore/run.json" || fail "run.json lacks explore"
python3 - "$T/explore/replay/iter-0001-w00.rpl" <<'PY'
import struct, sys

b = open(sys.argv[1], "rb").read()
d, a = struct.unpack_from("<II", b, 8)
size = (d + a + 1) * 4 + 8
zs = [struct.unpack_from("<%df" % (d + a + 1), b, off)[d + a] for off in range(32, len(b), size)]
assert len(zs) >= 16 * 3, len(zs)
searched = sum(z not in (-1.0, 0.0, 1.0) for z in zs)
assert searched > len(zs) // 3, (searched, len(zs))
assert all(abs(z) <= 1 for z in zs)
print("records %d, %d with the search's value" % (len(zs), searched))
PY
# --explore-games G: a game explores with probability G, so at 0 every record of --explore 0.9
# keeps its bare result, and at 0.5 some games have search values and some only results. Records
# are split into games at AZ_REPLAY_LAST.
for g in 0 0.5; do
	"$AZRUN" --out "$T/exg$g" "${tiny[@]}" --games-per-iter 32 --explore 0.9 --value-mix 0 \
		--mcts-solver 0 --explore-games "$g"
	grep -qF "\"explore-games\":	\"$g\"" "$T/exg$g/run.json" || fail "run.json lacks explore-games"
	python3 - "$T/exg$g/replay/iter-0001-w00.rpl" "$g" <<'PY' || fail "--explore-games $g"
import struct, sys

b = open(sys.argv[1], "rb").read()
d, a = struct.unpack_from("<II", b, 8)
size = (d + a + 1) * 4 + 8
games, cur = [], []
for off in range(32, len(b), size):
    z, info = struct.unpack_from("<fI", b, off + (d + a) * 4)
    cur.append(z not in (-1.0, 0.0, 1.0))
    if info & 0x80000000:
        games.append(any(cur))
        cur = []
assert len(games) >= 8 and not cur, (len(games), len(cur))
explored = sum(games)
if sys.argv[2] == "0":
    assert explored == 0, (explored, len(games))
else:
    assert 0 < explored < len(games), (explored, len(games))
print("games %d, %d with the search's values" % (len(games), explored))
PY
done
"$AZRUN" --out "$T/bad2" "${tiny[@]}" --explore 1 2> "$T/err" && fail "--explore 1"
grep -q "explore: expected a number in \[0, 0.999\]" "$T/err" || fail "--explore 1: unclear"
# --search gumbel: every record's target is the improved policy, softmax(logits + sigma(completed
# Q)), which gives every legal move that is not a proven loss some mass, where the visits of a
# search that considers 4 moves reach at most 4.
"$AZRUN" --out "$T/gumbel" "${tiny[@]}" --search gumbel --gumbel-m 4
for k in '"search":	"gumbel"' '"gumbel-m":	"4"' '"gumbel-scale":	"0.1"'; do
	grep -qF "$k" "$T/gumbel/run.json" || fail "run.json lacks $k"
done
python3 - "$T/gumbel/replay/iter-0001-w00.rpl" <<'PY'
import math, struct, sys

b = open(sys.argv[1], "rb").read()
d, a = struct.unpack_from("<II", b, 8)
size = (d + a + 1) * 4 + 8
pis = [struct.unpack_from("<%df" % (d + a), b, off)[d:] for off in range(32, len(b), size)]
assert len(pis) >= 16 * 5, len(pis)
for pi in pis:
    assert all(math.isfinite(p) and p >= 0 for p in pi), pi
    assert abs(sum(pi) - 1) < 1e-4, pi
wide = sum(sum(p > 0 for p in pi) > 4 for pi in pis)
assert wide > len(pis) // 4, (wide, len(pis))
print("gumbel records %d, %d with mass on more than the 4 moves considered" % (len(pis), wide))
PY
"$AZRUN" --out "$T/bad3" "${tiny[@]}" --search gumbel --forced-playouts 2 2> "$T/err" &&
	fail "--search gumbel --forced-playouts 2"
grep -q "forced-playouts is PUCT's" "$T/err" || fail "gumbel with forced playouts: unclear"
# --value-head wdl: the checkpoint's value head has three outputs (win, draw, loss) and says so;
# with --draw-value the second iteration's self-play (deterministic) is not the same games as
# without (test_mcts's test_wdl_contempt checks what the search makes of p_draw).
two=("${tiny[@]}" --iterations 2 --value-head wdl)
"$AZRUN" --out "$T/wdl0" "${two[@]}"
"$AZRUN" --out "$T/wdl3" "${two[@]}" --draw-value -0.3
for k in '"value-head":	"wdl"' '"draw-value":	"-0.3"'; do
	grep -qF "$k" "$T/wdl3/run.json" || fail "run.json lacks $k"
done
python3 - "$T/wdl3/best.safetensors" "$T/wdl3/metrics.jsonl" <<'PY'
import json, struct, sys

b = open(sys.argv[1], "rb").read()
(n,) = struct.unpack_from("<Q", b, 0)
h = json.loads(b[8:8 + n])
assert h["__metadata__"]["value_head"] == "wdl", h["__metadata__"]
hidden = int(h["__metadata__"]["hidden"])
assert h["value.weight"]["shape"] == [3, hidden], h["value.weight"]
assert h["value.bias"]["shape"] == [3], h["value.bias"]
# the value term is a cross-entropy over three classes: log 3 for an untrained head
loss = [json.loads(l)["value_loss"] for l in open(sys.argv[2])]
assert 0.1 < loss[0] < 1.2, loss
print("wdl head %s, value losses %s" % (h["value.weight"]["shape"], loss))
PY
cmp -s "$T/wdl0/replay/iter-0002-w00.rpl" "$T/wdl3/replay/iter-0002-w00.rpl" &&
	fail "--draw-value -0.3 left a wdl head's self-play unchanged"
"$AZRUN" --out "$T/wdl3" --resume --iterations 3 --value-head tanh 2> "$T/err" &&
	fail "resume with another value head"
grep -q "value-head" "$T/err" || fail "resume with another value head: unclear: $(cat "$T/err")"
"$AZRUN" --out "$T/bad4" "${tiny[@]}" --value-head mse 2> "$T/err" && fail "--value-head mse"
grep -q "tanh or wdl, not .mse." "$T/err" || fail "--value-head mse: unclear: $(cat "$T/err")"
echo "test_targets: ok"
