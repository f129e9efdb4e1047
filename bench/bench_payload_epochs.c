/* `pertload bench payload DB --epochs`: pertload's payload epochs beside the
 * disk's own rates, on the same file, in one run. Every side starts from a
 * cold page cache (the file dropped) and reads with O_DIRECT where the
 * producer does, so a payload larger than memory is measured as it is read
 * in training: from the disk. The sides run in turn for --rounds rounds and
 * the medians are reported, with each round's shares.
 *
 *   disk sequential  the payload front to back in 4 MiB reads
 *   disk random      every row once, in a random order, one read a row, at
 *                    the queue depth pertload uses (threads x batch size
 *                    reads kept in flight through the io backend)
 *   in-order         the producer over the in-order plan
 *   block order      the producer over the block-shuffled plan
 *   shuffled         the producer over the shuffled plan
 *
 * Targets (issue 40): shuffled >= 80% of disk random, block order >= 80% of
 * disk sequential, and for rows of 64 KiB and more shuffled >= 50% of disk
 * sequential. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_payload.h"
#include "json.h"
#include "opts.h"
#include "loader/io.h"
#include "src/core/db.h"
#include "src/core/dbformat.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/progress.h"

enum { SIDE_SEQ, SIDE_RANDOM, SIDE_ROWS, SIDE_BLOCK, SIDE_SHUFFLED, N_SIDES };

static const char *const side_name[N_SIDES] = {"disk sequential (4 MiB reads)",
                                               "disk random (one read a row)",
                                               "pertload in-order epoch",
                                               "pertload block-order epoch",
                                               "pertload shuffled epoch"};
static const char *const side_key[N_SIDES] = {"disk_sequential", "disk_random", "in_order",
                                              "block", "shuffled"};

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Bytes/s of reading every row of `pf` once in a random order, one read a
 * row, with `depth` reads kept in flight (O_DIRECT where the producer uses
 * it, through the same io backend). */
