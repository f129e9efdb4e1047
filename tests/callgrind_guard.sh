#!/usr/bin/env bash
# The instruction-count guard fails when the hot path got slower. Measure the
# count once, then run bench/callgrind_check.sh against a baseline 15% below
# it (as if the code now took 15% more instructions than the baseline) and
# against one 5% below it: the first must fail, printing both counts and the
# reason, the second pass.
#
# usage: callgrind_guard.sh PERTLOAD_BINARY BUILDTYPE
set -uo pipefail
check=$(cd "$(dirname "$0")/../bench" && pwd)/callgrind_check.sh
fail() { echo "callgrind_guard: $*" >&2; exit 1; }
run() { # BASELINE EXPECTED_STATUS
    out=$(PERTLOAD_CALLGRIND_BASELINE=$1 bash "$check" "$bin" "$buildtype" 2>&1)
    rc=$?
    echo "$out"
    [ "$rc" -eq "$2" ] || fail "against baseline $1: exit status $rc, expected $2"
}
bin=$1 buildtype=$2

run 1000000000000 0
ir=$(sed -n 's/^masks + collation (pl__collate): \([0-9]*\) instructions.*/\1/p' <<<"$out")
[ -n "$ir" ] || fail "the measured count was not printed"

low=$((ir * 100 / 115))
run "$low" 1
grep -q "^baseline: $low " <<<"$out" || fail "the baseline was not printed"
grep -q "^masks + collation (pl__collate): $ir instructions" <<<"$out" ||
    fail "the measured count was not printed, or differs between runs"
grep -q "^regression: more than 10% above the baseline" <<<"$out" || fail "no reason given"

run $((ir * 100 / 105)) 0
echo "callgrind_guard: $ir instructions pass against a baseline 5% lower and fail against one 15% lower"
