#!/usr/bin/env bash
# Build pertload (warnings are errors) and run the whole test suite.
#   scripts/test.sh              CI: the perf and soak suites and the full
#                                corruption sweep on the optimised build, every
#                                other suite on the coverage build with its
#                                floor (scripts/coverage.sh; the sweep sampled
#                                there), then the sanitizers and the fuzzers
#   scripts/test.sh NAME...      the named meson tests on the optimised build
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
if [ ! -f build-test/build.ninja ]; then
    meson setup build-test -Dwerror=true -Dbuildtype=debugoptimized -Db_ndebug=false
fi
ninja -C build-test
if [ $# -gt 0 ]; then
    meson test -C build-test --print-errorlogs "$@"
    exit 0
fi
# Instruction counts need the uninstrumented build; the soak runs alone; the
# sweep of every byte of every database file is minutes of CPU.
meson test -C build-test --print-errorlogs --suite perf --suite soak
meson test -C build-test --print-errorlogs sweep
"$(dirname "$0")/coverage.sh"
"$(dirname "$0")/sanitize.sh"
"$(dirname "$0")/fuzz.sh" "${PERTLOAD_FUZZ_SECONDS:-60}"
