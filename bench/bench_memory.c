/* The memory roofline of one core: memset and memcpy bandwidth over buffers
 * far larger than the caches, the ceiling of every dense output; with
 * --table DB, the memory of serve ranks with and without the shared sample
 * table (bench_table.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "opts.h"
#include "src/core/progress.h"

int pl_bench_memory(int argc, char **argv)
{
    const char *usage = "usage: pertload bench memory [--mib M] [--reps R] [--json FILE]\n"
                        "       pertload bench memory --table DB [--ranks N] [--json FILE]\n";
    unsigned long long mib = 256, reps = 5, ranks = 16;
    const char *json = NULL, *table = NULL;
    const pl_bench_opt opts[] = {
        {"--mib", PL_BENCH_OPT_U64, &mib, NULL},
        {"--reps", PL_BENCH_OPT_U64, &reps, NULL},
        {"--ranks", PL_BENCH_OPT_U64, &ranks, NULL},
        {"--table", PL_BENCH_OPT_STR, &table, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
    };
    if (pl_bench_opts("bench memory", usage, argc, argv, opts, sizeof opts / sizeof *opts, NULL))
        return 2;
    if (table)
        return pl_bench_memory_table(table, ranks > 256 ? 0 : (int)ranks, json);
    if (pl_bench_begin(usage, mib && mib <= (1ull << 20) && reps, NULL, NULL))
        return 2;
    size_t n = (size_t)mib << 20;
    unsigned char *a = aligned_alloc(4096, n), *b = aligned_alloc(4096, n);
    if (!a || !b) {
        fprintf(stderr, "pertload bench memory: out of memory for 2 x %llu MiB\n", mib);
        free(a);
        free(b);
        return 1;
    }
    memset(a, 1, n); /* fault every page in before timing */
    memset(b, 2, n);
    /* The best of the repetitions: the machine's ceiling, not its noise. */
    double set = 0, cpy = 0;
    for (unsigned long long r = 0; r < reps; r++) {
        double t0 = pl__now();
        memset(a, (int)(r & 0x7F), n);
        double t1 = pl__now();
        memcpy(b, a, n);
        double t2 = pl__now();
        if (b[n - 1] != (unsigned char)(r & 0x7F)) {
            fprintf(stderr, "pertload bench memory: copy check failed\n");
            free(a);
            free(b);
            return 1;
        }
        if (t1 > t0 && (double)n / (t1 - t0) > set)
            set = (double)n / (t1 - t0);
        if (t2 > t1 && (double)n / (t2 - t1) > cpy)
            cpy = (double)n / (t2 - t1);
    }
    free(a);
    free(b);
    printf("memory bandwidth of one core, %llu MiB buffers, best of %llu:\n", mib, reps);
    printf("  memset  %6.2f GB/s written\n", set / 1e9);
    printf("  memcpy  %6.2f GB/s copied (read + written once each)\n", cpy / 1e9);
    pl_bench_json j;
    if (pl_bench_json_open(&j, json) < 0)
        return 1;
    pl_bench_json_num(&j, "buffer_bytes", (double)n);
    pl_bench_json_num(&j, "memset_bytes_per_s", set);
    pl_bench_json_num(&j, "memcpy_bytes_per_s", cpy);
    return pl_bench_json_close(&j) < 0;
}
