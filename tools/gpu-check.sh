#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The checks that need an NVIDIA GPU, in one short run (under 6 minutes on a 16-core host with
# one H100/H200; a GPU machine may be at hand only for minutes, so every answer comes from one
# run and every step has a time limit):
#   0. preflight (seconds): nvcc (PATH, CUDACXX, else the toolkit's standard install folder),
#      the driver version against the toolkit's minimum, a device probe that prints the CUDA
#      error string; it stops the run early with the reason when any of them fails;
#   1. build for Hopper only (-DCMAKE_CUDA_ARCHITECTURES=90) with -Werror, `ldd` of the binaries
#      (missing CUDA libraries stop the run), `ctest -L gpu` plus the server and selection tests;
#   2. azbench infer --backend cuda (fp32, then bf16 GEMMs), azbench pipeline on the gather feed
#      and on the dma feed (AZ_CUDA_FEED), the backend's description line (device, math mode,
#      feed, graphs on/off and why);
#   3. an nsys trace of a tiny azrun and its NVTX summary, when nsys is installed;
#   4. the CUDA backend's parity test built for the default architecture list (80 89 90).
# Results go to $OUT when set (else build-gpu90/gpu-check-results): results.txt (rewritten after
# every step and from the exit trap, so a run cut short still says what it found), build.log,
# ctest.log, bench.log, preflight.log, infer.csv, infer_bf16.csv, pipeline_gather.csv,
# pipeline_dma.csv, nvtx.txt, env.txt. Exit status: 0 when every step passed, 1 otherwise
# (preflight failures included). Step limits: GPU_CHECK_SCALE=2 doubles them all.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
b90="${GPU_CHECK_BUILD:-build-gpu90}"
out="${OUT:-$PWD/$b90/gpu-check-results}"
mkdir -p "$out"
jobs="$(nproc 2>/dev/null || echo 4)"
bdef="${b90}-default-archs"
scale="${GPU_CHECK_SCALE:-1}"
for f in build.log ctest.log bench.log preflight.log; do : >"$out/$f"; done
rows=()
notes=()
failed=0
t_start=$(date +%s)

# The results so far: written after every step and once more on exit.
write_results() {
	{
		echo "RingZero gpu-check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(($(date +%s) - t_start))s"
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
			2>/dev/null || echo "(no nvidia-smi)"
		echo
		printf '%-40s %-6s %9s\n' step result time
		for r in "${rows[@]}"; do echo "$r"; done
		echo
		for n in "${notes[@]}"; do echo "$n"; done
		if grep -q "Skipped" "$out/ctest.log" 2>/dev/null; then
			echo "WARNING: some tests were skipped (no CUDA device visible?):"
			grep "Skipped" "$out/ctest.log"
		fi
		for f in infer.csv infer_bf16.csv pipeline_gather.csv pipeline_dma.csv nvtx.txt; do
			[ -s "$out/$f" ] && { echo "--- $f"; cat "$out/$f"; }
		done
	} >"$out/results.txt.tmp"
	mv "$out/results.txt.tmp" "$out/results.txt"
}

finish() {
	trap - EXIT
	if grep -q "Skipped" "$out/ctest.log" 2>/dev/null; then failed=1; fi
	write_results
	cat "$out/results.txt"
	exit "$failed"
}
trap finish EXIT
trap 'notes+=("interrupted"); failed=1; exit 1' INT TERM

# step NAME LOG LIMIT_S COMMAND...: run under timeout, time it, record one row of the results.
step() {
	local name="$1" log="$2" limit=$(($3 * scale)) t0 t1 rc secs
	shift 3
	echo "== $name (limit ${limit}s): $*" | tee -a "$log" >&2
	t0=$(date +%s.%N)
	timeout -k 10 "$limit" "$@" >>"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	if [ "$rc" -eq 0 ]; then
		rows+=("$(printf '%-40s %-6s %8ss' "$name" ok "$secs")")
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		rows+=("$(printf '%-40s %-6s %8ss  (over its %ss limit, see %s)' "$name" TIME \
			"$secs" "$limit" "$(basename "$log")")")
		failed=1
	else
		rows+=("$(printf '%-40s %-6s %8ss  (exit %d, see %s)' "$name" FAIL "$secs" "$rc" \
			"$(basename "$log")")")
		failed=1
	fi
	write_results
	return "$rc"
}

