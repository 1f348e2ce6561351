#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test: the exact Tangled benchmark on K4 (graph 3). azeval --write-labelled
# --uncoloured writes distinct solver-labelled positions; --mistakes on them gives the JSON keys
# in range, agrees with the move accuracy on the same file (its best moves are every optimal
# move, so a move is a mistake exactly when it is not one), caches its labels, ignores a cache of
# another configuration, and reports an exhausted budget as unsolved; --vs-sims reaches the
# rollout opponent; --agent rollout judges the baseline on the same positions; a network with
# --inputs completions evaluates; a resume that changes the game is refused; bad values exit 2;
# a stop signal leaves no partial file.
# Usage: test_tangled_exact.sh AZRUN AZEVAL
set -euo pipefail
AZRUN=$1 AZEVAL=$2
. "$(dirname "$0")/lib.sh"
tiny=(--workers 2 --games-per-worker 4 --games-per-iter 12 --sims 12 --arena-games 4 --quiet)

"$AZRUN" --game tangled --graph 3 --out "$T/tg" --iterations 1 "${tiny[@]}" 2> "$T/log" ||
	fail "azrun on K4: $(tail -3 "$T/log")"
CK=$T/tg/best.safetensors

# Random games, 3 uncoloured edges left: distinct positions, each with a score and best moves.
"$AZEVAL" --game tangled --graph 3 --write-labelled "$T/k4.txt" --uncoloured 3 --games 40 \
	--seed 5 2> "$T/w.err" || fail "write-labelled: $(cat "$T/w.err")"
grep -q "wrote 40 labelled tangled positions with 3 uncoloured edges" "$T/w.err" ||
	fail "write-labelled: $(cat "$T/w.err")"
python3 - "$T/k4.txt" <<'EOF' || fail "labelled file malformed"
import sys
lines = open(sys.argv[1]).read().split("\n")[:-1]
# the first line names the board (a reader evaluating another board refuses the file)
assert lines[0] == "# board: tangled graph=3;variant=free;adjudicator=table:exact", lines[0]
lines = lines[1:]
assert len(lines) == 40, len(lines)
assert len(set(l.split()[0] for l in lines)) == 40
for l in lines:
    moves, score, best = l.split()
    assert int(score) in (-1, 0, 1), l
    assert len(best.split(",")) >= 1
    # three of the six edges coloured, possibly tokens taken
    assert sum(1 for m in moves.split(".") if not m.startswith("v")) == 3, l
EOF
# The same seed writes the same file.
"$AZEVAL" --game tangled --graph 3 --write-labelled "$T/k4b.txt" --uncoloured 3 --games 40 \
	--seed 5 2> /dev/null
cmp -s "$T/k4.txt" "$T/k4b.txt" || fail "write-labelled is not deterministic"
# From games of the network's raw policy.
"$AZEVAL" --checkpoint "$CK" --write-labelled "$T/k4n.txt" --uncoloured 4 --games 10 \
	--temperature 2 2> "$T/wn.err" || fail "write-labelled with a checkpoint: $(cat "$T/wn.err")"
[ "$(wc -l < "$T/k4n.txt")" -ge 1 ] || fail "no positions from the network's games"

for sims in 0 4; do
	"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims $sims --json \
		> "$T/m$sims.json" || fail "--mistakes --sims $sims"
	"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --sims $sims --json \
		> "$T/a$sims.json" || fail "--positions --sims $sims"
	python3 - "$T/m$sims.json" "$T/a$sims.json" <<'EOF' || fail "--mistakes --sims $sims: $(cat "$T/m$sims.json")"
import json, sys
m = json.load(open(sys.argv[1]))
a = json.load(open(sys.argv[2]))
for k in ("positions", "lost_positions", "mistakes", "mistake_rate", "unsolved", "sims", "labels"):
    assert k in m, k
