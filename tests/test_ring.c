/* The shared-memory ring between real processes: data round trips, ordering
 * with out-of-order producer threads, back-pressure, death of either peer,
 * stale segments, names, modes, sizes, counters, listing and `pertload top`.
 *
 * Forked children never call Criterion: they report through their exit status
 * and a shared anonymous mapping (struct box). Every child and ring name a test
 * starts is registered, and the suite's fini kills and removes them even when
 * an assertion fails; children also die with the test process (PDEATHSIG). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pertload.h"
#include "ring/ring_layout.h"
#include "src/core/error.h"
#include "ring_fx.h"
#include "testutil.h"

TestSuite(ring, .init = setup, .fini = cleanup, .timeout = 60);

/* ------------------------------------------------------------------- tests */

Test(ring, round_trip_between_processes)
{
    const char *name = ring_name("rt");
    pid_t c = spawn(consumer_main, name); /* first: attach waits for the segment */
    sleep_ms(50);
    pid_t p = spawn(producer_main, name);
    int pr = reap(p, 30000), cs = reap(c, 30000);
    cr_assert_eq(pr, 0, "producer exit %d", pr);
    cr_assert_eq(cs, 0, "consumer exit %d (%s)", cs, B->msg);
    cr_expect_eq(B->count[0], RT_BATCHES);
    cr_expect_eq(B->count[1], RT_BATCHES);
    cr_expect_eq(B->count[2], B->count[3]);
    cr_assert(!exists(name), "the producer's destroy removes the segment");
}

#define OO_BATCHES 400
#define OO_THREADS 4
#define OO_SLOTS 8

typedef struct oo_ctx {
    pl_ring *r;
    int t;
    _Atomic uint64_t *max_published;
    _Atomic uint64_t *out_of_order;
    _Atomic int *fail;
} oo_ctx;

static void *oo_worker(void *arg)
{
    oo_ctx *c = arg;
    pl_err err = {0};
    for (uint64_t b = (uint64_t)c->t; b < OO_BATCHES; b += OO_THREADS) {
        if (pl_ring_acquire(c->r, b, &err) < 0) {
            atomic_store(c->fail, 1);
            return NULL;
        }
        fill(pl_ring_slot(c->r, b), 8192, b);
        /* Lower batches of a round take longer: publishes come out of order. */
        struct timespec ts = {0, (long)(OO_THREADS - 1 - c->t) * 300000L};
        nanosleep(&ts, NULL);
        uint64_t m = atomic_load(c->max_published);
        while (b > m && !atomic_compare_exchange_weak(c->max_published, &m, b)) {
        }
        if (b < m)
            atomic_fetch_add(c->out_of_order, 1);
        pl_ring_publish(c->r, b, 1);
    }
    return NULL;
}

static int oo_producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, OO_SLOTS, 8192, 0, &r, &err) < 0)
        return 10;
    _Atomic uint64_t max_published = 0, out_of_order = 0;
    _Atomic int fail = 0;
    pthread_t th[OO_THREADS];
    oo_ctx ctx[OO_THREADS];
    for (int t = 0; t < OO_THREADS; t++) {
        ctx[t] = (oo_ctx){r, t, &max_published, &out_of_order, &fail};
        if (pthread_create(&th[t], NULL, oo_worker, &ctx[t]) != 0)
            return 11;
    }
    for (int t = 0; t < OO_THREADS; t++)
        pthread_join(th[t], NULL);
    if (atomic_load(&fail))
        return 12;
    atomic_store(&B->count[0], atomic_load(&out_of_order));
    pl_ring_finish(r, OO_BATCHES, NULL);
    pl_ring_destroy(r);
    return 0;
}

static int oo_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    uint64_t b = 0;
    for (;; b++) {
        const void *slot;
        int rc = pl_ring_next(r, b, &slot, &err);
        if (rc == 1)
            break;
        if (rc < 0)
            return 21;
        if (check(slot, 8192, b) < 0)
            return 22;
        pl_ring_release(r, b, 1);
    }
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    pl_ring_detach(r);
    return b == OO_BATCHES && st.batches_produced == OO_BATCHES &&
                   st.batches_consumed == OO_BATCHES
               ? 0
               : 23;
}

