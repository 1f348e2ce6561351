#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-check.sh on a machine without a usable GPU: it must stop in its preflight within a
# minute, with a non-zero status and results.txt naming the failed check and the reason. Skipped
# (77) where a driver answers, since the script would then run its full GPU checks.
# Usage: test_gpu_check.sh REPO_ROOT
set -euo pipefail
ROOT=$1
if nvidia-smi -L >/dev/null 2>&1; then
	echo "a GPU driver answers: the full gpu-check would run; skipped"
	exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
t0=$SECONDS
rc=0
OUT="$T/out" GPU_CHECK_BUILD="$T/build" timeout 60 "$ROOT/tools/gpu-check.sh" \
	>"$T/stdout" 2>"$T/stderr" || rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: gpu-check.sh exited 0 without a GPU" >&2; exit 1; }
[ "$rc" -ne 124 ] || { echo "FAIL: gpu-check.sh ran past a minute" >&2; exit 1; }
[ $((SECONDS - t0)) -le 60 ] || { echo "FAIL: took $((SECONDS - t0))s" >&2; exit 1; }
grep -Eq '^preflight: [a-z ]+ +FAIL .*[a-z]' "$T/out/results.txt" ||
	{ echo "FAIL: results.txt has no preflight finding" >&2; cat "$T/out/results.txt" >&2; exit 1; }
grep -q "stopped after the preflight" "$T/out/results.txt" ||
	{ echo "FAIL: results.txt does not say it stopped" >&2; exit 1; }
[ ! -e "$T/build" ] || { echo "FAIL: it configured a build after a failed preflight" >&2; exit 1; }
echo "gpu-check preflight: exit $rc in $((SECONDS - t0))s"
sed -n '/^preflight/p' "$T/out/results.txt"
