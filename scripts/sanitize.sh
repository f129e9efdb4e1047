#!/usr/bin/env bash
# The test suites under sanitizers:
#   asan  every C test program and the Python suite, built with
#         AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on for
#         pertload's own processes);
#   tsan  the multi-threaded paths built with ThreadSanitizer: the test
#         program tests/threads_check.c (the loader's worker and copy threads,
#         `pertload serve` and its workers feeding a consumer, a ring between
#         threads). Criterion's runner cannot start under TSan (it maps its
#         arena at random fixed addresses that TSan reserves), so the
#         Criterion programs ring, io and upload run under ASan only and
#         threads_check repeats their threaded cases as a plain program.
# Usage: scripts/sanitize.sh [asan|tsan|all]   (default all)
#
# Every report of every process goes to a file under the build's san-logs/
# (log_path): Criterion's test workers, the children tests fork, the serve
# processes the Python client starts. Criterion ignores how a worker exits
# once its test has reported (a leak found at exit would pass), so the run
# fails on any report file, whatever the exit codes say; a report that halts
# a process (halt_on_error, -fno-sanitize-recover) fails its test as well.
#
# The Python interpreter loads the ASan build of libpertload through ctypes,
# so libasan is preloaded into it. Leak checking is off in the interpreter
# itself: CPython, numpy and torch keep their allocations to the end by
# design, and a suppression list cannot tell those from pertload's
# (allocations made through ctypes have interpreter frames on their stacks
# too). It is on in every pertload process the Python tests start (serve,
# through a PERTLOAD_BIN wrapper that restores it; off again in the Python of
# `pertload bench`'s report, through PERTLOAD_PYTHON), and the library calls the
# client makes in-process (open, graph, ring attach/detach) are leak-checked
# by the C suite, which makes the same calls. So are the usage errors of every
# subcommand: tests/test_cli_usage.c runs the ASan-built pertload with bad
# arguments (a leak at exit fails the test and leaves a report).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in asan|tsan|all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

# The GPU path does not apply: nvcc's objects are not instrumented and the
# CUDA runtime does not run under ASan's shadow memory; the callgrind check
# (suite perf) measures the uninstrumented build.
common=(-Dcuda=disabled -Dwerror=true -Dbuildtype=debugoptimized -Db_ndebug=false
        -Db_lundef=false)

setup() { # DIR SANITIZERS C-FLAGS [TARGETS...]
    local dir=$1 san=$2 flags=$3
    shift 3
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "${common[@]}" -Db_sanitize="$san" \
            -Dc_args="$flags" -Dc_link_args="$flags" >/dev/null
    fi
    ninja -C "$dir" "$@" >/dev/null
}

# Reports printed to stderr (UBSan's, which ignore log_path when linked with
# ASan) end up in test logs: find those too.
markers='runtime error:|ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer'

# Print the reports in the directory $1 and in the text logs $2...; fail
# when there is any.
check_logs() {
    local logs=$1 found=0 f
    shift
    for f in "$logs"/*; do
        [ -e "$f" ] || continue
        found=1
        echo "---- sanitizer report $f" >&2
        cat "$f" >&2
    done
    for f in "$@"; do
        if grep -E -q "$markers" "$f"; then
            found=1
            echo "---- sanitizer report in $f" >&2
            grep -E -A 30 "$markers" "$f" >&2
        fi
    done
    if [ "$found" -ne 0 ]; then
        echo "sanitize.sh: sanitizer reports in $logs" >&2
        exit 1
    fi
}

fresh_logs() { # writable by the tests' processes that run as another user
    rm -rf "$1"
    mkdir -p "$1"
    chmod 1777 "$1"
}

run_asan() {
    local b=build-asan logs
    setup "$b" address,undefined "-fno-sanitize-recover=all -fno-omit-frame-pointer"
    logs=$PWD/$b/san-logs
    fresh_logs "$logs"
    local asan="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1"
    asan+=":strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan"
    export ASAN_OPTIONS=$asan
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
    export PERTLOAD_SWEEP=sample # the corruption sweep at sampled offsets
    # Every C test program: the meson tests but the perf suite, python and docs
    # (both load libpertload into the interpreter: the Python suite runs below).
    mapfile -t tests < <(meson test -C "$b" --list --no-suite perf 2>/dev/null |
                         sed -n 's|^pertload / ||p' | grep -vx -e python -e docs)
    [ ${#tests[@]} -gt 0 ] || { echo "sanitize.sh: no tests listed in $b" >&2; exit 1; }
    local rc=0
    meson test -C "$b" --no-rebuild --print-errorlogs -t 4 "${tests[@]}" || rc=$?
    check_logs "$logs" "$b/meson-logs/testlog.txt"
    [ "$rc" -eq 0 ] || exit "$rc"

    # The Python suite, libasan preloaded into the interpreter. Output is
    # captured at the Python level only, so that a report printed by the
    # library reaches the log even when it ends the interpreter mid-test.
    local wrapper=$PWD/$b/pertload-leakcheck
    printf '#!/bin/sh\nASAN_OPTIONS="%s" exec "%s" "$@"\n' "$asan" \
        "$PWD/$b/cli/pertload" > "$wrapper"
    chmod +x "$wrapper"
    # `pertload bench` runs its report in Python: leak checking off there too.
    local pywrap=$PWD/$b/python-noleakcheck
    printf '#!/bin/sh\nASAN_OPTIONS="%s" exec /usr/bin/python3 "$@"\n' \
        "${asan/detect_leaks=1/detect_leaks=0}" > "$pywrap"
    chmod +x "$pywrap"
    PERTLOAD_PYTHON=$pywrap LD_PRELOAD=$(gcc -print-file-name=libasan.so) \
    ASAN_OPTIONS="${asan/detect_leaks=1/detect_leaks=0}" \
    PYTHONPATH=$PWD/$b/python PYTHONDONTWRITEBYTECODE=1 \
    PERTLOAD_LIB=$PWD/$b/libpertload.so PERTLOAD_BIN=$wrapper \
        /usr/bin/python3 -m pytest -q -p no:cacheprovider --capture=sys python/tests \
        2>&1 | tee "$b/meson-logs/python-asan.txt" || rc=$?
    check_logs "$logs" "$b/meson-logs/python-asan.txt"
    [ "$rc" -eq 0 ] || exit "$rc"
}

run_tsan() {
    local b=build-tsan logs
    setup "$b" thread "" tests/threads_check cli/pertload
    logs=$PWD/$b/san-logs
    fresh_logs "$logs"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan"
    # Without address randomisation: TSan's fixed layout leaves room for the
    # 1 TiB map that build reserves for LMDB only at some mmap bases.
    local rc=0
    meson test -C "$b" --no-rebuild --print-errorlogs -t 4 --wrapper "setarch -R" threads ||
        rc=$?
    check_logs "$logs" "$b/meson-logs/testlog-setarch.txt"
    [ "$rc" -eq 0 ] || exit "$rc"
}

if [ "$what" = asan ] || [ "$what" = all ]; then
    run_asan
fi
if [ "$what" = tsan ] || [ "$what" = all ]; then
    run_tsan
fi
echo "sanitize.sh: no sanitizer reports"
