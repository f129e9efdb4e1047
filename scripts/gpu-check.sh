#!/usr/bin/env bash
# The GPU path's check on a machine that has a CUDA device, its driver, and
# a Python with torch and numpy, but none of pertload's build dependencies
# (docs/gpu.md says how to read the output).
#
#   scripts/gpu-check.sh pack [BUILD_DIR]   on the build machine (default
#       build/, configured with the CUDA path): copies the pertload program,
#       libpertload.so with the shared libraries it and the programs need
#       (found by ldd; the C library and the CUDA driver excepted), gpu_check,
#       the Python package and the tests the run needs into .gpu-bundle/ at
#       the top of the repository (ignored by git).
#   scripts/gpu-check.sh run OUT_DIR        on the GPU machine, from a copy
#       of the repository (or of .gpu-bundle/ alone: .gpu-bundle/gpu-check.sh
#       run OUT_DIR): every step prints its status and goes on when one
#       fails; at most 8 files are written into OUT_DIR (docs/gpu.md); the
#       last lines are a summary; exits 0 when every step passed.
#
# Run mode environment: GPU_CHECK_STEPS (names of the steps to run, e.g.
# "device pytest"; default all), PYTHON (default python3), CUDA_HOME (for
# compute-sanitizer, default /usr/local/cuda), GPU_CHECK_SAMPLES and
# GPU_CHECK_BENCH_SAMPLES (samples of gpu_check's and the bench's
# yeast-scale databases, default 512 and 8192).
set -uo pipefail

usage() {
    echo "usage: $0 pack [BUILD_DIR] | run OUT_DIR" >&2
    exit 2
}

# ---------------------------------------------------------------- pack

