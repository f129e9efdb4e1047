/* The multi-threaded paths as a plain program, so that ThreadSanitizer can
 * run them: Criterion's runner cannot start under TSan (its arena is mapped
 * at random fixed addresses that TSan reserves), so test_ring, test_io and
 * test_upload run under ASan only, and this program repeats their threaded
 * cases with every result checked:
 *  - the in-process loader on the host backend (collation worker threads,
 *    the copy thread, buffers used in turn) over whole epochs, several
 *    thread counts, depths, dense forms and consumer and copy speeds; every
 *    batch against the slot collated directly, dense masks against the
 *    brute-force oracle;
 *  - `pertload serve` (its worker threads publishing into the ring) and this
 *    process consuming an epoch, every slot against the direct collation;
 *  - one ring between threads of this process: several producer threads
 *    publishing out of order into few slots, the consumer checking contents.
 * Exits 0 when everything matched, 1 with messages otherwise. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collate/slot.h"
#include "loader/upload.h"
#include "testdb.h"
#include "testutil.h"

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "threads_check: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failures++;
}

static pl_test_db S;

static pl_plan *plan_of(const pl_plan_opts *o)
{
    pl_plan_opts po = *o;
    po.n_samples = S.n_samples;
    pl_plan *p = NULL;
    pl_err err = {0};
    if (pl_plan_new(&po, &p, &err) < 0)
        pl_test_die("pl_plan_new: %s", err.msg);
    return p;
}

/* ------------------------------------------------------------- loader */

static void loader_epoch(uint32_t B, uint32_t dense, uint32_t threads, uint32_t depth,
                         useconds_t consumer_us, unsigned copy_us)
{
    pl_loader_opts o = {0};
    o.db = S.path;
    o.plan = (pl_plan_opts){.batch_size = B, .world_size = 1, .shuffle = 1, .seed = 11,
                            .epoch = 2};
    o.dense = dense;
    o.threads = threads;
    o.depth = depth;
    o.backend = PL_BACKEND_HOST;
    atomic_store(&pl__upload_host_copy_delay_us, copy_us);
    pl_loader *l;
    pl_err err = {0};
    if (pl_loader_open(&o, &l, &err) < 0) {
        fail("pl_loader_open: %s", err.msg);
        return;
    }
    pl_plan *plan = plan_of(&o.plan);
    uint64_t total = pl_plan_n_batches(plan), rows[1024], pb = 0;
    char why[512];
    for (;; pb++) {
        pl_device_batch b;
        int rc = pl_loader_next(l, &b, &err);
        if (rc == 1)
            break;
        if (rc < 0) {
            fail("loader B=%u threads=%u: batch %" PRIu64 ": %s", B, threads, pb, err.msg);
            break;
        }
        uint32_t n = pl_test_collate(&S, plan, B, pb, o.plan.epoch, rows);
        if (b.index != pb || b.n_samples != n)
            fail("loader: batch %" PRIu64 " came as %" PRIu64 " with %u samples (plan %u)",
                 pb, b.index, b.n_samples, n);
        else if (pl_test_slot_diff(&S, b.slot, b.bytes, why, sizeof why))
            fail("loader: batch %" PRIu64 ": %s", pb, why);
        else if (dense && pl_test_masks_diff(&S, dense, n, rows, b.gene_mask, b.mask, why,
                                             sizeof why))
            fail("loader: batch %" PRIu64 " masks: %s", pb, why);
        if (consumer_us)
            usleep(consumer_us);
        pl_loader_release(l, &b);
    }
    if (pb != total)
        fail("loader: %" PRIu64 " of %" PRIu64 " batches", pb, total);
    pl_plan_free(plan);
    pl_loader_close(l);
    atomic_store(&pl__upload_host_copy_delay_us, 0);
}

/* -------------------------------------------------------------- serve */

static void serve_epoch(const char *bin)
{
    char name[64], cpid[32];
    snprintf(name, sizeof name, "threads-check-%d", (int)getpid());
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    pid_t pid = fork();
    if (pid < 0)
        pl_test_die("fork failed");
    if (pid == 0) {
        execl(bin, bin, "serve", S.path, "--ring", name, "--batch-size", "24", "--shuffle",
              "--seed", "5", "--epoch", "3", "--threads", "4", "--slots", "3",
              "--consumer-pid", cpid, "--quiet", (char *)NULL);
        _exit(127);
    }
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 30000, &r, &err) < 0) {
        fail("attach to serve: %s", err.msg);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return;
    }
    pl_plan_opts po = {.batch_size = 24, .world_size = 1, .shuffle = 1, .seed = 5,
                       .epoch = 3};
    pl_plan *plan = plan_of(&po);
    uint64_t total = pl_plan_n_batches(plan), rows[1024], b = 0;
    const void *slot;
    char why[512];
    int rc;
    while ((rc = pl_ring_next(r, b, &slot, &err)) == 0) {
        struct pl_slot_header h;
        memcpy(&h, slot, sizeof h);
        uint32_t n = pl_test_collate(&S, plan, 24, b, 3, rows);
        if (h.n_samples != n)
            fail("serve: batch %" PRIu64 ": %u samples, plan %u", b, h.n_samples, n);
        else if (pl_test_slot_diff(&S, slot, h.used, why, sizeof why))
            fail("serve: batch %" PRIu64 ": %s", b, why);
        pl_ring_release(r, b++, n);
    }
    if (rc != 1)
        fail("serve: batch %" PRIu64 ": %s", b, err.msg);
    if (b != total)
        fail("serve: %" PRIu64 " of %" PRIu64 " batches", b, total);
    pl_ring_detach(r);
    pl_plan_free(plan);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("serve exited with status 0x%x", st);
}

