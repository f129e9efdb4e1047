#!/usr/bin/env bash
# Build pertload (warnings are errors) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
if [ ! -f build-test/build.ninja ]; then
    meson setup build-test -Dwerror=true -Dbuildtype=debugoptimized -Db_ndebug=false
fi
ninja -C build-test
meson test -C build-test --print-errorlogs "$@"
"$(dirname "$0")/sanitize.sh"
"$(dirname "$0")/fuzz.sh" "${PERTLOAD_FUZZ_SECONDS:-60}"
