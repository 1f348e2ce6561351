#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every check that needs an NVIDIA GPU, in one run with a time budget (a lent GPU machine comes
# for minutes, with one chance to rerun). Two ways to run it:
#   pack mode:  from the folder tools/gpu-pack.sh made (gpu-check.sh beside payload.tar.gz, or an
#               unpacked bin/ tests/ lib/): nothing is built or fetched; budget 330 s of steps;
#   build mode: from tools/ of a checkout on a machine with the dependencies: configures and builds
#               for sm_90 with -Werror first, and the parity test for the default architectures
#               last; budget 1800 s.
# Preflight (seconds; all of it runs, then the run stops, exit 2, if the GPU is unusable):
# nvidia-smi, the driver against the toolkit's minimum, where libcudart and libcublas come from,
# `ldd` of every binary ("not found" lists), the device probe (context, copy, kernel, cuBLAS, with
# the CUDA error string and the times of the context and of cuBLAS), compute-sanitizer.
# Steps, each under `timeout`, clipped to what is left of the budget (skipped when nothing is):
#   parity against the CPU backend, with the error magnitudes (AZ_TEST_ERRORS): the kernels;
#   inference for MLP and ResNet in fp32, tf32 and bf16, the slots' answers over the gather and the
#   dma feed; training steps; the inference server end to end; cuBLAS loading; backend selection;
#   compute-sanitizer memcheck, racecheck and synccheck over the CUDA tests, alongside the parity
#   tests (both only check answers, so they may share the machine; nothing timed runs with them);
#   an end-to-end `azrun --backend cuda` on Connect Four (MLP, then ResNet: the GPU trainer inside
#   a real run), its per-iteration phase times, and `azrun verify` of each run directory;
#   `azbench infer` and `azbench train` on cuda (MLP and ResNet, over batch sizes; fp32, then
#   bf16 and tf32 for inference); `azbench pipeline` on Connect Four with --backend cuda (gather
#   and dma feeds) and with --backend cpu on the same machine; the backend's description line.
# CUDA initialisation stays out of the measurements: each azbench series is one process (the
# context is made once, every backend is created before its timing starts), and the probe's
# context and cuBLAS times are the fixed cost azrun's trainer, a new process per iteration, pays.
# Output: at most three files in $OUT (else ./results in pack mode, build-gpu90/gpu-check-results
# in build mode): results.txt (the table, then the measurements; printed at the end, the table
# last), results.json and logs.tar.gz (every log and CSV), all rewritten after every step and
# from the exit trap. Exit status 0 when
# every step passed, 2 when the preflight stopped the run, 1 otherwise.
# Environment: GPU_CHECK_BUDGET (seconds), GPU_CHECK_SCALE (multiplies every step's limit),
# GPU_CHECK_BUILD (build mode's build folder), CUDACXX; to try the script itself on a machine
# without a GPU: GPU_CHECK_FORCE=1 (carry on after a failed preflight) and GPU_CHECK_BACKEND=cpu
# (azrun and azbench on the cpu backend instead of cuda).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
t_start=$(date +%s)
scale="${GPU_CHECK_SCALE:-1}"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
logs="$work/logs"
mkdir -p "$logs"
if [ -f "$here/payload.tar.gz" ] || [ -x "$here/bin/azrun" ]; then
	mode=pack
	out="${OUT:-$here/results}"
	budget="${GPU_CHECK_BUDGET:-330}"
else
	mode=build
	root=$(cd "$here/.." && pwd)
	b90="${GPU_CHECK_BUILD:-$root/build-gpu90}"
	out="${OUT:-$b90/gpu-check-results}"
	budget="${GPU_CHECK_BUDGET:-1800}"
fi
mkdir -p "$out" || exit 1
pk="$work/pack" # bin/ tests/ lib/: the unpacked payload, or links into the build
be="${GPU_CHECK_BACKEND:-cuda}"
status=0
stopped=""
names=() results=() secs=() limits=() details=()
notes=()

