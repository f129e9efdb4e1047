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
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pertload.h"
#include "ring/ring_layout.h"

/* ------------------------------------------------------------------ harness */

#define MAX_KIDS 8
#define MAX_NAMES 8
#define WORD_MIX 0x9E3779B97F4A7C15ULL

/* Shared between the test and its children. */
typedef struct box {
    _Atomic int stage;           /* handshakes */
    _Atomic int rc[4];           /* return codes seen by children */
    _Atomic uint64_t t_ns[4];    /* CLOCK_MONOTONIC stamps (system-wide) */
    _Atomic uint64_t count[4];
    char msg[PL_ERR_MSG_MAX];    /* an error message seen by a child */
} box;

static pid_t kids[MAX_KIDS];
static int n_kids;
static char names[MAX_NAMES][PL_RING_NAME_MAX + 1];
static int n_names;
static box *B;

static void cleanup(void)
{
    for (int i = 0; i < n_kids; i++) {
        if (kids[i] > 0) {
            kill(kids[i], SIGKILL);
            waitpid(kids[i], NULL, 0);
        }
    }
    n_kids = 0;
    for (int i = 0; i < n_names; i++) {
        char shm[PL_RING_NAME_MAX + 16];
        snprintf(shm, sizeof shm, "/pertload-%.*s", PL_RING_NAME_MAX, names[i]);
        shm_unlink(shm);
    }
    n_names = 0;
    if (B)
        munmap(B, sizeof *B);
    B = NULL;
}

static void setup(void)
{
    B = mmap(NULL, sizeof *B, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (B == MAP_FAILED)
        B = NULL;
}

TestSuite(ring, .init = setup, .fini = cleanup, .timeout = 60);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* A ring name unique to this test process, removed by cleanup(). */
static const char *ring_name(const char *tag)
{
    cr_assert_lt(n_names, MAX_NAMES);
    snprintf(names[n_names], sizeof names[0], "t%d-%s", (int)getpid(), tag);
    return names[n_names++];
}

static void shm_file(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/dev/shm/pertload-%s", name);
}

static int exists(const char *name)
{
    char path[128];
    shm_file(path, sizeof path, name);
    return access(path, F_OK) == 0;
}

/* Run fn(arg) in a child process that exits with its return value. */
static pid_t spawn(int (*fn)(const char *), const char *arg)
{
    cr_assert_lt(n_kids, MAX_KIDS);
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(99);
        alarm(60); /* never outlive a stuck test */
        _exit(fn(arg) & 0xff);
    }
    kids[n_kids++] = pid;
    return pid;
}

/* Wait for a child for at most `ms`; a child still running is killed.
 * @return its exit status, 128 + signal when killed, or -1 on timeout. */
static int reap(pid_t pid, int ms)
{
    int status = 0, rc = -1;
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        if (now_ns() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        sleep_ms(2);
    }
    for (int i = 0; i < n_kids; i++)
        if (kids[i] == pid)
            kids[i] = 0;
    return rc;
}

/* Test-side wait for a handshake stage (children and parent poll the box). */
static int await_stage(int stage, int ms)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
    while (atomic_load(&B->stage) < stage) {
        if (now_ns() > end)
            return -1;
        sleep_ms(1);
    }
    return 0;
}

/* Slot contents of batch b: 64-bit words b * WORD_MIX + i. */
static void fill(void *slot, uint64_t bytes, uint64_t b)
{
    uint64_t *w = slot;
    for (uint64_t i = 0; i < bytes / 8; i++)
        w[i] = b * WORD_MIX + i;
}

static int check(const void *slot, uint64_t bytes, uint64_t b)
{
    const uint64_t *w = slot;
    for (uint64_t i = 0; i < bytes / 8; i++)
        if (w[i] != b * WORD_MIX + i)
            return -1;
    return 0;
}

/* A child's last act: wait to be killed. */
static _Noreturn void idle_forever(void)
{
    for (;;)
        pause();
}

static uint32_t samples_of(uint64_t b) { return (uint32_t)(b % 7 + 1); }

/* ------------------------------------------------------- shared child bodies */

#define RT_BATCHES 300
#define RT_SLOTS 4
#define RT_SLOT_BYTES (64 * 1024 + 104) /* not a multiple of 4096: stride rounds up */

