/* The in-process loader (pl_loader_*) through the host upload backend, which
 * runs the CUDA backend's buffer logic with host memory, a copy thread for
 * the stream and the kernel's expansion algorithm on the CPU.
 *
 * A small synthetic database (tests/testdb.h: nine edge types, metabolism,
 * 3000 samples in three sample-store blocks, a float32 payload) is loaded
 * here too; every batch the loader uploads is compared array by array with
 * the slot collated directly for the same plan batch, and its dense masks
 * with a brute-force scan of the stored edge arrays. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collate/collate.h"
#include "loader/expand.h"
#include "loader/io.h"
#include "loader/loader.h"
#include "loader/table.h"
#include "loader/upload.h"
#include "masks/masks.h"
#include "pl_config.h"
#include "testdb.h"
#include "testutil.h"

#define N_SAMPLES 3000

static pl_test_db S;

static void setup(void)
{
    pl_test_db_make(&S, 400, N_SAMPLES, 0.004, 3, 7);
    cr_assert_eq(S.n_samples, N_SAMPLES);
    cr_assert_eq(S.n_lists, S.n_types + 3, "the database has metabolism");
    cr_assert_gt(S.payload_row_bytes, 0);
    pl_test_db_load(&S);
    atomic_store(&pl__upload_host_copy_delay_us, 0);
}

static void teardown(void)
{
    atomic_store(&pl__upload_host_copy_delay_us, 0);
    pl_test_db_free(&S);
}

TestSuite(upload, .init = setup, .fini = teardown, .timeout = 300);

/* ------------------------------------------------------------ helpers */

static pl_loader_opts opts(uint32_t B, uint32_t dense, uint32_t threads, uint32_t depth)
{
    pl_loader_opts o = {0};
    o.db = S.path;
    o.plan.batch_size = B;
    o.plan.world_size = 1;
    o.plan.shuffle = 1;
    o.plan.seed = 11;
    o.plan.epoch = 2;
    o.dense = dense;
    o.threads = threads;
    o.depth = depth;
    o.backend = PL_BACKEND_HOST;
    return o;
}

static pl_plan *plan_of(const pl_loader_opts *o)
{
    pl_plan_opts po = o->plan;
    po.n_samples = N_SAMPLES;
    pl_plan *p = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&po, &p, &err), 0, "%s", err.msg);
    return p;
}

/* Collate plan batch `pb` directly into S.want; returns the batch's samples. */
static uint32_t collate_direct(const pl_loader_opts *o, const pl_plan *plan, uint64_t pb,
                               uint64_t *rows)
{
    return pl_test_collate(&S, plan, o->plan.batch_size, pb, o->plan.epoch, rows);
}

/* The uploaded slot equals the direct one: header, descriptors, every array. */
static void check_slot(const pl_device_batch *b)
{
    char why[512];
    CHECK(!pl_test_slot_diff(&S, b->slot, b->bytes, why, sizeof why), "batch %llu: %s",
          (unsigned long long)b->index, why);
}

/* The dense masks of every sample and list equal the oracle's rows. */
static void check_masks(const pl_device_batch *b, const uint64_t *rows)
{
    char why[512];
    CHECK(b->n_lists == S.n_lists, "n_lists %u", b->n_lists);
    CHECK(b->gene_len == S.n_genes, "gene_len %llu", (unsigned long long)b->gene_len);
    for (uint32_t k = 0; k < S.n_lists; k++)
        CHECK(b->mask_len[k] == S.len[k], "mask_len[%u]", k);
    CHECK(!pl_test_masks_diff(&S, b->dense, b->n_samples, rows, b->gene_mask, b->mask, why,
                              sizeof why),
          "batch %llu: %s", (unsigned long long)b->index, why);
}