Test(ring, in_order_consumption_of_out_of_order_publishes)
{
    const char *name = ring_name("oo");
    pid_t c = spawn(oo_consumer_main, name);
    pid_t p = spawn(oo_producer_main, name);
    int pr = reap(p, 30000), cs = reap(c, 30000);
    cr_assert_eq(pr, 0, "producer exit %d", pr);
    cr_assert_eq(cs, 0, "consumer exit %d", cs);
    cr_assert_gt(B->count[0], 0, "some batches were published out of order");
}

static int blocked_producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, 2, 4096, 0, &r, &err) < 0)
        return 10;
    for (uint64_t b = 0; b < 2; b++) {
        if (pl_ring_acquire(r, b, &err) < 0)
            return 11;
        fill(pl_ring_slot(r, b), 4096, b);
        pl_ring_publish(r, b, 1);
    }
    atomic_store(&B->t_ns[0], now_ns());
    atomic_store(&B->stage, 1);
    int rc = pl_ring_acquire(r, 2, &err); /* ring full: blocks */
    atomic_store(&B->t_ns[1], now_ns());
    atomic_store(&B->rc[0], rc);
    atomic_store(&B->stage, 2);
    if (rc < 0)
        return 12;
    fill(pl_ring_slot(r, 2), 4096, 2);
    pl_ring_publish(r, 2, 1);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    atomic_store(&B->count[0], st.producer_wait_ns);
    pl_ring_finish(r, 3, NULL);
    pl_ring_destroy(r);
    return 0;
}

Test(ring, producer_blocks_while_ring_full)
{
    const char *name = ring_name("full");
    pid_t p = spawn(blocked_producer_main, name);
    pl_ring *r = attach_ok(name, 10000);
    cr_assert_eq(await_stage(1, 10000), 0);
    take_ok(r, 0, 4096);
    sleep_ms(300);
    cr_assert_eq(atomic_load(&B->stage), 1, "acquire(2) returned while the ring was full");
    uint64_t t_release = now_ns();
    pl_ring_release(r, 0, 1);
    for (uint64_t b = 1; b < 3; b++) {
        take_ok(r, b, 4096);
        pl_ring_release(r, b, 1);
    }
    const void *slot;
    pl_err err = {0};
    cr_assert_eq(pl_ring_next(r, 3, &slot, &err), 1);
    pl_ring_detach(r);
    cr_assert_eq(reap(p, 10000), 0);
    cr_assert_eq(B->rc[0], 0);
    cr_assert_geq(B->t_ns[1], t_release, "acquire returned before the release");
    cr_assert_geq(B->t_ns[1] - B->t_ns[0], 250000000u);
    cr_assert_geq(B->count[0], 250000000u, "producer_wait_ns %llu",
                  (unsigned long long)B->count[0]);
}

Test(ring, consumer_detects_killed_producer)
{
    const char *name = ring_name("pdead");
    pid_t p = spawn(idle_producer_main, name);
    pid_t c = spawn(blocked_consumer_main, name);
    cr_assert_eq(await_stage(2, 10000), 0, "consumer did not start");
    sleep_ms(200); /* the consumer now sleeps in pl_ring_next(1) */
    uint64_t t_kill = now_ns();
    kill(p, SIGKILL); /* left unreaped: a zombie counts as dead */
    cr_assert_eq(reap(c, 10000), 0);
    uint64_t dt = B->t_ns[1] - t_kill;
    cr_assert_eq(B->rc[1], PL_EPEER, "rc %d", B->rc[1]);
    cr_assert_lt(dt, DETECT_NS, "detected after %.3f s", dt * 1e-9);
    cr_log_info("dead producer detected after %.3f s", dt * 1e-9);
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)p);
    cr_assert(strstr(B->msg, "died") && strstr(B->msg, pid) && strstr(B->msg, name),
              "message: %s", B->msg);
    cr_assert_eq(reap(p, 1000), 128 + SIGKILL);
}

