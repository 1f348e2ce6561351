# SPDX-License-Identifier: MIT
# Preamble shared by the integration test scripts of this folder; source it after `set`:
#   . "$(dirname "$0")/lib.sh"
# T: a fresh scratch directory, removed on exit (the EXIT trap is this file's; a script that
# needs more on exit sets its own trap after sourcing). fail MSG...: print FAIL: MSG on stderr
# and exit 1.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Tangled's outcome tables go to the scratch directory, not the user's ~/.cache/ringzero.
export RINGZERO_CACHE_DIR=$T/rzcache
# refused WHAT EXPECTED-TEXT OUT CMD...: CMD (a program that would write OUT) must be refused:
# exit 2, exactly one line on stderr holding EXPECTED-TEXT, and OUT not created. Its stdout and
# stderr are left in "$T/bad.out" and "$T/bad.err".
refused() {
	local what=$1 want=$2 out=$3 rc=0
	shift 3
	"$@" > "$T/bad.out" 2> "$T/bad.err" || rc=$?
	[ "$rc" -eq 2 ] || fail "$what: exit $rc, not 2"
	[ "$(wc -l < "$T/bad.err")" -eq 1 ] || fail "$what: not one line: $(cat "$T/bad.err")"
	grep -q -- "$want" "$T/bad.err" || fail "$what: message lacks '$want': $(cat "$T/bad.err")"
	[ ! -e "$out" ] || fail "$what: $out was created"
}
