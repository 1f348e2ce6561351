#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The checks that need an NVIDIA GPU, in one go (about 4 minutes on a 16-core H100/H200 host):
#   1. build for Hopper only (-DCMAKE_CUDA_ARCHITECTURES=90) with -Werror, run `ctest -L gpu`
#      plus the server and selection tests;
#   2. build the CUDA backend with the default architecture list (80 89 90) and run the backend
#      parity test from that build;
#   3. azbench infer --backend cuda (fp32, then bf16 GEMMs) and a short azbench pipeline.
# Results go to $OUT when set (else build-gpu90/gpu-check-results): results.txt (the table printed
# at the end), build.log, ctest.log, bench.log, infer.csv, infer_bf16.csv, pipeline.csv, env.txt.
# Exit status: 0 when every step passed, 1 otherwise. docs/gpu.md says what was measured where.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
b90="${GPU_CHECK_BUILD:-build-gpu90}"
out="${OUT:-$PWD/$b90/gpu-check-results}"
mkdir -p "$out"
jobs="$(nproc 2>/dev/null || echo 4)"
bdef="${b90}-default-archs"
: >"$out/build.log"
: >"$out/ctest.log"
: >"$out/bench.log"
rows=()
failed=0

# step NAME LOG COMMAND...: run, time, record one row of the results table.
step() {
	local name="$1" log="$2" t0 t1 rc
	shift 2
	echo "== $name: $*" | tee -a "$log" >&2
	t0=$(date +%s.%N)
	"$@" >>"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	local secs
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	if [ "$rc" -eq 0 ]; then
		rows+=("$(printf '%-34s %-6s %8ss' "$name" ok "$secs")")
	else
		rows+=("$(printf '%-34s %-6s %8ss  (exit %d, see %s)' "$name" FAIL "$secs" "$rc" \
			"$(basename "$log")")")
		failed=1
	fi
	return "$rc"
}

{
	date -u
	uname -a
	nvidia-smi 2>&1 || echo "nvidia-smi: not available"
	nvcc --version 2>&1 | tail -2
	cmake --version | head -1
	echo "nproc: $jobs"
} >"$out/env.txt" 2>&1

# 1. Hopper build, gpu tests.
if step "configure (arch 90, -Werror)" "$out/build.log" \
	cmake -S . -B "$b90" -DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON \
	-DCMAKE_CUDA_ARCHITECTURES=90 &&
	step "build (arch 90)" "$out/build.log" cmake --build "$b90" -j "$jobs"; then
	step "ctest -L gpu" "$out/ctest.log" \
		ctest --test-dir "$b90" -L gpu --output-on-failure --timeout 120
	step "ctest server + selection (cpu)" "$out/ctest.log" \
		ctest --test-dir "$b90" -R '^(test_server|test_backend_select|test_forward)$' \
		--output-on-failure --timeout 120
	# The ring-level benchmarks, on the GPU backend (tools/bench/, docs/azbench.md).
	step "azbench infer cuda fp32" "$out/bench.log" \
		"$b90/tools/azbench" infer --backend cuda --seconds 15 --csv "$out/infer.csv"
	step "azbench infer cuda bf16 (connect4)" "$out/bench.log" \
		env AZ_CUDA_MATH=bf16 "$b90/tools/azbench" infer --backend cuda --game connect4 \
		--seconds 8 --csv "$out/infer_bf16.csv"
	step "azbench pipeline cuda (connect4)" "$out/bench.log" \
		"$b90/tools/azbench" pipeline --backend cuda --game connect4 --workers 4,8 \
		--games-per-worker 16 --seconds 30 --verbose --csv "$out/pipeline.csv"
fi

# 2. The default architecture list (what a plain `cmake -S . -B build` produces): the CUDA
#    backend and its parity test only, to keep the time down.
if step "configure (default archs)" "$out/build.log" \
	cmake -S . -B "$bdef" -DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON &&
	step "build backend test (default archs)" "$out/build.log" \
		cmake --build "$bdef" -j "$jobs" --target test_backend_cuda; then
	step "test_backend_cuda (default archs)" "$out/ctest.log" \
		ctest --test-dir "$bdef" -R '^test_backend_cuda$' --output-on-failure --timeout 120
fi

{
	echo "RingZero gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
		echo "(no nvidia-smi)"
	echo
	printf '%-34s %-6s %9s\n' step result time
	for r in "${rows[@]}"; do
		echo "$r"
	done
	echo
	# Skipped gpu tests mean no device was visible: that is a failed check here.
	if grep -q "Skipped" "$out/ctest.log"; then
		echo "WARNING: some tests were skipped (no CUDA device visible?):"
		grep "Skipped" "$out/ctest.log"
	fi
	for f in infer.csv infer_bf16.csv pipeline.csv; do
		[ -s "$out/$f" ] && { echo "--- $f"; cat "$out/$f"; }
	done
} >"$out/results.txt"
if grep -q "Skipped" "$out/ctest.log"; then
	failed=1
fi
cat "$out/results.txt"
exit "$failed"