assert m["positions"] == 40 and m["unsolved"] == 0, m
assert 0 <= m["lost_positions"] <= 40, m
assert 0 <= m["mistakes"] <= 40 - m["lost_positions"], m
assert 0 <= m["mistake_rate"] <= 1, m
assert abs(m["mistake_rate"] - m["mistakes"] / 40) < 1e-6, m
assert abs(m["mistake_rate"] - (1 - a["move_accuracy"])) < 1e-6, (m, a)
EOF
done
# Averaged over K4's 24 automorphisms (free tokens): the same positions judged, the agent named.
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 4 --json \
	--symmetry-average > "$T/ms.json" || fail "--mistakes --symmetry-average"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["positions"] == 40 and m["agent"] == "network (symmetry-averaged)" and 0 <= m["mistake_rate"] <= 1, m' "$T/ms.json" ||
	fail "--symmetry-average: $(cat "$T/ms.json")"
if "$AZEVAL" --game tangled --graph 3 --variant free --positions "$T/k4.txt" --mistakes \
	--agent rollout --sims 8 --symmetry-average > /dev/null 2> "$T/sa.err"; then
	fail "--symmetry-average without a network was accepted"
fi
grep -q "averages a network's evaluations" "$T/sa.err" || fail "--symmetry-average: $(cat "$T/sa.err")"
[ -f "$T/k4.txt.labels" ] || fail "no labels cache beside the positions"
head -1 "$T/k4.txt.labels" | grep -q "^# tangled-labels 1 graph=3;variant=free;adjudicator=" ||
	fail "labels cache header: $(head -1 "$T/k4.txt.labels")"
# The cached labels give the same answer; so does a cache of another configuration (ignored).
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --json > "$T/m0b.json"
cmp -s "$T/m0.json" "$T/m0b.json" || fail "cached labels changed the result"
sed -i '1s/graph=3/graph=2/; 2,$s/+/x/g' "$T/k4.txt.labels"
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --json > "$T/m0c.json"
cmp -s "$T/m0.json" "$T/m0c.json" || fail "a foreign labels cache was trusted"
# A budget of one node solves nothing: every position is unsolved, none scored.
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --json \
	--solve-nodes 1 --labels "$T/none.labels" > "$T/mu.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["unsolved"] == 40 and m["positions"] == 0 and m["mistake_rate"] is None, m' "$T/mu.json" ||
	fail "budget: $(cat "$T/mu.json")"

# The baseline judged the same way (--agent rollout, no network): at 2 simulations it is nearly
# a random mover and changes some of the 40 outcomes; at 2000 MCTS-Solver proves these 3-edge
# endgames and it changes none.
for sims in 2 2000; do
	"$AZEVAL" --game tangled --graph 3 --variant free --positions "$T/k4.txt" --mistakes \
		--agent rollout --sims $sims --json > "$T/r$sims.json" || fail "--agent rollout --sims $sims"
done
python3 - "$T/r2.json" "$T/r2000.json" <<'EOF' || fail "--agent rollout: $(cat "$T"/r2*.json)"
import json, sys
lo, hi = (json.load(open(p)) for p in sys.argv[1:])
assert lo["positions"] == hi["positions"] == 40 and lo["sims"] == 2 and hi["sims"] == 2000
assert lo["agent"] == hi["agent"] == "rollout", lo
assert lo["mistakes"] >= 1, lo
assert hi["mistakes"] == 0, hi
EOF
# --list-mistakes: the 2-simulation run again (seeded: the same moves), one line per mistake, the
# move played never among the moves that keep the outcome, which are never empty.
"$AZEVAL" --game tangled --graph 3 --variant free --positions "$T/k4.txt" --mistakes \
	--agent rollout --sims 2 --list-mistakes > "$T/list.txt" || fail "--list-mistakes"
python3 - "$T/r2.json" "$T/list.txt" "$T/k4.txt" <<'EOF' || fail "--list-mistakes: $(cat "$T/list.txt")"
import json, re, sys
lo = json.load(open(sys.argv[1]))
src = open(sys.argv[3]).read().split("\n")  # its board line first: line numbers, not positions
pat = re.compile(r"mistake at line (\d+): (\S+) \((a win|a draw) for the side to move\) "
                 r"played (\S+);"
                 r" keep it: (\S+(, \S+)*)$")
lines = [l.rstrip("\n") for l in open(sys.argv[2]) if l.startswith("mistake ")]
assert len(lines) == lo["mistakes"] >= 1, (lines, lo)
for l in lines:
    g = pat.match(l)
    assert g, l
    assert src[int(g[1]) - 1].split()[0] == g[2], (l, src[int(g[1]) - 1])
    assert g[4] not in [k.rstrip("?") for k in g[5].split(", ")], l
