#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: every shipped configs/*.ini runs one iteration as it is (tiny pipeline and
# search overrides on the command line; every key of the file is parsed and checked by azrun), the
# README's --config example names a shipped file, and every tool prints --version, which run.json
# and the checkpoints record.
# Usage: test_configs.sh SOURCE_DIR AZRUN AZEVAL AZPLAY AZBENCH AZTANGLED
set -euo pipefail
SRC=$1 AZRUN=$2
. "$(dirname "$0")/lib.sh"

# --version: "NAME X.Y.Z" and, from a git checkout, the commit.
for tool in "${@:2}"; do
	"$tool" --version > "$T/v" || fail "$tool --version failed"
	name=$(basename "$tool")
	grep -Eq "^$name [0-9]+\.[0-9]+\.[0-9]+( \(git [0-9a-f]{7,}\+?\))?$" "$T/v" ||
		fail "$name --version printed '$(cat "$T/v")'"
done
version=$("$AZRUN" --version | sed 's/^azrun //')

# --help of every tool, subcommand and mode: exit 0, within 100 columns (STYLE.md's width).
AZBENCH=$5
for cmd in "$AZRUN" "$AZRUN status" "$AZRUN report" "$AZRUN verify" "$3" "$4" "$AZBENCH" \
	"$AZBENCH ring" "$AZBENCH infer" "$AZBENCH pipeline" "$AZBENCH train" "$6"; do
	# shellcheck disable=SC2086 # "TOOL MODE" splits into its two words on purpose
	$cmd --help > "$T/help" 2>&1 || fail "$cmd --help failed: $(tail -2 "$T/help")"
	awk 'length > 100 { print "line " NR ": " length " columns"; bad = 1 } END { exit bad }' \
		"$T/help" > "$T/wide" || fail "$(basename "$cmd") --help: $(head -1 "$T/wide")"
done

ls "$SRC"/configs/*.ini > /dev/null || fail "no configs/*.ini"
for ini in "$SRC"/configs/*.ini; do
	name=$(basename "$ini" .ini)
	"$AZRUN" --config "$ini" --out "$T/$name" --iterations 1 --workers 1 --games-per-worker 4 \
		--games-per-iter 4 --sims 8 --arena-games 2 --train-steps-max 4 --backend cpu \
		--quiet 2> "$T/$name.log" || { cat "$T/$name.log" >&2; fail "$ini does not run"; }
	[ -s "$T/$name/best.safetensors" ] || fail "$ini: no checkpoint"
	# The file's own values are the run's (hidden is not overridden above).
	h=$(sed -n 's/^hidden *= *//p' "$ini")
	[ -n "$h" ] || h=$(sed -n 's/^net *= *[a-z]*:\([0-9]*\)x.*/\1/p' "$ini") # net = KIND:HxR
	grep -Eq "\"hidden\":[[:space:]]*\"$h\"" "$T/$name/run.json" || fail "$ini: hidden not used"
	# A file's value head and contempt reach the run and its checkpoint (the Tangled configs).
	for key in value-head draw-value; do
		v=$(sed -n "s/^$key *= *//p" "$ini")
		[ -z "$v" ] || grep -Eq "\"$key\":[[:space:]]*\"$v\"" "$T/$name/run.json" ||
			fail "$ini: $key = $v not in run.json"
	done
	v=$(sed -n 's/^value-head *= *//p' "$ini")
	[ -z "$v" ] || [ "$v" = tanh ] ||
		grep -aFq "\"value_head\":\"$v\"" "$T/$name/checkpoints/iter-0001.safetensors" ||
		fail "$name: checkpoint's value head is not $v"
	grep -Fq "\"version\":	\"$version\"" "$T/$name/run.json" ||
		grep -Fq "\"version\": \"$version\"" "$T/$name/run.json" ||
		fail "$name: run.json does not record version $version"
	grep -aFq "\"version\":\"$version\"" "$T/$name/checkpoints/iter-0001.safetensors" ||
		fail "$name: checkpoint metadata does not record version $version"
	# Counts of one are singular.
	grep -q ", 1 worker x 4 games, 8 sims, .* 1 iteration -> " "$T/$name/azrun.log" ||
		fail "$name: start line not singular: $(grep -m1 'azrun: ' "$T/$name/azrun.log")"
	"$AZRUN" verify --out "$T/$name" > "$T/verify" || fail "$name: verify found problems"
	grep -q ", 1 replay file with .*, 1 metrics line, 0 problems$" "$T/verify" ||
		fail "$name: verify line not singular: $(cat "$T/verify")"
done

# A README tour line that picks a ResNet says what it costs (it ran ~35x slower per evaluation
# than the default net with no word of it): "slower" within the line or the two after it.
grep -n -A2 -- '--net resnet:' "$SRC/README.md" | awk '/--net resnet:/ { n++ } /slower/ { s++ }
	END { exit !(n > 0 && s >= n) }' || fail "README: a --net resnet: line without its speed note"
# No help text or game test spells out the list of games (adding a game broke test_registry and
# left the help texts behind): the lists come from the registry (az_config_game_list).
if grep -rnE --include='*.c' '^[^/*]*"[^"]*tictactoe( \| |, ?)connect4' "$SRC/tools" \
	"$SRC/tests/games" > "$T/lists"; then
	fail "a hard-coded game list: $(cat "$T/lists")"
fi
# ... and the help texts name every registered game (the registry's list, as azrun's unknown-game
# message gives it).
names=$({ "$AZRUN" --game no-such-game --out "$T/none" 2>&1 || true; } |
	sed -n 's/.*(known: \(.*\))$/\1/p')
[ -n "$names" ] || fail "azrun does not list the known games"
"$3" --help > "$T/h-azeval"
"$AZRUN" --help > "$T/h-azrun"
"$4" --help > "$T/h-azplay"
for g in ${names//,/ }; do
	grep -q -- "--game NAME .*$g" "$T/h-azeval" || fail "azeval --help lacks $g"
	grep -q -- "--game NAME .*$g" "$T/h-azrun" || fail "azrun --help lacks $g"
	grep -q "$g" "$T/h-azplay" || fail "azplay --help lacks $g"
done
# The README's --config example points at a shipped file.
ex=$(grep -o -- '--config [^ ]*' "$SRC/README.md" | head -1 | cut -d' ' -f2)
[ -n "$ex" ] && [ -f "$SRC/$ex" ] || fail "README's --config example '$ex' is not a shipped file"
# The README's two set-up commands configure build/ identically (the test command must not
# rebuild what the run command built), and .ci/run calls the test command verbatim.
mapfile -t setup < <(grep -E '^tools/install-deps\.sh && cmake ' "$SRC/README.md")
[ "${#setup[@]}" -eq 2 ] || fail "README: expected 2 set-up commands, found ${#setup[@]}"
cfg0=$(sed -E 's/ && cmake --build.*//' <<< "${setup[0]}")
cfg1=$(sed -E 's/ && cmake --build.*//' <<< "${setup[1]}")
[ "$cfg0" = "$cfg1" ] || fail "README's set-up commands configure differently: '$cfg0' / '$cfg1'"
grep -qxF "${setup[1]}" "$SRC/.ci/run" || fail ".ci/run does not run the README's test command"
echo "configs: $(ls "$SRC"/configs/*.ini | wc -l) files ran; --version in $(( $# - 1 )) tools"
