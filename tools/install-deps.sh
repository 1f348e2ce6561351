#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install RingZero's build and test dependencies from Debian's packages (Debian 12 / bookworm).
# Runs apt-get directly as root, through sudo otherwise. Safe to run again.
set -euo pipefail
# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (tools/fuzz.sh), only recommended
# by clang and so skipped by --no-install-recommends. libopenmpi-dev + openmpi-bin: Open MPI for
# azrun --mpi (docs/cluster.md) and its integration test (mpirun). clang-format-14: the format
# check (tools/format-check.sh, ctest format_check).
pkgs=(build-essential cmake pkg-config clang libclang-rt-14-dev clang-format-14 libopenblas-dev
      liburing-dev libcmocka-dev libcjson-dev libinih-dev zlib1g-dev gnuplot-nox python3
      liblapacke-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
