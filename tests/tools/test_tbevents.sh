#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test of DIR/tb/: a tiny run, resumed once, and its event file read back with the
# tensorboard Python package's event reader (check_tbevents.py); skipped (exit 77) when python3
# or the package is missing.
# Usage: test_tbevents.sh AZRUN
set -euo pipefail
AZRUN=$1 HERE=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/lib.sh"
command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
tiny=(--game tictactoe --workers 2 --games-per-worker 4 --games-per-iter 8 --sims 8
	--arena-games 2 --seed 5 --quiet --out "$T/r")

"$AZRUN" "${tiny[@]}" --iterations 2
f=$T/r/tb/events.out.tfevents.ringzero
[ -s "$f" ] || fail "no event file after 2 iterations"
cp "$f" "$T/after2"
"$AZRUN" "${tiny[@]}" --iterations 3 --resume
# Rewritten from metrics.jsonl: the old file is a prefix of the new one (TensorBoard reads on).
cmp -n "$(stat -c %s "$T/after2")" "$T/after2" "$f" || fail "the event file was not extended"
[ "$(stat -c %s "$f")" -gt "$(stat -c %s "$T/after2")" ] || fail "iteration 3 added nothing"
set +e
python3 "$HERE/check_tbevents.py" "$T/r"
rc=$?
set -e
[ $rc -eq 0 ] || exit $rc
echo "tensorboard events: all checks passed"
