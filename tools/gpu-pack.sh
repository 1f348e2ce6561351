#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build RingZero for the lent H200 (Release, CUDA on, sm_90 only) and collect into one folder
# everything tools/gpu-check.sh needs there, where nothing can be built or fetched: the programs,
# the test executables, the device probe, the shared libraries outside CUDA's own and libc's that
# the device image may lack (liburing, cJSON, inih, cmocka, OpenBLAS, LAPACK(E), gfortran, zlib,
# ...), and gpu-check.sh itself. The device tool's `carry` takes the folder along (docs/gpu.md,
# "On the lent GPU machine").
#
# Usage: tools/gpu-pack.sh [PACK_DIR]    PACK_DIR defaults to gpu-pack/ at the repository root
#                                        (git-ignored), replaced as a whole.
# The folder: gpu-check.sh, MANIFEST.txt (commit, toolchain, every file with size and sha256) and
# payload.tar.gz holding bin/ (azrun, azbench, azeval, gpu-probe), tests/ (the CUDA tests and
# the few others gpu-check runs) and lib/. The programs carry the rpath $ORIGIN/../lib as DT_RPATH
# (--disable-new-dtags), which also covers the libraries' own dependencies (libopenblas ->
# libgfortran), so they find the carried libraries wherever the payload is unpacked, with no
# LD_LIBRARY_PATH. libcudart stays the device's (the image has the CUDA 13 toolkit); a copy in
# lib/cuda/ is used only where gpu-check finds none there. cuBLAS is the device's: it is opened
# with dlopen and too large to carry. The payload is compressed because OpenBLAS alone is 36 MB.
#
# Environment: GPU_PACK_BUILD (build folder, default build-gpu-pack), JOBS (default 2), CUDACXX
# (nvcc; else PATH, else /usr/local/cuda*/bin), GPU_PACK_MAX_MIB (largest acceptable folder,
# default 40: the run tool carries 64 MiB with the working tree). Exit 0, or 1 with the reason.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
pack="${1:-gpu-pack}"
build="${GPU_PACK_BUILD:-build-gpu-pack}"
jobs="${JOBS:-2}"
max_mib="${GPU_PACK_MAX_MIB:-40}"
progs="azrun azbench azeval gpu-probe"
# The CUDA tests, and the CPU-side ones gpu-check also runs there (test_server cuda drives the
# inference process over real rings; selection and cuBLAS loading need the device to mean much).
tests="test_kernels_cuda test_backend_cuda test_train_cuda test_server test_backend_select
test_cublas_load"
# Libraries the device has or must not be shadowed: the C and C++ runtimes (a carried older
# libstdc++ would break newer programs there) and CUDA's (the driver's libcuda, the toolkit's).
skip_re='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s'
skip_re+='|libcuda\.|libcudart|libcublas|libnvidia)'

die() {
	echo "gpu-pack: $*" >&2
	exit 1
}

nvcc="${CUDACXX:-$(command -v nvcc || true)}"
if [ -z "$nvcc" ]; then
	for d in /usr/local/cuda /usr/local/cuda-*; do
		[ -x "$d/bin/nvcc" ] && { nvcc="$d/bin/nvcc"; break; }
	done
fi
[ -n "$nvcc" ] && [ -x "$nvcc" ] || die "no nvcc (PATH, CUDACXX, /usr/local/cuda*/bin)"
# One spelling of its path: CMake drops a cache whose CUDA compiler path changed (/usr/local/cuda
# against /usr/local/cuda-13.0) and reconfigures without the -D options below.
nvcc=$(readlink -f "$nvcc")
cuda_ver=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')

# ---- build: Release, sm_90 only, warnings as errors, no MPI (azrun-mpi is not carried) ----
echo "gpu-pack: configuring $build (nvcc $cuda_ver, sm_90)" >&2
mkdir -p "$build"
cache="$build/CMakeCache.txt"
if [ -f "$cache" ] && ! grep -qx "CMAKE_CUDA_COMPILER:.*=$nvcc" "$cache"; then
	rm -rf "$cache" "$build/CMakeFiles"
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DAZ_CUDA=ON -DAZ_MPI=OFF -DAZ_WERROR=ON \
	-DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
	'-DCMAKE_BUILD_RPATH=$ORIGIN/../lib' -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
	>"$build/gpu-pack-configure.log" 2>&1 ||
	die "configure failed: see $build/gpu-pack-configure.log"
grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$cache" &&
	grep -q '^CMAKE_BUILD_RPATH:.*=$ORIGIN/../lib$' "$cache" ||
	die "$cache did not keep Release and the rpath (see $build/gpu-pack-configure.log)"
echo "gpu-pack: building $progs $(echo $tests) (-j$jobs)" >&2
# shellcheck disable=SC2086 # the target lists split on purpose
nice -n 10 cmake --build "$build" -j "$jobs" --target $progs $tests \
	>"$build/gpu-pack-build.log" 2>&1 ||
	die "build failed: see $build/gpu-pack-build.log"

# ---- collect ----
stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/tests" "$stage/lib/cuda"
for p in $progs; do
	f=$(find "$build/tools" -maxdepth 1 -type f -name "$p")
	[ -n "$f" ] || die "$p was not built"
	cp "$f" "$stage/bin/"
done
for t in $tests; do
	f=$(find "$build/tests" -type f -name "$t" -perm -u+x | head -1)
	[ -n "$f" ] || die "$t was not built"
	cp "$f" "$stage/tests/"
done
# Every library ldd resolves for any of them, outside the skip list, under its soname.
for f in "$stage"/bin/* "$stage"/tests/*; do
	rp=$(readelf -d "$f" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
	case "$rp" in
	*'$ORIGIN/../lib'*) ;;
	*) die "$(basename "$f") lacks the rpath \$ORIGIN/../lib (RPATH: ${rp:-none})" ;;
	esac
	ldd "$f" | grep -q "not found" && die "$(basename "$f"): $(ldd "$f" | grep "not found")"
	ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
	if [[ "$soname" =~ $skip_re ]]; then
		[[ "$soname" == libcudart.so.* ]] && cp -L "$path" "$stage/lib/cuda/$soname"
		continue
	fi
	cp -L "$path" "$stage/lib/$soname"
done
[ -n "$(ls "$stage/lib/cuda")" ] || die "no libcudart found by ldd"

# ---- the folder ----
rm -rf "$pack"
mkdir -p "$pack"
cp tools/gpu-check.sh "$pack/gpu-check.sh"
tar -C "$stage" -czf "$pack/payload.tar.gz" bin tests lib
{
	echo "RingZero gpu-pack: unpack payload.tar.gz and run gpu-check.sh (docs/gpu.md)"
	echo "commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "cuda: $cuda_ver"
	echo "nvcc: $nvcc"
	echo "cc: $(cc --version | head -1)"
	echo "archs: 90"
	echo "contents (bytes, sha256):"
	(cd "$stage" && find . -type f | sort | while read -r f; do
		echo "  ${f#./} $(stat -c %s "$f") $(sha256sum "$f" | cut -c1-16)"
	done)
} >"$pack/MANIFEST.txt"
bytes=$(du -sb "$pack" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "gpu-pack: $root/$pack: $mib MiB ($(du -sh "$stage" | cut -f1) unpacked): $(ls "$pack" |
	tr '\n' ' ')"
awk -v b="$bytes" -v m="$max_mib" 'BEGIN { exit !(b <= m * 1048576) }' ||
	die "$pack is $mib MiB, over GPU_PACK_MAX_MIB=$max_mib"
