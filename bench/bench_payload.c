/* Payload streaming beside the raw sequential read of the same file, in one
 * run. Both start from a cold page cache (POSIX_FADV_DONTNEED on the file).
 * A shared disk's bandwidth drifts from second to second, so the two sides
 * run in turn for --rounds rounds (3 by default) and the medians are
 * reported, with the share of each round.
 *
 *   sequential  the payload data read front to back in 4 MiB reads (O_DIRECT
 *               where the file system allows, as the producer uses it)
 *   pertload    the producer of `serve` (worker threads, io backend, payload
 *               rows read straight into page-aligned slots while the batch is
 *               collated) over an epoch plan, into slots recycled as soon
 *               as their batch is complete */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_payload.h"
#include "json.h"
#include "opts.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/progress.h"

#define SEQ_CHUNK ((size_t)4 << 20)

static int pool_acquire(void *ctx, uint64_t b, unsigned char **slot, pl_err *err)
{
    pl__bench_pool *p = ctx;
    while (atomic_load(&p->published[b % p->n]) < b / p->n) {
        if (atomic_load(&p->stopped))
            return pl__err(err, PL_EUSAGE, "stopped");
        sched_yield();
    }
    *slot = p->mem + (b % p->n) * p->slot_bytes;
    return 0;
}

static void pool_publish(void *ctx, uint64_t b, uint32_t n)
{
    pl__bench_pool *p = ctx;
    atomic_fetch_add(&p->samples, n);
    atomic_fetch_add(&p->published[b % p->n], 1);
}

static void pool_stop(void *ctx, int rc, const pl_err *err)
{
    pl__bench_pool *p = ctx;
    (void)rc;
    (void)err;
    atomic_store(&p->stopped, 1);
}

void pl__bench_drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

int pl__bench_sequential(const char *path, uint64_t off, uint64_t len, double *rate, int *direct,
                      pl_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    *direct = fd >= 0 && off % 4096 == 0;
    if (fd >= 0 && !*direct)
        close(fd);
    if (!*direct)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: %s", path, strerror(errno));
    unsigned char *buf = aligned_alloc(4096, SEQ_CHUNK);
    int rc = buf ? 0 : pl__err(err, -ENOMEM, "out of memory");
    double t0 = pl__now();
    for (uint64_t at = 0; rc == 0 && at < len; at += SEQ_CHUNK) {
        size_t n = (size_t)(len - at < SEQ_CHUNK ? len - at : SEQ_CHUNK);
        size_t rd = *direct ? (n + 4095) & ~(size_t)4095 : n; /* whole pages */
        ssize_t got = pread(fd, buf, rd, (off_t)(off + at));
        if (got < (ssize_t)n)
            rc = pl__err(err, got < 0 ? -errno : PL_ECORRUPT, "%s: read failed", path);
    }
    double dt = pl__now() - t0;
    *rate = dt > 0 ? (double)len / dt : 0;
    free(buf);
    close(fd);
    return rc;
}

