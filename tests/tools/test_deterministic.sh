#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of azrun --deterministic: two runs with the same seed write byte-identical
# checkpoints and replay files (also across a --resume), a different seed does not, the mode's
# implied settings are saved in run.json, and it refuses the CUDA backend.
# Usage: test_deterministic.sh AZRUN
set -euo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
tiny=(--games-per-worker 8 --games-per-iter 16 --sims 16 --arena-games 4 --quiet)
printf '[azrun]\ndeterministic = on\n' > "$T/det.ini"

# same A B: every checkpoint and replay file of run A equals run B's, byte for byte.
same() {
	(cd "$T/$1" && find checkpoints replay best.safetensors -type f | sort) > "$T/files.$1"
	(cd "$T/$2" && find checkpoints replay best.safetensors -type f | sort) > "$T/files.$2"
	cmp -s "$T/files.$1" "$T/files.$2" || fail "$1 and $2 hold different files"
	while read -r f; do
		cmp "$T/$1/$f" "$T/$2/$f" || fail "$1 and $2 differ in $f"
	done < "$T/files.$1"
}

for g in tictactoe connect4; do
	# Run a asks on the command line, run b in a config file; both resume once.
	"$AZRUN" --game $g --out "$T/$g-a" --iterations 2 --seed 7 --workers 4 --deterministic \
		"${tiny[@]}"
	"$AZRUN" --game $g --out "$T/$g-b" --iterations 2 --seed 7 --config "$T/det.ini" \
		"${tiny[@]}"
	for r in a b; do
		"$AZRUN" --resume --out "$T/$g-$r" --iterations 3 --quiet
	done
	[ -s "$T/$g-a/checkpoints/iter-0003.safetensors" ] || fail "$g: no third checkpoint"
	same $g-a $g-b
	for k in '"deterministic":[[:space:]]*"on"' '"workers":[[:space:]]*"1"' \
		'"max-batch":[[:space:]]*"1"' '"backend":[[:space:]]*"cpu"'; do
		grep -Eq "$k" "$T/$g-a/run.json" || fail "$g: run.json lacks $k"
	done
done

# Another seed: other games, so the comparison above can fail.
"$AZRUN" --game tictactoe --out "$T/other" --iterations 1 --seed 8 --deterministic "${tiny[@]}"
if cmp -s "$T/other/replay/iter-0001-w00.rpl" "$T/tictactoe-a/replay/iter-0001-w00.rpl"; then
	fail "seeds 7 and 8 played the same games"
fi

set +e
"$AZRUN" --game tictactoe --out "$T/cuda" --deterministic --backend cuda 2> "$T/err"; rc=$?
set -e
[ $rc -eq 2 ] && grep -q "CPU backend" "$T/err" && [ ! -e "$T/cuda" ] ||
	fail "--deterministic --backend cuda not refused"
# --help says what --seed alone fixes and what it does not.
"$AZRUN" --help > "$T/help"
grep -A3 -- "--seed S" "$T/help" | tr -s ' \n' ' ' > "$T/seed"
grep -q "games still depend on timing .* unless --deterministic" "$T/seed" ||
	fail "--help does not say what --seed alone guarantees: $(cat "$T/seed")"
grep -q -- "--deterministic .*bit-identical" "$T/help" || fail "--help lacks --deterministic"
echo "deterministic: identical checkpoints and replay for tictactoe and connect4"
