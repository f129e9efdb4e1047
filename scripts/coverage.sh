#!/usr/bin/env bash
# The test suite under coverage: a build with gcov counters (build-cov), every
# suite but perf and soak run over it, and gcovr's report of the lines and
# branches run, per folder, printed. The library and the command line (every
# folder but bench/, tests/, fuzz/) must reach the floor, else the script
# fails; bench/ is reported on its own line and has no floor.
#
# Counters of every process count: the children the C tests fork end with
# _exit(), which the test programs wrap to write their counters first
# (tests/gcov_exit.c); `pertload` processes the tests run and the Python
# interpreter that loads libpertload write theirs at exit (a process killed
# by a signal it does not handle loses its own, by design of gcov).
#
# Usage: scripts/coverage.sh [MESON-TEST-ARGS...]
#   PERTLOAD_COV_LINES, PERTLOAD_COV_BRANCHES   the floor in percent
#   PERTLOAD_COV_DIR                            the build directory (build-cov)
#   PERTLOAD_COV_REPORT_ONLY=1                  report the counters already
#                                               there, run nothing
set -euo pipefail
cd "$(dirname "$0")/.."
lines_floor=${PERTLOAD_COV_LINES:-94.5}
branches_floor=${PERTLOAD_COV_BRANCHES:-80.0}
b=${PERTLOAD_COV_DIR:-build-cov}

command -v gcovr >/dev/null || { echo "coverage.sh: gcovr is needed (scripts/install-deps.sh)" >&2; exit 1; }
if [ -z "${PERTLOAD_COV_REPORT_ONLY:-}" ]; then
    # Optimised as the suite's own build is, so that it runs about as fast
    # (an -O0 build counts the source's own branches, but reached the same
    # share and runs slower: docs/testing.md). The GPU path does not
    # apply (nvcc's objects carry no counters). A build directory set up
    # otherwise is reconfigured.
    opts=(-Db_coverage=true -Dwerror=true -Dbuildtype=debugoptimized -Db_ndebug=false
          -Dcuda=disabled)
    if [ ! -f "$b/build.ninja" ]; then
        meson setup "$b" "${opts[@]}" >/dev/null
    elif ! grep -q '"name": "optimization", "value": "2"' "$b/meson-info/intro-buildoptions.json"; then
        meson configure "$b" "${opts[@]}" >/dev/null
    fi
    ninja -C "$b" >/dev/null
    find "$b" -name '*.gcda' -delete
    # The corruption sweep at sampled offsets, as under the sanitizers: every
    # byte of every file (minutes of CPU) is swept on the optimised build.
    # Counting, the tests run slower than on the suite's own build: their
    # timeouts are doubled.
    PERTLOAD_SWEEP=${PERTLOAD_SWEEP:-sample} \
        meson test -C "$b" --no-rebuild --print-errorlogs --timeout-multiplier 2 \
        --no-suite perf --no-suite soak "$@"
fi

summary=$b/meson-logs/coverage.json
# Notes of objects no longer built (a source moved or removed since the
# directory was set up, a copy the configuration no longer makes) would
# count their lines as never run: ninja removes those objects first.
ninja -C "$b" -t cleandead >/dev/null
find "$b" -name '*.gcno' | while read -r g; do
    [ -e "${g%.gcno}.o" ] || rm -f "$g" "${g%.gcno}.gcda"
done
gcovr -r . "$b" -j 2 --exclude 'tests/' --exclude 'fuzz/' --exclude "$b/" \
    --exclude 'examples/' --json-summary -o "$summary"

/usr/bin/python3 - "$summary" "$lines_floor" "$branches_floor" <<'EOF'
import json, os, sys
data = json.load(open(sys.argv[1]))
floor_l, floor_b = float(sys.argv[2]), float(sys.argv[3])
groups = {}
for f in data["files"]:
    d = os.path.dirname(f["filename"]) or "."
    g = groups.setdefault(d, [0, 0, 0, 0])
    g[0] += f["line_covered"]; g[1] += f["line_total"]
    g[2] += f["branch_covered"]; g[3] += f["branch_total"]
pct = lambda a, b: 100.0 * a / b if b else 100.0
print(f"{'FOLDER':<24} {'LINES':>16} {'%':>6} {'BRANCHES':>16} {'%':>6}")
lib = [0, 0, 0, 0]
bench = [0, 0, 0, 0]
for d in sorted(groups):
    g = groups[d]
    print(f"{d:<24} {g[0]:>7}/{g[1]:<8} {pct(g[0], g[1]):6.1f} {g[2]:>7}/{g[3]:<8} "
          f"{pct(g[2], g[3]):6.1f}")
    acc = bench if d == "bench" or d.startswith("bench/") else lib
    for i in range(4):
        acc[i] += g[i]
lp, bp = pct(lib[0], lib[1]), pct(lib[2], lib[3])
print(f"library and CLI: lines {lp:.1f}% ({lib[0]}/{lib[1]}), "
      f"branches {bp:.1f}% ({lib[2]}/{lib[3]})")
print(f"bench:           lines {pct(bench[0], bench[1]):.1f}%, "
      f"branches {pct(bench[2], bench[3]):.1f}% (no floor)")
if lib[1] == 0:
    sys.exit("coverage.sh: no counters found: did the suite run in this build?")
if lp < floor_l or bp < floor_b:
    sys.exit(f"coverage.sh: under the floor of {floor_l:.1f}% of lines and "
             f"{floor_b:.1f}% of branches")
print(f"coverage.sh: at or above the floor ({floor_l:.1f}% lines, {floor_b:.1f}% branches)")
EOF
