#!/usr/bin/env bash
# Instruction-count regression check of the hot path: masks + collation.
#
# callgrind counts instructions, not seconds: the same binary on the same
# input gives the same count on a loaded machine. This builds a fixed small
# synthetic database (6,607 genes, a quarter of the yeast edge counts, 3,000
# samples), collates every sample into sparse batches of 64 (a seeded shuffled
# plan: `pertload bench collate --outputs sparse`), counts the instructions
# spent inside pl__collate (the unions of the masks engine and the writing of
# the batch; reading the samples is not counted), prints the count beside the
# baseline and fails when it exceeds the baseline by more than 10%.
#
# The count depends on the compiler flags, so each build type has its own
# baseline (bench/callgrind-baseline-BUILDTYPE.txt).
#
# usage: callgrind_check.sh PERTLOAD_BINARY BUILDTYPE [--record]
#   --record   write the measured count as the new baseline
# PERTLOAD_CALLGRIND_BASELINE=N compares with N instead of the recorded
# baseline (tests/callgrind_guard.sh shows that the check fails).
set -euo pipefail
bin=$1
buildtype=$2
here=$(cd "$(dirname "$0")" && pwd)
baseline_file=$here/callgrind-baseline-$buildtype.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" synth "$work/in" --samples 3000 --seed 3 --scale 0.25 --quiet
mapfile -t args < "$work/in/build-args.txt"
"$bin" build -o "$work/db" --quiet "${args[@]}"
# pread, not io_uring: the same system calls under valgrind on every kernel.
PERTLOAD_IO=pread valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
    --toggle-collect=pl__collate "$bin" bench collate "$work/db" --samples 3000 \
    --outputs sparse > /dev/null 2> "$work/log" || {
    cat "$work/log" >&2
    exit 1
}
ir=$(awk '/^summary:/ {print $2}' "$work/cg.out")
per=$((ir / 3000))
if [ "${3:-}" = "--record" ]; then
    echo "$ir" > "$baseline_file"
    echo "recorded baseline: $ir instructions ($per per sample)"
    exit 0
fi
if [ -n "${PERTLOAD_CALLGRIND_BASELINE:-}" ]; then
    base=$PERTLOAD_CALLGRIND_BASELINE
elif [ ! -f "$baseline_file" ]; then
    echo "no baseline for build type '$buildtype': run $0 $bin $buildtype --record" >&2
    exit 1
else
    base=$(cat "$baseline_file")
fi
limit=$((base + base / 10))
echo "masks + collation (pl__collate): $ir instructions for 3000 samples ($per per sample)"
echo "baseline: $base ($((base / 3000)) per sample), limit +10%: $limit"
if [ "$ir" -gt "$limit" ]; then
    echo "regression: more than 10% above the baseline" >&2
    exit 1
fi
