#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every tool's options come from one table (tools/options.h): for each tool, the options its
# --help names are those of its --options-table dump, each option's help line shows the table's
# range and default; a value just outside the range (or none of the choices), and an unknown
# option, are refused with exit status 2 and one line naming the option. A hand-written option,
# help text out of step with the parser, or a range the parser does not enforce, fails here.
# Usage: test_options.sh "TOOL [MODE]"...   (exit 0: all agree; 1: the differences listed)
set -u
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# The help record of option $2 in help text $1: its line and the continuation lines under it,
# blanks collapsed, so that a wrapped "(default" and "200)" read as one.
record() {
	awk -v name="$2" '
		on && (/^  --/ || /^[^ ]/ || /^$/) { on = 0 }
		on { rec = rec " " $0 }
		index($0, "  --" name " ") == 1 || $0 == "  --" name { on = 1; rec = $0 }
		END { print rec }' <<< "$1" | tr -s ' '
}

# refused TOOL ARGS...: the tool exits 2 at once with one line on stderr that names ARGS[0].
refused() {
	local tool=$1 err rc=0
	shift
	# shellcheck disable=SC2086
	err=$(timeout 20 $tool "$@" 2>&1 < /dev/null > /dev/null) || rc=$?
	[ "$rc" -eq 2 ] && [ "$(wc -l <<< "$err")" -eq 1 ] && grep -qF -- "$1" <<< "$err" ||
		fail "$tool $*: exit $rc, want 2 and one line naming $1: $err"
}

# Values option $1 must refuse, one a line, given its table range $2: either side of a number
# range, by at least 1 and at least the bound's size, so that a float field's rounding cannot
# bring it back ("0..1" -> -1, 2; "0..1e+30" -> -1, 2e+30); a word that is none of the choices
# ("a|b"); none for "-".
outside() {
	case "$2" in
	-) ;;
	*'|'*) echo "no-such-$1" ;;
	*..*) awk -v lo="${2%%..*}" -v hi="${2#*..}" '
		function step(x) { if (x < 0) x = -x; return x > 1 ? x : 1 }
		BEGIN { printf "%.17g\n%.17g\n", lo - step(lo), hi + step(hi) }' ;;
	esac
}

for tool in "$@"; do
	# shellcheck disable=SC2086 # "azbench ring": a program and its mode
	help=$($tool --help) || { fail "$tool --help: exit $?"; continue; }
	# shellcheck disable=SC2086
	table=$($tool --options-table) || { fail "$tool --options-table: exit $?"; continue; }
	[ -n "$table" ] || fail "$tool: empty option table"
	names=" help version options-table "
	# a subcommand's prose may name its program's own options ("azrun status" and --bench)
	case "$tool" in
	*azrun\ *) names+="$(${tool%% *} --options-table | cut -f1 | tr '\n' ' ') " ;;
	esac
	while IFS=$'\t' read -r name type range def; do
		names+="$name "
		rec=$(record "$help" "$name")
		[ -n "$rec" ] || { fail "$tool: --$name ($type) is in the table, not in --help"; continue; }
		[ "$range" = - ] || grep -qF -- "[$range]" <<< "$rec" ||
			fail "$tool --$name: help does not show the table's range [$range]: $rec"
		[ "$def" = - ] || grep -qF -- "(default $def)" <<< "$rec" ||
			fail "$tool --$name: help does not show the table's default $def: $rec"
		bads=$(outside "$name" "$range") || fail "$tool --$name: no values outside [$range]"
		while read -r bad; do
			[ -n "$bad" ] || continue
			refused "$tool" "--$name" "$bad"
		done <<< "$bads"
	done <<< "$table"
	refused "$tool" --no-such-option
	# every option --help mentions, in its option lines or its prose, is one the table parses
	for opt in $(grep -oE -- '--[a-z][a-z0-9-]*' <<< "$help" | sort -u); do
		case "$names" in
		*" ${opt#--} "*) ;;
		*) fail "$tool: --help names $opt, which is not in its option table" ;;
		esac
	done
done
[ "$fails" -eq 0 ] && echo "options: $# tools, --help and tables agree"
exit $((fails > 0))