# ---- results: results.txt, results.json and logs.tar.gz in $out ----

# Columns of a CSV by header name, aligned: csv_cols FILE COL...
csv_cols() {
	local f="$1"
	shift
	[ -s "$f" ] || return 0
	awk -F, -v want="$*" 'NR == 1 {
		n = split(want, w, " ")
		for (i = 1; i <= NF; i++) col[$i] = i
		line = ""
		for (k = 1; k <= n; k++) line = line sprintf("%-14s", w[k])
		print line
		next
	}
	{
		line = ""
		for (k = 1; k <= n; k++)
			line = line sprintf("%-14s", (w[k] in col) ? $col[w[k]] : "-")
		print line
	}' "$f"
}

json_num() {
	[[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] && printf '%s' "$1" || printf null
}

json_str() {
	printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' |
		tr -d '\000-\037')"
}

write_results() {
	local elapsed=$(($(date +%s) - t_start)) i
	{
		echo "RingZero gpu-check ($mode mode), $(date -u +%Y-%m-%dT%H:%M:%SZ), ${elapsed}s" \
			"of a ${budget}s budget, exit status so far $status"
		[ -n "${gpu_line:-}" ] && echo "gpu: $gpu_line"
		[ -f "$pk/MANIFEST.txt" ] && sed -n 's/^commit: /pack commit: /p' "$pk/MANIFEST.txt"
		[ -n "$stopped" ] && echo "stopped after the preflight: $stopped"
		echo
		printf '%-52s %-6s %7s %6s  %s\n' step result time limit detail
		for i in "${!names[@]}"; do
			printf '%-52s %-6s %7s %6s  %s\n' "${names[$i]}" "${results[$i]}" \
				"${secs[$i]}" "${limits[$i]}" "${details[$i]:0:150}"
		done
		for n in "${notes[@]}"; do echo "note: $n"; done
	} >"$work/table.txt"
	for f in "$work"/summary-*.txt; do
		[ -s "$f" ] && { echo; cat "$f"; }
	done >"$work/summaries.txt"
	cat "$work/table.txt" "$work/summaries.txt" >"$out/results.txt.tmp"
	mv "$out/results.txt.tmp" "$out/results.txt"
	{
		printf '{"mode": %s, "status": %d, "elapsed_s": %d, "budget_s": %s, "stopped": %s, ' \
			"$(json_str "$mode")" "$status" "$elapsed" "$budget" "$(json_str "$stopped")"
		printf '"gpu": %s, "steps": [' "$(json_str "${gpu_line:-}")"
		for i in "${!names[@]}"; do
			[ "$i" -gt 0 ] && printf ', '
			printf '{"step": %s, "result": %s, "seconds": %s, "limit_s": %s, ' \
				"$(json_str "${names[$i]}")" "$(json_str "${results[$i]}")" \
				"$(json_num "${secs[$i]}")" "$(json_num "${limits[$i]}")"
			printf '"detail": %s}' "$(json_str "${details[$i]}")"
		done
		printf '], "notes": ['
		for i in "${!notes[@]}"; do
			[ "$i" -gt 0 ] && printf ', '
			json_str "${notes[$i]}"
		done
		printf ']}\n'
	} >"$out/results.json.tmp"
	mv "$out/results.json.tmp" "$out/results.json"
	# tar may say a log changed while read (a background step writing): the archive still holds
	# what was there, so it replaces the last one anyway.
	tar -C "$work" -czf "$out/logs.tar.gz.tmp" logs $(cd "$work" && ls summary-*.txt \
		2>/dev/null) 2>/dev/null
	[ -s "$out/logs.tar.gz.tmp" ] && mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}

finish() {
	trap - EXIT
	[ "$status" -eq 0 ] && [ "${#names[@]}" -eq 0 ] && status=1
	write_results
	# The table last, so that the end of the output (what the device tool returns) holds it.
	cat "$work/summaries.txt"
	echo
	cat "$work/table.txt"
	rm -rf "$work"
	exit "$status"
}
trap finish EXIT
trap 'notes+=("interrupted by a signal"); status=1; exit 1' INT TERM