/* ------------------------------------------------- ring between threads */

#define RING_PRODUCERS 4
#define RING_BATCHES 400
#define RING_SLOT 8192

typedef struct producer {
    pl_ring *r;
    int t;
    _Atomic int *failed;
} producer;

/* Batch b's bytes: a pattern of b, so that a torn or early read shows. */
static unsigned char pattern(uint64_t b, size_t i) { return (unsigned char)(b * 131 + i * 7); }

static void *produce(void *arg)
{
    producer *p = arg;
    for (uint64_t b = (uint64_t)p->t; b < RING_BATCHES; b += RING_PRODUCERS) {
        pl_err err = {0};
        if (pl_ring_acquire(p->r, b, &err) < 0) {
            fprintf(stderr, "producer %d: batch %" PRIu64 ": %s\n", p->t, b, err.msg);
            atomic_store(p->failed, 1);
            break;
        }
        unsigned char *s = pl_ring_slot(p->r, b);
        for (size_t i = 0; i < RING_SLOT; i++)
            s[i] = pattern(b, i);
        pl_ring_publish(p->r, b, 1);
    }
    return NULL;
}

static void ring_threads(void)
{
    char name[64];
    snprintf(name, sizeof name, "threads-ring-%d", (int)getpid());
    pl_ring *p, *c;
    pl_err err = {0};
    if (pl_ring_create(name, 3, RING_SLOT, 0, &p, &err) < 0 ||
        pl_ring_attach(name, 0, &c, &err) < 0) {
        fail("ring: %s", err.msg);
        return;
    }
    pl_ring_set_total(p, RING_BATCHES);
    _Atomic int failed = 0;
    producer pr[RING_PRODUCERS];
    pthread_t th[RING_PRODUCERS];
    for (int t = 0; t < RING_PRODUCERS; t++) {
        pr[t] = (producer){p, t, &failed};
        if (pthread_create(&th[t], NULL, produce, &pr[t]) != 0)
            pl_test_die("pthread_create failed");
    }
    uint64_t b = 0;
    for (; b < RING_BATCHES; b++) {
        const void *slot;
        if (pl_ring_next(c, b, &slot, &err) != 0) {
            fail("ring: batch %" PRIu64 ": %s", b, err.msg);
            break;
        }
        const unsigned char *s = slot;
        for (size_t i = 0; i < RING_SLOT; i++)
            if (s[i] != pattern(b, i)) {
                fail("ring: batch %" PRIu64 " byte %zu differs", b, i);
                break;
            }
        pl_ring_release(c, b, 1);
    }
    pl_ring_finish(p, RING_BATCHES, NULL);
    const void *slot;
    if (b == RING_BATCHES && pl_ring_next(c, b, &slot, &err) != 1)
        fail("ring: no end after %d batches", RING_BATCHES);
    if (b < RING_BATCHES)
        pl_ring_detach(c); /* lets blocked producers fail */
    for (int t = 0; t < RING_PRODUCERS; t++)
        pthread_join(th[t], NULL);
    if (atomic_load(&failed))
        fail("ring: a producer failed");
    if (b == RING_BATCHES)
        pl_ring_detach(c);
    pl_ring_destroy(p);
}

int main(void)
{
    const char *bin = getenv("PERTLOAD_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "threads_check: PERTLOAD_BIN is not set\n");
        return 1;
    }
    pl_test_db_make(&S, 300, 1200, 0.004, 3, 9);
    pl_test_db_load(&S);
    loader_epoch(64, PL_MASK_BITS, 4, 2, 0, 0);
    loader_epoch(24, PL_MASK_BOOL, 3, 3, 300, 0);
    loader_epoch(16, PL_MASK_NONE, 2, 2, 0, 500);
    loader_epoch(50, PL_MASK_BITS, 1, 4, 0, 0);
    serve_epoch(bin);
    ring_threads();
    pl_test_db_free(&S);
    if (failures) {
        fprintf(stderr, "threads_check: %d failures\n", failures);
        return 1;
    }
    printf("threads_check: loader epochs, serve epoch and ring threads all match\n");
    return 0;
}