pack() {
    local here root build bundle
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    root=$(cd "$here/.." && pwd)
    build=$(cd "${1:-$root/build}" 2>/dev/null && pwd) || {
        echo "gpu-check pack: no build directory ${1:-$root/build}" >&2
        exit 1
    }
    bundle="$root/.gpu-bundle"
    local prog="$build/cli/pertload"       # the program's folder: cli/ or src/cli/
    [ -e "$prog" ] || prog="$build/src/cli/pertload"
    local need=("$prog" "$build/libpertload.so" "$build/tests/gpu_check"
                "$build/python/pertload/__init__.py")
    for f in "${need[@]}"; do
        if [ ! -e "$f" ]; then
            echo "gpu-check pack: $f is missing: build with the CUDA path first" \
                 "(meson summary 'cuda: True', then ninja)" >&2
            exit 1
        fi
    done
    rm -rf "$bundle"
    mkdir -p "$bundle/bin" "$bundle/lib/common" "$bundle/python/pertload" "$bundle/tests"
    cp "$prog" "$build/tests/gpu_check" "$bundle/bin/"
    cp -L "$build/libpertload.so" "$bundle/lib/"
    local so
    so=$(readlink -f "$build/libpertload.so")
    # the names the programs ask for (libpertload.so.N)
    for n in $(ldd "$prog" "$build/tests/gpu_check" |
               awk '/libpertload/ {print $1}' | sort -u); do
        cp "$so" "$bundle/lib/$n"
    done
    # Every other shared library they need, but those of the C library and
    # the driver, which the GPU machine has (and must match its kernel).
    # Libraries every distribution ships, which torch loads too, go to
    # lib/common: the run uses them only where the machine lacks them (an
    # older copy first on the search path would break torch).
    ldd "$prog" "$build/tests/gpu_check" "$so" |
        awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
        while read -r name path; do
            case "$name" in
                libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|\
                libresolv.so*|libcuda.so*|libnvidia*|libpertload*|linux-vdso*) continue ;;
                libstdc++.so*|libgcc_s.so*|libz.so*|liblzma.so*|libbz2.so*)
                    cp -L "$path" "$bundle/lib/common/$name" ;;
                *) cp -L "$path" "$bundle/lib/$name" ;;
            esac
        done
    for f in "$build"/python/pertload/*.py; do
        case "$(basename "$f")" in _paths.py|_paths_install.py) continue ;; esac
        cp "$f" "$bundle/python/pertload/"
    done
    # where this copy finds its library and program: beside it in the bundle
    cat > "$bundle/python/pertload/_paths.py" <<'EOF'
# Written by scripts/gpu-check.sh pack: the bundle's library and program.
import os as _os

_root = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
LIBRARY = _os.path.join(_root, "lib", "libpertload.so")
PROGRAM = _os.path.join(_root, "bin", "pertload")
EOF
    cp "$root"/python/tests/{conftest.py,test_cuda_device.py,test_cuda_paths.py} \
       "$root"/python/tests/{test_pyg.py,test_loader.py,test_dataset.py} \
       "$root"/python/tests/test_layout_kernels.py "$bundle/tests/"
    mkdir -p "$bundle/bench"
    cp "$root"/bench/{model_layouts.py,pyg_layout.py,layout_host.py,keep_workers.py,epoch_start.py} \
       "$bundle/bench/"
    cp "$root/scripts/minitest.py" "$here/gpu-check.sh" "$bundle/"
    # PyTorch Geometric as published, for the Batch layout's device test
    local pyg_tar="$root/../shared/deps/torch_geometric-2.4.0.tar.gz"
    if [ -f "$pyg_tar" ]; then
        mkdir -p "$bundle/deps" && cp "$pyg_tar" "$bundle/deps/"
    else
        echo "gpu-check pack: $pyg_tar is missing: the PyG Batch case will fail" >&2
    fi
    local mib
    mib=$(du -sm "$bundle" | cut -f1)
    echo "gpu-check pack: $bundle: $(find "$bundle" -type f | wc -l) files, $mib MiB"
    ls "$bundle/lib"
    if [ "$mib" -gt 60 ]; then
        echo "gpu-check pack: the bundle passes 60 MiB" >&2
        exit 1
    fi
}

# ---------------------------------------------------------------- run

declare -a STEPS=()
FAILED=0
work=""

# step NAME TIMEOUT_S LOG COMMAND...: run, append to LOG, print and keep the status.
step() {
    local name=$1 limit=$2 log=$3 rc start
    shift 3
    if [ -n "${GPU_CHECK_STEPS:-}" ] && [[ " $GPU_CHECK_STEPS " != *" $name "* ]]; then
        STEPS+=("$(printf '%-22s %s' "$name" "NOT RUN (GPU_CHECK_STEPS)")")
        return 0
    fi
    start=$(date +%s)
    echo "== $name: $*" | tee -a "$log" >/dev/null
    echo "gpu-check: $name ..."
    timeout -k 10 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    local secs=$(( $(date +%s) - start ))
    local status
    case $rc in
        0) status=PASS ;;
        77) status="FAIL (skipped: no CUDA device)" ;;
        124|137) status="FAIL (timed out after ${limit} s)" ;;
        *) status="FAIL (exit $rc)" ;;
    esac
    [ $rc -eq 0 ] || FAILED=1
    echo "== $name: $status in ${secs} s" >>"$log"
    echo "gpu-check: $name: $status in ${secs} s (log: $(basename "$log"))"
    tail -n 3 "$log" | sed 's/^/    /'
    STEPS+=("$(printf '%-22s %s' "$name" "$status")")
    return 0
}

run() {
    local out=${1:-}
    [ -n "$out" ] || usage
    local here bundle
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    if [ -x "$here/bin/gpu_check" ]; then
        bundle=$here                       # .gpu-bundle/gpu-check.sh
    else
        bundle=$(cd "$here/.." && pwd)/.gpu-bundle
    fi
    if [ ! -x "$bundle/bin/gpu_check" ]; then
        echo "gpu-check run: no bundle at $bundle (scripts/gpu-check.sh pack on the build" \
             "machine first)" >&2
        exit 1
    fi
    mkdir -p "$out" || exit 1
    out=$(cd "$out" && pwd)
    rm -f "$out"/{summary.txt,gpu_check.txt,memcheck.txt,synccheck.txt,pytest.txt} \
          "$out"/{bench_gpu.txt,bench_gpu.json,figures.txt}
    local py=${PYTHON:-python3}
    work=$(mktemp -d "${TMPDIR:-/tmp}/pertload-gpu-check.XXXXXX") || exit 1
    trap 'rm -rf "$work"' EXIT
    # lib/common's libraries only where the machine has none of that name
    mkdir -p "$work/common"
    local have f d n
    have=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null)
    for f in "$bundle"/lib/common/*; do
        [ -e "$f" ] || continue
        n=$(basename "$f")
        grep -q "$n " <<<"$have" && continue
        for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib; do
            [ -e "$d/$n" ] && continue 2
        done
        ln -s "$f" "$work/common/"
    done
    export LD_LIBRARY_PATH="$bundle/lib:$work/common${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PERTLOAD_LIB="$bundle/lib/libpertload.so" PERTLOAD_BIN="$bundle/bin/pertload"
    export PYTHONPATH="$bundle/python" PYTHONDONTWRITEBYTECODE=1 PERTLOAD_REQUIRE_CUDA=1
    export PERTLOAD_PYG_TARBALL="$bundle/deps/torch_geometric-2.4.0.tar.gz"
    export TMPDIR="$work"
    local summary="$out/summary.txt" t0
    t0=$(date +%s)
    {
        echo "pertload gpu-check, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -srm)"
        echo "host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' \
             /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
        if command -v nvidia-smi >/dev/null; then
            nvidia-smi --query-gpu=index,name,driver_version,memory.total \
                       --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
        else
            echo "gpu: nvidia-smi not found"
        fi
        "$py" -c 'import sys, numpy, torch
print("python", sys.version.split()[0], "numpy", numpy.__version__, "torch", torch.__version__,
      "cuda", torch.version.cuda, "devices", torch.cuda.device_count())' 2>&1 |
            sed 's/^/python: /'
    } >"$summary"
    cat "$summary"

    # 1. a device is visible to the CUDA runtime of pertload (not only torch's)
    step device 20 "$out/gpu_check.txt" "$bundle/bin/gpu_check" --probe
    # 2. gpu_check on a yeast-scale database with 4 KiB payload rows
    local samples=${GPU_CHECK_SAMPLES:-512}
    step gpu_check 140 "$out/gpu_check.txt" "$bundle/bin/gpu_check" --backend cuda \
        --genes 6607 --samples "$samples" --scale 1 --payload-dim 1024
    # 3, 4. compute-sanitizer on the small default database
    local cs
    cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
    if [ -x "$cs" ]; then
        step memcheck 100 "$out/memcheck.txt" "$cs" --tool memcheck --leak-check full \
            --error-exitcode 3 "$bundle/bin/gpu_check" --backend cuda
        step synccheck 80 "$out/synccheck.txt" "$cs" --tool synccheck --error-exitcode 3 \
            "$bundle/bin/gpu_check" --backend cuda
    else
        echo "compute-sanitizer not found" >"$out/memcheck.txt"
        STEPS+=("$(printf '%-22s %s' memcheck "NOT RUN (no compute-sanitizer)")"
                "$(printf '%-22s %s' synccheck "NOT RUN (no compute-sanitizer)")")
        echo "gpu-check: memcheck, synccheck: not run (no compute-sanitizer)"
    fi
    # 5. the CUDA cases of the Python client
    local tests="$bundle/tests"
    local cases=("$tests/test_cuda_device.py" "$tests/test_cuda_paths.py"
                 "$tests/test_loader.py::test_to_torch_cuda_equals_cpu"
                 "$tests/test_pyg.py::test_pyg_layout_equals_per_sample_construction"
                 "$tests/test_pyg.py::test_pyg_layout_refuses_lists_that_are_not_sets"
                 "$tests/test_dataset.py::test_pin_memory")
    # The PyG Batch case on the device imports PyTorch Geometric 2.4.0 from
    # the bundle: in a process of its own, before any other test imports a
    # torch_geometric the machine may have installed.
    local pyg_case="$tests/test_cuda_device.py::test_pyg_batch_and_lazy_layouts_on_the_device"
    if "$py" -c 'import pytest' 2>/dev/null; then
        step pytest_pyg 60 "$out/pytest.txt" "$py" -m pytest -q -p no:cacheprovider -rs \
            "$pyg_case"
        step pytest 150 "$out/pytest.txt" "$py" -m pytest -q -p no:cacheprovider -rs \
            -k "not test_pyg_batch_and_lazy_layouts_on_the_device" "${cases[@]}"
    else
        step pytest_pyg 60 "$out/pytest.txt" "$py" "$bundle/minitest.py" "$pyg_case"
        step pytest 150 "$out/pytest.txt" "$py" "$bundle/minitest.py" \
            -k "not test_pyg_batch_and_lazy_layouts_on_the_device" "${cases[@]}"
    fi
    # 6. the GPU bench on a yeast-scale database
    # shellcheck disable=SC2016  # the script expands its own arguments
    step bench_gpu 100 "$out/bench_gpu.txt" bash -c '
        set -e
        "$1" synth "$2/in" --samples "$4" --payload-dim 1024 --seed 3 --quiet
        "$1" build -o "$2/db" $(cat "$2/in/build-args.txt") >/dev/null
        "$1" bench gpu "$2/db" --batch-size 64 --batches 100 --json "$3"
    ' bench "$bundle/bin/pertload" "$work/bench" "$out/bench_gpu.json" \
        "${GPU_CHECK_BENCH_SAMPLES:-8192}"
    # 7. the CUDA backend's host side at 2 to 16 collating threads: the same
    # database (4 KiB payload rows read with O_DIRECT from the disk), and one
    # without payload (the collating threads alone)
    # shellcheck disable=SC2016
    step bench_threads 240 "$out/bench_gpu.txt" bash -c '
        set -e
        "$1" synth "$2/in0" --samples 8192 --seed 3 --quiet
        "$1" build -o "$2/db0" $(cat "$2/in0/build-args.txt") >/dev/null
        for db in db db0; do
            for t in 2 4 8 16; do
                [ "$t" -le "$(nproc)" ] || continue
                for d in 2 8; do
                    echo "--- $db, threads $t, depth $d"
                    "$1" bench gpu "$2/$db" --batch-size 64 --batches 400 --threads "$t" \
                        --depth "$d"
                done
            done
        done
    ' bench "$bundle/bin/pertload" "$work/bench"
    # 8. the one-layer model step: layouts by torch ops, by the kernels, and
    # prefetched, beside the step alone (bench/model_layouts.py; the
    # machine's torch_geometric), and the host's share of the layouts
    # (bench/layout_host.py); then DataLoader workers against the Loader
    # shellcheck disable=SC2016
    step model_step 240 "$out/figures.txt" bash -c '
        set -e
        cd "$3"
        echo "--- physical + regulatory, batch 64"
        "$1" model_layouts.py "$2/db" --device cuda --types physical,regulatory \
            --batch-size 64 --batches 2 --epoch-batches "$4" --no-per-sample \
            --switch-interval 0.5
        echo "--- all nine types, batch 8"
        "$1" model_layouts.py "$2/db" --device cuda --batch-size 8 --batches 2 \
            --epoch-batches "$4" --no-per-sample --switch-interval 0.5
        echo "--- the host share of the layouts (bench/layout_host.py)"
        "$1" layout_host.py "$2/db" --device cuda --types physical,regulatory \
            --batch-size 64 --batches 20
        "$1" layout_host.py "$2/db" --device cuda --batch-size 8 --batches 20
    ' bench "$py" "$work/bench" "$bundle/bench" "${GPU_CHECK_EPOCH_BATCHES:-60}"
    # shellcheck disable=SC2016
    step workers 200 "$out/figures.txt" bash -c '
        set -e
        "$1" synth "$2/big" --samples 200000 --seed 3 --quiet
        "$1" build -o "$2/bigdb" $(cat "$2/big/build-args.txt") >/dev/null
        for w in 2 4; do
            echo "--- $w workers"
            "$3" "$4/keep_workers.py" "$2/bigdb" --rows 200000 --workers "$w" \
                --only loader,dataset-0,dataset-W --rounds 2
        done
        echo "--- epoch start"
        "$3" "$4/epoch_start.py" "$2/bigdb" --epochs 10
    ' bench "$bundle/bin/pertload" "$work/bench" "$py" "$bundle/bench"
    rm -rf "$work/bench"

    {
        echo
        echo "summary ($(( $(date +%s) - t0 )) s):"
        printf '  %s\n' "${STEPS[@]}"
        if [ $FAILED -eq 0 ]; then echo "result: PASS"; else echo "result: FAIL"; fi
    } | tee -a "$summary"
    return $FAILED
}

case "${1:-}" in
    pack) shift; pack "$@" ;;
    run) shift; run "$@"; exit $? ;;
    *) usage ;;
esac
