/* The shared-memory ring between real processes, part two (test_ring.c has
 * round trips, ordering, back-pressure, peer deaths, stale segments, names,
 * modes, sizes and counters): listing, failure messages, attach timeouts and
 * malformed headers, the batch window, signals, pid liveness, liveness seen
 * from another PID namespace, `pertload top`
 * and the consumer's leaving. The harness is ring_fx.c. */
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
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pertload.h"
#include "ring/reclaim.h"
#include "ring/ring_layout.h"
#include "ring_fx.h"
#include "testutil.h"

TestSuite(ring, .init = setup, .fini = cleanup, .timeout = 60);

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

    /* Other processes of the machine (another test suite running beside this
     * one) may create rings between two calls: ask again until all fit, and
     * look only at this test's names. */
    pl_ring_stats *v = NULL;
    int n = pl_ring_list(NULL, 0), cap = 0;
    while (n > cap) {
        cr_assert_geq(n, 1);
        cap = n + 16;
        free(v);
        v = calloc((size_t)cap, sizeof *v);
        cr_assert_not_null(v);
        n = pl_ring_list(v, cap);
    }
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
    pl_ring *r = attach_ok(name, 10000);
    cr_assert_eq(await_stage(1, 10000), 0);
    /* Published before the failure: still delivered. */
    take_ok(r, 0, 4096);
    pl_ring_release(r, 0, 1);
    const void *slot;
    pl_err err = {0};
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
    cr_assert_lt(B->t_ns[1] - t0, DETECT_NS, "the consumer is woken");
}

static int late_consumer_main(const char *name)
{
    pl_ring *r;
    pl_err err = {0};
    atomic_store(&B->t_ns[0], now_ns());
    atomic_store(&B->stage, 1);
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
    cr_assert(dt >= 290000000u && dt < 300000000u + DETECT_NS, "waited %.3f s", dt * 1e-9);
    cr_assert(strstr(err.msg, absent), "%s", err.msg);

    const char *name = ring_name("late");
    pid_t c = spawn(late_consumer_main, name);
    cr_assert_eq(await_stage(1, 10000), 0);
    sleep_ms(200); /* the consumer waits in pl_ring_attach (or is about to) */
    uint64_t t_create = now_ns();
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    fill(pl_ring_slot(r, 0), 4096, 0);
    pl_ring_publish(r, 0, 1);
    pl_ring_finish(r, 1, NULL);
    cr_assert_eq(reap(c, 10000), 0);
    cr_assert_lt(B->t_ns[0], t_create, "the consumer asked before the segment existed");
    cr_assert_lt(B->t_ns[1] - t_create, DETECT_NS, "attached %.3f s after creation",
                 (B->t_ns[1] - t_create) * 1e-9);
    pl_ring_destroy(r);
}