/* Take every batch of an epoch from `o`, checking each; returns the batches. */
static uint64_t run_epoch(const pl_loader_opts *o, pl_loader *l, useconds_t consumer_us)
{
    pl_plan *plan = plan_of(o);
    uint64_t total = pl_plan_n_batches(plan), got = 0, rows[1024];
    for (uint64_t pb = o->start_batch;; pb++) {
        pl_device_batch b;
        pl_err err = {0};
        int rc = pl_loader_next(l, &b, &err);
        if (rc == 1) {
            CHECK(pb == total, "end after %llu of %llu batches", (unsigned long long)pb,
                  (unsigned long long)total);
            break;
        }
        CHECK(rc == 0, "batch %llu: %d %s", (unsigned long long)pb, rc, err.msg);
        CHECK(b.index == pb, "batch %llu came as %llu: out of order", (unsigned long long)pb,
              (unsigned long long)b.index);
        CHECK(b.stream == NULL && b.event == NULL, "host batches have no stream or event");
        uint32_t n = collate_direct(o, plan, pb, rows);
        CHECK(b.n_samples == n, "batch %llu: %u samples, plan %u", (unsigned long long)pb,
              b.n_samples, n);
        check_slot(&b);
        if (o->dense)
            check_masks(&b, rows);
        else
            CHECK(!b.gene_mask && !b.mask[0], "masks without dense");
        if (consumer_us)
            usleep(consumer_us);
        pl_loader_release(l, &b);
        CHECK(b.slot == NULL, "release clears the batch");
        got++;
    }
    pl_device_batch b;
    CHECK(pl_loader_next(l, &b, NULL) == 1, "the end stays the end");
    pl_plan_free(plan);
    return got;
}

static pl_loader *open_ok(const pl_loader_opts *o)
{
    pl_loader *l = NULL;
    pl_err err = {0};
    int rc = pl_loader_open(o, &l, &err);
    cr_assert_eq(rc, 0, "pl_loader_open: %d %s", rc, err.msg);
    cr_assert_not_null(l);
    cr_assert_str_eq(pl_loader_backend(l), "host");
    return l;
}

/* -------------------------------------------------------------- tests */

Test(upload, batches_equal_direct_collation_and_oracle)
{
    static const uint32_t dense[] = {PL_MASK_NONE, PL_MASK_BITS, PL_MASK_BOOL};
    for (int d = 0; d < 3; d++) {
        pl_loader_opts o = opts(64, dense[d], 2, 2);
        pl_loader *l = open_ok(&o);
        uint64_t got = run_epoch(&o, l, 0);
        cr_expect_eq(got, (N_SAMPLES + 63) / 64);
        pl__loader_stats st;
        pl__loader_stats_get(l, &st);
        cr_expect_eq(st.uploads, got);
        cr_expect_eq(st.device_buffers, 2);
        cr_expect_eq(st.mask_bytes == 0, dense[d] == PL_MASK_NONE);
        pl_loader_close(l);
    }
}

Test(upload, order_kept_with_many_workers_and_a_slow_copy)
{
    /* Slow copies make workers run ahead and find their host buffer still
     * being copied: they must wait for its event, not overwrite it. */
    atomic_store(&pl__upload_host_copy_delay_us, 300);
    pl_loader_opts o = opts(24, PL_MASK_BITS, 5, 3);
    o.plan.drop_last = 1;
    pl_loader *l = open_ok(&o);
    cr_expect_eq(run_epoch(&o, l, 0), N_SAMPLES / 24);
    pl__loader_stats st;
    pl__loader_stats_get(l, &st);
    cr_expect_gt(st.copy_waits, 0, "no worker ever met a copy in flight: the test shows nothing");
    cr_expect_eq(st.host_buffers, 5 + 3);
    pl_loader_close(l);

    /* big batches, no shuffle, one worker, a deep device ring */
    o = opts(1000, PL_MASK_BOOL, 1, 4);
    o.plan.shuffle = 0;
    l = open_ok(&o);
    cr_expect_eq(run_epoch(&o, l, 0), 3);
    pl_loader_close(l);
}