/* Producer of RT_BATCHES batches into a new ring; single-threaded. */
static int producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, RT_SLOTS, RT_SLOT_BYTES, 0, &r, &err) < 0)
        return 10;
    if (((uintptr_t)pl_ring_slot(r, 0) & 4095) || ((uintptr_t)pl_ring_slot(r, 1) & 4095))
        return 11;
    pl_ring_set_total(r, RT_BATCHES);
    for (uint64_t b = 0; b < RT_BATCHES; b++) {
        if (pl_ring_acquire(r, b, &err) < 0)
            return 12;
        fill(pl_ring_slot(r, b), RT_SLOT_BYTES, b);
        pl_ring_publish(r, b, samples_of(b));
    }
    pl_ring_finish(r, RT_BATCHES, NULL);
    pl_ring_destroy(r);
    return 0;
}

/* Consumer of the whole epoch with content and counter checks. */
static int consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    uint64_t b = 0, samples = 0;
    for (;; b++) {
        const void *slot;
        int rc = pl_ring_next(r, b, &slot, &err);
        if (rc == 1)
            break;
        if (rc < 0) {
            snprintf(B->msg, sizeof B->msg, "%s", err.msg);
            return 21;
        }
        if (check(slot, RT_SLOT_BYTES, b) < 0)
            return 22;
        samples += samples_of(b);
        pl_ring_release(r, b, samples_of(b));
    }
    if (b != RT_BATCHES)
        return 23;
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    atomic_store(&B->count[0], st.batches_produced);
    atomic_store(&B->count[1], st.batches_consumed);
    atomic_store(&B->count[2], st.samples_produced);
    atomic_store(&B->count[3], st.samples_consumed);
    if (st.batches_produced != RT_BATCHES || st.batches_consumed != RT_BATCHES ||
        st.samples_produced != samples || st.samples_consumed != samples ||
        st.n_batches != RT_BATCHES || st.state != PL_RING_DONE || st.n_slots != RT_SLOTS ||
        st.slot_bytes != RT_SLOT_BYTES)
        return 24;
    pl_ring_detach(r);
    return 0;
}

/* Create a two-slot ring, publish batch 0, then idle until killed. */
static int idle_producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, 2, 4096, 0, &r, &err) < 0)
        return 10;
    fill(pl_ring_slot(r, 0), 4096, 0);
    pl_ring_publish(r, 0, 1);
    atomic_store(&B->stage, 1);
    idle_forever();
}

static int idle_main(const char *unused)
{
    (void)unused;
    idle_forever();
}

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
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(name, 10000, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(await_stage(1, 10000), 0);
    const void *slot;
    cr_assert_eq(pl_ring_next(r, 0, &slot, &err), 0, "%s", err.msg);
    cr_assert_eq(check(slot, 4096, 0), 0);
    sleep_ms(300);
    cr_assert_eq(atomic_load(&B->stage), 1, "acquire(2) returned while the ring was full");
    uint64_t t_release = now_ns();
    pl_ring_release(r, 0, 1);
    for (uint64_t b = 1; b < 3; b++) {
        cr_assert_eq(pl_ring_next(r, b, &slot, &err), 0, "%s", err.msg);
        cr_assert_eq(check(slot, 4096, b), 0);
        pl_ring_release(r, b, 1);
    }
    cr_assert_eq(pl_ring_next(r, 3, &slot, &err), 1);
    pl_ring_detach(r);
    cr_assert_eq(reap(p, 10000), 0);
    cr_assert_eq(B->rc[0], 0);
    cr_assert_geq(B->t_ns[1], t_release, "acquire returned before the release");
    cr_assert_geq(B->t_ns[1] - B->t_ns[0], 250000000u);
    cr_assert_geq(B->count[0], 250000000u, "producer_wait_ns %llu",
                  (unsigned long long)B->count[0]);
}

