#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NVTX ranges are really emitted: a tiny azrun run with NVTX_INJECTION64_PATH pointing at
# tests/tools/nvtx_inject.c (it logs every push and pop, one file per process). Each process
# role shows every stage docs/profiling.md names for it (the inference process: the cpu
# backend's; H2D belongs to cuda only), and in every process the pushes and pops balance (never
# more pops than pushes, none open at exit).
# Usage: test_nvtx.sh AZRUN LIBNVTX_INJECT
set -euo pipefail
AZRUN=$1
LIB=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/log"
NVTX_INJECTION64_PATH="$LIB" AZ_NVTX_LOG_DIR="$T/log" timeout 120 "$AZRUN" --game tictactoe \
	--out "$T/run" --iterations 1 --workers 2 --games-per-worker 4 --games-per-iter 8 \
	--arena-games 4 --sims 16 --backend cpu --quiet
python3 - "$T/log" <<'PY'
import os, sys
d = sys.argv[1]
roles = {  # docs/profiling.md's table; the role is recognised by its first stage
    "worker": ["select", "encode", "publish", "wait", "backup"],
    "inference": ["wait", "gather", "forward", "D2H", "publish"],
    "trainer": ["sample", "train_step"],
}
seen = {r: 0 for r in roles}
files = sorted(os.listdir(d))
assert files, "no NVTX calls reached the injection library"
for f in files:
    depth, names = 0, set()
    for n, line in enumerate(open(os.path.join(d, f)), 1):
        w = line.split()
        if w[0] == "push":
            depth += 1
            names.add(w[1])
        else:
            assert w == ["pop"], (f, n, line)
            depth -= 1
            assert depth >= 0, f"{f}:{n}: pop without a push"
    assert depth == 0, f"{f}: {depth} ranges still open at exit"
    role = ("worker" if "select" in names else "trainer" if "sample" in names
            else "inference" if "gather" in names else None)
    assert role, f"{f}: no known role in {sorted(names)}"
    missing = [s for s in roles[role] if s not in names]
    assert not missing, f"{f} ({role}): stages never pushed: {missing}"
    seen[role] += 1
# Workers of self-play and of the arena (2 each are started; one that starts after the other
# has claimed every game of its phase plays none and pushes nothing, so at least one per
# phase), one trainer, the inference process.
assert seen["worker"] >= 2 and seen["trainer"] == 1 and seen["inference"] >= 1, seen
print("nvtx ok:", seen, len(files), "processes")
PY