EOF

# The rollout opponent's own simulation count.
"$AZEVAL" --checkpoint "$CK" --vs rollout --sims 4 --vs-sims 6 --games 2 --json > "$T/vs.json"
grep -q '"sims": 4, "vs_sims": 6}' "$T/vs.json" || fail "--vs-sims: $(cat "$T/vs.json")"

# --inputs completions: the checkpoint records it, so azeval builds the same network input (a
# plain one would not load: its first layer has six more columns); verify reads the run.
"$AZRUN" --game tangled --graph 3 --inputs completions --out "$T/tc" --iterations 1 "${tiny[@]}" \
	2> "$T/tc.log" || fail "azrun --inputs completions: $(tail -3 "$T/tc.log")"
grep -q '"inputs":[[:space:]]*"completions"' "$T/tc/run.json" || fail "run.json: $(cat "$T/tc/run.json")"
"$AZEVAL" --checkpoint "$T/tc/best.safetensors" --positions "$T/k4.txt" --mistakes --sims 4 \
	--json > "$T/mc.json" || fail "--mistakes with a completions checkpoint"
grep -q '"positions": 40' "$T/mc.json" || fail "completions checkpoint: $(cat "$T/mc.json")"
head -1 "$T/k4.txt.labels" | grep -q "^# tangled-labels 1 graph=3;variant=free;adjudicator=" ||
	fail "the inputs entered the labels' key: $(head -1 "$T/k4.txt.labels")"
"$AZRUN" verify --out "$T/tc" > /dev/null || fail "verify of a completions run"
"$AZRUN" status --out "$T/tc" | head -1 |
	grep -q "(tangled, graph=3;variant=free;inputs=completions)$" ||
	fail "status does not name the board and inputs: $("$AZRUN" status --out "$T/tc" | head -1)"
# A draw band other than 0.5 is part of the rules a checkpoint records: azeval plays and solves
# with it, and its labels cache is keyed by it.
"$AZRUN" --game tangled --graph 3 --epsilon 0.3 --out "$T/te" --iterations 1 "${tiny[@]}" \
	2> "$T/te.log" || fail "azrun --epsilon 0.3: $(tail -3 "$T/te.log")"
rc=0
"$AZEVAL" --checkpoint "$T/te/best.safetensors" --positions "$T/k4.txt" --mistakes --sims 0 \
	> /dev/null 2> "$T/te.err" || rc=$?
[ $rc -eq 2 ] && grep -q "plays tangled graph=3;variant=free;epsilon=0.3;adjudicator=" \
	"$T/te.err" || fail "a set labelled at 0.5 judged at 0.3: exit $rc, $(cat "$T/te.err")"
sed -n 2,3p "$T/k4.txt" > "$T/k4e.txt" # no board line: as a file written before it
"$AZEVAL" --checkpoint "$T/te/best.safetensors" --positions "$T/k4e.txt" --mistakes --sims 0 \
	> /dev/null 2> "$T/te.err" || fail "--mistakes with an epsilon 0.3 checkpoint: $(cat "$T/te.err")"
head -1 "$T/k4e.txt.labels" | grep -q "^# tangled-labels 1 graph=3;variant=free;epsilon=0.3;" ||
	fail "epsilon did not reach the labels' key: $(head -1 "$T/k4e.txt.labels")"
# The game's recorded configuration cannot change on --resume (its checkpoints record it): the
# inputs, the variant, the graph and the draw band are refused, from the command line and from a
# --config file.
for change in "--inputs plain" "--variant fixed" "--graph 4" "--epsilon 0.4"; do
	rc=0
	# shellcheck disable=SC2086
	"$AZRUN" --resume --out "$T/tc" --iterations 2 $change 2> "$T/tx.err" || rc=$?
	[ "$rc" -eq 2 ] && grep -q "the game of a run cannot change (${change}; the run has" \
		"$T/tx.err" || fail "--resume $change: exit $rc, $(cat "$T/tx.err")"