# preflight NAME OK|FAIL DETAIL: one preflight finding; FAIL stops the run.
preflight() {
	rows+=("$(printf '%-40s %-6s %9s  %s' "preflight: $1" "$2" - "$3")")
	echo "preflight: $1: $2: $3" | tee -a "$out/preflight.log" >&2
	if [ "$2" != ok ]; then
		failed=1
		notes+=("stopped after the preflight: $1: $3")
		exit 1
	fi
	write_results
}

# Version a.b[.c] as a comparable number (a*10^6 + b*10^3 + c).
vnum() { awk -F. '{ printf "%d\n", $1 * 1000000 + $2 * 1000 + $3 }' <<<"$1"; }

{
	date -u
	uname -a
	nvidia-smi 2>&1 || echo "nvidia-smi: not available"
	cmake --version | head -1
	echo "nproc: $jobs"
} >"$out/env.txt" 2>&1

# ---- 0. preflight ----
nvcc_bin="${CUDACXX:-$(command -v nvcc || true)}"
if [ -z "$nvcc_bin" ]; then
	for d in /usr/local/cuda /usr/local/cuda-*; do
		[ -x "$d/bin/nvcc" ] && { nvcc_bin="$d/bin/nvcc"; break; }
	done
fi
[ -n "$nvcc_bin" ] && [ -x "$nvcc_bin" ] ||
	preflight nvcc FAIL "not on PATH, not in CUDACXX, not in /usr/local/cuda*/bin"
export CUDACXX="$nvcc_bin" PATH="$(dirname "$nvcc_bin"):$PATH"
cuda_ver=$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')
echo "nvcc: $nvcc_bin ($cuda_ver)" >>"$out/env.txt"
preflight nvcc ok "$nvcc_bin, CUDA $cuda_ver"

# The driver each toolkit needs at least (Linux, from NVIDIA's CUDA release notes, table 3:
# "CUDA Toolkit and Corresponding Driver Versions", the GA release of each major version).
case "${cuda_ver%%.*}" in
13) min_driver=580.65.06 ;;
12) min_driver=525.60.13 ;;
*) min_driver=0 ;;
esac
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
if [ -z "$driver" ] && [ -r /proc/driver/nvidia/version ]; then
	driver=$(sed -n 's/.*Kernel Module  *\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version)
fi
[ -n "$driver" ] || preflight driver FAIL "no NVIDIA driver loaded (no nvidia-smi answer, no \
/proc/driver/nvidia/version); CUDA $cuda_ver needs driver >= $min_driver"
[ "$(vnum "$driver")" -ge "$(vnum "$min_driver")" ] ||
	preflight driver FAIL "driver $driver is older than CUDA $cuda_ver's minimum $min_driver"
preflight driver ok "$driver (CUDA $cuda_ver needs >= $min_driver)"

# The device probe, built on its own in seconds (linked against the shared cudart, so `ldd`
# also shows whether the runtime library resolves).
probe_src="$out/probe.cu"
cat >"$probe_src" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main()
{
	int n = 0, drv = 0, rt = 0;
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		printf("cudaGetDeviceCount: %s (error %d); driver API %d, runtime %d\n",
		       cudaGetErrorString(e), (int)e, drv, rt);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		cudaDeviceProp p;
		cudaGetDeviceProperties(&p, i);
		printf("device %d: %s, sm_%d%d, %.0f GiB; driver API %d, runtime %d\n", i, p.name,
		       p.major, p.minor, p.totalGlobalMem / 1073741824.0, drv, rt);
	}
	return n > 0 ? 0 : 1;
}
EOF
timeout 120 "$nvcc_bin" -cudart shared -o "$out/probe" "$probe_src" >>"$out/preflight.log" 2>&1 ||
	preflight "device probe" FAIL "nvcc could not build the probe (see preflight.log)"
missing=$(ldd "$out/probe" 2>/dev/null | grep "not found" | awk '{ print $1 }' | tr '\n' ' ')
[ -z "$missing" ] || preflight "device probe" FAIL "missing libraries: $missing"
probe_out=$(timeout 60 "$out/probe" 2>&1)
probe_rc=$?
[ "$probe_rc" -eq 0 ] || preflight "device probe" FAIL "${probe_out:-timed out or crashed}"
preflight "device probe" ok "$(head -1 <<<"$probe_out")"