# row NAME RESULT SECONDS LIMIT DETAIL: one line of the table; anything but ok/info fails the run.
row() {
	names+=("$1") results+=("$2") secs+=("$3") limits+=("$4") details+=("$5")
	case "$2" in ok | info) ;; *) [ "$status" -eq 0 ] && status=1 ;; esac
	write_results
}

left() { echo $((budget - ($(date +%s) - t_start))); }

# The limit for a step: its own times GPU_CHECK_SCALE, clipped to the budget left (minus time to
# write the results); 0 when under 5 s are left.
limit_for() {
	local want=$(($1 * scale)) l
	l=$(($(left) - 8))
	[ "$l" -lt 5 ] && { echo 0; return; }
	[ "$want" -lt "$l" ] && echo "$want" || echo "$l"
}

# run_timed LOG LIMIT CMD...: run under timeout into LOG; prints "rc seconds".
run_timed() {
	local log="$1" limit="$2" t0 t1 rc
	shift 2
	echo "== $* (limit ${limit}s)" >>"$log"
	t0=$(date +%s.%N)
	timeout -k 5 "$limit" "$@" >>"$log" 2>&1 </dev/null
	rc=$?
	t1=$(date +%s.%N)
	echo "== exit $rc" >>"$log"
	echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}

# Turn an exit status into a row: 77 is a skipped test (no device seen), which fails the run too.
record() {
	local name="$1" log="$2" limit="$3" rc="$4" s="$5" tail
	case "$rc" in
	0) row "$name" ok "$s" "$limit" "" ;;
	124 | 137) row "$name" TIME "$s" "$limit" "over its limit, see logs/$(basename "$log")" ;;
	77) row "$name" SKIP "$s" "$limit" "the test saw no device (exit 77)" ;;
	*)
		tail=$(grep -v '^==' "$log" | grep -m1 -i -E 'error|fail|abort|assert' | cut -c1-120)
		row "$name" FAIL "$s" "$limit" "exit $rc, logs/$(basename "$log")${tail:+: $tail}"
		;;
	esac
}

# step NAME LOGNAME LIMIT CMD...: one step in the foreground. Returns its exit status.
step() {
	local name="$1" log="$logs/$2.log" limit rc s
	limit=$(limit_for "$3")
	shift 3
	if [ "$limit" -eq 0 ]; then
		row "$name" SKIP - - "no time left in the ${budget}s budget"
		return 1
	fi
	echo "gpu-check: $name (limit ${limit}s)" >&2
	read -r rc s < <(run_timed "$log" "$limit" "$@")
	record "$name" "$log" "$limit" "$rc" "$s"
	return "$rc"
}

# bg_step NAME LOGNAME LIMIT CMD...: the same in the background; bg_wait records them all.
bg_names=() bg_logs=() bg_limits=() bg_files=()
bg_step() {
	local name="$1" log="$logs/$2.log" limit
	limit=$(limit_for "$3")
	shift 3
	if [ "$limit" -eq 0 ]; then
		row "$name" SKIP - - "no time left in the ${budget}s budget"
		return
	fi
	bg_names+=("$name") bg_logs+=("$log") bg_limits+=("$limit")
	bg_files+=("$work/bg.${#bg_files[@]}")
	run_timed "$log" "$limit" "$@" >"${bg_files[-1]}" &
}
bg_wait() {
	local i rc s
	wait
	for i in "${!bg_names[@]}"; do
		read -r rc s <"${bg_files[$i]}" || { rc=1 s=-; }
		record "${bg_names[$i]}" "${bg_logs[$i]}" "${bg_limits[$i]}" "$rc" "$s"
	done
	bg_names=() bg_logs=() bg_limits=() bg_files=()
}

