#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# azrun --backend cuda where no CUDA device is visible: exit status 2 and a one-line reason
# before anything is created. Skipped (77) on a machine with a device.
# Usage: test_azrun_nocuda.sh AZRUN TEST_BACKEND_SELECT
set -u
azrun="$1"
probe="$2"
if "$probe" has-cuda; then
	echo "a CUDA device is visible: skipped"
	exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$azrun" --game tictactoe --out "$tmp/run" --backend cuda 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 2 ]; then
	echo "FAIL: exit status $rc, want 2"
	cat "$tmp/err"
	exit 1
fi
if ! grep -q '^azrun: --backend cuda: no CUDA device visible' "$tmp/err"; then
	echo "FAIL: unexpected message:"
	cat "$tmp/err"
	exit 1
fi
if [ -e "$tmp/run" ]; then
	echo "FAIL: the run directory was created"
	exit 1
fi
echo "azrun --backend cuda without a device: exit 2, nothing created"
