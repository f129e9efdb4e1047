/* pertload bench: throughput measurements (bench/).
 *
 * `pertload bench NAME DB ...` runs one C benchmark in this process; plain
 * `pertload bench [options]` runs the whole report (bench/report.py): every
 * benchmark and the Python peer pipelines on the same data, in one run. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli.h"
#include "pl_config.h"

static const char usage[] =
    "[--db DB] [--samples N] [--out DIR] [--quick]   (the whole report)\n"
    "       pertload bench --preset human [--samples N] [--ring-samples N] [--out DIR] [--quick]\n"
    "       pertload bench masks DB [--samples N] [--peer-samples M] [--genes K] [--json F]\n"
    "       pertload bench collate DB [--batch-size B] [--samples N] [--outputs LIST] "
    "[--no-ontology] [--json F]\n"
    "       pertload bench payload DB [--batch-size B] [--threads T] [--shuffle] [--json F]\n"
    "       pertload bench payload DB --epochs [--batch-size B] [--threads T] [--block-rows K] "
    "[--rounds R] [--json F]\n"
    "       pertload bench gpu DB [--batch-size B] [--batches N] [--threads T] [--depth D] "
    "[--json F]\n"
    "       pertload bench memory [--mib M] [--reps R] [--json F]\n"
    "       pertload bench memory --table DB [--ranks N] [--json F]\n"
    "       pertload bench khop DB [--k K1,K2] [--types T1,T2] [--samples N] "
    "[--khop-max-genes M] [--dump F] [--json F]";

/* Whether `path` is a regular file. */
static int is_file(const char *path) { return access(path, R_OK) == 0; }

/* Run bench/report.py with this program and its Python client: in a build
 * tree they are BUILD/bench and BUILD/python (this program is
 * BUILD/cli/pertload); installed, PREFIX/share/pertload/bench. The
 * interpreter is the one the build found, or $PERTLOAD_PYTHON when set. */
static int report(int argc, char **argv)
{
    char exe[PATH_MAX], dir[PATH_MAX], script[PATH_MAX + 64], pypath[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "pertload bench: cannot find this program: %s\n", strerror(errno));
        return 1;
    }
    exe[n] = 0;
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    *slash = 0;
    pypath[0] = 0;
    snprintf(script, sizeof script, "%s/../../bench/report.py", dir);
    if (is_file(script)) {
        snprintf(pypath, sizeof pypath, "%s/../../python", dir);
    } else {
        snprintf(script, sizeof script, "%s/../share/pertload/bench/report.py", dir);
        if (!is_file(script)) {
            fprintf(stderr, "pertload bench: the report driver (bench/report.py) is not "
                            "beside this program nor installed with it\n");
            return 1;
        }
    }
    if (pypath[0]) {
        const char *old = getenv("PYTHONPATH");
        char *both = malloc(strlen(pypath) + (old ? strlen(old) : 0) + 2);
        if (!both)
            return 1;
        sprintf(both, "%s%s%s", pypath, old && *old ? ":" : "", old && *old ? old : "");
        setenv("PYTHONPATH", both, 1);
        free(both);
    }
    setenv("PERTLOAD_BIN", exe, 1);
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        return 1;
    const char *python = getenv("PERTLOAD_PYTHON");
    if (!python || !*python)
        python = PL_PYTHON;
    args[0] = (char *)python;
    args[1] = script;
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    fflush(stdout);
    execv(python, args);
    fprintf(stderr, "pertload bench: cannot run %s: %s\n", python, strerror(errno));
    free(args);
    return 1;
}

int pl_cmd_bench(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } benches[] = {{"masks", pl_bench_masks},     {"collate", pl_bench_collate},
                   {"payload", pl_bench_payload}, {"gpu", pl_bench_gpu},
                   {"memory", pl_bench_memory},   {"khop", pl_bench_khop}};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: pertload bench %s\n", usage);
        return 0;
    }
    for (size_t i = 0; argc >= 2 && i < sizeof benches / sizeof benches[0]; i++)
        if (!strcmp(argv[1], benches[i].name))
            return benches[i].run(argc - 1, argv + 1);
    if (argc >= 2 && argv[1][0] != '-')
        return pl_cli_usage("bench", usage, "unknown benchmark '%s'", argv[1]);
    return report(argc, argv);
}
