#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad input to the real azrun and azeval: every case must exit with status 2 and print exactly one
# line on stderr that names the problem, and must change nothing on disk (no run directory
# created, an existing run left byte for byte as it was, apart from its log).
# Usage: test_badinput.sh AZRUN AZEVAL       (exit 0: every case passed; 1: the failures listed)
set -uo pipefail
AZRUN=$(realpath "$1") AZEVAL=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" # relative paths a case might create land in the scratch directory
export OPENBLAS_NUM_THREADS=1
failures=0 cases=0

# check NAME PATTERN CMD...: run CMD; want status 2 and one stderr line matching PATTERN (ERE,
# case-insensitive), and no new entry in $T/new (the --out of the azrun cases).
check() {
	local name=$1 pat=$2
	shift 2
	cases=$((cases + 1))
	"$@" > "$T/out" 2> "$T/err" < /dev/null
	local rc=$? lines why=""
	lines=$(wc -l < "$T/err")
	[ $rc -eq 2 ] || why="exit status $rc, not 2"
	[ "$lines" -eq 1 ] || why="${why:+$why; }$lines lines on stderr, not 1"
	grep -Eqi -- "$pat" "$T/err" || why="${why:+$why; }message does not match /$pat/"
	[ ! -e "$T/new" ] || { why="${why:+$why; }created $T/new"; rm -rf "$T/new"; }
	if [ -n "$why" ]; then
		failures=$((failures + 1))
		echo "FAIL $name: $why" >&2
		sed -n '1,4s/^/    stderr: /p' "$T/err" >&2
	fi
}

# A checkpoint written from scratch (safetensors, zero weights, valid content hash), so that a
# network of any game and shape can be made without training: mkckpt FILE GAME D H R A.
mkckpt() {
	python3 - "$@" <<'PY'
import json, struct, sys, zlib
path, game = sys.argv[1], sys.argv[2]
D, H, R, A = (int(v) for v in sys.argv[3:7])
shapes = [("trunk.in.weight", [H, D]), ("trunk.in.bias", [H])]
for b in range(R):
    shapes += [(f"block.{b}.fc1.weight", [H, H]), (f"block.{b}.fc1.bias", [H]),
               (f"block.{b}.fc2.weight", [H, H]), (f"block.{b}.fc2.bias", [H])]
shapes += [("policy.weight", [A, H]), ("policy.bias", [A]), ("value.weight", [1, H]),
           ("value.bias", [1])]
data, header, off = b"", {}, 0
for name, shape in shapes:
    n = 1
    for s in shape:
        n *= s
    t = struct.pack(f"<{n}f", *[0.01 * ((i % 7) - 3) for i in range(n)])
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(t)]}
    data, off = data + t, off + len(t)
header["__metadata__"] = {"format": "ringzero", "game": game, "arch": f"{H}x{R}",
    "inputs": str(D), "hidden": str(H), "blocks": str(R), "actions": str(A),
    "iteration": "0", "content_hash": "crc32:%08x" % zlib.crc32(data)}
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
PY
}

# ---- fixtures ----
mkckpt "$T/ttt.safetensors" tictactoe 18 8 1 9
mkckpt "$T/c4.safetensors" connect4 84 8 1 7
mkckpt "$T/ttt-wide.safetensors" tictactoe 18 16 1 9   # another architecture of the run's game
mkckpt "$T/ttt-shape.safetensors" tictactoe 20 8 1 9   # "tictactoe" with 20 inputs, not 18
head -c 300 "$T/ttt.safetensors" > "$T/truncated.safetensors"
cp "$T/ttt.safetensors" "$T/corrupt.safetensors"
size=$(stat -c %s "$T/ttt.safetensors")
printf '\x55' | dd of="$T/corrupt.safetensors" bs=1 seek=$((size - 3)) conv=notrunc status=none
printf '%s\n' '- 0 1,2,3,4,5,6,7,8,9' '5 0 1,3,7,9' > "$T/good.txt"
printf '%s\n' '- 0' '55 0' > "$T/occupied.txt"        # line 2: cell 5 played twice
printf '%s\n' '- 0' '1 abc' > "$T/badscore.txt"       # line 2: score is not a number
printf '%s\n' '5 0 5' > "$T/badbest.txt"              # best move on an occupied cell
printf '%s\n' '14253 1' > "$T/over.txt"               # X has won: no move to judge
printf '%s\n' '4453 0' > "$T/c4.txt"                 # a Connect Four position (Pons' format)
: > "$T/file"

