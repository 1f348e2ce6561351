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