Test(upload, held_batches_are_never_overwritten)
{
    atomic_store(&pl__upload_host_copy_delay_us, 100);
    pl_loader_opts o = opts(32, PL_MASK_BITS, 3, 2);
    pl_loader *l = open_ok(&o);
    pl_plan *plan = plan_of(&o);
    uint64_t total = pl_plan_n_batches(plan), rows[1024];
    pl_device_batch held[2];
    pl_err err = {0};
    cr_assert_eq(pl_loader_next(l, &held[0], &err), 0, "%s", err.msg);
    cr_assert_eq(pl_loader_next(l, &held[1], &err), 0, "%s", err.msg);
    /* depth 2: a third batch needs a release first, and says so */
    pl_device_batch extra;
    int rc = pl_loader_next(l, &extra, &err);
    cr_assert_eq(rc, PL_EUSAGE, "rc %d", rc);
    cr_assert(strstr(err.msg, "release one first"), "%s", err.msg);
    for (uint64_t pb = 0; pb < total; pb++) {
        pl_device_batch *b = &held[pb % 2];
        cr_assert_eq(b->index, pb);
        uint64_t gen = pl__loader_buffer_uploads(l, b);
        uint64_t bytes = b->bytes + (uint64_t)S.len[0];
        unsigned char *snap = malloc(bytes);
        cr_assert_not_null(snap);
        memcpy(snap, b->slot, b->bytes);
        memcpy(snap + b->bytes, b->mask[0], S.len[0] / 8);
        /* a slow consumer: the workers and the copy thread go on meanwhile */
        usleep(pb < 4 ? 30000 : 500);
        CHECK(pl__loader_buffer_uploads(l, b) == gen, "batch %llu: its buffer was refilled "
              "while held", (unsigned long long)pb);
        CHECK(!memcmp(snap, b->slot, b->bytes) &&
                  !memcmp(snap + b->bytes, b->mask[0], S.len[0] / 8),
              "batch %llu changed while held", (unsigned long long)pb);
        uint32_t n = collate_direct(&o, plan, pb, rows);
        CHECK(b->n_samples == n, "samples");
        check_slot(b);
        check_masks(b, rows);
        free(snap);
        pl_loader_release(l, b);
        if (pb + 2 < total) {
            rc = pl_loader_next(l, b, &err);
            CHECK(rc == 0, "batch %llu: %s", (unsigned long long)pb + 2, err.msg);
            CHECK(pl__loader_buffer_uploads(l, b) == gen + 1,
                  "batch %llu: not the next upload into its buffer",
                  (unsigned long long)pb + 2);
        }
    }
    cr_assert_eq(pl_loader_next(l, &extra, &err), 1);
    pl_plan_free(plan);
    pl_loader_close(l);
}

Test(upload, resume_from_start_batch)
{
    pl_loader_opts o = opts(50, PL_MASK_BOOL, 2, 2);
    o.start_batch = 37;
    pl_loader *l = open_ok(&o);
    cr_expect_eq(run_epoch(&o, l, 0), N_SAMPLES / 50 - 37);
    pl_loader_close(l);

    o.start_batch = N_SAMPLES / 50; /* the end: nothing left */
    l = open_ok(&o);
    pl_device_batch b;
    cr_expect_eq(pl_loader_next(l, &b, NULL), 1);
    pl_loader_close(l);

    o.start_batch = N_SAMPLES / 50 + 1;
    pl_err err = {0};
    l = (pl_loader *)&err;
    cr_expect_eq(pl_loader_open(&o, &l, &err), PL_EUSAGE);
    cr_expect_null(l);
    cr_expect(strstr(err.msg, "past the 60 batches"), "%s", err.msg);
}

Test(upload, corrupt_sample_block_fails_next_without_hanging)
{
    pl_test_db_corrupt_block(&S, 1);
    pl_loader_opts o = opts(64, PL_MASK_BITS, 2, 2);
    pl_loader *l = open_ok(&o); /* the samples load in the background */
    for (int i = 0; i < 2; i++) {
        pl_device_batch b;
        pl_err err = {0};
        int rc = pl_loader_next(l, &b, &err);
        cr_expect_eq(rc, PL_ECORRUPT, "rc %d (%s)", rc, err.msg);
        cr_expect(strstr(err.msg, "block 1"), "message: %s", err.msg);
        cr_expect_null(b.slot);
    }
    pl_loader_close(l);
}

