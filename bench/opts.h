/* The command line of each `pertload bench NAME`: one table of options per
 * benchmark, read by one loop. */
#ifndef PL_BENCH_OPTS_H
#define PL_BENCH_OPTS_H

#include <stddef.h>

#include "json.h"

typedef enum pl_bench_opt_kind {
    PL_BENCH_OPT_U64,  /* the next argument, a number (pl_cli_u64), into an unsigned long long */
    PL_BENCH_OPT_STR,  /* the next argument into a const char * */
    PL_BENCH_OPT_FLAG, /* no value: the int set to 1 (dst NULL: accepted and ignored) */
    PL_BENCH_OPT_FN,   /* the next argument, read by parse into dst */
} pl_bench_opt_kind;

/* One option: its name ("--batch-size"), what it takes and where it goes. */
typedef struct pl_bench_opt {
    const char *name;
    pl_bench_opt_kind kind;
    void *dst;
    /* PL_BENCH_OPT_FN: 0, or -1 when `value` is refused (the usage follows) */
    int (*parse)(const char *value, void *dst);
} pl_bench_opt;

/** Read argv[1..argc) of `pertload CMD` (cmd "bench payload") against
 *  opts[0..n). An option given twice keeps its last value; an option that
 *  takes a value and comes last, an unknown option, and a second positional
 *  argument (any positional one when `path` is NULL) are refused with `usage`.
 *  @param path where the one positional argument (the database) goes; it
 *  must be NULL on entry when given.
 *  @return 0, or 2 (the exit status) once the number's message of
 *  pl_cli_u64 or `usage` was printed on stderr. */
int pl_bench_opts(const char *cmd, const char *usage, int argc, char **argv,
                  const pl_bench_opt *opts, size_t n, const char **path);

/** After pl_bench_opts: refuse the command line with `usage` on stderr
 *  unless `ok` (the values' own checks), then, when `j` is given, open the
 *  JSON output `json` into it (pl_bench_json_open; NULL: none).
 *  @return 0, 2 (the exit status) once `usage` was printed, or 1 when the
 *  JSON file cannot be created (its message printed). */
int pl_bench_begin(const char *usage, int ok, pl_bench_json *j, const char *json);

#endif