static int taking_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    const void *slot;
    if (pl_ring_next(r, 0, &slot, &err) != 0)
        return 21;
    atomic_store(&B->stage, 1);
    idle_forever();
}

Test(ring, producer_detects_killed_consumer_and_destroy_unlinks)
{
    const char *name = ring_name("cdead");
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pid_t c = spawn(taking_consumer_main, name);
    for (uint64_t b = 0; b < 2; b++) {
        cr_assert_eq(pl_ring_acquire(r, b, &err), 0, "%s", err.msg);
        pl_ring_publish(r, b, 1);
    }
    cr_assert_eq(await_stage(1, 10000), 0);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.consumer_pid, c, "attach registers the consumer");
    kill(c, SIGKILL);
    uint64_t t0 = now_ns();
    int rc = pl_ring_acquire(r, 2, &err);
    uint64_t dt = now_ns() - t0;
    cr_assert_eq(rc, PL_EPEER, "rc %d", rc);
    cr_assert_lt(dt, DETECT_NS, "detected after %.3f s", dt * 1e-9);
    cr_log_info("dead consumer detected after %.3f s", dt * 1e-9);
    cr_assert(strstr(err.msg, "died"), "message: %s", err.msg);
    cr_assert(exists(name));
    pl_ring_destroy(r);
    cr_assert(!exists(name), "destroy removes the segment");
    reap(c, 1000);
}

Test(ring, create_watches_the_given_consumer)
{
    const char *name = ring_name("given");
    pid_t c = spawn(idle_main, NULL);
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 1, 4096, c, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_acquire(r, 0, &err), 0);
    pl_ring_publish(r, 0, 1);
    kill(c, SIGKILL);
    cr_assert_eq(reap(c, 1000), 128 + SIGKILL);
    cr_assert_eq(pl_ring_acquire(r, 1, &err), PL_EPEER, "%s", err.msg);
    pl_ring_destroy(r);
    cr_assert(!exists(name));
}

static int detaching_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    pl_ring_detach(r);
    atomic_store(&B->stage, 1);
    idle_forever();
}

Test(ring, producer_sees_detached_consumer)
{
    const char *name = ring_name("detach");
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 1, 4096, 0, &r, &err), 0, "%s", err.msg);
    pid_t c = spawn(detaching_consumer_main, name);
    cr_assert_eq(pl_ring_acquire(r, 0, &err), 0);
    pl_ring_publish(r, 0, 1);
    cr_assert_eq(await_stage(1, 10000), 0);
    uint64_t t0 = now_ns();
    cr_assert_eq(pl_ring_acquire(r, 1, &err), PL_EPEER, "%s", err.msg);
    cr_assert_lt(now_ns() - t0, DETECT_NS);
    cr_assert(strstr(err.msg, "detached"), "message: %s", err.msg);
    pl_ring_destroy(r);
    kill(c, SIGKILL);
    reap(c, 1000);
}

Test(ring, stale_segments_do_not_block_create)
{
    pl_err err = {0};
    pl_ring *r;
    /* A killed and reaped producer. */
    const char *name = ring_name("stale");
    pid_t p = spawn(idle_producer_main, name);
    cr_assert_eq(await_stage(1, 10000), 0);
    kill(p, SIGKILL);
    cr_assert_eq(reap(p, 1000), 128 + SIGKILL);
    cr_assert(exists(name));
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.producer_pid, getpid());
    cr_assert_eq(st.batches_produced, 0, "a fresh segment");
    pl_ring_destroy(r);

    /* A killed producer left as a zombie. */
    atomic_store(&B->stage, 0);
    p = spawn(idle_producer_main, name);
    cr_assert_eq(await_stage(1, 10000), 0);
    kill(p, SIGKILL);
    sleep_ms(50);
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_destroy(r);
    reap(p, 1000);

    /* A file of the right name that is no ring. */
    char shm[128];
    snprintf(shm, sizeof shm, "/pertload-%s", name);
    int fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    char junk[8192];
    memset(junk, 'j', sizeof junk);
    cr_assert_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_destroy(r);
    cr_assert(!exists(name));
}

