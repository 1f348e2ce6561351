#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of --net resnet:FxR: tiny tic-tac-toe and Connect Four runs complete and
# verify clean, the checkpoint is a ResNet with [out, in, kh, kw] conv tensors that azeval and
# azplay load, and the architecture is held on resume (command line and config file) and refused
# for a game without a board shape.
# The C forward pass is recomputed in NumPy with PyTorch's conv semantics when NumPy is there.
# azbench infer and train measure it (--net resnet:FxR).
# Usage: test_resnet.sh AZRUN AZEVAL AZPLAY CHECK_SAFETENSORS_PY TEST_RESNET AZBENCH
set -euo pipefail
AZRUN=$1 AZEVAL=$2 AZPLAY=$3 CHECK=$4 TEST_RESNET=$5 AZBENCH=$6
. "$(dirname "$0")/lib.sh"
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 12 --sims 12 --arena-games 4 --quiet)

"$AZRUN" --game tictactoe --out "$T/ttt" --net resnet:8x1 --iterations 2 --seed 5 "${tiny[@]}" \
	2> "$T/log" || fail "the resnet run failed: $(tail -3 "$T/log")"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 2 ] || fail "metrics.jsonl should have 2 lines"
grep -Eq '"net":[[:space:]]*"resnet:8x1"' "$T/ttt/run.json" || fail "run.json lacks net"
"$AZRUN" verify --out "$T/ttt" > "$T/verify" 2>&1 || fail "verify: $(cat "$T/verify")"
grep -q ", 0 problems" "$T/verify" || fail "verify found problems: $(cat "$T/verify")"
C=$T/ttt/best.safetensors
python3 "$CHECK" "$C" > "$T/check" 2>&1 || fail "check_safetensors: $(cat "$T/check")"
grep -q "meta net = resnet" "$T/check" || fail "the checkpoint does not say resnet"
grep -Eq "trunk.conv.weight +F32 \[8, 2, 3, 3\]" "$T/check" || fail "trunk conv not [8, 2, 3, 3]"
grep -Eq "block.0.conv2.weight +F32 \[8, 8, 3, 3\]" "$T/check" || fail "block conv shape"
grep -Eq "policy.fc.weight +F32 \[9, 18\]" "$T/check" || fail "policy fc not [9, 18]"

# azeval and azplay build their network from the checkpoint.
"$AZEVAL" --game tictactoe --checkpoint "$C" --vs random --games 4 --sims 8 > "$T/eval" 2>&1 \
	|| fail "azeval: $(tail -3 "$T/eval")"
grep -q "^agent vs random over 4 games" "$T/eval" || fail "azeval printed no result"
# the inference path it used (the kernel can move results by rounding): cpu with a kernel, or cuda
grep -Eq "^azeval: inference: (cpu: .*(OpenBLAS|AVX-512|AMX tiles)|cuda)" "$T/eval" \
	|| fail "azeval named no inference path: $(head -3 "$T/eval")"
AZ_CPU_GEMM=blas "$AZEVAL" --game tictactoe --checkpoint "$C" --vs random --games 2 --sims 0 \
	--backend cpu > "$T/eval-blas" 2>&1 || fail "azeval (blas): $(tail -3 "$T/eval-blas")"
grep -q "^azeval: inference: cpu: .*OpenBLAS" "$T/eval-blas" \
	|| fail "azeval with AZ_CPU_GEMM=blas: $(head -3 "$T/eval-blas")"
printf '1\n2\n3\n4\n5\n6\n7\n8\n9\n' | "$AZPLAY" --checkpoint "$C" --sims 8 > "$T/play" 2>&1 \
	|| fail "azplay: $(tail -3 "$T/play")"
grep -Eq '^result: (X wins|O wins|draw)' "$T/play" || fail "azplay: no result line"

# Resume keeps the architecture: continuing works, a new one is refused either way.
"$AZRUN" --resume --out "$T/ttt" --iterations 3 --quiet 2> "$T/log" \
	|| fail "resume failed: $(tail -3 "$T/log")"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 3 ] || fail "resume did not add iteration 3"
set +e
"$AZRUN" --resume --out "$T/ttt" --iterations 4 --net mlp:8x1 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "cannot change" "$T/err" || fail "resume took --net mlp: $(cat "$T/err")"
printf 'net = resnet:16x1\n' > "$T/arch.ini"
set +e
"$AZRUN" --resume --out "$T/ttt" --config "$T/arch.ini" --iterations 4 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "resnet:8x1" "$T/err" || fail "resume took net = resnet:16x1"
printf 'net = resnet\n' > "$T/same.ini" # the kind alone, as the run has it: accepted
"$AZRUN" --resume --out "$T/ttt" --config "$T/same.ini" --iterations 4 --quiet 2> "$T/log" \
	|| fail "resume refused net = resnet: $(tail -3 "$T/log")"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 4 ] || fail "resume did not add iteration 4"