# ---- 1. Hopper build, libraries, gpu tests ----
if step "configure (arch 90, -Werror)" "$out/build.log" 120 \
	cmake -S . -B "$b90" -DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON \
	-DCMAKE_CUDA_COMPILER="$nvcc_bin" -DCMAKE_CUDA_ARCHITECTURES=90 &&
	step "build (arch 90)" "$out/build.log" 240 cmake --build "$b90" -j "$jobs"; then
	missing=""
	for bin in "$b90"/tools/azrun "$b90"/tools/azbench "$b90"/tests/gpu/test_backend_cuda; do
		m=$(ldd "$bin" 2>/dev/null | grep "not found" | awk '{ print $1 }' | tr '\n' ' ')
		[ -n "$m" ] && missing+="$(basename "$bin"): $m "
	done
	if [ -n "$missing" ]; then
		rows+=("$(printf '%-40s %-6s %9s  %s' "ldd" FAIL - "$missing")")
		failed=1
		notes+=("stopped: missing libraries: $missing")
		exit 1
	fi
	rows+=("$(printf '%-40s %-6s %9s' "ldd (azrun, azbench, tests)" ok -)")
	step "ctest -L gpu" "$out/ctest.log" 150 \
		ctest --test-dir "$b90" -L gpu --output-on-failure --timeout 100
	step "ctest server + selection (cpu)" "$out/ctest.log" 90 \
		ctest --test-dir "$b90" -R '^(test_server|test_backend_select|test_forward)$' \
		--output-on-failure --timeout 60
	step "azbench infer cuda fp32" "$out/bench.log" 40 \
		"$b90/tools/azbench" infer --backend cuda --seconds 10 --csv "$out/infer.csv"
	step "azbench infer cuda bf16 (connect4)" "$out/bench.log" 30 \
		env AZ_CUDA_MATH=bf16 "$b90/tools/azbench" infer --backend cuda --game connect4 \
		--seconds 5 --csv "$out/infer_bf16.csv"
	for feed in gather dma; do
		step "azbench pipeline cuda $feed feed" "$out/bench.log" 60 \
			env AZ_CUDA_FEED=$feed "$b90/tools/azbench" pipeline --backend cuda \
			--game connect4 --workers 8 --games-per-worker 16 --phases 1 --seconds 20 \
			--verbose --csv "$out/pipeline_$feed.csv"
	done
	desc=$(grep -m2 "inference: backend cuda" "$out/bench.log" | sort -u | tr '\n' ' ')
	notes+=("backend: ${desc:-(no description line in bench.log)}")
	write_results
	# ---- 3. NVTX ranges in a real trace ----
	if command -v nsys >/dev/null 2>&1; then
		step "nsys trace (azrun, tiny)" "$out/bench.log" 90 \
			nsys profile -t nvtx,cuda --trace-fork-before-exec=true --sample=none \
			-o "$out/trace" --force-overwrite true \
			"$b90/tools/azrun" --game tictactoe --out "$out/nsys-run" --iterations 1 \
			--games-per-iter 8 --arena-games 4 --sims 16 --backend cuda --quiet &&
			step "nsys NVTX summary" "$out/bench.log" 60 \
				sh -c "nsys stats --report nvtx_sum '$out/trace.nsys-rep' > '$out/nvtx.txt'"
	else
		notes+=("nsys: not installed, no trace (the NVTX injection test covers the ranges)")
	fi
fi

# ---- 4. the default architecture list: the CUDA backend and its parity test only ----
if step "configure (default archs)" "$out/build.log" 120 \
	cmake -S . -B "$bdef" -DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON \
	-DCMAKE_CUDA_COMPILER="$nvcc_bin" &&
	step "build backend test (default archs)" "$out/build.log" 180 \
		cmake --build "$bdef" -j "$jobs" --target test_backend_cuda; then
	step "test_backend_cuda (default archs)" "$out/ctest.log" 60 \
		ctest --test-dir "$bdef" -R '^test_backend_cuda$' --output-on-failure --timeout 50
fi
exit "$failed"