static int attach_once_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    int rc = pl_ring_attach(name, 1000, &r, &err);
    snprintf(B->msg, sizeof B->msg, "%s", err.msg);
    if (rc == 0)
        pl_ring_detach(r);
    return rc == PL_EBUSY ? 0 : rc == 0 ? 1 : 2;
}

Test(ring, live_producer_and_consumer_give_busy)
{
    const char *name = ring_name("busy");
    pid_t p = spawn(idle_producer_main, name);
    cr_assert_eq(await_stage(1, 10000), 0);
    pl_ring *r = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), PL_EBUSY, "%s", err.msg);
    cr_assert_null(r);
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)p);
    cr_assert(strstr(err.msg, pid), "message names the producer: %s", err.msg);

    /* A second consumer while the first lives. */
    cr_assert_eq(pl_ring_attach(name, 1000, &r, &err), 0, "%s", err.msg);
    pid_t c = spawn(attach_once_main, name);
    cr_assert_eq(reap(c, 10000), 0, "second attach: %s", B->msg);
    pl_ring_detach(r);
    kill(p, SIGKILL);
    reap(p, 1000);
}

Test(ring, bad_names_rejected)
{
    char longname[PL_RING_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *bad[] = {"", "a/b", "x y", "ring\n", "caf\xc3\xa9", "a*", longname};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_ring *r = NULL;
        pl_err err = {0};
        cr_assert_eq(pl_ring_create(bad[i], 2, 4096, 0, &r, &err), PL_EUSAGE, "'%s'", bad[i]);
        cr_assert_null(r);
        /* the name as printed: its control characters escaped (pl__err) */
        char shown[64];
        pl__ctrl_escape(shown, sizeof shown, bad[i], strlen(bad[i]), 1);
        if (bad[i][0] && bad[i] != longname)
            cr_assert(strstr(err.msg, shown), "message names '%s': %s", shown, err.msg);
        cr_assert_eq(pl_ring_attach(bad[i], 0, &r, &err), PL_EUSAGE, "'%s'", bad[i]);
    }
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(NULL, 2, 4096, 0, &r, &err), PL_EUSAGE);
    /* The longest allowed name, with every allowed kind of character. */
    char name[PL_RING_NAME_MAX + 1];
    int n = snprintf(name, sizeof name, "t%d-Az09_.-", (int)getpid());
    memset(name + n, 'z', PL_RING_NAME_MAX - (size_t)n);
    name[PL_RING_NAME_MAX] = '\0';
    snprintf(names[n_names++], sizeof names[0], "%s", name);
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_destroy(r);
}

Test(ring, segment_mode_is_0600)
{
    const mode_t masks[] = {0, 0077, 0777};
    for (size_t i = 0; i < 3; i++) {
        const char *name = ring_name(i == 0 ? "mode0" : i == 1 ? "mode1" : "mode2");
        mode_t old = umask(masks[i]);
        pl_ring *r;
        pl_err err = {0};
        int rc = pl_ring_create(name, 2, 4096, 0, &r, &err);
        umask(old);
        cr_assert_eq(rc, 0, "%s", err.msg);
        char path[128];
        shm_file(path, sizeof path, name);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600, "umask %03o: mode %04o", (unsigned)masks[i],
                     (unsigned)(st.st_mode & 07777));
        cr_assert_eq(st.st_uid, getuid());
        pl_ring_destroy(r);
    }
}

#define NO_MOUNT 50

/* In a private mount namespace over a 64 MiB tmpfs: a ring over half the free
 * space is refused with a message naming the limit; one under it is made.
 * @return 0, NO_MOUNT when no namespace or mount can be had, or the step that
 * failed (its message in B->msg). */
