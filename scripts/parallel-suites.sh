#!/usr/bin/env bash
# A test of the test suite: two clones of this commit, each with a build
# directory of its own, run the suite at the same time on this machine (as a
# developer's run and CI's would). Both must pass: a test that asserts on
# machine-wide state (/dev/shm, $TMPDIR, other users' rings and job ids) or on
# a tight timing window fails here.
#
# Usage: scripts/parallel-suites.sh [MESON-TEST-ARGS...]
#   default: every suite but perf and soak; arguments go to `meson test`
#   (e.g. test names) in both clones.
#   PERTLOAD_PARALLEL_DIR   where the clones go (default: a new temporary
#                           directory, removed afterwards when both passed)
#   PERTLOAD_PARALLEL_TARGETS  ninja targets to build (default: all), for a
#                           run of a few tests on a slow machine
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${PERTLOAD_PARALLEL_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/pertload-parallel-XXXXXX")}
mkdir -p "$work"
args=("$@")
# The clones lie elsewhere than this checkout: the tests' copy of PyG 2.4.0
# (shared/deps beside it) is named to them.
pyg=$src/../shared/deps/torch_geometric-2.4.0.tar.gz
if [ -z "${PERTLOAD_PYG_TARBALL:-}" ] && [ -f "$pyg" ]; then
    export PERTLOAD_PYG_TARBALL=$(cd "$(dirname "$pyg")" && pwd)/$(basename "$pyg")
fi
[ ${#args[@]} -gt 0 ] || args=(--no-suite perf --no-suite soak)

for c in a b; do
    rm -rf "${work:?}/$c"
    git clone -q --no-hardlinks "$src" "$work/$c"
    git -C "$work/$c" checkout -q "$(git rev-parse HEAD)"
    meson setup "$work/$c/build" "$work/$c" -Dwerror=true -Dbuildtype=debugoptimized \
        -Db_ndebug=false >/dev/null
done
for c in a b; do
    # shellcheck disable=SC2086
    ninja -C "$work/$c/build" ${PERTLOAD_PARALLEL_TARGETS:-} >/dev/null
done

pids=()
for c in a b; do
    meson test -C "$work/$c/build" --no-rebuild --print-errorlogs "${args[@]}" \
        >"$work/$c.log" 2>&1 &
    pids+=($!)
done
rc=0
for i in 0 1; do
    c=$([ "$i" -eq 0 ] && echo a || echo b)
    if wait "${pids[$i]}"; then
        echo "clone $c: passed ($(grep -E '^Ok:' "$work/$c.log" | tr -s ' '))"
    else
        rc=1
        echo "clone $c: FAILED; its log: $work/$c.log" >&2
        grep -E '^[0-9]+/[0-9]+ .* (FAIL|TIMEOUT)' "$work/$c.log" >&2 || true
    fi
done
if [ "$rc" -eq 0 ] && [ -z "${PERTLOAD_PARALLEL_DIR:-}" ]; then
    rm -rf "$work"
fi
exit "$rc"