done
printf '[azrun]\ngame = tangled\nvariant = fixed\n' > "$T/fixed.ini"
rc=0
"$AZRUN" --resume --out "$T/tc" --config "$T/fixed.ini" 2> "$T/tx.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "variant = fixed, but the run being resumed has free" "$T/tx.err" ||
	fail "--resume --config with another variant: exit $rc, $(cat "$T/tx.err")"
grep -q '"variant":[[:space:]]*"free"' "$T/tc/run.json" || fail "run.json changed: $(cat "$T/tc/run.json")"
rc=0
"$AZRUN" --game tangled --graph 3 --inputs completions --adjudicator anneal --out "$T/tx" \
	--iterations 1 "${tiny[@]}" 2> "$T/tx.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "need a complete outcome table" "$T/tx.err" ||
	fail "--inputs completions without a table: exit $rc, $(cat "$T/tx.err")"
rc=0
"$AZRUN" --game tangled --graph 3 --inputs board --out "$T/tx" --iterations 1 "${tiny[@]}" \
	2> "$T/tx.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "plain or completions, not 'board'" "$T/tx.err" ||
	fail "--inputs board: exit $rc, $(cat "$T/tx.err")"

# Bad values: exit 2 with one line.
bad() {
	local rc=0
	"$AZEVAL" "$@" > /dev/null 2> "$T/bad.err" || rc=$?
	[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/bad.err")" -eq 1 ] ||
		fail "azeval $*: exit $rc, $(cat "$T/bad.err")"
}
bad --game tangled --graph 3 --write-labelled "$T/x.txt" --uncoloured 7
bad --game tangled --graph 3 --write-labelled "$T/x.txt" --uncoloured x
bad --game tangled --graph 3 --write-labelled "$T/x.txt" --uncoloured 3 --limit 2
bad --game connect4 --write-labelled "$T/x.txt" --uncoloured 3
# a file that could not be written is refused before the solving, not after it
bad --game tangled --graph 3 --write-labelled "$T" --uncoloured 3
bad --game connect4 --write-labelled "$T/no/such/dir/x.txt" --tactic win
grep -q "cannot create files in $T/no/such/dir/ (No such file or directory)" "$T/bad.err" ||
	fail "write-labelled into a missing directory: $(cat "$T/bad.err")"
# neither an empty name nor a FIFO (or a device) is replaced by a regular file
bad --game tangled --graph 3 --write-labelled "" --uncoloured 3
mkfifo "$T/fifo"
bad --game tangled --graph 3 --write-labelled "$T/fifo" --uncoloured 3
grep -q "not a regular file" "$T/bad.err" && [ -p "$T/fifo" ] ||
	fail "write-labelled onto a FIFO: $(cat "$T/bad.err")"
rm -f "$T/fifo"
bad --checkpoint "$CK" --vs random --vs-sims 4
bad --checkpoint "$CK" --vs rollout --vs-sims 1
bad --game tangled --graph 3 --variant free --positions "$T/k4.txt" --agent rollout --sims 8
bad --game tangled --graph 3 --variant free --positions "$T/k4.txt" --mistakes --agent rollout \
	--sims 0
# rollout MCTS has no checkpoint to take the board from: a file without a board line needs
# --graph and --variant; one with it names them
sed 1d "$T/k4.txt" > "$T/k4nb.txt"
bad --game tangled --graph 3 --positions "$T/k4nb.txt" --mistakes --agent rollout --sims 8
grep -q "the file has no board line" "$T/bad.err" || fail "rollout: $(cat "$T/bad.err")"
"$AZEVAL" --game tangled --positions "$T/k4.txt" --mistakes --agent rollout --sims 8 \
	--limit 3 > /dev/null 2> "$T/rb.err" || fail "rollout, board line: $(cat "$T/rb.err")"
# --labels naming a file that is not a labels cache (here the positions themselves) is refused
# before anything is written.
cp "$T/k4.txt" "$T/k4keep.txt"
bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --labels "$T/k4.txt"
cmp -s "$T/k4.txt" "$T/k4keep.txt" || fail "--labels overwrote the positions file"
# An empty --labels, or one in a folder that cannot be written (root writes anywhere), is
# refused before the evaluation rather than after it.
bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --labels ""
if [ "$(id -u)" -ne 0 ]; then
	mkdir "$T/ro" && chmod 555 "$T/ro"
	bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --labels "$T/ro/x.labels"