static int blocked_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    const void *slot;
    if (pl_ring_next(r, 0, &slot, &err) != 0 || check(slot, 4096, 0) < 0)
        return 21;
    pl_ring_release(r, 0, 1);
    atomic_store(&B->stage, 2);
    int rc = pl_ring_next(r, 1, &slot, &err); /* never published */
    atomic_store(&B->t_ns[1], now_ns());
    atomic_store(&B->rc[1], rc);
    snprintf(B->msg, sizeof B->msg, "%s", err.msg);
    pl_ring_detach(r);
    return 0;
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
    cr_assert_lt(dt, 1500000000u, "detected after %.3f s", dt * 1e-9);
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
    cr_assert_lt(dt, 1500000000u, "detected after %.3f s", dt * 1e-9);
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
    cr_assert_lt(now_ns() - t0, 1500000000u);
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
        if (bad[i][0] && bad[i] != longname)
            cr_assert(strstr(err.msg, bad[i]), "message names '%s': %s", bad[i], err.msg);
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

    struct statvfs v;
    cr_assert_eq(statvfs("/dev/shm", &v), 0);
    uint64_t free_bytes = (uint64_t)v.f_bavail * v.f_frsize;
    if (free_bytes / 2 + (1u << 20) < PL_RING_MAX_BYTES) {
        char want[32];
        cr_assert_eq(pl_ring_create(name, 1, free_bytes / 2 + 1, 0, &r, &err), -ENOSPC,
                     "%s", err.msg);
        snprintf(want, sizeof want, "%llu", (unsigned long long)(free_bytes / 2));
        cr_assert(strstr(err.msg, "half") && strstr(err.msg, want), "%s", err.msg);
        cr_assert(!exists(name));
    } else {
        cr_log_info("/dev/shm has %llu bytes free: the half-free-space limit is not "
                    "reachable under PL_RING_MAX_BYTES here", (unsigned long long)free_bytes);
    }
    /* The size the caller reports. */
    cr_assert_eq(pl_ring_create(name, 3, 5000, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.total_bytes, 4096 + 3 * 8192);
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
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(name, 10000, &r, &err), 0, "%s", err.msg);
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

Test(ring, list_sees_live_rings_and_skips_junk)
{
    const char *name = ring_name("list");
    const char *junk = ring_name("junk");
    const char *tiny = ring_name("tiny");
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 3, 10000, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_set_total(r, 77);
    char shm[128], page[4096];
    memset(page, 0x5a, sizeof page);
    snprintf(shm, sizeof shm, "/pertload-%s", junk);
    int fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, page, sizeof page), (ssize_t)sizeof page);
    close(fd);
    snprintf(shm, sizeof shm, "/pertload-%s", tiny);
    fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);

    int n = pl_ring_list(NULL, 0);
    cr_assert_geq(n, 1);
    pl_ring_stats *v = calloc((size_t)n + 16, sizeof *v);
    cr_assert_not_null(v);
    n = pl_ring_list(v, n + 16);
    int seen = 0;
    for (int i = 0; i < n; i++) {
        cr_assert_neq(strcmp(v[i].name, junk), 0);
        cr_assert_neq(strcmp(v[i].name, tiny), 0);
        if (strcmp(v[i].name, name) != 0)
            continue;
        seen++;
        cr_assert_eq(v[i].n_slots, 3);
        cr_assert_eq(v[i].slot_bytes, 10000);
        cr_assert_eq(v[i].total_bytes, 4096 + 3 * 12288);
        cr_assert_eq(v[i].producer_pid, getpid());
        cr_assert_eq(v[i].consumer_pid, 0);
        cr_assert_eq(v[i].n_batches, 77);
        cr_assert_eq(v[i].state, PL_RING_RUNNING);
    }
    free(v);
    cr_assert_eq(seen, 1);
    pl_ring_destroy(r);
}

static int failing_producer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, 4, 4096, 0, &r, &err) < 0)
        return 10;
    fill(pl_ring_slot(r, 0), 4096, 0);
    pl_ring_publish(r, 0, 1);
    pl_ring_finish(r, 1, "sample store block 7 is corrupt");
    atomic_store(&B->stage, 1);
    while (atomic_load(&B->stage) < 2)
        sleep_ms(1);
    pl_ring_destroy(r);
    return 0;
}