int pl__bench_producer_round(const pl__produce_opts *po, const char *file, pl__bench_pool *pl,
                             double *rate, pl__bench_payload_file *pf, pl_err *err)
{
    pl__producer p;
    int rc = pl__producer_init(&p, po, err);
    if (rc == 0)
        rc = pl__producer_load(&p, err);
    if (rc == 0) /* slots for the largest batch: every batch whole */
        rc = pl__producer_size(&p, p.needs.largest, err);
    if (rc == 0 && !p.cfg.payload_row_bytes)
        rc = pl__err(err, PL_EUSAGE, "%s has no payload", po->db);
    /* Slot sizes follow each run's plan (its largest batch): a round whose
     * slots are larger than the pool's gets a new pool. */
    if (rc == 0 && (!pl->mem || pl->slot_bytes < p.slot_bytes)) {
        free(pl->mem);
        free(pl->published);
        pl->slot_bytes = p.slot_bytes;
        pl->published = calloc(pl->n, sizeof *pl->published);
        if (!(pl->mem = aligned_alloc(4096, pl->n * pl->slot_bytes)) || !pl->published)
            rc = pl__err(err, -ENOMEM, "out of memory");
        else
            memset(pl->mem, 0, pl->n * pl->slot_bytes); /* fault the pages in */
    }
    if (rc == 0) {
        pl__sink sink = {pl, pool_acquire, pool_publish, pool_stop};
        atomic_store(&pl->samples, 0);
        atomic_store(&pl->stopped, 0);
        for (uint32_t i = 0; i < pl->n; i++)
            atomic_store(&pl->published[i], 0);
        pl__bench_drop_cache(file);
        double t0 = pl__now();
        rc = pl__producer_start(&p, &sink, err);
        if (rc == 0)
            rc = pl__producer_join(&p, err);
        double dt = pl__now() - t0;
        *rate = dt > 0 ? (double)atomic_load(&pl->samples) * (double)p.cfg.payload_row_bytes / dt
                       : 0;
        *pf = (pl__bench_payload_file){p.payload_offset, p.db->meta.n_samples,
                                       p.cfg.payload_row_bytes, p.payload_direct};
    }
    pl__producer_free(&p);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void pl__bench_payload_setup(const char *db, uint64_t B, uint64_t T, char *file, size_t cap,
                             pl__produce_opts *po)
{
    pl__path_join(file, cap, db, PL_FILE_PAYLOAD);
    *po = (pl__produce_opts){.db = db,
                             .plan = {.seed = 1, .world_size = 1, .batch_size = (uint32_t)B},
                             .threads = (uint32_t)T};
}

double pl__bench_median(const double *v, unsigned n)
{
    double s[64];
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* --order block|rows: *(int *)block set to whether it is block. */
static int parse_order(const char *v, void *block)
{
    if (strcmp(v, "block") && strcmp(v, "rows"))
        return -1;
    *(int *)block = !strcmp(v, "block");
    return 0;
}

int pl_bench_payload(int argc, char **argv)
{
    const char *usage = "usage: pertload bench payload DB [--batch-size B] [--threads T] "
                        "[--shuffle | --order block [--block-rows K] [--block-window W]] "
                        "[--rounds R] [--json FILE]\n";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--epochs"))
            return pl__bench_payload_epochs(argc, argv);
    const char *path = NULL, *json = NULL;
    unsigned long long B = 64, T = 2, R = 3, K = 0, Wb = 0;
    int shuffle = 0, block = 0;
    const pl_bench_opt opts[] = {
        {"--batch-size", PL_BENCH_OPT_U64, &B, NULL},
        {"--threads", PL_BENCH_OPT_U64, &T, NULL},
        {"--rounds", PL_BENCH_OPT_U64, &R, NULL},
        {"--block-rows", PL_BENCH_OPT_U64, &K, NULL},
        {"--block-window", PL_BENCH_OPT_U64, &Wb, NULL},
        {"--order", PL_BENCH_OPT_FN, &block, parse_order},
        {"--shuffle", PL_BENCH_OPT_FLAG, &shuffle, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
    };
    if (pl_bench_opts("bench payload", usage, argc, argv, opts, sizeof opts / sizeof *opts,
                      &path))
        return 2;
    /* at most 64 rounds: the arrays below */
    if (pl_bench_begin(usage, path && B && T && R && R <= 64 && K <= UINT32_MAX &&
                       Wb <= UINT32_MAX && (!(K || Wb) || block), NULL, NULL))
        return 2;
    pl_err err = {0};
    char file[4096];
    pl__produce_opts po;
    pl__bench_payload_setup(path, B, T, file, sizeof file, &po);
    po.plan.shuffle = shuffle;
    po.plan.order = block ? PL_ORDER_BLOCK : PL_ORDER_ROWS;
    po.plan.block_rows = (uint32_t)K;
    po.plan.window_blocks = (uint32_t)Wb;
    pl__bench_pool pl = {.n = (uint32_t)T * 2};
    pl__bench_payload_file pf = {0};
    double seq[64], prod[64], share[64];
    int direct = 0, rc = 0;
    for (unsigned r = 0; rc == 0 && r < R; r++) {
        rc = pl__bench_producer_round(&po, file, &pl, &prod[r], &pf, &err);
        if (rc == 0) {
            pl__bench_drop_cache(file);
            rc = pl__bench_sequential(file, pf.offset, pf.rows * pf.row_bytes, &seq[r], &direct, &err);
        }
        if (rc == 0)
            share[r] = seq[r] > 0 ? prod[r] / seq[r] : 0;
    }
    const uint64_t rows = pf.rows, row_bytes = pf.row_bytes;
    const int pdirect = pf.direct;
    if (rc < 0) {
        fprintf(stderr, "pertload bench payload: %s\n", err.msg);
    } else {
        double s = pl__bench_median(seq, (unsigned)R), q = pl__bench_median(prod, (unsigned)R);
        double sh = pl__bench_median(share, (unsigned)R);
        printf("payload %s: %llu rows of %llu bytes (%.1f MB), page cache dropped before each "
               "read; %llu rounds, the two sides in turn, medians\n",
               file, (unsigned long long)rows, (unsigned long long)row_bytes,
               rows * row_bytes / 1e6, R);
        printf("  %-40s %8.3f GB/s\n",
               direct ? "sequential 4 MiB reads, O_DIRECT" : "sequential 4 MiB reads, buffered",
               s / 1e9);
        printf("  %-40s %8.3f GB/s  %5.0f%% of sequential (%.0f samples/s)\n",
               pdirect ? "pertload producer, rows O_DIRECT" : "pertload producer, rows buffered",
               q / 1e9, 100 * sh, row_bytes ? q / (double)row_bytes : 0);
        printf("  share of each round:");
        for (unsigned r = 0; r < R; r++)
            printf(" %.0f%%", 100 * share[r]);
        /* the plan's defaults (pertload.h) */
        unsigned long long Kd = K ? K : 16, Wd = Wb ? Wb : (B + Kd - 1) / Kd;
        char what[96];
        if (block)
            snprintf(what, sizeof what, "block-shuffled (%llu-row blocks, windows of %llu)",
                     Kd, Wd);
        else
            snprintf(what, sizeof what, "%s", shuffle ? "shuffled" : "in-order");
        printf("\n  (%s plan, batches of %llu, %llu worker threads, masks collated too)\n",
               what, B, T);
        pl_bench_json j;
        if (pl_bench_json_open(&j, json) < 0)
            rc = -1;
        pl_bench_json_str(&j, "plan", block ? "block" : shuffle ? "shuffled" : "in-order");
        pl_bench_json_num(&j, "batch_size", (double)B);
        if (block) {
            pl_bench_json_num(&j, "block_rows", (double)Kd);
            pl_bench_json_num(&j, "block_window", (double)Wd);
        }
        pl_bench_json_num(&j, "rows", (double)rows);
        pl_bench_json_num(&j, "row_bytes", (double)row_bytes);
        pl_bench_json_num(&j, "rounds", (double)R);
        pl_bench_json_num(&j, "sequential_bytes_per_s", s);
        pl_bench_json_num(&j, "sequential_direct", direct);
        pl_bench_json_num(&j, "producer_bytes_per_s", q);
        pl_bench_json_num(&j, "producer_direct", pdirect);
        pl_bench_json_num(&j, "producer_share_of_sequential", sh);
        qsort(share, (size_t)R, sizeof *share, cmp_double);
        pl_bench_json_num(&j, "producer_share_least", share[0]);
        pl_bench_json_num(&j, "producer_share_most", share[R - 1]);
        pl_bench_json_num(&j, "producer_samples_per_s", row_bytes ? q / (double)row_bytes : 0);
        if (pl_bench_json_close(&j) < 0)
            rc = -1;
    }
    free(pl.mem);
    free((void *)pl.published);
    return rc < 0 ? 1 : 0;
}
