#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every tool's options come from one table (tools/options.h): for each tool, the options its
# --help names are those of its --options-table dump, and each option's help line shows the
# table's range and default. A hand-written option, or help text out of step with the parser,
# fails here.
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

for tool in "$@"; do
	# shellcheck disable=SC2086 # "azbench ring": a program and its mode
	help=$($tool --help) || { fail "$tool --help: exit $?"; continue; }
	# shellcheck disable=SC2086
	table=$($tool --options-table) || { fail "$tool --options-table: exit $?"; continue; }
	[ -n "$table" ] || fail "$tool: empty option table"
	names=" help version options-table "
	while IFS=$'\t' read -r name type range def; do
		names+="$name "
		rec=$(record "$help" "$name")
		[ -n "$rec" ] || { fail "$tool: --$name ($type) is in the table, not in --help"; continue; }
		[ "$range" = - ] || grep -qF -- "[$range]" <<< "$rec" ||
			fail "$tool --$name: help does not show the table's range [$range]: $rec"
		[ "$def" = - ] || grep -qF -- "(default $def)" <<< "$rec" ||
			fail "$tool --$name: help does not show the table's default $def: $rec"
	done <<< "$table"
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
