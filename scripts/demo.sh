#!/usr/bin/env bash
# Install, build, generate the default synthetic yeast-scale dataset, build its
# database and run the main job on it.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
[ -f build/build.ninja ] || meson setup build
ninja -C build
pl=build/src/cli/pertload
samples=${PERTLOAD_DEMO_SAMPLES:-1000000}
if [ ! -f demo/data/build-args.txt ]; then
    $pl synth demo/data --samples "$samples"
fi
if [ ! -d demo/db ]; then
    mapfile -t args < demo/data/build-args.txt
    $pl build -o demo/db "${args[@]}"
fi
$pl inspect demo/db
$pl masks demo/db --all