Test(ring, failure_message_reaches_consumer)
{
    const char *name = ring_name("fail");
    pid_t p = spawn(failing_producer_main, name);
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(name, 10000, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(await_stage(1, 10000), 0);
    const void *slot;
    /* Published before the failure: still delivered. */
    cr_assert_eq(pl_ring_next(r, 0, &slot, &err), 0, "%s", err.msg);
    cr_assert_eq(check(slot, 4096, 0), 0);
    pl_ring_release(r, 0, 1);
    cr_assert_eq(pl_ring_next(r, 1, &slot, &err), PL_EPEER);
    cr_assert_null(slot);
    cr_assert(strstr(err.msg, "sample store block 7 is corrupt") && strstr(err.msg, name),
              "message: %s", err.msg);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    cr_assert_eq(st.state, PL_RING_FAILED);
    atomic_store(&B->stage, 2);
    cr_assert_eq(reap(p, 10000), 0);
    pl_ring_detach(r);
}

Test(ring, destroy_before_finish_fails_consumer)
{
    const char *name = ring_name("early");
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    fill(pl_ring_slot(r, 0), 4096, 0);
    pl_ring_publish(r, 0, 1);
    pid_t c = spawn(blocked_consumer_main, name);
    cr_assert_eq(await_stage(2, 10000), 0);
    sleep_ms(50);
    uint64_t t0 = now_ns();
    pl_ring_destroy(r);
    cr_assert(!exists(name));
    cr_assert_eq(reap(c, 10000), 0);
    cr_assert_eq(B->rc[1], PL_EPEER);
    cr_assert(strstr(B->msg, "closed"), "message: %s", B->msg);
    cr_assert_lt(B->t_ns[1] - t0, 500000000u, "the consumer is woken");
}

static int late_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(name, 10000, &r, &err) < 0)
        return 20;
    atomic_store(&B->t_ns[1], now_ns());
    const void *slot;
    if (pl_ring_next(r, 0, &slot, &err) != 0 || check(slot, 4096, 0) < 0)
        return 21;
    pl_ring_release(r, 0, 1);
    int rc = pl_ring_next(r, 1, &slot, &err);
    pl_ring_detach(r);
    return rc == 1 ? 0 : 22;
}

Test(ring, attach_waits_for_the_segment_and_times_out)
{
    pl_ring *r = NULL;
    pl_err err = {0};
    const char *absent = ring_name("absent");
    uint64_t t0 = now_ns();
    cr_assert_eq(pl_ring_attach(absent, 300, &r, &err), PL_ETIMEDOUT);
    uint64_t dt = now_ns() - t0;
    cr_assert_null(r);
    cr_assert(dt >= 290000000u && dt < 1000000000u, "waited %.3f s", dt * 1e-9);
    cr_assert(strstr(err.msg, absent), "%s", err.msg);

    const char *name = ring_name("late");
    pid_t c = spawn(late_consumer_main, name);
    sleep_ms(200);
    uint64_t t_create = now_ns();
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    fill(pl_ring_slot(r, 0), 4096, 0);
    pl_ring_publish(r, 0, 1);
    pl_ring_finish(r, 1, NULL);
    cr_assert_eq(reap(c, 10000), 0);
    cr_assert_lt(B->t_ns[1] - t_create, 500000000u, "attached %.3f s after creation",
                 (B->t_ns[1] - t_create) * 1e-9);
    pl_ring_destroy(r);
}

Test(ring, attach_rejects_malformed_headers)
{
    const char *name = ring_name("bad");
    pl_ring *r, *c = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    char shm[128];
    snprintf(shm, sizeof shm, "/pertload-%s", name);
    int fd = shm_open(shm, O_RDWR, 0);
    cr_assert_geq(fd, 0);
    pl__ring_hdr *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    cr_assert_neq(h, MAP_FAILED);
    struct {
        const char *what;
        size_t off, size;
        uint64_t value;
    } damage[] = {
        {"magic", offsetof(pl__ring_hdr, magic), 1, 'X'},
        {"version", offsetof(pl__ring_hdr, version), 4, 99},
        {"slot count", offsetof(pl__ring_hdr, n_slots), 4, 0},
        {"slot count", offsetof(pl__ring_hdr, n_slots), 4, 3},
        {"slot stride", offsetof(pl__ring_hdr, slot_stride), 8, 4096 * 1000},
        {"total size", offsetof(pl__ring_hdr, total_bytes), 8, 4096 * 4},
        {"header size", offsetof(pl__ring_hdr, header_bytes), 8, 0},
        {"name", offsetof(pl__ring_hdr, name), 1, 'Q'},
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        unsigned char *p = (unsigned char *)h + damage[i].off, saved[8];
        memcpy(saved, p, damage[i].size);
        memcpy(p, &damage[i].value, damage[i].size); /* little-endian */
        int rc = pl_ring_attach(name, 1000, &c, &err);
        memcpy(p, saved, damage[i].size);
        cr_assert_eq(rc, PL_ECORRUPT, "%s damaged: rc %d", damage[i].what, rc);
        cr_assert_null(c);
    }
    /* Repaired: attach works. */
    cr_assert_eq(pl_ring_attach(name, 1000, &c, &err), 0, "%s", err.msg);
    /* A state no producer writes. */
    atomic_store(&h->state, 7);
    const void *slot;
    cr_assert_eq(pl_ring_next(c, 0, &slot, &err), PL_ECORRUPT, "%s", err.msg);
    atomic_store(&h->state, PL_RING_RUNNING);
    pl_ring_detach(c);
    munmap(h, 4096);
    pl_ring_destroy(r);
}