# preflight NAME ok|FAIL|MISSING DETAIL [fatal]: a finding; a fatal failure stops the run after
# the whole preflight.
preflight() {
	echo "preflight: $1: $2: $3" >>"$logs/preflight.log"
	[ "$2" != ok ] && [ "${4:-}" = fatal ] && stopped+="${stopped:+; }$1: $3"
	row "preflight: $1" "$2" - - "$3"
}

# ---- preflight ----
{
	date -u
	uname -a
	echo "mode $mode, here $here, work $work, out $out, nproc $(nproc)"
	[ -r /etc/os-release ] && grep PRETTY /etc/os-release
} >"$logs/env.txt" 2>&1

# Toolkit folders to look in, for nvcc, compute-sanitizer and the CUDA libraries.
cuda_dirs=()
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-* /opt/cuda \
	/opt/nvidia/cuda; do
	[ -n "$d" ] && [ -d "$d" ] && cuda_dirs+=("$d")
done

if [ "$mode" = build ]; then
	nvcc="${CUDACXX:-$(command -v nvcc || true)}"
	for d in "${cuda_dirs[@]}"; do
		[ -z "$nvcc" ] && [ -x "$d/bin/nvcc" ] && nvcc="$d/bin/nvcc"
	done
	if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
		cuda_ver=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')
		preflight nvcc ok "$nvcc, CUDA $cuda_ver"
	else
		cuda_ver=""
		preflight nvcc FAIL "not on PATH, not in CUDACXX, not in /usr/local/cuda*/bin" fatal
	fi
else
	echo "unpacking the payload" >>"$logs/preflight.log"
	mkdir -p "$pk"
	if [ -x "$here/bin/azrun" ]; then
		for d in bin tests lib; do [ -d "$here/$d" ] && ln -s "$here/$d" "$pk/$d"; done
	else
		tar -C "$pk" -xzf "$here/payload.tar.gz" 2>>"$logs/preflight.log" ||
			preflight payload FAIL "payload.tar.gz did not unpack" fatal
	fi
	[ -f "$here/MANIFEST.txt" ] && cp "$here/MANIFEST.txt" "$pk/" &&
		cp "$here/MANIFEST.txt" "$logs/"
	cuda_ver=$(sed -n 's/^cuda: //p' "$pk/MANIFEST.txt" 2>/dev/null)
fi

smi=$(command -v nvidia-smi || true)
for d in /usr/local/nvidia/bin /usr/bin; do
	[ -z "$smi" ] && [ -x "$d/nvidia-smi" ] && smi="$d/nvidia-smi"
done
if [ -z "$smi" ]; then
	preflight nvidia-smi MISSING "not on PATH, not in /usr/local/nvidia/bin"
elif gpu_line=$(timeout 20 "$smi" --query-gpu=name,driver_version,memory.total,compute_cap \
	--format=csv,noheader 2>&1 | head -1) && [ -n "$gpu_line" ] &&
	! grep -qi -E 'fail|error|not found' <<<"$gpu_line"; then
	preflight nvidia-smi ok "$gpu_line"
	timeout 20 "$smi" >"$logs/nvidia-smi.txt" 2>&1
else
	preflight nvidia-smi FAIL "${gpu_line:-no answer}"
	gpu_line=""
fi

# The driver each toolkit needs at least (Linux, from NVIDIA's CUDA release notes, table 3:
# "CUDA Toolkit and Corresponding Driver Versions", the GA release of each major version).
vnum() { awk -F. '{ printf "%d\n", $1 * 1000000 + $2 * 1000 + $3 }' <<<"$1"; }
case "${cuda_ver%%.*}" in
13) min_driver=580.65.06 ;;
12) min_driver=525.60.13 ;;
*) min_driver=0 ;;
esac
driver=""
[ -n "$smi" ] && driver=$(timeout 20 "$smi" --query-gpu=driver_version --format=csv,noheader \
	2>/dev/null | head -1 | grep -E '^[0-9.]+$')
