/* The option loop of the benchmarks (opts.h). */
#include "opts.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int pl_bench_opts(const char *cmd, const char *usage, int argc, char **argv,
                  const pl_bench_opt *opts, size_t n, const char **path)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const pl_bench_opt *o = NULL;
        for (size_t k = 0; k < n && !o; k++)
            if (!strcmp(a, opts[k].name) && (opts[k].kind == PL_BENCH_OPT_FLAG || i + 1 < argc))
                o = &opts[k];
        if (!o) {
            if (!path || a[0] == '-' || *path)
                goto usage;
            *path = a;
            continue;
        }
        switch (o->kind) {
        case PL_BENCH_OPT_U64:
            if (pl_cli_u64(cmd, a, argv[++i], o->dst) < 0)
                return 2;
            break;
        case PL_BENCH_OPT_STR:
            *(const char **)o->dst = argv[++i];
            break;
        case PL_BENCH_OPT_FLAG:
            if (o->dst)
                *(int *)o->dst = 1;
            break;
        case PL_BENCH_OPT_FN:
            if (o->parse(argv[++i], o->dst) < 0)
                goto usage;
            break;
        }
    }
    return 0;
usage:
    fputs(usage, stderr);
    return 2;
}

int pl_bench_begin(const char *usage, int ok, pl_bench_json *j, const char *json)
{
    if (!ok) {
        fputs(usage, stderr);
        return 2;
    }
    return j && pl_bench_json_open(j, json) < 0 ? 1 : 0;
}