static int disk_random(const char *path, const pl__bench_payload_file *pf, unsigned depth,
                       uint64_t seed, double *rate, pl_err *err)
{
    const uint64_t N = pf->rows, rb = pf->row_bytes;
    int fd = pf->direct ? open(path, O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
    if (fd < 0) /* a file system without O_DIRECT: the producer reads buffered too */
        fd = open(path, O_RDONLY | O_CLOEXEC);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: %s", path, strerror(errno));
    if (depth > N)
        depth = (unsigned)N;
    uint64_t *order = malloc(N * sizeof *order);
    unsigned char *buf = aligned_alloc(PL_PAYLOAD_ALIGN, depth * rb);
    pl__io *io = NULL;
    int rc = order && buf ? pl__io_open(&io, PL_IO_AUTO, depth, err)
                          : pl__err(err, -ENOMEM, "out of memory");
    if (rc == 0) {
        for (uint64_t i = 0; i < N; i++)
            order[i] = i;
        for (uint64_t i = N - 1; i > 0; i--) { /* Fisher-Yates */
            uint64_t j = next_rand(&seed) % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    double t0 = pl__now();
    uint64_t next = 0, done = 0;
    for (unsigned s = 0; rc == 0 && s < depth; s++, next++)
        rc = pl__io_read(io, fd, buf + s * rb, rb, pf->offset + order[next] * rb, -1, s, err);
    if (rc == 0)
        rc = pl__io_submit(io, err);
    while (rc == 0 && done < N) {
        uint64_t tag;
        int64_t res;
        if ((rc = pl__io_wait(io, &tag, &res, err)) < 0)
            break;
        done++;
        if (res < 0) {
            rc = pl__err(err, (int)res, "%s: random read: %s", path, pl_strerror((int)res));
        } else if (next < N) {
            rc = pl__io_read(io, fd, buf + tag * rb, rb, pf->offset + order[next++] * rb, -1, tag,
                             err);
            if (rc == 0)
                rc = pl__io_submit(io, err);
        }
    }
    double dt = pl__now() - t0;
    *rate = dt > 0 ? (double)(done * rb) / dt : 0;
    while (io && pl__io_pending(io)) { /* after a failure: let the rest land */
        uint64_t tag;
        int64_t res;
        if (pl__io_wait(io, &tag, &res, NULL) < 0)
            break;
    }
    pl__io_close(io);
    free(buf);
    free(order);
    close(fd);
    return rc;
}

int pl__bench_payload_epochs(int argc, char **argv)
{
    const char *usage = "usage: pertload bench payload DB --epochs [--batch-size B] "
                        "[--threads T] [--block-rows K] [--rounds R] [--json FILE]\n";
    const char *path = NULL, *json = NULL;
    unsigned long long B = 64, T = 2, R = 3, K = 0;
    const pl_bench_opt opts[] = {
        {"--batch-size", PL_BENCH_OPT_U64, &B, NULL},
        {"--threads", PL_BENCH_OPT_U64, &T, NULL},
        {"--rounds", PL_BENCH_OPT_U64, &R, NULL},
        {"--block-rows", PL_BENCH_OPT_U64, &K, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
        {"--epochs", PL_BENCH_OPT_FLAG, NULL, NULL},
    };
    if (pl_bench_opts("bench payload", usage, argc, argv, opts, sizeof opts / sizeof *opts,
                      &path))
        return 2;
    if (pl_bench_begin(usage, path && B && T && R && R <= 64 && K <= UINT32_MAX &&
                       B * T <= 65536, NULL, NULL))
        return 2;
    pl_err err = {0};
    char file[4096];
    pl__produce_opts po;
    pl__bench_payload_setup(path, B, T, file, sizeof file, &po);
    po.plan.block_rows = (uint32_t)K;
    pl__bench_pool pl = {.n = (uint32_t)T * 2};
    pl__bench_payload_file pf = {0};
    const unsigned depth = (unsigned)(B * T); /* the producer's reads in flight at most */
    double rate[N_SIDES][64];
    int seq_direct = 0, rc = 0;
    /* The payload's place, for the disk's sides (the producer's rounds
     * report the same and how they read it). */
    pl_db *db = NULL;
    rc = pl_db_open(path, &db, &err);
    if (rc == 0 && !db->meta.payload_row_bytes)
        rc = pl__err(&err, PL_EUSAGE, "%s has no payload", path);
    else if (rc == 0 && !db->meta.n_samples)
        rc = pl__err(&err, PL_EUSAGE, "%s has no rows", path);
    if (rc == 0)
        pf = (pl__bench_payload_file){db->meta.payload_offset, db->meta.n_samples,
                                      db->meta.payload_row_bytes,
                                      db->meta.payload_row_bytes % PL_PAYLOAD_ALIGN == 0};
    pl_db_close(db);
    /* Each target's two sides next to each other: the disk's rate drifts. */
    static const int order[N_SIDES] = {SIDE_SEQ, SIDE_BLOCK, SIDE_ROWS, SIDE_RANDOM,
                                       SIDE_SHUFFLED};
    int prod_direct = 1;
    for (unsigned r = 0; rc == 0 && r < R; r++) {
        for (int k = 0; rc == 0 && k < N_SIDES; k++) {
            int s = order[k];
            pl__bench_drop_cache(file);
            if (s == SIDE_SEQ) {
                rc = pl__bench_sequential(file, pf.offset, pf.rows * pf.row_bytes,
                                          &rate[s][r], &seq_direct, &err);
            } else if (s == SIDE_RANDOM) {
                rc = disk_random(file, &pf, depth, r + 1, &rate[s][r], &err);
            } else {
                pl__bench_payload_file got;
                po.plan.shuffle = s == SIDE_SHUFFLED;
                po.plan.order = s == SIDE_BLOCK ? PL_ORDER_BLOCK : PL_ORDER_ROWS;
                rc = pl__bench_producer_round(&po, file, &pl, &rate[s][r], &got, &err);
                prod_direct &= got.direct;
            }
        }
    }
    pf.direct = pf.direct && prod_direct && seq_direct;
    free(pl.mem);
    free((void *)pl.published);
    if (rc < 0) {
        fprintf(stderr, "pertload bench payload: %s\n", err.msg);
        return 1;
    }
    double med[N_SIDES];
    for (int s = 0; s < N_SIDES; s++)
        med[s] = pl__bench_median(rate[s], (unsigned)R);
    printf("payload %s: %llu rows of %llu bytes (%.2f GB), %s, page cache dropped before each "
           "side; %llu rounds, the sides in turn, medians\n",
           file, (unsigned long long)pf.rows, (unsigned long long)pf.row_bytes,
           (double)(pf.rows * pf.row_bytes) / 1e9,
           pf.direct ? "O_DIRECT throughout" : "buffered reads", R);
    printf("  (batches of %llu, %llu worker threads: up to %u reads in flight; block order "
           "with %llu-row blocks)\n",
           B, T, depth, K ? K : 16);
    /* A side's share of its reference, median over the rounds. */
    static const int ref[N_SIDES] = {-1, -1, SIDE_SEQ, SIDE_SEQ, SIDE_RANDOM};
    pl_bench_json j;
    if (pl_bench_json_open(&j, json) < 0)
        return 1;
    pl_bench_json_num(&j, "rows", (double)pf.rows);
    pl_bench_json_num(&j, "row_bytes", (double)pf.row_bytes);
    pl_bench_json_num(&j, "batch_size", (double)B);
    pl_bench_json_num(&j, "threads", (double)T);
    pl_bench_json_num(&j, "queue_depth", depth);
    pl_bench_json_num(&j, "direct", pf.direct);
    pl_bench_json_num(&j, "rounds", (double)R);
    for (int s = 0; s < N_SIDES; s++) {
        char key[64];
        printf("  %-30s %8.3f GB/s %9.0f rows/s", side_name[s], med[s] / 1e9,
               med[s] / (double)pf.row_bytes);
        snprintf(key, sizeof key, "%s_bytes_per_s", side_key[s]);
        pl_bench_json_num(&j, key, med[s]);
        double share[64];
        int refs[2] = {ref[s], s == SIDE_SHUFFLED ? SIDE_SEQ : -1};
        for (int k = 0; k < 2; k++) {
            if (refs[k] < 0)
                continue;
            for (unsigned r = 0; r < R; r++)
                share[r] = rate[refs[k]][r] > 0 ? rate[s][r] / rate[refs[k]][r] : 0;
            double m = pl__bench_median(share, (unsigned)R);
            printf("  %4.0f%% of %s", 100 * m, refs[k] == SIDE_SEQ ? "sequential" : "random");
            snprintf(key, sizeof key, "%s_share_of_%s", side_key[s],
                     refs[k] == SIDE_SEQ ? "sequential" : "random");
            pl_bench_json_num(&j, key, m);
            printf(" (rounds");
            for (unsigned r = 0; r < R; r++)
                printf(" %.0f%%", 100 * share[r]);
            printf(")");
        }
        printf("\n");
    }
    return pl_bench_json_close(&j) < 0 ? 1 : 0;
}