if [ -z "$driver" ] && [ -r /proc/driver/nvidia/version ]; then
	driver=$(sed -n 's/.*Kernel Module  *\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version)
fi
if [ -z "$driver" ]; then
	preflight driver FAIL "no NVIDIA driver loaded (no nvidia-smi answer, no \
/proc/driver/nvidia/version); CUDA ${cuda_ver:-?} needs >= $min_driver" fatal
elif [ "$(vnum "$driver")" -lt "$(vnum "$min_driver")" ]; then
	preflight driver FAIL "$driver is older than CUDA $cuda_ver's minimum $min_driver" fatal
else
	preflight driver ok "$driver (CUDA ${cuda_ver:-?} needs >= $min_driver)"
fi

# libcudart and libcublas of the toolkit's major version: the loader's cache first, else the
# toolkit folders and pip's nvidia-* packages, whose folder then goes on LD_LIBRARY_PATH (CUDA's
# libraries only: nothing else is shadowed); libcudart last from the pack's lib/cuda.
major="${cuda_ver%%.*}"
major="${major:-13}"
find_cuda_lib() {
	local soname="$1" d
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q "$soname " &&
		{ echo cache; return; }
	for d in "${cuda_dirs[@]}"; do
		for sub in lib64 lib targets/x86_64-linux/lib; do
			[ -e "$d/$sub/$soname" ] && { echo "$d/$sub"; return; }
		done
	done
	for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' \
		2>/dev/null); do
		d=$(find "$d/nvidia" -maxdepth 3 -name "$soname" 2>/dev/null | head -1)
		[ -n "$d" ] && { dirname "$d"; return; }
	done
	[ -e "$pk/lib/cuda/$soname" ] && { echo "$pk/lib/cuda"; return; }
	return 1
}
cuda_libs_ok=1
found=""
for lib in "libcudart.so.$major" "libcublas.so.$major"; do
	if where=$(find_cuda_lib "$lib"); then
		found+="${found:+, }$lib: $where"
		[ "$where" != cache ] && case ":${LD_LIBRARY_PATH:-}:" in
		*":$where:"*) ;;
		*) export LD_LIBRARY_PATH="$where${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
		esac
	else
		found+="${found:+, }$lib: NOT FOUND"
		cuda_libs_ok=0
	fi
done
if [ "$cuda_libs_ok" -eq 1 ]; then
	preflight "CUDA libraries" ok "$found"
else
	preflight "CUDA libraries" FAIL "$found" fatal
fi

if [ "$mode" = build ] && [ -n "${nvcc:-}" ]; then
	mkdir -p "$pk/bin"
	timeout 120 "$nvcc" -arch=sm_90 -cudart shared -o "$pk/bin/gpu-probe" \
		"$root/tools/gpu-probe.cu" >>"$logs/preflight.log" 2>&1 ||
		preflight "device probe" FAIL "nvcc could not build tools/gpu-probe.cu" fatal
fi