# ... and so is the run's own --net on the command line, as in the file
"$AZRUN" --resume --out "$T/ttt" --net resnet:8x1 --hidden 8 --iterations 5 --quiet \
	2> "$T/log" || fail "resume refused the run's own --net resnet:8x1: $(tail -3 "$T/log")"
[ "$(wc -l < "$T/ttt/metrics.jsonl")" -eq 5 ] || fail "resume did not add iteration 5"

# A run.json that says mlp for ResNet checkpoints is damage that verify names (the edit drops
# the crc32 member, as a legacy file has none: an edit under it is refused before this check).
sed -i -e 's/"resnet:8x1"/"mlp:8x1"/' -e 's/, "crc32": "[0-9a-f]*"}$/\n}/' "$T/ttt/run.json"
set +e
"$AZRUN" verify --out "$T/ttt" > "$T/verify" 2>&1
set -e
grep -q "architecture resnet:8x1, but run.json says 8x1" "$T/verify" \
	|| fail "verify missed the architecture mismatch: $(head -3 "$T/verify")"

# Connect Four: planes 2 x 6 x 7; with each value head (wdl: value.fc2 [3, 64], a softmax).
for head in tanh wdl; do
c4=$T/c4-$head
"$AZRUN" --game connect4 --out "$c4" --net resnet:8x1 --iterations 1 --seed 5 --sims 8 \
	--workers 1 --games-per-worker 4 --games-per-iter 4 --arena-games 2 --quiet \
	--value-head $head 2> "$T/log" || fail "the connect4 resnet run failed: $(tail -3 "$T/log")"
"$AZRUN" verify --out "$c4" > "$T/verify" 2>&1 || fail "verify c4: $(cat "$T/verify")"
python3 "$CHECK" "$c4/best.safetensors" > "$T/check" 2>&1 || fail "check c4: $(cat "$T/check")"
grep -Eq "policy.fc.weight +F32 \[7, 84\]" "$T/check" || fail "c4 policy fc not [7, 84]"
want=$([ $head = wdl ] && echo 3 || echo 1)
grep -Eq "value.fc2.weight +F32 \[$want, 64\]" "$T/check" || fail "c4 $head value fc2 not [$want, 64]"
# one training iteration moved the weights off their initialisation: a real network to compare
"$TEST_RESNET" --forward "$c4/checkpoints/iter-0001.safetensors" > "$T/fwd" \
	|| fail "test_resnet --forward failed"
set +e
python3 "$(dirname "$0")/check_resnet_numpy.py" "$c4/checkpoints/iter-0001.safetensors" \
	"$(cat "$T/fwd")" > "$T/numpy" 2>&1; rc=$?
set -e
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "NumPy disagrees with the C forward ($head): $(cat "$T/numpy")"
done

# No board shape, no ResNet; and the net's text is checked, one message each, nothing written.
for bad in "--game tangled --graph 3 --net resnet:8x1|no board shape" \
	"--game tictactoe --net resnet:8|expected mlp:HxR or resnet:FxR" \
	"--game tictactoe --net cnn:8x1|expected mlp:HxR or resnet:FxR" \
	"--game tictactoe --net resnet:2048x1|at most 1024 filters"; do
	args=${bad%|*} want=${bad#*|}
	set +e
	# shellcheck disable=SC2086 # the options are words
	"$AZRUN" $args --out "$T/bad" 2> "$T/err"; rc=$?
	set -e
	[ $rc -eq 2 ] || fail "$args: exit $rc, not 2"
	grep -q -- "$want" "$T/err" || fail "$args: no '$want' in: $(cat "$T/err")"
	[ "$(wc -l < "$T/err")" -eq 1 ] || fail "$args: more than one line"
	[ ! -e "$T/bad" ] || fail "$args: created the run directory"
done
# azbench: the ResNet's rows carry its name.
for mode in infer train; do
	extra=()
	[ $mode = train ] && extra=(--no-torch)
	"$AZBENCH" $mode --game tictactoe --net resnet:4x1 --batches 2 --seconds 0.3 --quiet \
		"${extra[@]}" > "$T/bench" 2>&1 || fail "azbench $mode: $(tail -3 "$T/bench")"
	grep -Eq "^tictactoe +resnet:4x1 " "$T/bench" || fail "azbench $mode: $(cat "$T/bench")"
done
echo "ok"