# The fixtures themselves are sound: azeval accepts the good checkpoint and positions.
if ! "$AZEVAL" --game tictactoe --checkpoint "$T/ttt.safetensors" --positions "$T/good.txt" \
	--sims 0 > "$T/table" 2> "$T/err"; then
	echo "FAIL fixtures: azeval refused the hand-made checkpoint:" >&2
	cat "$T/err" >&2
	exit 1
fi
# Its table's numbers form one column (decisive_sign_accuracy's stood one place to the right).
cases=$((cases + 1))
if [ "$(grep -E '_accuracy +' "$T/table" | sed -E 's/^([a-z_]+ +).*/\1/' | awk '{ print length }' |
	sort -u | wc -l)" -ne 1 ] || [ "$(grep -c '_accuracy ' "$T/table")" -ne 3 ]; then
	failures=$((failures + 1))
	echo "FAIL azeval table: not one column:" >&2
	sed 's/^/    /' "$T/table" >&2
fi

# ---- azrun: options ----
N="$T/new"
# out_of_range NAME OPTION VALUE RANGE: azrun --OPTION VALUE is refused with its option table's
# message, which names the one option and its range (RANGE: "a, b", an ERE).
out_of_range() {
	check "$1" "^azrun: --$2: expected a (whole )?number in \[$4\], got '$3'$" "$AZRUN" \
		--out "$N" "--$2" "$3"
}
check "azrun unknown option" "bogus" "$AZRUN" --out "$N" --bogus
check "azrun stray argument" "stray" "$AZRUN" --out "$N" stray
# one limit for --out, whatever its length past it (once 511 for some, 400 for others)
check "azrun --out of 401 characters" "--out: value too long \(at most 400 characters\)" \
	"$AZRUN" --game tictactoe --out "$T/new/$(printf 'd%.0s' $(seq 1 $((400 - ${#T} - 4))))"
check "azrun --out of 600 characters" "--out: value too long \(at most 400 characters\)" \
	"$AZRUN" --game tictactoe --out "$T/new/$(printf 'd%.0s' $(seq 1 600))"
check "azrun missing value" "sims" "$AZRUN" --out "$N" --sims
check "azrun value missing before an option" "^azrun: --arena-leaves needs a value K$" "$AZRUN" \
	--out "$N" --arena-leaves --sims 8
check "azrun value missing before option=" "^azrun: --bench needs a value DIR\|auto$" "$AZRUN" \
	--out "$N" --bench --sims=8
check "azrun malformed number" "sims.*abc" "$AZRUN" --out "$N" --sims abc
out_of_range "azrun negative sims" sims -5 "2, 1000000"
out_of_range "azrun negative seed" seed " -5" "0, [0-9]+"
check "azrun zero workers" "workers" "$AZRUN" --out "$N" --workers 0
out_of_range "azrun zero sims" sims 0 "2, 1000000"
out_of_range "azrun one sim" sims 1 "2, 1000000"
check "azrun too many workers" "workers" "$AZRUN" --out "$N" --workers 100000
check "azrun ring not a power of two" "ring-capacity" "$AZRUN" --out "$N" --ring-capacity 48
check "azrun unknown eval cache" "^azrun: --eval-cache: worker, shared or off, not 'bogus'$" \
	"$AZRUN" --out "$N" --eval-cache bogus
check "azrun long unknown eval cache" \
	"^azrun: --eval-cache: worker, shared or off, not 'worker-shared'$" \
	"$AZRUN" --out "$N" --eval-cache worker-shared
check "azrun shared cache too big" "eval-cache-mb: at most 4095" "$AZRUN" --out "$N" \
	--eval-cache shared --eval-cache-mb 5000
check "azrun huge network" "hidden" "$AZRUN" --out "$N" --hidden 100000
check "azrun batch deadline above 1 s" "batch-deadline-us" "$AZRUN" --out "$N" \
	--batch-deadline-us 4294967295
check "azrun huge sims" "sims" "$AZRUN" --out "$N" --sims 99999999
check "azrun nan learning rate" "lr" "$AZRUN" --out "$N" --lr nan
check "azrun infinite c-puct" "c-puct" "$AZRUN" --out "$N" --c-puct inf
check "azrun threshold out of range" "arena-threshold" "$AZRUN" --out "$N" --arena-threshold 2
check "azrun unknown backend" "backend" "$AZRUN" --out "$N" --backend tpu
check "azrun bad time limit" "time-limit: '5x' is not a positive duration" \
	"$AZRUN" --out "$N" --time-limit 5x
