#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu-check.sh from a pack (an unpacked one: bin/ tests/ lib/ beside the script) on a
# machine without a GPU, as a dry run of the lent machine's check (docs/gpu.md): it ends within a
# minute, stopped by the preflight (exit 2) with its findings, and leaves in $OUT only
# results.txt, results.json and logs.tar.gz (the device tool brings back at most 8 files), the
# table also on stdout. Skipped (77) where a CUDA device is visible.
# Usage: test_gpu_check_dry.sh GPU_CHECK_SH TEST_BACKEND_SELECT PROGRAM...
set -u
check="$1"
select="$2"
shift 2
if "$select" has-cuda; then
	echo "a CUDA device is visible: skipped"
	exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	[ -f "$tmp/out/results.txt" ] && cat "$tmp/out/results.txt"
	exit 1
}
mkdir -p "$tmp/pack/bin" "$tmp/pack/tests" "$tmp/pack/lib" "$tmp/out" "$tmp/tmp"
cp "$check" "$tmp/pack/gpu-check.sh"
for p in "$@"; do
	ln -s "$(readlink -f "$p")" "$tmp/pack/bin/"
done
ln -s "$(readlink -f "$select")" "$tmp/pack/tests/"
t0=$(date +%s)
OUT="$tmp/out" TMPDIR="$tmp/tmp" timeout 60 bash "$tmp/pack/gpu-check.sh" >"$tmp/stdout" \
	2>"$tmp/stderr"
rc=$?
echo "gpu-check: exit $rc after $(($(date +%s) - t0)) s"
[ "$rc" -ne 124 ] || fail "it did not end within 60 s"
[ "$rc" -eq 2 ] || fail "exit status $rc, want 2 (stopped by the preflight)"
files=$(cd "$tmp/out" && find . -type f | sort | tr '\n' ' ')
[ "$files" = "./logs.tar.gz ./results.json ./results.txt " ] ||
	fail "files in OUT: $files; want logs.tar.gz, results.json, results.txt"
r="$tmp/out/results.txt"
grep -q "^RingZero gpu-check (pack mode)" "$r" || fail "results.txt has no title line"
grep -q "^stopped after the preflight: " "$r" || fail "results.txt does not say why the run stopped"
grep -q -E "^preflight: (driver|device probe) +FAIL " "$r" ||
	fail "no failed driver or device-probe finding"
grep -q -E "^preflight: ldd +ok " "$r" || fail "ldd of the pack's binaries did not pass"
grep -q -E "^preflight: device probe " "$r" || fail "no device-probe finding"
grep -q "^RingZero gpu-check (pack mode)" "$tmp/stdout" || fail "the table was not printed"
tar -tzf "$tmp/out/logs.tar.gz" | grep -q "logs/preflight.log" ||
	fail "logs.tar.gz holds no logs/preflight.log"
if command -v python3 >/dev/null; then
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == 2 and d["stopped"], d
assert any(s["step"] == "preflight: ldd" and s["result"] == "ok" for s in d["steps"]), d' \
		"$tmp/out/results.json" || fail "results.json"
fi
[ -z "$(ls "$tmp/tmp")" ] || fail "its work folder was left behind: $(ls "$tmp/tmp")"
cat "$r"
echo "PASS"
