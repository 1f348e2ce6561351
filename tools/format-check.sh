#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reports the C and CUDA files that clang-format, with the repository's .clang-format, would change
# (STYLE.md section 7), and by how many lines. Writes nothing.
#
#   tools/format-check.sh [--all] [FILE...]
#
# Without FILEs: every tracked *.c *.h *.cu *.cuh except those in tools/format-pending.txt, the
# files that were not formatted when the check came in (reformatting them all at once would
# collide with work in flight; format one when you next change most of it, and take it off the
# list). --all checks the pending ones too, and names those that are formatted now, so that the
# list only shrinks. FILEs named are checked, pending or not.
# Exit: 0 all checked files formatted, 1 some not (listed), 2 usage, 77 no clang-format 14 (the
# version the format is defined by: another major version formats differently). CLANG_FORMAT
# names the binary (default: clang-format-14, else clang-format).
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

all=0
files=()
for a in "$@"; do
	case "$a" in
	--all) all=1 ;;
	-h | --help) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "format-check: unknown option $a (--all, or file names)" >&2; exit 2 ;;
	*) files+=("$(realpath -m --relative-to="$root" "$(cd "$here" && realpath -m "$a")")") ;;
	esac
done

cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
	cf=$(command -v clang-format-14 || command -v clang-format || true)
fi
if [ -z "$cf" ] || ! "$cf" --version >/dev/null 2>&1; then
	echo "format-check: skipped: no clang-format (Debian: apt-get install clang-format-14)"
	exit 77
fi
major=$("$cf" --version | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
	echo "format-check: skipped: $cf is version ${major:-unknown}; the format is clang-format 14's"
	exit 77
fi

pending=tools/format-pending.txt
if [ ${#files[@]} -gt 0 ]; then
	all=1 # files named are checked, pending or not
else
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
	else
		mapfile -t files < <(find . -path ./build\* -prune -o \
			\( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print |
			sed 's|^\./||' | sort)
	fi
fi

bad=0 skipped=0 done_pending=()
for f in "${files[@]}"; do
	is_pending=0
	if grep -qxF "$f" "$pending" 2>/dev/null; then
		is_pending=1
		if [ $all -eq 0 ]; then
			skipped=$((skipped + 1))
			continue
		fi
	fi
	n=$("$cf" --style=file "$f" | diff "$f" - | grep -c '^[<>]' || true)
	if [ "$n" -eq 0 ]; then
		[ $is_pending -eq 1 ] && done_pending+=("$f")
		continue
	fi
	echo "$f: $n lines differ (clang-format -i $f)"
	bad=$((bad + 1))
done
for f in "${done_pending[@]}"; do
	echo "format-check: $f is formatted now: take it off $pending"
done
if [ $bad -gt 0 ]; then
	echo "format-check: $bad of $((${#files[@]} - skipped)) files checked not formatted" \
		"($skipped in $pending not checked)"
	exit 1
fi
echo "format-check: $((${#files[@]} - skipped)) files formatted ($skipped in $pending not checked)"