Test(ring, next_refuses_batches_outside_the_window)
{
    const char *name = ring_name("window");
    pl_ring *p, *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    for (uint64_t b = 0; b < 2; b++) {
        cr_assert_eq(pl_ring_acquire(p, b, &err), 0);
        fill(pl_ring_slot(p, b), 4096, b);
        pl_ring_publish(p, b, 1);
    }
    const void *s0, *s1, *s;
    cr_assert_eq(pl_ring_next(c, 0, &s0, &err), 0);
    cr_assert_eq(pl_ring_next(c, 1, &s1, &err), 0, "two batches held at once");
    cr_assert_eq(check(s0, 4096, 0), 0);
    cr_assert_eq(check(s1, 4096, 1), 0);
    cr_assert_eq(pl_ring_next(c, 2, &s, &err), PL_EUSAGE, "would wait for itself");
    pl_ring_release(c, 1, 2); /* releases 0 and 1 */
    cr_assert_eq(pl_ring_next(c, 0, &s, &err), PL_EUSAGE, "already released");
    pl_ring_stats st;
    pl_ring_stats_get(c, &st);
    cr_assert_eq(st.batches_consumed, 2);
    cr_assert_eq(pl_ring_acquire(p, 3, &err), 0, "the window moved");
    pl_ring_detach(c);
    pl_ring_destroy(p);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* Deliver SIGALRM to this process after `ms`, handled with `flags`. */
static void alarm_in(long ms, int flags)
{
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = flags};
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
    struct itimerval it = {.it_value = {ms / 1000, (ms % 1000) * 1000}};
    cr_assert_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/* A producer thread: batch 0 published 400 ms after the start. */
static void *late_publish(void *arg)
{
    sleep_ms(400);
    pl_ring_publish(arg, 0, 1);
    return NULL;
}

Test(ring, signal_interrupts_the_wait_for_a_batch)
{
    /* The producer lives but publishes nothing yet, as when it is stopped: a
     * signal handler that runs must get control back to the consumer (a
     * Python consumer's Ctrl-C or SIGTERM handler runs only then), even one
     * installed with SA_RESTART (futex waits with a timeout are not restarted). */
    const char *name = ring_name("eintr");
    pl_ring *p, *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_acquire(p, 0, &err), 0);
    fill(pl_ring_slot(p, 0), 4096, 0);
    alarms = 0;
    alarm_in(150, SA_RESTART);
    pthread_t th;
    uint64_t t0 = now_ns();
    cr_assert_eq(pthread_create(&th, NULL, late_publish, p), 0);
    const void *slot = NULL;
    int rc = pl_ring_next(c, 0, &slot, &err);
    uint64_t took = now_ns() - t0;
    cr_assert_eq(rc, -EINTR, "%d: %s", rc, err.msg);
    cr_assert_eq(alarms, 1);
    cr_assert_null(slot);
    cr_assert(strstr(err.msg, "interrupted"), "%s", err.msg);
    cr_assert(took >= 100000000u && took < 350000000u, "%llu ns", (unsigned long long)took);
    /* Nothing was taken: calling again waits on and gets the batch. */
    rc = pl_ring_next(c, 0, &slot, &err);
    took = now_ns() - t0;
    pthread_join(th, NULL);
    signal(SIGALRM, SIG_DFL);
    cr_assert_eq(rc, 0, "%d: %s", rc, err.msg);
    cr_assert_geq(took, 350000000u, "%llu ns", (unsigned long long)took);
    cr_assert_eq(check(slot, 4096, 0), 0);
    pl_ring_release(c, 0, 1);
    pl_ring_detach(c);
    pl_ring_destroy(p);
}