check "azrun zero time limit" "time-limit: '0' is not a positive duration" \
	"$AZRUN" --out "$N" --time-limit 0
check "azrun another game's option" "--graph is an option of tangled, not of tictactoe" \
	"$AZRUN" --game tictactoe --out "$N" --graph 5
check "azrun another game's string option" "--variant is an option of tangled" \
	"$AZRUN" --game connect4 --out "$N" --variant fixed
# given at the owner's default value, it is still another game's option
check "azrun another game's option at its default" "--graph is an option of tangled" \
	"$AZRUN" --game connect4 --out "$N" --graph 3
check "azrun another game's string option at its default" "--variant is an option of tangled" \
	"$AZRUN" --game connect4 --out "$N" --variant free
check "azrun unknown game" "unknown game.*chess" "$AZRUN" --game chess --out "$N"
check "azrun shadowed unknown game" "unknown game" "$AZRUN" --game=bogus --out --game=tictactoe
check "azrun no --out" "--out" "$AZRUN" --game connect4
check "azrun --out too long" "--out" "$AZRUN" --out "$N/$(printf 'd%.0s' {1..480})"
check "azrun --out not creatable" "$T/file" "$AZRUN" --game tictactoe --out "$T/file/run"
check "azrun --config missing" "nope.ini" "$AZRUN" --out "$N" --config "$T/nope.ini"
printf 'bogus = 1\n' > "$T/bad.ini"
check "azrun --config unknown key" "bogus" "$AZRUN" --out "$N" --config "$T/bad.ini"
printf '[azrun]\ngame = tictactoe\n[other]\nsims = 3\n' > "$T/other.ini"
check "azrun --config another section" "line 4: section \[other\]" \
	"$AZRUN" --out "$N" --config "$T/other.ini"
printf 'resume = on\n' > "$T/resume.ini"
check "azrun --config resume key" "'resume' is a command-line option only \(give --resume" \
	"$AZRUN" --out "$N" --config "$T/resume.ini"
check "azrun --resume without a run" "run.json" "$AZRUN" --resume --out "$T/none"
check "azrun --resume=bogus" "^azrun: --resume: invalid value 'bogus' \(expected on or off\)$" \
	"$AZRUN" --resume=bogus --out "$T/none"
# One fault, one message naming the one option at fault (no other '--' in the line).
check "azrun no --game" "--game GAME is required \(tictactoe,connect4,tangled" "$AZRUN" --out "$N"
out_of_range "azrun negative l2 alone" l2 -1 "0, 1"
out_of_range "azrun zero lr alone" lr 0 "1e-09, 1e\\+30"
out_of_range "azrun zero epochs alone" train-epochs 0 "0.001, 1000"
out_of_range "azrun dirichlet-alpha alone" dirichlet-alpha 0 "0.001, 1000"
out_of_range "azrun dirichlet-eps alone" dirichlet-eps 2 "0, 1"
check "azrun search word alone" "^azrun: --search: puct or gumbel, not 'mcts'$" "$AZRUN" \
	--out "$N" --search mcts
check "azrun search too long alone" "^azrun: --search: puct or gumbel, not 'gumbel-top-k'$" \
	"$AZRUN" --out "$N" --search gumbel-top-k
out_of_range "azrun gumbel-m alone" gumbel-m 0 "1, 512"
check "azeval search word" "^azeval: --search: puct or gumbel, not 'x'$" "$AZEVAL" --search x
out_of_range "azrun forced-playouts alone" forced-playouts -1 "0, 100"
out_of_range "azrun playout-cap-p alone" playout-cap-p 0 "0.001, 1"
check "azrun sims-fast 1 alone" "^azrun: --sims-fast [^-]*$" "$AZRUN" --out "$N" --sims-fast 1
check "azrun sims-fast above sims" "^azrun: --sims-fast is above" "$AZRUN" --out "$N" --sims 50 \
	--sims-fast 60
out_of_range "azrun value-mix alone" value-mix 1.5 "0, 1"
out_of_range "azrun sims-fresh alone" sims-fresh 2 "0, 1"
check "azrun blocks alone" "^azrun: --blocks[^-]*$" "$AZRUN" --out "$N" --blocks 1000
check "azrun max-batch alone" "^azrun: --max-batch[^-]*$" "$AZRUN" --out "$N" --max-batch 99999
check "azrun train-batch alone" "^azrun: --train-batch[^-]*$" "$AZRUN" --out "$N" \
	--train-batch 99999