fi
bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --agent rollout
bad --game tangled --graph 3 --positions "$T/k4.txt" --mistakes --agent mcts
# a free-token file read with fixed tokens: refused by its board line, with both boards named,
# by --mistakes and by the plain evaluation, with a network of either board
bad --game tangled --graph 3 --variant fixed --positions "$T/k4.txt" --mistakes --agent rollout \
	--sims 8
grep -q "k4.txt:1: its positions are of tangled graph=3;variant=free;adjudicator=table:exact .*\
this evaluation plays tangled graph=3;variant=fixed;adjudicator=table:exact" "$T/bad.err" ||
	fail "no board check: $(cat "$T/bad.err")"
sed 's/variant=free/variant=fixed/' "$T/k4.txt" > "$T/k4f.txt"
bad --checkpoint "$CK" --positions "$T/k4f.txt" --sims 0
grep -q "k4f.txt:1: its positions are of tangled graph=3;variant=fixed" "$T/bad.err" ||
	fail "no board check: $(cat "$T/bad.err")"
bad --checkpoint "$CK" --positions "$T/k4f.txt" --mistakes --sims 0
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --sims 0 > /dev/null 2> "$T/ok.err" ||
	fail "the checkpoint's own board refused: $(cat "$T/ok.err")"
# a file without a board line (written before it): the illegal move's error names the board
sed 1d "$T/k4.txt" > "$T/k4old.txt"
bad --game tangled --graph 3 --variant fixed --positions "$T/k4old.txt" --mistakes \
	--agent rollout --sims 8
grep -q "plays Tangled on K4 with fixed tokens .*for another graph or variant" "$T/bad.err" ||
	fail "no board hint: $(cat "$T/bad.err")"
[ ! -e "$T/x.txt" ] || fail "a refused command wrote its file"

# A stop signal during --write-labelled (Petersen: far more positions asked for than it can
# label here) ends it with 128 + the signal, the file it would replace intact and no temporary
# file left. The temporary file's appearance says the handler is in place.
wait_for_tmp() { # F: until F.tmp.* exists, at most 60 s
	for _ in $(seq 600); do
		compgen -G "$1.tmp.*" > /dev/null && return
		sleep 0.1
	done
}
echo "# board: keep" > "$T/big.txt" # a positions file azeval wrote (its board line): replaceable
"$AZEVAL" --game tangled --graph 5 --variant fixed --write-labelled "$T/big.txt" --uncoloured 8 \
	--games 1000000 --seed 5 2> "$T/big.err" &
pid=$!
wait_for_tmp "$T/big.txt"
compgen -G "$T/big.txt.tmp.*" > /dev/null || fail "--write-labelled made no temporary file"
kill -TERM $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 143 ] || fail "interrupted --write-labelled exited $rc: $(cat "$T/big.err")"
grep -q "interrupted after [0-9]* of 1000000 positions" "$T/big.err" ||
	fail "no interrupt message: $(cat "$T/big.err")"
[ "$(cat "$T/big.txt")" = "# board: keep" ] ||
	fail "an interrupted --write-labelled replaced its file"
! compgen -G "$T/big.txt.tmp.*" > /dev/null ||
	fail "an interrupted --write-labelled left its temporary file"
# A signal the caller ignores stays ignored (nohup: SIGHUP); a stop then says the file was not
# written when there was none.
( trap '' HUP; exec "$AZEVAL" --game tangled --graph 5 --variant fixed --write-labelled \
	"$T/new.txt" --uncoloured 8 --games 1000000 --seed 5 2> "$T/new.err" ) &
pid=$!
wait_for_tmp "$T/new.txt"
kill -HUP $pid
sleep 1
kill -0 $pid 2> /dev/null || fail "an ignored SIGHUP stopped --write-labelled: $(cat "$T/new.err")"
kill -TERM $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 143 ] || fail "interrupted --write-labelled exited $rc: $(cat "$T/new.err")"
grep -q "new.txt was not written" "$T/new.err" || fail "no 'not written': $(cat "$T/new.err")"
[ ! -e "$T/new.txt" ] || fail "an interrupted --write-labelled wrote its file"
# Every reachable position of K4 (the README's tour): the board line first; a stop signal during
# the enumeration leaves the file it would replace as it was, and no temporary file.
"$AZEVAL" --game tangled --graph 3 --write-labelled "$T/all.txt" 2> "$T/all.err" ||
	fail "write-labelled, every position: $(cat "$T/all.err")"
