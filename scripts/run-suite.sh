#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run every readahead selftest in this script's directory through the
# kselftest runner and print its TAP. Exits 1 when a test failed.
BASE_DIR=$(cd "$(dirname "$0")" && pwd)
export BASE_DIR
cd "$BASE_DIR" || exit 1
. "$BASE_DIR/kselftest/runner.sh"
# run_many() looks for "settings" in a subdirectory of BASE_DIR only: pass
# its per-binary timeout on explicitly.
if [ -z "${kselftest_override_timeout:-}" ] && [ -r settings ]; then
	kselftest_override_timeout=$(sed -n 's/^timeout=//p' settings)
	export kselftest_override_timeout
fi

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
run_many ./readahead_* | tee "$out"
! grep -q '^not ok' "$out"