out_of_range "azrun zero train steps" train-steps-max 0 "1, [0-9]+"
# More replay than the disk holds: refused with the numbers before the run directory exists (it
# was accepted: 2.8 GB of tic-tac-toe replay in 10 minutes); timeout: it used to start the run.
check "azrun replay beyond the free disk" "^azrun: --games-per-iter 1000000000: up to 15\.8 TB \
of replay per iteration \(1000000000 games x up to 42 positions x 376 bytes\), more than the .* \
free in $T; lower --games-per-iter or choose another --out$" timeout 30 "$AZRUN" --game connect4 \
	--out "$N" --games-per-iter 1000000000
touch "$T/plain"
check "azrun --out under a file" "$T/plain is not a directory" "$AZRUN" --game tictactoe \
	--out "$T/plain/run"
# The ends of a float range pass the checks after parsing too (0.999 is stored as 0.99900001f):
# refused only for the directory.
check "azrun float range ends accepted" "$T/plain is not a directory" "$AZRUN" --game tictactoe \
	--out "$T/plain/run" --explore 0.999 --lr 1e-9 --playout-cap-p 0.001 --dirichlet-alpha 1000
if [ -d /proc/self ]; then
	check "azrun --out on /proc" "/proc does not take new directories" "$AZRUN" \
		--game tictactoe --out /proc/ringzero-x
fi
check "azrun status unknown option" "^azrun status: unknown option '--bogus' \(see azrun status --help\)$" \
	"$AZRUN" status --bogus
check "azrun status missing value" "^azrun status: --out needs a value" "$AZRUN" status --out
check "azrun verify missing value" "^azrun verify: --out needs a value DIR" "$AZRUN" verify --out
check "azrun verify two directories" "^azrun verify: unexpected argument" "$AZRUN" verify a b

# ---- azrun: resuming a damaged run ----
R="$T/run"
"$AZRUN" --game tictactoe --out "$R" --iterations 1 --workers 1 --games-per-worker 2 \
	--games-per-iter 2 --sims 4 --arena-games 2 --hidden 8 --blocks 1 --train-steps-max 4 \
	--quiet 2> "$T/runlog" ||
	{ echo "FAIL fixtures: the tiny run failed" >&2; cat "$T/runlog" >&2; exit 1; }
cp -a "$R" "$T/run.orig"
# --resume=yes is --resume (it used to start a new run, then ask for --game)
cases=$((cases + 1))
if ! "$AZRUN" --resume=yes --out "$R" --iterations 1 --quiet > "$T/out" 2> "$T/err" ||
	! grep -q "nothing to do" "$T/err"; then
	failures=$((failures + 1))
	echo "FAIL azrun --resume=yes: not a resume of the finished run:" >&2
	sed -n '1,4s/^/    stderr: /p' "$T/err" >&2
fi
# verify takes the run directory as status and report do: --out DIR or DIR alone
for form in "--out $R" "$R"; do
	cases=$((cases + 1))
	# shellcheck disable=SC2086 # the two words of "--out DIR" on purpose
	if ! "$AZRUN" verify $form > "$T/out" 2> "$T/err"; then
		failures=$((failures + 1))
		echo "FAIL azrun verify $form: refused the intact run:" >&2
		sed -n '1,4s/^/    stderr: /p' "$T/err" >&2
	fi
done
# snapshot: every file of the run but its log, with contents
snap() { (cd "$1" && find . -type f ! -name azrun.log ! -name progress.json -print0 | sort -z |
	xargs -0 sha256sum); }
# resume_case NAME PATTERN SETUP: damage the run with SETUP, resume, check, compare, restore.
resume_case() {
	local name=$1 pat=$2 setup=$3
	rm -rf "$R" && cp -a "$T/run.orig" "$R"
	eval "$setup"
	snap "$R" > "$T/before"
	check "$name" "$pat" "$AZRUN" --resume --out "$R" --iterations 2 --quiet
	snap "$R" > "$T/after"
	if ! cmp -s "$T/before" "$T/after"; then
		failures=$((failures + 1))
		echo "FAIL $name: the run directory changed:" >&2
		diff "$T/before" "$T/after" | sed 's/^/    /' >&2
	fi
}
resume_case "azrun resume: corrupt run.json" "run.json" 'echo "{not json" > "$R/run.json"'
# an edit without its crc32 (a legacy file, as older azruns wrote): the value is named
resume_case "azrun resume: run.json with zero workers" "workers" \
	'sed -i -e "s/\"workers\":[^,]*/\"workers\": \"0\"/" \
		-e "s/, \"crc32\": \"[0-9a-f]*\"}\$/\n}/" "$R/run.json"'
