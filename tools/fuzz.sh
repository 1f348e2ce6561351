#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets (clang, ASan+UBSan) and run each for a fixed time; see
# docs/fuzzing.md. Usage: tools/fuzz.sh [SECONDS_PER_TARGET (60)] [TARGET...]
# TARGET: checkpoint replay positions config (default: all). Environment: AZ_FUZZ_BUILD (build
# dir, default build-fuzz), AZ_FUZZ_WORK (corpora and crashes, default $AZ_FUZZ_BUILD/fuzz-work),
# AZ_JOBS (build parallelism, default 2). Exit status 1 when a target found a crash (or failed
# to run), 2 on a build or usage error.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(checkpoint replay positions config)
build=${AZ_FUZZ_BUILD:-$root/build-fuzz}
work=${AZ_FUZZ_WORK:-$build/fuzz-work}

mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DAZ_FUZZ=ON -DAZ_SANITIZE=address \
	-DAZ_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build/fuzz-cmake.log" 2>&1 ||
	{ cat "$build/fuzz-cmake.log" >&2; exit 2; }
cmake --build "$build" --target fuzzers -j"${AZ_JOBS:-2}" > /dev/null || exit 2

found=0
printf '%-12s %12s %8s %8s  %s\n' target executions crashes corpus artifacts
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/fuzz_$t
	[ -x "$bin" ] || { echo "fuzz.sh: unknown target '$t'" >&2; exit 2; }
	dir=$work/$t
	mkdir -p "$dir/corpus" "$dir/artifacts"
	touch "$dir/.start" # crashes of this run only are counted
	dict=()
	[ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
	# New inputs go to the work corpus; the checked-in seeds are read only.
	set +e
	mkdir -p "$dir/tmp" # the target's temporary files (AZ_FUZZ_TMPDIR), removed below
	(cd "$dir" && AZ_FUZZ_TMPDIR="$dir/tmp" OPENBLAS_NUM_THREADS=1 "$bin" \
		-max_total_time="$secs" -timeout=10 \
		-print_final_stats=1 "${dict[@]}" -artifact_prefix="$dir/artifacts/" \
		"$dir/corpus" "$root/tests/fuzz/corpus/$t" > "$dir/log" 2>&1)
	rc=$?
	set -e
	rm -rf "$dir/tmp"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
	crashes=$(find "$dir/artifacts" -type f -newer "$dir/.start" \( -name 'crash-*' -o \
		-name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	corpus=$(find "$dir/corpus" -type f | wc -l)
	printf '%-12s %12s %8s %8s  %s\n' "$t" "${runs:-?}" "$crashes" "$corpus" "$dir/artifacts"
	if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
		found=1
		[ "$crashes" -ne 0 ] || echo "fuzz.sh: $t exited with status $rc; see $dir/log" >&2
	fi
done
[ $found -eq 0 ] || echo "fuzz.sh: reproduce a crash with: $build/tests/fuzz/fuzz_TARGET FILE" >&2
exit $found