Test(ring, pid_liveness)
{
    cr_assert(pl__shm_pid_alive(getpid(), 0));
    cr_assert(pl__shm_pid_alive(getpid(), pl__shm_pid_start(getpid())));
    cr_assert(!pl__shm_pid_alive(getpid(), pl__shm_pid_start(getpid()) + 1),
              "another start time: a recycled pid");
    cr_assert(!pl__shm_pid_alive(0, 0));
    cr_assert(!pl__shm_pid_alive(-5, 0));
    pid_t z = spawn(idle_main, NULL);
    cr_assert(pl__shm_pid_alive(z, 0));
    kill(z, SIGKILL);
    sleep_ms(50);
    cr_assert(!pl__shm_pid_alive(z, 0), "a zombie is dead");
    reap(z, 1000);
    cr_assert(!pl__shm_pid_alive(z, 0));
}

/* Run `pertload ARGS`, capturing stdout. @return the exit status. */
static int run_cli(const char *args, char *out, size_t cap)
{
    const char *bin = getenv("PERTLOAD_BIN");
    if (!bin || !*bin)
        cr_skip_test("PERTLOAD_BIN is not set");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, args);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(ring, top_once_shows_a_running_ring)
{
    const char *name = ring_name("top");
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 4, 1 << 20, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_set_total(r, 1000);
    static char out[1 << 16];
    cr_assert_eq(run_cli("top --once --interval 0.2", out, sizeof out), 0, "%s", out);
    const char *line = strstr(out, name);
    cr_assert_not_null(line, "output: %s", out);
    cr_assert(strstr(out, "SAMPLES/S") && strstr(out, "CONS WAIT"), "%s", out);
    cr_assert(strstr(line, "4 x 1.0 MiB") && strstr(line, "0/1000") &&
                  strstr(line, "running"),
              "line: %s", line);
    cr_assert_eq(run_cli("top --interval nope", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run_cli("top --bogus", out, sizeof out), 2, "%s", out);
    pl_ring_destroy(r);
}

/* Serve's end of an epoch: the producer waits until the consumer drained the
 * last batch (pl_ring_acquire of batch n_batches - 1 + n_slots). */
static int drain_wait_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_create(name, 1, 4096, 0, &r, &err) < 0 || pl_ring_acquire(r, 0, &err) < 0) {
        fprintf(stderr, "drain producer: %s\n", err.msg);
        return 10;
    }
    pl_ring_publish(r, 0, 1);
    pl_ring_finish(r, 1, NULL);
    int rc = pl_ring_acquire(r, 1, &err);
    if (rc < 0)
        fprintf(stderr, "drain producer: %s\n", err.msg);
    pl_ring_destroy(r);
    return rc < 0 ? 20 : 0;
}

/* A consumer that releases the last batch and detaches while the producer
 * sleeps has freed the slot: the wait succeeds. The producer is stopped while
 * it sleeps, so that it wakes to the release and the detach at once (it used
 * to see the consumer gone and fail with PL_EPEER, and serve exited 1 after
 * a complete epoch). */
Test(ring, consumer_leaving_after_the_last_release)
{
    const char *name = ring_name("drain");
    pid_t p = spawn(drain_wait_main, name);
    pl_ring *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(name, 5000, &c, &err), 0, "%s", err.msg);
    const void *slot;
    cr_assert_eq(pl_ring_next(c, 0, &slot, &err), 0, "%s", err.msg);
    sleep_ms(100); /* the producer sleeps in its wait for the slot */
    cr_assert_eq(kill(p, SIGSTOP), 0);
    int st;
    cr_assert_eq(waitpid(p, &st, WUNTRACED), p);
    cr_assert(WIFSTOPPED(st));
    pl_ring_release(c, 0, 1);
    cr_assert_eq(pl_ring_next(c, 1, &slot, &err), 1, "the end after the only batch");
    pl_ring_detach(c);
    cr_assert_eq(kill(p, SIGCONT), 0);
    cr_assert_eq(reap(p, 5000), 0, "the producer's wait failed although the slot was freed");
}