# ldd of every binary: with the rpath, the carried libraries resolve by themselves.
ldd_check() {
	local f m missing=""
	for f in "$pk"/bin/* "$pk"/tests/*; do
		[ -f "$f" ] || continue
		echo "== $f" >>"$logs/ldd.txt"
		ldd "$f" >>"$logs/ldd.txt" 2>&1
		m=$(ldd "$f" 2>/dev/null | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
		[ -n "$m" ] && missing+="$(basename "$f"): $m; "
	done
	if [ -n "$missing" ]; then
		preflight ldd FAIL "not found: $missing" fatal
	else
		preflight ldd ok "every library of $(ls "$pk"/bin/* "$pk"/tests/* 2>/dev/null |
			wc -l) binaries resolves"
	fi
}
[ "$mode" = pack ] && ldd_check

if [ -x "$pk/bin/gpu-probe" ]; then
	probe_out=$(timeout 60 "$pk/bin/gpu-probe" 2>&1)
	probe_rc=$?
	echo "$probe_out" >"$logs/probe.txt"
	if [ "$probe_rc" -eq 0 ]; then
		preflight "device probe" ok "$(grep -m1 '^device' <<<"$probe_out"); $(grep -E \
			'^(context|cuBLAS)' <<<"$probe_out" | tr '\n' ' ')"
	else
		preflight "device probe" FAIL "$(tail -1 <<<"${probe_out:-timed out or crashed}")" \
			fatal
	fi
elif [ "$mode" = pack ]; then
	preflight "device probe" FAIL "bin/gpu-probe is not in the pack" fatal
fi

sanitizer=$(command -v compute-sanitizer || true)
for d in "${cuda_dirs[@]}"; do
	[ -z "$sanitizer" ] && [ -x "$d/bin/compute-sanitizer" ] &&
		sanitizer="$d/bin/compute-sanitizer"
done
if [ -n "$sanitizer" ]; then
	preflight compute-sanitizer ok "$sanitizer ($("$sanitizer" --version 2>/dev/null |
		grep -m1 -i version | sed 's/.*[Vv]ersion *//'))"
else
	preflight compute-sanitizer MISSING "not on PATH, not in the toolkit folders: its steps skip"
fi

if [ -n "$stopped" ] && [ "${GPU_CHECK_FORCE:-0}" != 1 ]; then
	status=2
	exit 2
fi

# ---- build mode: configure and build for sm_90, then point $pk at the build ----
if [ "$mode" = build ]; then
	jobs=$(nproc 2>/dev/null || echo 4)
	step "configure (sm_90, -Werror)" build 120 cmake -S "$root" -B "$b90" \
		-DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
		-DCMAKE_CUDA_ARCHITECTURES=90 &&
		step "build (sm_90)" build 400 cmake --build "$b90" -j "$jobs" ||
		{ notes+=("stopped: the build failed (logs/build.log)"); exit 1; }
	mkdir -p "$pk/tests"
	for p in azrun azbench azeval; do ln -sf "$b90/tools/$p" "$pk/bin/$p"; done
	for t in test_kernels_cuda test_backend_cuda test_train_cuda test_server \
		test_backend_select test_cublas_load; do
		# tests/<library>/ (test_server is infer's, the others gpu's)
		f=$(find "$b90/tests" -type f -name "$t" -perm -u+x | head -1)
		[ -n "$f" ] && ln -sf "$f" "$pk/tests/$t"
	done
	ldd_check
	[ -n "$stopped" ] && exit 1
fi

bin="$pk/bin"
tst="$pk/tests"
export OPENBLAS_NUM_THREADS=1 AZ_TEST_ERRORS=1

# ---- parity (answers), with compute-sanitizer beside it ----
# san TOOL TEST [OPTION...]: compute-sanitizer TOOL over test_TEST_cuda, in the background.
san() {
	local tool="$1" t="$2"
	shift 2
	bg_step "sanitizer $tool: test_${t}_cuda" "san-$tool-$t" 150 "$sanitizer" --tool "$tool" \
		--error-exitcode 99 --print-limit 20 "$@" "$tst/test_${t}_cuda"
}
if [ -n "$sanitizer" ]; then
	san memcheck kernels --leak-check full
	san memcheck backend
	san memcheck train
	san racecheck kernels
	san racecheck train
	san synccheck kernels
	san synccheck backend
else
	row "compute-sanitizer memcheck/racecheck/synccheck" SKIP - - "no compute-sanitizer"
fi
step "parity: kernels" parity-kernels 60 "$tst/test_kernels_cuda"
step "parity: inference fp32/tf32/bf16, slots gather+dma" parity-backend 90 \
	"$tst/test_backend_cuda"
step "parity: training steps (MLP, ResNet)" parity-train 90 "$tst/test_train_cuda"
step "parity: inference server, real rings" parity-server 90 "$tst/test_server" cuda
step "cuBLAS opened with dlopen" cublas-load 30 "$tst/test_cublas_load"
step "backend selection" backend-select 30 "$tst/test_backend_select"
# The errors the tests measured (lines "parity-error WHAT: MEASURE ERR (tol TOL, n N)" after
# cmocka's "[ RUN ] TEST"): every one in logs/parity-errors.txt; in the results, per test and
# measure, the comparison closest to its tolerance.
for f in "$logs"/parity-*.log; do
	awk -v file="$(basename "$f" .log)" '
	/^\[ RUN/ { test = $NF }
	/^parity-error / && match($0, / [0-9.e+-]+ \(tol [0-9.e+-]+/) {
		split(substr($0, RSTART + 1, RLENGTH - 1), v, " \\(tol ")
		head = substr($0, 14, RSTART - 14); c = index(head, ": ")
		printf "%s %s|%s|%s|%s|%s\n", file, test, substr(head, 1, c - 1),
			substr(head, c + 2), v[1], v[2]
	}' "$f"
done >"$logs/parity-errors.txt"
if [ -s "$logs/parity-errors.txt" ]; then
	{
		echo "--- parity: per test and measure, the comparison closest to its tolerance"
		printf '%-44s %-24s %-22s %-10s %s\n' "log test" what measure error tolerance
		awk -F'|' '{
			k = $1 "|" $3; r = ($5 > 0) ? $4 / $5 : 0
			if (!(k in best) || r > best[k]) { best[k] = r; line[k] = $0 }
		}
		END { for (k in line) { split(line[k], a, "|")
			printf "%-44s %-24s %-22s %-10s %s\n", a[1], substr(a[2], 1, 24), a[3], a[4],
				a[5] } }' \
			"$logs/parity-errors.txt" | sort
	} >"$work/summary-1-parity.txt"
fi
[ "${#bg_names[@]}" -gt 0 ] && echo "gpu-check: waiting for compute-sanitizer" >&2
bg_wait
for f in "$logs"/san-*.log; do
	[ -f "$f" ] || continue
	e=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$f")
	[ -n "$e" ] && echo "$(basename "$f" .log): $e"
done >"$work/sanitizer.txt"
[ -s "$work/sanitizer.txt" ] &&
	{ echo "--- compute-sanitizer summaries"; cat "$work/sanitizer.txt"; } \
		>"$work/summary-2-sanitizer.txt"

# ---- end to end: azrun --backend cuda on Connect Four, MLP then ResNet ----
e2e() {
	local name="$1" net="$2" iters="$3" limit="$4" dir="$work/runs/$1"
	step "azrun $be connect4 $net ($iters iterations)" "azrun-$name" "$limit" \
		"$bin/azrun" --game connect4 --out "$dir" --backend "$be" --net "$net" \
		--iterations "$iters" --games-per-iter 128 --sims 50 --arena-games 16 \
		--train-steps-max 200 --workers 12
	[ -f "$dir/metrics.jsonl" ] || return 0
	step "azrun verify ($name run)" "azrun-$name" 30 "$bin/azrun" verify --out "$dir"
	cp "$dir/metrics.jsonl" "$logs/azrun-$name-metrics.jsonl"
	cp "$dir/azrun.log" "$logs/azrun-$name-run.log" 2>/dev/null
	{
		echo "--- azrun --backend $be connect4 $net: per iteration (seconds; evals/s)"
		printf '%-5s %-8s %-12s %-10s %-10s %-12s %-10s\n' iter games selfplay_s train_s \
			arena_s evals_per_s mean_batch
		sed -E 's/[{}"]//g' "$dir/metrics.jsonl" | awk -F', ' '{
			for (i = 1; i <= NF; i++) { split($i, kv, ": "); v[kv[1]] = kv[2] }
			printf "%-5s %-8s %-12s %-10s %-10s %-12s %-10s\n", v["iteration"],
				v["games"], v["selfplay_s"], v["train_s"], v["arena_s"], v["evals_per_s"],
				v["mean_batch"]
		}'
	} >"$work/summary-3-azrun-$name.txt"
	write_results
}
e2e mlp mlp:128x3 3 90
e2e resnet resnet:64x4 2 90

# ---- azbench infer and train on cuda: one process per series ----
bench_order() {
	case "$1" in infer*) echo 4 ;; train*) echo 5 ;; *) echo 6 ;; esac
}
bench() {
	local name="$1" log="$2" limit="$3" csv="$logs/$2.csv"
	shift 3
	step "$name" "$log" "$limit" "$@" --csv "$csv"
	case "$log" in
	infer*) csv_cols "$csv" game net batch evals_per_s us_per_batch ;;
	train*) csv_cols "$csv" game net impl batch samples_per_s ms_per_step ;;
	pipe*) csv_cols "$csv" game net backend setup workers G evals_per_s sims_per_s mean_batch \
		ceiling_frac ;;
	esac | sed "1i --- $name" >"$work/summary-$(bench_order "$log")-$log.txt"
	write_results
}
infer=("$bin/azbench" infer --backend "$be" --game connect4 --batches 1,16,64,256,1024,4096)
bench "azbench infer $be fp32, MLP" infer-mlp 30 "${infer[@]}" --seconds 8
bench "azbench infer $be fp32, ResNet" infer-resnet 30 "${infer[@]}" --net resnet:64x4 --seconds 8
bench "azbench infer $be bf16, ResNet" infer-resnet-bf16 20 env AZ_CUDA_MATH=bf16 "${infer[@]}" \
	--net resnet:64x4 --seconds 5
