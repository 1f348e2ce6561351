#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 23 items 1 and 2, on a tiny tic-tac-toe run: every single-bit flip of state.json is
# refused by verify (or reads the same state), a sample of them by resume with nothing changed,
# never a silent rollback; flips of a metrics line's digits are refused; a copied checkpoint is
# named; `azrun repair` on a damaged old checkpoint, a torn old replay tail and a flipped bit
# inside an old replay file moves them aside (nothing deleted), keeps every intact game, and
# resume then continues.
# Usage: test_integrity.sh AZRUN
set -uo pipefail
AZRUN=$1
. "$(dirname "$0")/lib.sh"
args=(--game tictactoe --workers 2 --games-per-worker 4 --games-per-iter 12 --sims 12
      --arena-games 4 --quiet)
snap() { (cd "$1" && find . -type f ! -name azrun.log ! -name progress.json -print0 | sort -z |
	xargs -0 sha256sum); }

"$AZRUN" "${args[@]}" --iterations 3 --window 1 --out "$T/base" 2> "$T/base.log" ||
	{ cat "$T/base.log"; fail "base run"; }
"$AZRUN" verify --out "$T/base" > "$T/v.out" || { cat "$T/v.out"; fail "base run verify"; }

# 1. Every bit of state.json, through verify; resumes sampled (the completed count, the best
# iteration, the crc32).
python3 - "$AZRUN" "$T" <<'PY' || fail "state.json flips"
import json, os, shutil, subprocess, sys
azrun, T = sys.argv[1], sys.argv[2]
base, D = T + "/base", T + "/flip"
shutil.copytree(base, D)
path = D + "/state.json"
orig = open(path, "rb").read()
want = json.loads(orig)
refused = same = 0
for i in range(len(orig)):
    for b in range(8):
        buf = bytearray(orig); buf[i] ^= 1 << b
        open(path, "wb").write(buf)
        rc = subprocess.run([azrun, "verify", "--out", D], stdout=subprocess.DEVNULL).returncode
        if rc == 0:
            try:
                got = json.loads(bytes(buf))
            except ValueError:
                got = None
            if not got or got["completed"] != want["completed"] or \
               got["best_iteration"] != want["best_iteration"]:
                sys.exit("flip of bit %d of byte %d passes verify: %r" % (b, i, bytes(buf)))
            same += 1
        else:
            refused += 1