[ "$(head -1 "$T/all.txt")" = "# board: tangled graph=3;variant=free;adjudicator=table:exact" ] ||
	fail "every position: no board line: $(head -1 "$T/all.txt")"
cp "$T/all.txt" "$T/all.keep"
"$AZEVAL" --game tangled --graph 3 --write-labelled "$T/all.txt" 2> "$T/all.err" &
pid=$!
wait_for_tmp "$T/all.txt"
kill -TERM $pid # (a background job of a script ignores SIGINT)
rc=0
wait $pid || rc=$?
[ $rc -eq 143 ] && grep -q "interrupted; .*all.txt is unchanged" "$T/all.err" ||
	fail "interrupted enumeration: exit $rc, $(cat "$T/all.err")"
cmp -s "$T/all.txt" "$T/all.keep" || fail "an interrupted enumeration changed its file"
! compgen -G "$T/all.txt.tmp.*" > /dev/null || fail "an interrupted enumeration left its tmp"
# --write-labelled replaces a positions file only: a checkpoint or a labels cache given by
# mistake is refused before any solving, and kept.
cp "$CK" "$T/ck.keep"
bad --game tangled --graph 3 --write-labelled "$CK" --uncoloured 3 --games 5
grep -q "the file exists and does not read as tangled positions .* not replaced" "$T/bad.err" ||
	fail "write-labelled onto a checkpoint: $(cat "$T/bad.err")"
cmp -s "$CK" "$T/ck.keep" || fail "write-labelled changed a checkpoint"
cp "$T/k4.txt.labels" "$T/labels.keep"
bad --game tangled --graph 3 --write-labelled "$T/k4.txt.labels" --uncoloured 3 --games 5
cmp -s "$T/k4.txt.labels" "$T/labels.keep" || fail "write-labelled changed a labels cache"
printf '# my notes\n' > "$T/notes.txt" # comments only: not positions
bad --game tangled --graph 3 --write-labelled "$T/notes.txt" --uncoloured 3 --games 5
[ "$(cat "$T/notes.txt")" = "# my notes" ] || fail "write-labelled replaced a notes file"
# --labels names a labels cache only: notes that start with a comment are kept
printf '# Title\nnotes\n' > "$T/notes.md"
bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --labels "$T/notes.md"
[ "$(head -1 "$T/notes.md")" = "# Title" ] || fail "--labels replaced a notes file"
# a device or FIFO as --positions is refused, not read (/dev/zero never ends a line)
mkfifo "$T/pfifo"
for dev in /dev/zero "$T/pfifo"; do
	rc=0
	timeout 60 "$AZEVAL" --game tangled --positions "$dev" --mistakes --agent rollout \
		--sims 8 > /dev/null 2> "$T/dev.err" || rc=$?
	[ $rc -eq 2 ] && grep -q "not a regular file" "$T/dev.err" ||
		fail "--positions $dev: exit $rc, $(cat "$T/dev.err")"
done
# A graph file's board is its edges, not its path: the same name with other edges is refused.
printf '0-1 0-2 0-3 1-2 1-3 2-3\n' > "$T/g.edges"
"$AZEVAL" --game tangled --graph-file "$T/g.edges" --write-labelled "$T/gf.txt" --uncoloured 3 \
	--games 5 2> /dev/null || fail "write-labelled on a graph file"
head -1 "$T/gf.txt" | grep -q "^# board: tangled graph-edges=4:6:[0-9a-f]\{16\};variant=free;" ||
	fail "graph-file board line: $(head -1 "$T/gf.txt")"
"$AZEVAL" --game tangled --graph-file "$T/g.edges" --variant free --positions "$T/gf.txt" \
	--mistakes --agent rollout --sims 4 > /dev/null 2> "$T/gf.err" ||
	fail "the graph file's own set: $(cat "$T/gf.err")"