Test(upload, worker_read_error_reaches_the_consumer)
{
    /* Payload rows past the cut fail to read in the workers; batches before
     * the failure arrive intact, then the error, then the same error again.
     * The cut comes after the open, which would refuse the short file. */
    char p[4352];
    snprintf(p, sizeof p, "%s/payload.npy", S.path);
    pl_loader_opts o = opts(16, PL_MASK_NONE, 3, 2);
    o.plan.shuffle = 0; /* batches 0..11 read rows below the cut */
    pl_loader *l = open_ok(&o);
    cr_assert_eq(truncate(p, 4096 + 12 * 200), 0, "%s", strerror(errno));
    pl_plan *plan = plan_of(&o);
    uint64_t rows[1024], pb = 0;
    int rc;
    pl_err err = {0};
    pl_device_batch b;
    while ((rc = pl_loader_next(l, &b, &err)) == 0) {
        collate_direct(&o, plan, pb, rows);
        check_slot(&b);
        pl_loader_release(l, &b);
        pb++;
    }
    cr_expect_eq(rc, PL_ECORRUPT, "rc %d (%s)", rc, err.msg);
    cr_expect(strstr(err.msg, "payload.npy: row ") &&
                  strstr(err.msg, "(truncated after the database was opened)"),
              "%s", err.msg);
    cr_expect_leq(pb, 13, "%llu batches before the error", (unsigned long long)pb);
    cr_expect_eq(pl_loader_next(l, &b, &err), PL_ECORRUPT);
    pl_plan_free(plan);
    pl_loader_close(l);
}

/* Entries of the directory `path` (/proc/self/task: threads, /proc/self/fd:
 * descriptors). */