# an edit under its crc32 (issue 23): refused as damage
resume_case "azrun resume: run.json edited under its crc32" "crc32" \
	'sed -i "s/\"workers\":[^,]*/\"workers\": \"0\"/" "$R/run.json"'
resume_case "azrun resume: corrupt state.json" "state.json" 'echo "{" > "$R/state.json"'
resume_case "azrun resume: truncated best checkpoint" "best.safetensors" \
	'cp "$T/truncated.safetensors" "$R/best.safetensors"'
resume_case "azrun resume: corrupt best checkpoint" "best.safetensors" \
	'cp "$T/corrupt.safetensors" "$R/best.safetensors"'
resume_case "azrun resume: checkpoint of another game" "connect4|game" \
	'cp "$T/c4.safetensors" "$R/best.safetensors"'
resume_case "azrun resume: checkpoint of another architecture" "16x1|arch|hidden" \
	'cp "$T/ttt-wide.safetensors" "$R/best.safetensors"'
resume_case "azrun resume: missing latest checkpoint" "iter-0001" \
	'rm "$R/checkpoints/iter-0001.safetensors"'
resume_case "azrun resume: unreadable best checkpoint" "best.safetensors" \
	'rm "$R/best.safetensors"; mkdir "$R/best.safetensors"'

# ---- azeval ----
C="$T/ttt.safetensors" P="$T/good.txt"
check "azeval unknown option" "bogus" "$AZEVAL" --checkpoint "$C" --positions "$P" --bogus
# A long path is named in full (a message buffer holds any path), not cut short.
long="$T/$(printf 'd%.0s' {1..200})/$(printf 'e%.0s' {1..200})/$(printf 'f%.0s' {1..200})"
check "azeval long checkpoint path" "/f{200}/x\.safetensors: No such file or directory$" \
	"$AZEVAL" --checkpoint "$long/x.safetensors" --vs random
check "azrun verify too long a directory" "^azrun verify: --out: path too long \(at most 400 characters\)$" \
	"$AZRUN" verify "$long"
check "azeval --write-labelled, a large board" "--uncoloured K --games N" \
	"$AZEVAL" --game tangled --graph 6 --write-labelled "$N"
# Any game with more positions than the exact solver walks is refused by counting them (a new
# game was solved exhaustively, whatever its size: only connect4 was refused, by its name).
check "azeval --write-labelled, too many positions" "^azeval: --write-labelled: connect4 has \
more than 1000000 reachable positions, too many to solve exactly; connect4: --tactic" \
	"$AZEVAL" --game connect4 --write-labelled "$N"
check "azeval stray argument" "stray" "$AZEVAL" --checkpoint "$C" --positions "$P" stray
check "azeval negative sims" "sims" "$AZEVAL" --checkpoint "$C" --positions "$P" --sims -5
check "azeval malformed sims" "sims" "$AZEVAL" --checkpoint "$C" --positions "$P" --sims 1x
# the option table's whole-number check (tools/options.c) names the range
check "azeval fractional sims" \
	"^azeval: --sims: expected a whole number in \[0, 1000000\], got '1.5'" \
	"$AZEVAL" --checkpoint "$C" --positions "$P" --sims 1.5
check "azeval one sim" "^azeval: --sims: 0 \(the raw policy\) or a whole number from 2 " \
	"$AZEVAL" --checkpoint "$C" --positions "$P" --sims 1
check "azeval malformed c-puct" "c-puct" "$AZEVAL" --checkpoint "$C" --positions "$P" \
	--c-puct abc
check "azeval draw band out of range" "draw-band" "$AZEVAL" --checkpoint "$C" \
	--positions "$P" --draw-band 2
check "azeval unknown backend" "backend: auto, cpu, cpu-async or cuda" "$AZEVAL" \
	--checkpoint "$C" --positions "$P" --backend tpu
check "azeval unknown game" "unknown game" "$AZEVAL" --game chess --checkpoint "$C" \
	--positions "$P"
check "azeval no --checkpoint" "checkpoint" "$AZEVAL" --positions "$P"
check "azeval missing checkpoint" "nope.safetensors" "$AZEVAL" --checkpoint "$T/nope.safetensors" \
	--positions "$P"