static int small_shm_main(const char *name)
{
    pl_ring *r = NULL;
    pl_err err = {0};
    const char *what;
    int e = pl_test_small_fs("/dev/shm", "64m", &what);
    if (e) {
        snprintf(B->msg, sizeof B->msg, "%s: %s", what, strerror(e));
        return NO_MOUNT;
    }
    struct statvfs v;
    if (statvfs("/dev/shm", &v) < 0)
        return 51;
    uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
    if (free_bytes > (64u << 20) || free_bytes < (60u << 20)) {
        snprintf(B->msg, sizeof B->msg, "the tmpfs has %llu bytes free",
                 (unsigned long long)free_bytes);
        return 52;
    }
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)(free_bytes / 2));
    int rc = pl_ring_create(name, 1, free_bytes / 2 + 1, 0, &r, &err);
    snprintf(B->msg, sizeof B->msg, "%s", err.msg);
    if (rc != -ENOSPC || r)
        return 53;
    if (!strstr(err.msg, "half") || !strstr(err.msg, want))
        return 54;
    if (exists(name))
        return 55;
    if (pl_ring_create(name, 1, free_bytes / 4, 0, &r, &err) < 0) {
        snprintf(B->msg, sizeof B->msg, "%s", err.msg);
        return 56;
    }
    pl_ring_destroy(r);
    return exists(name) ? 57 : 0;
}

/* Under a 1 MiB file-size limit a 4 MiB ring cannot be sized: a clear error,
 * and the half-made segment is removed. @return 0 or the step that failed. */
static int fsize_limit_main(const char *name)
{
    pl_ring *r = NULL;
    pl_err err = {0};
    struct rlimit lim = {1u << 20, 1u << 20};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
        return 60;
    int rc = pl_ring_create(name, 1, 4u << 20, 0, &r, &err);
    snprintf(B->msg, sizeof B->msg, "rc %d: %.4000s", rc, err.msg);
    if (rc != -EFBIG || r)
        return 61;
    if (!strstr(err.msg, name) || !strstr(err.msg, "File too large"))
        return 62;
    return exists(name) ? 63 : 0;
}

Test(ring, oversized_and_empty_rings_refused)
{
    const char *name = ring_name("big");
    pl_ring *r = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, PL_RING_MAX_BYTES, 0, &r, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "limit"), "%s", err.msg);
    cr_assert_eq(pl_ring_create(name, 1, UINT64_MAX, 0, &r, &err), PL_EUSAGE);
    cr_assert_eq(pl_ring_create(name, 0, 4096, 0, &r, &err), PL_EUSAGE);
    cr_assert_eq(pl_ring_create(name, PL__RING_MAX_SLOTS + 1, 4096, 0, &r, &err), PL_EUSAGE);
    cr_assert_eq(pl_ring_create(name, 2, 0, 0, &r, &err), PL_EUSAGE);
    cr_assert_null(r);
    cr_assert(!exists(name));

    /* The free-space limit, against a file system of known size: a 64 MiB
     * tmpfs over /dev/shm in a mount namespace of a child's own (whatever the
     * machine's /dev/shm holds); where no namespace can be had, a file-size
     * limit the child sets makes the segment's sizing fail instead. */
    pid_t k = spawn(small_shm_main, name);
    int rc = reap(k, 30000);
    cr_assert(rc == 0 || rc == NO_MOUNT, "exit %d: %s", rc, B->msg);
    if (rc == NO_MOUNT)
        cr_log_info("no private tmpfs here (%s): a file-size limit only", B->msg);
    k = spawn(fsize_limit_main, name);
    cr_assert_eq(reap(k, 30000), 0, "%s", B->msg);
    cr_assert(!exists(name), "nothing left behind");
    /* The size the caller reports. */
    cr_assert_eq(pl_ring_create(name, 3, 5000, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.total_bytes, 4096 + 3 * 8192);
    cr_assert_eq(pl_ring_bytes(3, 5000), st.total_bytes, "the size told before creation");
    char path[128];
    struct stat fs;
    shm_file(path, sizeof path, name);
    cr_assert_eq(stat(path, &fs), 0);
    cr_assert_eq((uint64_t)fs.st_size, st.total_bytes);
    pl_ring_destroy(r);

    /* Many slots: the header grows past one page. */
    cr_assert_eq(pl_ring_create(name, 4000, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.total_bytes, pl__ring_header_bytes(4000) + 4000 * 4096);
    cr_assert_eq(pl_ring_bytes(4000, 4096), st.total_bytes);
    cr_assert_gt(pl__ring_header_bytes(4000), 4096);
    cr_assert_eq((uintptr_t)pl_ring_slot(r, 3999) % 4096, 0);
    pl_ring_destroy(r);
}

#define CT_BATCHES 20

static int slow_start_producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, 1, 4096, 0, &r, &err) < 0)
        return 10;
    pl_ring_stats st;
    do { /* wait for the consumer to attach, then make it wait for data */
        sleep_ms(2);
        pl_ring_stats_get(r, &st);
    } while (st.consumer_pid == 0);
    sleep_ms(150);
    for (uint64_t b = 0; b < CT_BATCHES; b++) {
        if (pl_ring_acquire(r, b, &err) < 0)
            return 11;
        fill(pl_ring_slot(r, b), 4096, b);
        pl_ring_publish(r, b, samples_of(b));
    }
    pl_ring_finish(r, CT_BATCHES, NULL);
    pl_ring_destroy(r);
    return 0;
}