Test(ring, attach_rejects_malformed_headers)
{
    const char *name = ring_name("bad");
    pl_ring *r, *c = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl__ring_hdr *h = map_header(name);
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
        {"database record", offsetof(pl__ring_hdr, source.known), 4, 2},
        {"database record", offsetof(pl__ring_hdr, source.n_types), 4, 1},
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

Test(ring, records_the_database_it_serves)
{
    const char *name = ring_name("source");
    pl_db_info db = {.n_types = 3, .gene_fingerprint = 0x1122334455667788ULL};
    for (int t = 0; t < 3; t++)
        db.edge_fingerprint[t] = WORD_MIX * (uint64_t)(t + 1);
    pl_ring *p, *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create_for(name, 2, 4096, 0, &db, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    pl_ring_source src;
    pl_ring_source_get(c, &src);
    cr_assert_eq(src.known, 1);
    cr_assert_eq(src.n_types, 3);
    cr_assert_eq(src.gene_fingerprint, db.gene_fingerprint);
    for (int t = 0; t < 3; t++)
        cr_assert_eq(src.edge_fingerprint[t], db.edge_fingerprint[t], "type %d", t);
    /* The consumer's copy, taken at attach: the shared header rewritten
     * later changes nothing. */
    pl__ring_hdr *h = map_header(name);
    h->source.gene_fingerprint = 1;
    pl_ring_source_get(c, &src);
    cr_assert_eq(src.gene_fingerprint, db.gene_fingerprint);
    munmap(h, 4096);
    pl_ring_detach(c);
    pl_ring_destroy(p);
    /* pl_ring_create() records none. */
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    pl_ring_source_get(c, &src);
    cr_assert_eq(src.known, 0);
    cr_assert_eq(src.n_types, 0);
    pl_ring_detach(c);
    pl_ring_destroy(p);
    db.n_types = PL_MAX_TYPES + 1;
    cr_assert_eq(pl_ring_create_for(name, 2, 4096, 0, &db, &p, &err), PL_EUSAGE);
    cr_assert_null(p);
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

Test(ring, next_epoch_goes_on_in_the_same_ring)
{
    const char *name = ring_name("epochs");
    pl_ring *p, *c;
    pl_err err = {0};
    const void *s;
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_next_epoch(p, 3, &err), PL_EUSAGE, "a running epoch");
    /* Epoch one: batches 0..2; epoch two: 3..6, through the same slots. */
    for (uint64_t b = 0, end = 3; b < 7; b++) {
        cr_assert_eq(pl_ring_acquire(p, b, &err), 0, "%s", err.msg);
        fill(pl_ring_slot(p, b), 4096, b);
        pl_ring_publish(p, b, 1);
        cr_assert_eq(pl_ring_next(c, b, &s, &err), 0, "batch %llu: %s",
                     (unsigned long long)b, err.msg);
        cr_assert_eq(check(s, 4096, b), 0, "batch %llu", (unsigned long long)b);
        pl_ring_release(c, b, 1);
        if (b + 1 == end) {
            pl_ring_finish(p, end, NULL);
            cr_assert_eq(pl_ring_next(c, end, &s, &err), 1, "the end of the epoch");
            if (end == 7)
                break;
            cr_assert_eq(pl_ring_next_epoch(p, 2, &err), PL_EUSAGE, "an end before the last");
            cr_assert_eq(pl_ring_next_epoch(p, end = 7, &err), 0, "%s", err.msg);
        }
    }
    pl_ring_stats st;
    pl_ring_stats_get(c, &st);
    cr_assert_eq(st.batches_consumed, 7);
    cr_assert_eq(st.n_batches, 7);
    cr_assert_eq(st.state, PL_RING_DONE);
    pl_ring_finish(p, 7, "later calls change nothing");
    cr_assert_eq(pl_ring_next_epoch(p, 9, &err), 0, "finish on a finished ring changes nothing");
    pl_ring_finish(p, 8, "failed");
    cr_assert_eq(pl_ring_next_epoch(p, 9, &err), PL_EUSAGE, "a failed ring");
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

static _Atomic int interrupted;          /* set once the first wait returned */
static _Atomic uint64_t published_ns;    /* when late_publish published */

/* A producer thread: batch 0 published 100 ms after the consumer's first wait
 * was interrupted (an event, not a time: a loaded machine may deliver the
 * signal late), or after 30 s when it never is. */
static void *late_publish(void *arg)
{
    for (int i = 0; i < 30000 && !atomic_load(&interrupted); i++)
        sleep_ms(1);
    sleep_ms(100);
    atomic_store(&published_ns, now_ns());
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
    atomic_store(&interrupted, 0);
    alarm_in(150, SA_RESTART);
    pthread_t th;
    uint64_t t0 = now_ns();
    cr_assert_eq(pthread_create(&th, NULL, late_publish, p), 0);
    const void *slot = NULL;
    int rc = pl_ring_next(c, 0, &slot, &err);
    uint64_t took = now_ns() - t0;
    atomic_store(&interrupted, 1);
    cr_assert_eq(rc, -EINTR, "%d: %s", rc, err.msg);
    cr_assert_eq(alarms, 1);
    cr_assert_null(slot);
    cr_assert(strstr(err.msg, "interrupted"), "%s", err.msg);
    cr_assert(took >= 100000000u && took < 150000000u + DETECT_NS, "%llu ns",
              (unsigned long long)took);
    /* Nothing was taken: calling again waits on and gets the batch. */
    rc = pl_ring_next(c, 0, &slot, &err);
    uint64_t got = now_ns();
    pthread_join(th, NULL);
    signal(SIGALRM, SIG_DFL);
    cr_assert_eq(rc, 0, "%d: %s", rc, err.msg);
    cr_assert_geq(got, atomic_load(&published_ns), "returned before the batch was published");
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
    /* Wait (without reaping) until the child is a zombie: waitid WNOWAIT. */
    siginfo_t si = {0};
    cr_assert_eq(waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT), 0);
    cr_assert_eq(si.si_pid, z);
    cr_assert(!pl__shm_pid_alive(z, 0), "a zombie is dead");
    reap(z, 1000);
    cr_assert(!pl__shm_pid_alive(z, 0));
}

/* pl__ring_reclaim() callback: counts the listed rings named `ctx`. */
static void count_named(void *ctx, const char *name, uint64_t bytes, int removed,
                        const char *dead)
{
    (void)bytes, (void)removed, (void)dead;
    if (!strcmp(name, (const char *)ctx))
        atomic_fetch_add(&B->count[0], 1);
}

/* In a new PID namespace, where this test's pids name nobody: rc[0] 1 when
 * the test process is seen dead there, rc[1] pl_ring_create()'s code on the
 * test's live ring `name`, rc[3] pl_ring_attach()'s (another consumer),
 * count[0] how often a dry reclaim lists it. */
static int other_namespace_main(const char *name)
{
    if (unshare(CLONE_NEWPID) < 0)
        return 10; /* not root: the test says so */
    pid_t g = fork();
    if (g == 0) {
        atomic_store(&B->rc[0], !pl__shm_pid_alive(atomic_load(&B->rc[2]), 0));
        pl__ring_reclaim(1, count_named, (void *)name);
        pl_ring *r = NULL;
        pl_err err = {0};
        atomic_store(&B->rc[1], pl_ring_create(name, 2, 4096, 0, &r, &err));
        snprintf(B->msg, sizeof B->msg, "%s", err.msg);
        pl_ring_destroy(r);
        r = NULL;
        atomic_store(&B->rc[3], pl_ring_attach(name, 1000, &r, NULL));
        pl_ring_detach(r);
        _exit(0);
    }
    int st = 0;
    return g > 0 && waitpid(g, &st, 0) == g && WIFEXITED(st) ? WEXITSTATUS(st) : 11;
}

Test(ring, another_pid_namespace_sees_live_rings_by_their_lock)
{
    /* A live producer (this process) and a named consumer; in another PID
     * namespace their pids name nobody, yet neither `clean` nor a new ring
     * of the name may take the ring for a stale one, nor another consumer
     * take it over. */
    const char *name = ring_name("ns");
    pl_ring *r, *c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, getpid(), &r, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_ring_attach(name, 1000, &c, &err), 0, "%s", err.msg);
    atomic_store(&B->rc[2], getpid());
    pid_t k = spawn(other_namespace_main, name);
    cr_assert_eq(reap(k, 30000), 0, "unshare(CLONE_NEWPID) needs root (as in CI)");
    cr_assert_eq(atomic_load(&B->rc[0]), 1, "the test's pid is seen dead there");
    cr_assert_eq(atomic_load(&B->count[0]), 0, "reclaim listed a live ring");
    cr_assert_eq(atomic_load(&B->rc[1]), PL_EBUSY, "create: %s", B->msg);
    cr_assert(strstr(B->msg, "in use by producer process"), "%s", B->msg);
    cr_assert_eq(atomic_load(&B->rc[3]), PL_EBUSY, "a second consumer took the ring over");
    cr_assert(exists(name));
    pl_ring_detach(c);
    pl_ring_destroy(r);
    cr_assert(!exists(name));
}

/* Run `pertload ARGS`, capturing stdout. @return the exit status. */
static int run_cli(const char *args, char *out, size_t cap)
{
    const char *bin = getenv("PERTLOAD_BIN");
    cr_assert(bin && *bin, "PERTLOAD_BIN is not set (meson test sets it)");
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

/* `pertload top --once` in a private /dev/shm, its whole output after
 * `what` into the pipe `fd`; 0, or the step that failed. */
static int top_into(int fd, const char *what)
{
    static char out[1 << 14];
    int st = run_cli("top --once --interval 0.05", out, sizeof out);
    char head[64];
    int n = snprintf(head, sizeof head, "== %s (exit %d)\n", what, st);
    pl_test_send(fd, head, (size_t)n);
    pl_test_send(fd, out, strlen(out));
    return st == 0 ? 0 : 1;
}

/* The child of top_states: /dev/shm its own (an empty tmpfs), then a stale
 * segment, a failed and a finished ring in it, `top` run after each step. */
static int top_states_child(int fd, const char *failed, const char *done, const char *dead)
{
    const char *what;
    int e = pl_test_small_fs("/dev/shm", "8m", &what);
    if (e) {
        dprintf(fd, "== %s: %s\n", what, strerror(e));
        return 2;
    }
    if (top_into(fd, "empty"))
        return 3;
    pid_t z = fork(); /* a producer that dies, its segment left behind */
    if (z == 0) {
        pl_ring *r;
        pl_err err = {0};
        _exit(pl_ring_create(dead, 2, 4096, 0, &r, &err) == 0 ? 0 : 1);
    }
    int zs;
    if (z < 0 || waitpid(z, &zs, 0) != z || !WIFEXITED(zs) || WEXITSTATUS(zs) != 0)
        return 4;
    pl_ring *f, *d;
    pl_err err = {0};
    if (pl_ring_create(failed, 3, 8192, 0, &f, &err) < 0 ||
        pl_ring_create(done, 2, 4096, 0, &d, &err) < 0) {
        dprintf(fd, "== create: %s\n", err.msg);
        return 5;
    }
    pl_ring_set_total(f, 9);
    pl_ring_finish(f, 9, "the producer failed on purpose");
    if (pl_ring_acquire(d, 0, &err) < 0)
        return 6;
    pl_ring_publish(d, 0, 5);
    pl_ring_finish(d, 1, NULL);
    int rc = top_into(fd, "rings");
    pl_ring_destroy(f);
    pl_ring_destroy(d);
    return rc ? 7 : 0;
}

/* `pertload top` where this test alone makes rings (a /dev/shm of its own in
 * a private mount namespace): "no pertload rings running" on an empty one;
 * then a failed ring, a finished one and the count of stale segments of dead
 * producers, each as the ring's calls left it. */
Test(ring, top_states)
{
    const char *failed = ring_name("topfail"), *done = ring_name("topdone"),
               *dead = ring_name("topdead");
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0)
        _exit(top_states_child(fd, failed, done, dead));
    static char out[1 << 15];
    size_t n = pl_test_recv(fd, out, sizeof out - 1);
    out[n] = '\0';
    close(fd);
    int st = reap(pid, 30000);
    cr_assert_eq(st, 0, "child step %d; output:\n%s", st, out);
    const char *rings = strstr(out, "== rings (exit 0)\n");
    cr_assert_not_null(rings, "%s", out);
    cr_assert(!strncmp(out, "== empty (exit 0)\nno pertload rings running\n== rings",
                       (size_t)(rings - out) + 8), "%s", out);
    const char *lf = strstr(rings, failed), *ld = strstr(rings, done);
    cr_assert(lf && ld, "%s", rings);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(lf, "\n"), lf);
    cr_assert(strstr(line, " 3 x 8.0 KiB ") && strstr(line, " 0/9 ") &&
                  !strcmp(line + strlen(line) - 8, "  failed"), "%s", line);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(ld, "\n"), ld);
    cr_assert(strstr(line, " 2 x 4.0 KiB ") && strstr(line, " 0/1 ") &&
                  !strcmp(line + strlen(line) - 6, "  done"), "%s", line);
    cr_assert_null(strstr(rings, dead), "a dead producer's ring is not listed: %s", rings);
    cr_assert_not_null(strstr(rings, "(1 stale segment of dead producers in /dev/shm)\n"),
                       "%s", rings);
}

/* Whether process `pid` sleeps (state S in /proc/PID/stat). */
static int sleeping(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *end = strrchr(buf, ')'); /* the state follows the command name */
    return end && end[1] == ' ' && end[2] == 'S';
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
    pl_ring *c = attach_ok(name, 5000);
    pl_err err = {0};
    const void *slot;
    cr_assert_eq(pl_ring_next(c, 0, &slot, &err), 0, "%s", err.msg);
    /* The producer sleeps in its wait for the slot: past its publish, the
     * only sleep left to it (state S in /proc/PID/stat). */
    for (int i = 0; !sleeping(p); i++) {
        cr_assert_lt(i, 30000, "the producer never waited for the slot");
        sleep_ms(1);
    }
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