check "azeval checkpoint is a directory" "$T" "$AZEVAL" --checkpoint "$T" --positions "$P"
check "azeval truncated checkpoint" "truncated" "$AZEVAL" --checkpoint "$T/truncated.safetensors" \
	--positions "$P"
check "azeval corrupt checkpoint" "corrupt" "$AZEVAL" --checkpoint "$T/corrupt.safetensors" \
	--positions "$P"
check "azeval checkpoint of another game" "connect4" "$AZEVAL" --game tictactoe \
	--checkpoint "$T/c4.safetensors" --positions "$P"
check "azeval checkpoint of another shape" "input|20" "$AZEVAL" --game tictactoe \
	--checkpoint "$T/ttt-shape.safetensors" --positions "$P"
# Another game's positions file: the mismatch named (it said "not a move of this game" alone).
check "azeval positions of another game" "good.txt:1: best: move 8 \('8'\): not a move of this \
game; $T/good.txt reads as tictactoe positions, and this evaluation's game is connect4: if it \
holds tictactoe positions, give connect4 positions \(or a tictactoe checkpoint and --game \
tictactoe\)$" "$AZEVAL" --game connect4 \
	--checkpoint "$T/c4.safetensors" --positions "$T/good.txt"
check "azeval missing positions" "nope.txt" "$AZEVAL" --checkpoint "$C" --positions "$T/nope.txt"
check "azeval positions: occupied cell" "occupied.txt:2" "$AZEVAL" --checkpoint "$C" \
	--positions "$T/occupied.txt"
check "azeval positions: malformed score" "badscore.txt:2" "$AZEVAL" --checkpoint "$C" \
	--positions "$T/badscore.txt"
check "azeval positions: illegal best move" "badbest.txt:1" "$AZEVAL" --checkpoint "$C" \
	--positions "$T/badbest.txt"
check "azeval positions: game already over" "over.txt:1" "$AZEVAL" --checkpoint "$C" \
	--positions "$T/over.txt"
check "azeval --write-labelled unwritable" "$T/file" "$AZEVAL" --game tictactoe \
	--write-labelled "$T/file/x"
check "azeval --positions with --vs" "--positions and --vs" "$AZEVAL" --checkpoint "$C" \
	--positions "$P" --vs random
check "azeval --labels without --mistakes" "^azeval: --labels F goes with --mistakes" "$AZEVAL" \
	--game connect4 --checkpoint "$T/c4.safetensors" --positions "$T/c4.txt" --labels "$T/x.labels"
check "azeval --list-mistakes without --mistakes" "^azeval: --list-mistakes goes with --mistakes" \
	"$AZEVAL" --game connect4 --checkpoint "$T/c4.safetensors" --positions "$T/c4.txt" \
	--list-mistakes
check "azeval --list-mistakes with --json" "^azeval: --list-mistakes prints lines of text" \
	"$AZEVAL" --game connect4 --checkpoint "$T/c4.safetensors" --positions "$T/c4.txt" \
	--mistakes --list-mistakes --json
check "azeval --mistakes with --vs" "^azeval: --mistakes goes with --positions FILE \(drop --vs" \
	"$AZEVAL" --game connect4 --checkpoint "$T/c4.safetensors" --mistakes --vs random
check "azeval no game, no checkpoint" "--game GAME is required.*tictactoe" "$AZEVAL" \
	--write-labelled "$T/x.txt"

# ---- the environment: a bad AZ_CPU_GEMM is refused before any run directory is touched ----
check "azrun AZ_CPU_GEMM=foo" "^azrun: AZ_CPU_GEMM='foo': must be auto, fp32, blas, avx512, bf16 or amx" \
	env AZ_CPU_GEMM=foo "$AZRUN" --game tictactoe --out "$N"
rm -rf "$R" && cp -a "$T/run.orig" "$R"
snap "$R" > "$T/before"
check "azrun --resume with AZ_CPU_GEMM=foo" "AZ_CPU_GEMM='foo'" \
	env AZ_CPU_GEMM=foo "$AZRUN" --resume --out "$R" --iterations 3 --quiet
snap "$R" > "$T/after"
if ! cmp -s "$T/before" "$T/after"; then
	failures=$((failures + 1))
	echo "FAIL azrun --resume with AZ_CPU_GEMM=foo: the run directory changed" >&2
fi

echo "bad input: $cases cases, $failures failed"
[ $failures -eq 0 ]
