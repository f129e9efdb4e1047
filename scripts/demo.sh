#!/usr/bin/env bash
# Install, build, generate the default synthetic yeast-scale dataset, build its
# database and run the main job: stream one shuffled epoch through the
# shared-memory ring into a Python consumer.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
[ -f build/build.ninja ] || meson setup build
ninja -C build
pl=build/cli/pertload
samples=${PERTLOAD_DEMO_SAMPLES:-1000000}
if [ ! -f demo/data/build-args.txt ]; then
    $pl synth demo/data --samples "$samples"
fi
if [ ! -d demo/db ]; then
    mapfile -t args < demo/data/build-args.txt
    $pl build -o demo/db "${args[@]}"
fi
$pl inspect demo/db
PYTHONPATH=build/python /usr/bin/python3 bench/stream_epoch.py demo/db --shuffle