bench "azbench infer $be tf32, ResNet" infer-resnet-tf32 20 env AZ_CUDA_MATH=tf32 "${infer[@]}" \
	--net resnet:64x4 --seconds 5
bench "azbench train $be, MLP" train-mlp 25 "$bin/azbench" train --backend "$be" --no-torch \
	--game connect4 --batches 32,128,512,2048 --seconds 8
bench "azbench train $be, ResNet" train-resnet 25 "$bin/azbench" train --backend "$be" \
	--no-torch --game connect4 --net resnet:64x4 --batches 32,128,512,2048 --seconds 8
desc=$(grep -h -m1 "^infer: backend" "$logs"/infer-*.log 2>/dev/null | head -1 | cut -c1-200)
if [ -n "$desc" ]; then
	row "backend description line" info - - "$desc"
else
	row "backend description line" FAIL - - "no 'backend $be' line in the azbench infer logs"
fi

# ---- azbench pipeline on Connect Four: cuda (gather, dma) against cpu, same machine ----
pipe_args=(pipeline --game connect4 --workers 4,14 --games-per-worker 64 --default-runs 0
	--phases 0 --seconds 12 --verbose)
bench "azbench pipeline $be gather feed" pipe-cuda-gather 40 env AZ_CUDA_FEED=gather \
	"$bin/azbench" "${pipe_args[@]}" --backend "$be"
bench "azbench pipeline $be dma feed" pipe-cuda-dma 40 env AZ_CUDA_FEED=dma \
	"$bin/azbench" "${pipe_args[@]}" --backend "$be"
bench "azbench pipeline cpu" pipe-cpu 40 "$bin/azbench" "${pipe_args[@]}" --backend cpu
while read -r l; do
	notes+=("$l")
done < <(grep -h -m1 "^inference: backend" "$logs"/pipe-*.log 2>/dev/null | cut -c1-200 | sort -u)

# ---- build mode: the parity test built for the default architecture list ----
if [ "$mode" = build ]; then
	bdef="$b90-default-archs"
	step "configure (default archs)" build 120 cmake -S "$root" -B "$bdef" \
		-DCMAKE_BUILD_TYPE=Release -DAZ_WERROR=ON -DAZ_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" &&
		step "build test_backend_cuda (default archs)" build 300 cmake --build "$bdef" \
			-j "$jobs" --target test_backend_cuda &&
		step "test_backend_cuda (default archs)" parity-default-archs 90 \
			"$bdef/tests/gpu/test_backend_cuda"
fi
exit "$status"
