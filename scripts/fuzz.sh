#!/usr/bin/env bash
# Build the fuzz targets (fuzz/, clang with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer) and run each for SECONDS (default 60), as many
# at once as there are cores. Fails when any target crashes, leaks, times out
# or breaks one of its checks, and prints the input that reproduces it.
# Installs nothing: scripts/install-deps.sh provides clang and libFuzzer.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]    (targets: text build npy dbvalue block slot import
#                                             ontology models schedule)
#
# Environment: PL_FUZZ_BUILD (build directory, default build-fuzz),
# PL_FUZZ_JOBS (targets run at once, default the number of cores).
# Each target starts from its committed corpus fuzz/corpus/<target>/ (with
# the dictionary fuzz/dict/<target>.dict when there is one) and the
# inputs earlier runs found in BUILD/fuzz-work/corpus/<target>/, where new
# ones go; crash inputs go to BUILD/fuzz-work/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
    targets=(text build npy dbvalue block slot import ontology models schedule)
build=${PL_FUZZ_BUILD:-build-fuzz}
jobs=${PL_FUZZ_JOBS:-$(nproc)}

if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dtests=false -Dcuda=disabled -Dbuildtype=debugoptimized \
        -Db_ndebug=false
fi
ninja -C "$build" fuzzers

work=$build/fuzz-work
mkdir -p "$work/artifacts"
# Files the targets write (pl_build's inputs and databases) go to memory when
# /dev/shm is there.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
scratch=$(mktemp -d "$shm/plfuzz.XXXXXX") # not "pertload-*": ring names
trap 'rm -rf "$scratch"' EXIT

run() {
    local t=$1 dict=()
    mkdir -p "$work/corpus/$t" "$scratch/$t"
    [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
    TMPDIR=$scratch/$t UBSAN_OPTIONS=print_stacktrace=1 "$build/fuzz/fuzz_$t" \
        -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
        "${dict[@]}" -artifact_prefix="$work/artifacts/$t-" "$work/corpus/$t" \
        "fuzz/corpus/$t" > "$work/$t.log" 2>&1
}

declare -A pid_of
failed=()
finish() { # wait for target $1 and report it
    local t=$1 rc=0
    wait "${pid_of[$t]}" || rc=$?
    local runs
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | tail -n 1 | grep -o '[0-9]*$' || true)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz_$t: ok, ${runs:-?} runs in ${secs}s"
    else
        failed+=("$t")
        echo "fuzz_$t: FAILED (exit $rc); log: $work/$t.log"
        grep -E 'ERROR|SUMMARY|runtime error|^fuzz: ' "$work/$t.log" | head -n 5 | sed 's/^/    /'
        local repro
        repro=$(grep -o 'Test unit written to .*' "$work/$t.log" | sed 's/Test unit written to //' || true)
        if [ -n "$repro" ]; then
            echo "    reproducer: $repro"
            echo "    replay it:  $build/fuzz/fuzz_$t $repro"
        fi
    fi
}

running=()
for t in "${targets[@]}"; do
    [ -x "$build/fuzz/fuzz_$t" ] || { echo "fuzz.sh: no target '$t'" >&2; exit 2; }
    if [ ${#running[@]} -ge "$jobs" ]; then
        finish "${running[0]}"
        running=("${running[@]:1}")
    fi
    run "$t" &
    pid_of[$t]=$!
    running+=("$t")
done
for t in "${running[@]}"; do
    finish "$t"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
    exit 1
fi
