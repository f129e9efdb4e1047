/* The harness of the ring tests (ring_fx.h). */
#include "ring_fx.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t kids[MAX_KIDS];
int n_kids;
char names[MAX_NAMES][PL_RING_NAME_MAX + 1];
int n_names;
box *B;

void cleanup(void)
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

void setup(void)
{
    B = mmap(NULL, sizeof *B, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (B == MAP_FAILED)
        B = NULL;
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* A ring name unique to this test process, removed by cleanup(). */
const char *ring_name(const char *tag)
{
    cr_assert_lt(n_names, MAX_NAMES);
    snprintf(names[n_names], sizeof names[0], "t%d-%s", (int)getpid(), tag);
    return names[n_names++];
}

void shm_file(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/dev/shm/pertload-%s", name);
}

int exists(const char *name)
{
    char path[128];
    shm_file(path, sizeof path, name);
    return access(path, F_OK) == 0;
}

/* Run fn(arg) in a child process that exits with its return value. */
pid_t spawn(int (*fn)(const char *), const char *arg)
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
int reap(pid_t pid, int ms)
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
int await_stage(int stage, int ms)
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
void fill(void *slot, uint64_t bytes, uint64_t b)
{
    uint64_t *w = slot;
    for (uint64_t i = 0; i < bytes / 8; i++)
        w[i] = b * WORD_MIX + i;
}

int check(const void *slot, uint64_t bytes, uint64_t b)
{
    const uint64_t *w = slot;
    for (uint64_t i = 0; i < bytes / 8; i++)
        if (w[i] != b * WORD_MIX + i)
            return -1;
    return 0;
}

pl__ring_hdr *map_header(const char *name)
{
    char shm[128];
    snprintf(shm, sizeof shm, "/pertload-%s", name);
    int fd = shm_open(shm, O_RDWR, 0);
    cr_assert_geq(fd, 0);
    pl__ring_hdr *h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    cr_assert_neq(h, MAP_FAILED);
    return h;
}

pl_ring *attach_ok(const char *name, int ms)
{
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(name, ms, &r, &err), 0, "%s", err.msg);
    return r;
}

const void *take_ok(pl_ring *r, uint64_t b, uint64_t bytes)
{
    const void *slot;
    pl_err err = {0};
    cr_assert_eq(pl_ring_next(r, b, &slot, &err), 0, "%s", err.msg);
    cr_assert_eq(check(slot, bytes, b), 0, "batch %llu", (unsigned long long)b);
    return slot;
}

/* A child's last act: wait to be killed. */
_Noreturn void idle_forever(void)
{
    for (;;)
        pause();
}

uint32_t samples_of(uint64_t b) { return (uint32_t)(b % 7 + 1); }

/* ------------------------------------------------------- shared child bodies */


/* Producer of RT_BATCHES batches into a new ring; single-threaded. */
int producer_main(const char *name)
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
int consumer_main(const char *name)
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
int idle_producer_main(const char *name)
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

int idle_main(const char *unused)
{
    (void)unused;
    idle_forever();
}

/* Attach, take and release batch 0 (stage 2), then wait for batch 1, which
 * never comes: its return code in rc[1], the time in t_ns[1], the message. */
int blocked_consumer_main(const char *name)
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
