/* Flat JSON objects for `pertload bench NAME DB --json FILE`: each benchmark
 * writes its figures as one object of numbers and strings, which the report
 * driver (bench/report.py) gathers into its table. */
#ifndef PL_BENCH_JSON_H
#define PL_BENCH_JSON_H

#include <stdio.h>

typedef struct pl_bench_json {
    FILE *f; /* NULL: no --json given, every call does nothing */
    int n;   /* members written so far */
} pl_bench_json;

/** Start an object in `path`, or a disabled writer when `path` is NULL.
 *  @return 0, or -1 with a message on stderr when the file cannot be created. */
int pl_bench_json_open(pl_bench_json *j, const char *path);

/** Add member `key` with number `v` (null when not finite). */
void pl_bench_json_num(pl_bench_json *j, const char *key, double v);

/** Add member `key` with string `v` (printable ASCII, quotes and backslashes
 *  escaped). */
void pl_bench_json_str(pl_bench_json *j, const char *key, const char *v);

/** End the object and close the file.
 *  @return 0, or -1 with a message on stderr when writing failed. */
int pl_bench_json_close(pl_bench_json *j);

#endif