Test(ring, counters_and_wait_times)
{
    const char *name = ring_name("count");
    pid_t p = spawn(slow_start_producer_main, name);
    pl_ring *r = attach_ok(name, 10000);
    pl_err err = {0};
    uint64_t samples = 0, b = 0;
    for (;; b++) {
        const void *slot;
        int rc = pl_ring_next(r, b, &slot, &err);
        if (rc == 1)
            break;
        cr_assert_eq(rc, 0, "%s", err.msg);
        cr_assert_eq(check(slot, 4096, b), 0);
        sleep_ms(20); /* slow consumer: the producer waits for the only slot */
        samples += samples_of(b);
        pl_ring_release(r, b, samples_of(b));
    }
    cr_assert_eq(reap(p, 10000), 0);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(b, CT_BATCHES);
    cr_assert_eq(st.batches_produced, CT_BATCHES);
    cr_assert_eq(st.batches_consumed, CT_BATCHES);
    cr_assert_eq(st.samples_produced, samples);
    cr_assert_eq(st.samples_consumed, samples);
    cr_assert_eq(st.n_batches, CT_BATCHES);
    cr_assert_eq(st.state, PL_RING_DONE);
    cr_assert_eq(st.n_slots, 1);
    cr_assert_geq(st.consumer_wait_ns, 100000000u, "consumer waited %llu ns",
                  (unsigned long long)st.consumer_wait_ns);
    cr_assert_geq(st.producer_wait_ns, 100000000u, "producer waited %llu ns",
                  (unsigned long long)st.producer_wait_ns);
    uint64_t wall = (uint64_t)time(NULL) * 1000000000u;
    cr_assert(st.created_ns <= wall + 1000000000u && st.created_ns + 60000000000u > wall);
    pl_ring_detach(r);
}

Test(ring, bounded_wait_returns_not_yet_then_the_batch)
{
    const char *name = ring_name("within");
    pl_ring *p, *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 5000, &c, &err), 0, "%s", err.msg);
    const void *slot = (const void *)1;
    /* nothing published: "not yet", nothing taken, again and again */
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pl_ring_next_within(c, 0, 0, &slot, &err), 2);
        cr_assert_null(slot);
    }
    cr_assert_eq(pl_ring_acquire(p, 0, &err), 0, "%s", err.msg);
    fill(pl_ring_slot(p, 0), 4096, 0);
    pl_ring_publish(p, 0, 3);
    cr_assert_eq(pl_ring_next_within(c, 0, 0, &slot, &err), 0, "%s", err.msg);
    cr_assert_eq(slot, pl_ring_slot(c, 0));
    cr_assert_eq(memcmp(slot, pl_ring_slot(p, 0), 4096), 0);
    pl_ring_release(c, 0, 3);
    /* the end of the epoch, as pl_ring_next gives it */
    pl_ring_finish(p, 1, NULL);
    cr_assert_eq(pl_ring_next_within(c, 1, -1, &slot, &err), 1);
    pl_ring_detach(c);
    pl_ring_destroy(p);
    cr_assert(!exists(name));
}