static int entries(const char *path)
{
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(upload, close_with_batches_in_flight)
{
    atomic_store(&pl__upload_host_copy_delay_us, 50);
    /* Whatever is in flight, close joins every thread of the loader and
     * closes every descriptor it opened. */
    const int threads = entries("/proc/self/task"), fds = entries("/proc/self/fd");
    for (int i = 0; i < 12; i++) {
        pl_loader_opts o = opts(8, i % 3 == 0 ? PL_MASK_BOOL : PL_MASK_BITS, 1 + i % 4, 2);
        pl_loader *l = open_ok(&o);
        pl_device_batch b[2];
        pl_err err = {0};
        switch (i % 4) {
        case 0: /* at once, the table perhaps still loading */
            break;
        case 1: /* one batch of 375 taken, never released */
            cr_assert_eq(pl_loader_next(l, &b[0], &err), 0, "%s", err.msg);
            break;
        case 2: /* both device buffers held */
            cr_assert_eq(pl_loader_next(l, &b[0], &err), 0, "%s", err.msg);
            cr_assert_eq(pl_loader_next(l, &b[1], &err), 0, "%s", err.msg);
            break;
        default: /* one taken and released, the next uploads queued */
            cr_assert_eq(pl_loader_next(l, &b[0], &err), 0, "%s", err.msg);
            pl_loader_release(l, &b[0]);
            usleep(2000);
        }
        cr_assert_gt(entries("/proc/self/task"), threads, "the loader runs threads");
        pl_loader_close(l);
        cr_assert_eq(entries("/proc/self/task"), threads, "case %d: threads left by close", i);
        cr_assert_eq(entries("/proc/self/fd"), fds, "case %d: descriptors left by close", i);
    }
    pl_loader_close(NULL);
    pl_loader_release(NULL, NULL);
}

Test(upload, options_and_backends)
{
    pl_loader_opts o = opts(64, PL_MASK_NONE, 1, 1);
    pl_loader *l = NULL;
    pl_err err = {0};
    cr_expect_eq(pl_loader_open(&o, &l, &err), PL_EUSAGE);
    cr_expect(strstr(err.msg, "depth 1"), "%s", err.msg);
    o = opts(64, 3, 1, 2);
    cr_expect_eq(pl_loader_open(&o, &l, &err), PL_EUSAGE);
    o = opts(64, PL_MASK_NONE, 1, 2);
    o.plan.batch_size = 0;
    cr_expect_lt(pl_loader_open(&o, &l, &err), 0);
    o = opts(64, PL_MASK_NONE, 1, 2);
    o.plan.budget = 1000;
    cr_expect_eq(pl_loader_open(&o, &l, &err), PL_EUSAGE);
    cr_expect(strstr(err.msg, "served by pertload serve"), "%s", err.msg);
    cr_expect_null(l);
    o = opts(64, PL_MASK_NONE, 1, 2);
    o.db = "/nonexistent/pertload-db";
    cr_expect_lt(pl_loader_open(&o, &l, &err), 0);
    cr_expect_null(l);

    /* AUTO: CUDA where a device is visible, else the host backend */
    int n = pl_loader_devices(&err);
    o = opts(64, PL_MASK_BITS, 1, 2);
    o.backend = PL_BACKEND_AUTO;
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    cr_expect_str_eq(pl_loader_backend(l), n > 0 ? "cuda" : "host");
    pl_loader_close(l);
    o.backend = PL_BACKEND_CUDA;
    if (n == 0) {
        l = NULL;
        int rc = pl_loader_open(&o, &l, &err);
        cr_expect_lt(rc, 0);
        cr_expect_null(l);
#if PL_HAVE_CUDA
        cr_expect_eq(rc, -ENODEV, "rc %d", rc);
        cr_expect(strstr(err.msg, "no CUDA device visible"), "%s", err.msg);
#else
        cr_expect_eq(rc, PL_EUSAGE, "rc %d", rc);
        cr_expect(strstr(err.msg, "without the CUDA path"), "%s", err.msg);
#endif
    }

    /* the host backend has no streams to wait on */
    o = opts(64, PL_MASK_NONE, 1, 2);
    l = open_ok(&o);
    pl_device_batch b;
    cr_assert_eq(pl_loader_next(l, &b, &err), 0, "%s", err.msg);
    b.consumer_stream = &err;
    pl_loader_release(l, &b);
    int rc = PL_EUSAGE, k = 0;
    while (k++ < 100 && (rc = pl_loader_next(l, &b, &err)) == 0)
        pl_loader_release(l, &b);
    cr_expect_eq(rc, PL_EUSAGE, "rc %d", rc);
    cr_expect(strstr(err.msg, "no streams"), "%s", err.msg);
    pl_loader_close(l);
}

/* ------------------------------------------------ expansion edge cases */

/* Hand-made lists of awkward lengths through the CPU run and the host
 * backend's queue, over mask regions full of junk. */
Test(upload, expansion_of_awkward_lengths)
{
    for (uint32_t dense = PL_MASK_BITS; dense <= PL_MASK_BOOL; dense++) {
        pl_test_expand_case c;
        pl_test_expand_case_make(&c, dense, 99);
        cr_assert_gt(c.job.tiles, c.job.n_lists, "rows of several tiles");
        unsigned char *got = malloc(c.mask_bytes + 1);
        cr_assert_not_null(got);
        memset(got, 0x5A, c.mask_bytes + 1);
        pl__expand_run(&c.job, c.slot, got);
        cr_expect(!memcmp(got, c.want, c.mask_bytes), "dense %u: CPU expansion differs", dense);
        cr_expect_eq(got[c.mask_bytes], 0x5A, "written past the masks");

        const pl__upload_ops *ops = &pl__upload_host;
        pl__upload *u;
        pl_err err = {0};
        cr_assert_eq(ops->open(0, &u, &err), 0, "%s", err.msg);
        void *dslot, *dmask;
        cr_assert_eq(ops->dev_alloc(u, c.slot_bytes, &dslot, &err), 0);
        cr_assert_eq(ops->dev_alloc(u, c.mask_bytes + 1, &dmask, &err), 0);
        memset(dmask, 0xA5, c.mask_bytes + 1);
        pl__upload_event *ev;
        cr_assert_eq(ops->event_new(u, 0, &ev, &err), 0);
        cr_assert_eq(ops->copy(u, dslot, c.slot, c.slot_bytes, &err), 0);
        cr_assert_eq(ops->expand(u, &c.job, dslot, dmask, &err), 0);
        cr_assert_eq(ops->record(u, ev, &err), 0);
        cr_assert_eq(ops->sync(u, ev, &err), 0);
        memset(got, 0, c.mask_bytes + 1);
        cr_assert_eq(ops->download(u, got, dmask, c.mask_bytes + 1, &err), 0);
        cr_expect(!memcmp(got, c.want, c.mask_bytes), "dense %u: backend expansion differs",
                  dense);
        cr_expect_eq(got[c.mask_bytes], 0xA5, "written past the masks");
        ops->event_free(u, ev);
        ops->dev_free(u, dslot);
        ops->dev_free(u, dmask);
        ops->close(u);
        free(got);
        pl_test_expand_case_free(&c);
    }
}

/* The launch shape (pl__expand_shape) within CUDA's limits, covering every
 * tile with the fewest rows and fewer than a row's count of idle blocks; and
 * the kernel's 2-D indexing, early return of idle blocks included, run on
 * the host over a grid of two rows, against the expected masks. */
Test(upload, grid_shape_and_two_row_expansion)
{
    static const uint64_t grids[] = {1,      2,      65534,   65535,   65536,
                                     65537,  131070, 131071,  131072,  1000003,
                                     70119,  65535ull * 65535};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
        uint64_t g = grids[i];
        uint32_t gx = 0, gy = 0;
        cr_assert(pl__expand_shape(g, &gx, &gy), "grid %llu", (unsigned long long)g);
        cr_expect(gx >= 1 && gx <= 65535 && gy >= 1 && gy <= 65535, "grid %llu: %u x %u",
                  (unsigned long long)g, gx, gy);
        cr_expect((uint64_t)gx * gy >= g, "grid %llu: %u x %u misses tiles",
                  (unsigned long long)g, gx, gy);
        cr_expect((uint64_t)gx * gy - g < gy, "grid %llu: %u x %u idles a row's worth",
                  (unsigned long long)g, gx, gy);
        cr_expect_eq(gy, (g + 65534) / 65535, "grid %llu: not the fewest rows",
                     (unsigned long long)g);
    }
    uint32_t gx = 0, gy = 0;
    cr_expect(!pl__expand_shape(65535ull * 65535 + 1, &gx, &gy), "past the rows' limit");

    for (uint32_t dense = PL_MASK_BITS; dense <= PL_MASK_BOOL; dense++) {
        pl_test_expand_case c;
        pl_test_expand_case_make_wide(&c, dense, 3);
        uint64_t grid = pl__expand_grid(&c.job), idle = 0;
        cr_assert(pl__expand_shape(grid, &gx, &gy));
        cr_assert_eq(gy, 2, "%llu tiles: two rows", (unsigned long long)grid);
        unsigned char *got = malloc(c.mask_bytes + 1);
        cr_assert_not_null(got);
        memset(got, 0x5A, c.mask_bytes + 1);
        for (uint32_t by = 0; by < gy; by++)
            for (uint32_t bx = 0; bx < gx; bx++) {
                uint64_t t = (uint64_t)by * gx + bx; /* as expand_kernel */
                if (t >= grid) {
                    idle++;
                    continue;
                }
                pl__expand_tile w = pl__expand_locate(&c.job, t, c.slot, got);
                for (uint32_t th = 0; th < 256; th++)
                    pl__expand_fill(&c.job, &w, th, 256);
                for (uint32_t th = 0; th < 256; th++)
                    pl__expand_scatter(&c.job, &w, th, 256);
            }
        cr_expect_eq(idle, 1, "one idle block, %llu found", (unsigned long long)idle);
        cr_expect(!memcmp(got, c.want, c.mask_bytes), "dense %u: two-row expansion differs",
                  dense);
        cr_expect_eq(got[c.mask_bytes], 0x5A, "written past the masks");
        free(got);
        pl_test_expand_case_free(&c);
    }
}