open(path, "wb").write(orig)
print("state.json: %d flips, %d refused, %d harmless" % (8 * len(orig), refused, same))
def snap(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            if f not in ("azrun.log", "progress.json"):
                p = os.path.join(root, f); out[p] = open(p, "rb").read()
    return out
sample = [orig.index(b"3"), orig.index(b"best_iteration") + 17, len(orig) - 4]
for i in sample:
    buf = bytearray(orig); buf[i] ^= 1
    open(path, "wb").write(buf)
    before = snap(D)
    r = subprocess.run([azrun, "--resume", "--out", D, "--iterations", "4", "--quiet"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode == 0 or "state.json" not in r.stderr or snap(D) != before:
        sys.exit("resume after a flip of byte %d: rc %d, %s" % (i, r.returncode, r.stderr))
    open(path, "wb").write(orig)
print("resume refused %d sampled flips, nothing changed" % len(sample))

# 2. Every bit of every digit of metrics line 2, through verify.
path = D + "/metrics.jsonl"
orig = open(path, "rb").read()
start = orig.index(b"\n") + 1
end = orig.index(b"\n", start)
n = 0
for i in range(start, end):
    if not chr(orig[i]).isdigit():
        continue
    for b in range(8):
        buf = bytearray(orig); buf[i] ^= 1 << b
        open(path, "wb").write(buf)
        rc = subprocess.run([azrun, "verify", "--out", D], stdout=subprocess.DEVNULL).returncode
        if rc != 1:
            sys.exit("metrics flip of bit %d of byte %d: verify exit %d" % (b, i, rc))
        n += 1
open(path, "wb").write(orig)
print("metrics.jsonl: %d digit flips, all refused" % n)
PY

# 3. A checkpoint copied over another iteration's name.
D="$T/copied"
cp -a "$T/base" "$D"
cp "$D/checkpoints/iter-0001.safetensors" "$D/checkpoints/iter-0002.safetensors"
"$AZRUN" verify --out "$D" > "$T/v.out"
[ $? -eq 1 ] && grep -q "iter-0002.safetensors: the network of iteration 1" "$T/v.out" ||
	{ cat "$T/v.out"; fail "a copied checkpoint passes verify"; }

# 4. azrun repair: an old checkpoint damaged (neither the last nor the best), an old replay
# file (outside the window) with a torn tail, and another with a flipped bit in its second game:
# that game alone is lost, the games after it stay (the file is rewritten without it).
D="$T/repair"
cp -a "$T/base" "$D"
best=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["best_iteration"])' \
	"$D/state.json")
old=0; [ "$best" -eq 0 ] && old=1
ck=$(printf '%s/checkpoints/iter-%04d.safetensors' "$D" "$old")
python3 - "$ck" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()); b[-9] ^= 0x10
open(sys.argv[1], "wb").write(b)
PY
rp="$D/replay/iter-0001-w00.rpl"
truncate -s -7 "$rp"
# the old file with the most games (workers share an iteration's games unevenly)
flipped=$(python3 - "$T/flip.want" "$D"/replay/iter-0001-w01.rpl "$D"/replay/iter-0002-w0*.rpl \
	<<'PY'
import struct, sys
def games_of(path):
    b = open(path, "rb").read()
    rec = struct.unpack_from("<I", b, 16)[0]
    games, cur = [], []
    for i in range((len(b) - 32) // rec):
        cur.append(b[32 + i * rec:32 + (i + 1) * rec])
        if struct.unpack_from("<I", cur[-1], rec - 8)[0] & 0x80000000:
            games.append(cur)
            cur = []
    assert not cur, path + ": records after the last whole game"
    return b[:32], games
path = max(sys.argv[2:], key=lambda p: len(games_of(p)[1]))
hdr, games = games_of(path)
if len(games) < 3:
    sys.exit("%s: %d games, too few to damage one in the middle" % (path, len(games)))
rec = len(games[0][0])
open(sys.argv[1], "wb").write(hdr + b"".join(r for g in games[:1] + games[2:] for r in g))
b = bytearray(open(path, "rb").read())
b[32 + (len(games[0]) + len(games[1]) // 2) * rec + 5] ^= 0x10
open(path, "wb").write(b)
print(path)
PY
) || fail "flip in a replay file"
find "$D" -type f ! -name azrun.log ! -name progress.json | sed "s|^$D/||" | sort > "$T/files.before"
"$AZRUN" verify --out "$D" > "$T/v.out"
[ $? -eq 1 ] || { cat "$T/v.out"; fail "repair case: damage not seen"; }
grep -q "$flipped: damaged: [0-9]* bytes do not load" "$T/v.out" ||
	{ cat "$T/v.out"; fail "verify does not name the flip in a replay file"; }
"$AZRUN" --resume --out "$D" --iterations 4 --quiet 2> "$T/r.err" && fail "resume accepted damage"
"$AZRUN" repair --out "$D" 2> "$T/repair.err" || { cat "$T/repair.err"; fail "azrun repair"; }
grep -q "moved .*iter-000$old.safetensors to .*quarantine" "$D/azrun.log" ||
	{ cat "$D/azrun.log"; fail "repair did not log the checkpoint's move in azrun.log"; }
grep -q "kept the .* records of .*iter-0001-w00.rpl" "$D/azrun.log" || { cat "$T/repair.err"; fail "replay tail"; }
grep -q "records of $flipped " "$D/azrun.log" || { cat "$T/repair.err"; fail "replay flip"; }
cmp -s "$flipped" "$T/flip.want" ||
	fail "the flipped replay file does not hold exactly its other games after repair"
# nothing deleted: every file is in place or in quarantine/
while read -r f; do
	[ -f "$D/$f" ] || [ -f "$D/quarantine/$f" ] || fail "repair lost $f"
done < "$T/files.before"
"$AZRUN" verify --out "$D" > "$T/v.out" || { cat "$T/v.out"; fail "verify after repair"; }
"$AZRUN" --resume --out "$D" --iterations 4 --quiet 2> "$T/r.err" ||
	{ cat "$T/r.err"; fail "resume after repair"; }
"$AZRUN" verify --out "$D" > "$T/v.out" || { cat "$T/v.out"; fail "verify after resume"; }
grep -q '"completed": 4' "$D/state.json" || fail "resume did not complete iteration 4"

# 5. A damaged state.json is rebuilt by repair from metrics.jsonl.
D="$T/state"
cp -a "$T/base" "$D"
sed -i 's/"completed": 3/"completed": 2/' "$D/state.json"
"$AZRUN" repair --out "$D" 2> "$T/repair.err" || { cat "$T/repair.err"; fail "state rebuild"; }
grep -q '"completed": 3' "$D/state.json" || fail "state.json not rebuilt: $(cat "$D/state.json")"
[ -f "$D/quarantine/state.json" ] || fail "the damaged state.json was not kept"

# 6. metrics.jsonl damaged: a flipped bit in a completed iteration's line, a torn line after the
# last commit, the file deleted. repair keeps the original in quarantine/ and puts a stub where a
# completed iteration's line was lost; the run then verifies and resumes.
metrics_case() {
	local name=$1 D="$T/metrics-$1"
	cp -a "$T/base" "$D"
	case "$name" in
	flip) python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[30]^=1
open(p,'wb').write(b)" "$D/metrics.jsonl" ;;
	torn) printf '{"iteration": 4, "policy_lo' >> "$D/metrics.jsonl" ;;
	deleted) rm "$D/metrics.jsonl" ;;
	esac
	"$AZRUN" verify --out "$D" > "$T/v.out" && fail "metrics $name: verify found nothing"
	"$AZRUN" repair --out "$D" 2> "$T/repair.err" ||
		{ cat "$T/repair.err"; fail "metrics $name: repair"; }
	"$AZRUN" verify --out "$D" > "$T/v.out" ||
		{ cat "$T/v.out"; fail "metrics $name: verify after repair"; }
	[ $(wc -l < "$D/metrics.jsonl") -eq 3 ] || fail "metrics $name: not 3 lines"
	[ "$name" = deleted ] || [ -f "$D/quarantine/metrics.jsonl" ] ||
		fail "metrics $name: the original was not kept"
	"$AZRUN" --resume --out "$D" --iterations 4 --quiet 2> "$T/r.err" ||
		{ cat "$T/r.err"; fail "metrics $name: resume after repair"; }
	"$AZRUN" verify --out "$D" > "$T/v.out" ||
		{ cat "$T/v.out"; fail "metrics $name: verify after resume"; }
}
for c in flip torn deleted; do metrics_case $c; done
# 7. An old iteration's checkpoint deleted (resuming does not read it): repair notes it in
# quarantine/, verify accepts it, resume continues.
D="$T/gone"
cp -a "$T/base" "$D"
b=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best_iteration'])" \
	"$D/state.json")
k=0
[ "$b" -ne 0 ] || k=1
rm "$D/checkpoints/iter-000$k.safetensors"
"$AZRUN" verify --out "$D" > "$T/v.out" && fail "deleted checkpoint: verify found nothing"
"$AZRUN" repair --out "$D" 2> "$T/repair.err" || { cat "$T/repair.err"; fail "gone: repair"; }
[ -f "$D/quarantine/checkpoints/iter-000$k.safetensors.missing" ] || fail "gone: no note"
"$AZRUN" verify --out "$D" > "$T/v.out" || { cat "$T/v.out"; fail "gone: verify after repair"; }
"$AZRUN" --resume --out "$D" --iterations 4 --quiet 2> "$T/r.err" ||
	{ cat "$T/r.err"; fail "gone: resume after repair"; }

# 7b. The best iteration's checkpoint deleted: rebuilt from best.safetensors, its twin.
D="$T/gone-best"
cp -a "$T/base" "$D"
rm "$D/checkpoints/iter-000$b.safetensors"
"$AZRUN" repair --out "$D" 2> "$T/repair.err" || { cat "$T/repair.err"; fail "gone-best: repair"; }
cmp -s "$D/best.safetensors" "$D/checkpoints/iter-000$b.safetensors" ||
	fail "gone-best: iter-000$b not rebuilt from best.safetensors"
"$AZRUN" verify --out "$D" > "$T/v.out" || { cat "$T/v.out"; fail "gone-best: verify"; }

# 8. A state.json without its crc32 beside a sealed metrics.jsonl is an edit, not a legacy file:
# verify calls it damage, resume refuses and changes nothing (it used to roll back the
# iterations after the edited count), repair rebuilds it from metrics.jsonl.
D="$T/unsealed"
cp -a "$T/base" "$D"
echo '{"completed": 1, "best_iteration": 1}' > "$D/state.json"
"$AZRUN" verify --out "$D" > "$T/v.out" && fail "unsealed state.json: verify found nothing"
grep -q "state.json is damaged (it has no crc32" "$T/v.out" || fail "unsealed: $(cat "$T/v.out")"
snap "$D" > "$T/before"
"$AZRUN" --resume --out "$D" --iterations 4 --quiet 2> /dev/null && fail "unsealed: resumed"
snap "$D" > "$T/after"
cmp -s "$T/before" "$T/after" || fail "unsealed: resume changed the run directory"
"$AZRUN" repair --out "$D" 2> "$T/repair.err" || { cat "$T/repair.err"; fail "unsealed: repair"; }
grep -q '"completed": 3' "$D/state.json" || fail "unsealed: not rebuilt: $(cat "$D/state.json")"

# 9. A damaged run.json: verify and repair both exit 1 (damage that remains: restore it), not 2.
D="$T/runjson"
cp -a "$T/base" "$D"
sed -i 's/"sims"/"simz"/' "$D/run.json"
rc=0; "$AZRUN" verify --out "$D" > /dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify on a damaged run.json: exit $rc, want 1"
rc=0; "$AZRUN" repair --out "$D" > /dev/null 2> "$T/rj.err" || rc=$?
[ $rc -eq 1 ] && grep -q "restore it from a backup" "$T/rj.err" ||
	fail "repair on a damaged run.json: exit $rc, want 1: $(cat "$T/rj.err")"

stubs() { grep -c metrics_lost "$T/metrics-$1/metrics.jsonl" || true; }
# status after a repaired line: the lost iteration's figures are "?" and left out of the
# totals, and no rating is made up after an arena result that is gone (never "nan", never 0)
"$AZRUN" status --out "$T/metrics-flip" > "$T/st.out" || fail "status after a metrics repair"
grep -q "^so far: .* in 3 iterations (and 1 whose figures were lost)" "$T/st.out" &&
	! grep -qi "nan" "$T/st.out" || fail "status after a metrics repair: $(cat "$T/st.out")"
if command -v gnuplot > /dev/null; then
	"$AZRUN" report --out "$T/metrics-flip" > /dev/null || fail "report after a metrics repair"
	! grep -qi "nan" "$T/metrics-flip/report/report.md" ||
		fail "report.md after a metrics repair: $(grep -i nan "$T/metrics-flip/report/report.md")"
fi
[ "$(stubs flip)" -eq 1 ] && [ "$(stubs torn)" -eq 0 ] && [ "$(stubs deleted)" -eq 3 ] ||
	fail "stubs: flip $(stubs flip) (want 1), torn $(stubs torn) (0), deleted $(stubs deleted) (3)"
echo "ok"