bad --game tangled --positions "$T/gf.txt" --mistakes --agent rollout --sims 4
grep -q "names the graph of a graph file .*give that file with --graph-file F" "$T/bad.err" ||
	fail "graph-file board without --graph-file: $(cat "$T/bad.err")"
printf '0-1 0-2 0-3 1-2 1-3 2-3 0-4\n' > "$T/g.edges"
rc=0
"$AZEVAL" --game tangled --graph-file "$T/g.edges" --variant free --positions "$T/gf.txt" \
	--mistakes --agent rollout --sims 4 > /dev/null 2> "$T/gf.err" || rc=$?
[ $rc -eq 2 ] && grep -q "its positions are of tangled graph-edges=4:6:.* this evaluation \
plays tangled graph-edges=5:7:" "$T/gf.err" || fail "another graph file: $(cat "$T/gf.err")"
# Options that change the board a checkpoint records are allowed, with a note naming both.
"$AZEVAL" --checkpoint "$CK" --variant fixed --vs random --games 2 --sims 4 > /dev/null \
	2> "$T/ov.err" || fail "--variant over a checkpoint: $(cat "$T/ov.err")"
grep -q "note: the network was trained on tangled graph=3;variant=free; the options given here \
evaluate it on graph=3;variant=fixed" "$T/ov.err" || fail "no override note: $(cat "$T/ov.err")"
"$AZEVAL" --checkpoint "$CK" --variant free --vs random --games 2 --sims 4 > /dev/null \
	2> "$T/ov.err"
! grep -q "note:" "$T/ov.err" || fail "a note without an override: $(cat "$T/ov.err")"
# A directory or device as --positions or --labels: refused before any solving, saying so.
bad --checkpoint "$CK" --positions "$T" --mistakes --sims 0
grep -q "positions .*: not a regular file (a directory)" "$T/bad.err" || fail "$(cat "$T/bad.err")"
bad --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --sims 0 --labels /dev/null
grep -q "labels /dev/null: not a regular file" "$T/bad.err" || fail "$(cat "$T/bad.err")"
# With a solver budget too small to solve anything the report does not claim a labels file.
"$AZEVAL" --checkpoint "$CK" --positions "$T/k4.txt" --mistakes --solve-nodes 1 --sims 0 \
	--labels "$T/sn.labels" > "$T/sn.out" 2> /dev/null || fail "--solve-nodes 1 failed"
if grep -q "labels cached in" "$T/sn.out"; then
	[ -s "$T/sn.labels" ] || fail "'labels cached' without a labels file: $(cat "$T/sn.out")"
else
	grep -q "no labels to cache (no position solved)" "$T/sn.out" && [ ! -e "$T/sn.labels" ] ||
		fail "--solve-nodes 1: $(cat "$T/sn.out")"
fi
# Files joined with cat keep their board lines: one of another board anywhere is refused.
cat "$T/k4.txt" "$T/k4f.txt" > "$T/joined.txt"
bad --checkpoint "$CK" --positions "$T/joined.txt" --sims 0
grep -q "joined.txt:42: its positions are of tangled graph=3;variant=fixed" "$T/bad.err" ||
	fail "joined files: $(cat "$T/bad.err")"
# --epsilon: rollout MCTS judged on a set labelled at another draw band, no checkpoint needed.
"$AZEVAL" --game tangled --graph 3 --epsilon 0.3 --write-labelled "$T/k4e3.txt" --uncoloured 3 \
	--games 10 --seed 5 2> /dev/null || fail "write-labelled --epsilon 0.3"
"$AZEVAL" --game tangled --graph 3 --variant free --epsilon 0.3 --positions "$T/k4e3.txt" \
	--mistakes --agent rollout --sims 8 > /dev/null 2> "$T/e3.err" ||
	fail "rollout on an epsilon 0.3 set: $(cat "$T/e3.err")"
"$AZEVAL" --game tangled --positions "$T/k4e3.txt" --mistakes --agent rollout --sims 8 \
	> /dev/null 2> "$T/e3.err" || fail "rollout, board line at 0.3: $(cat "$T/e3.err")"
bad --game tangled --epsilon 0.5 --positions "$T/k4e3.txt" --mistakes --agent rollout --sims 8
echo "tangled exact benchmark: all checks passed"
