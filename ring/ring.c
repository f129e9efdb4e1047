/* Shared-memory ring between one producer process and one consumer process.
 * The segment pl__ring_layout and who writes which word are in ring_layout.h.
 *
 * Waiting is a futex wait on the word that will change (a slot's ready word
 * for the consumer, consumed_futex for the producers), in slices of SLICE_NS:
 * between slices the waiter checks that its peer process still lives, so a
 * dead peer is noticed within about one slice and nobody spins or hangs.
 * Time spent waiting is added to the header's wait counters slice by slice, so
 * that `pertload top` sees a wait in progress too. */
#include "ring_layout.h"
#include "header.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/shm.h"

#define WHAT "ring"     /* segment kind in messages */
#define SLICE_NS 100000000LL /* futex wait slice between two checks of the peer */
#define APPEAR_POLL_MS 100   /* attach: longest sleep between looks at /dev/shm */

/* Wall time during which at least one thread of this process waits, added to a
 * counter of the shared header. Producer threads share one clock, so the
 * counter never grows faster than the wall clock. */
typedef struct wait_clock {
    pthread_mutex_t mu;
    uint32_t waiters;
    uint64_t mark_ns;        /* time up to which `total` is accounted */
    _Atomic uint64_t *total; /* producer_wait_ns or consumer_wait_ns */
} wait_clock;

struct pl_ring {
    pl__ring_hdr *h;
    unsigned char *slots;    /* slot 0 */
    size_t map_bytes;
    /* Private copies of the validated sizes; the shared ones are never re-read. */
    uint64_t slot_bytes, stride;
    uint32_t n_slots;
    int fd;
    int producer;            /* 1: created by this process */
    int32_t producer_pid;    /* consumer side: the process to watch */
    uint64_t producer_start;
    wait_clock clock;
    pl_ring_source source;   /* the database served; the consumer's copy at attach */
    char name[PL_RING_NAME_MAX + 1];
};

/* ------------------------------------------------------------------ helpers */

static void clock_flush(wait_clock *c, uint64_t now)
{
    if (now > c->mark_ns)
        atomic_fetch_add_explicit(c->total, now - c->mark_ns, memory_order_relaxed);
    c->mark_ns = now;
}

/* A thread starts waiting. */
static void clock_enter(wait_clock *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t now = pl__shm_now_ns(CLOCK_MONOTONIC);
    if (c->waiters++ > 0)
        clock_flush(c, now);
    else
        c->mark_ns = now;
    pthread_mutex_unlock(&c->mu);
}

/* A waiting thread ends a slice. @return the current monotonic time. */
static uint64_t clock_tick(wait_clock *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t now = pl__shm_now_ns(CLOCK_MONOTONIC);
    clock_flush(c, now);
    pthread_mutex_unlock(&c->mu);
    return now;
}

/* A thread stops waiting. */
static void clock_leave(wait_clock *c)
{
    pthread_mutex_lock(&c->mu);
    clock_flush(c, pl__shm_now_ns(CLOCK_MONOTONIC));
    c->waiters--;
    pthread_mutex_unlock(&c->mu);
}

/* An existing segment blocks pl_ring_create(): remove it when it is stale.
 * A live producer holds its liveness lock (src/core/shm.h), in whatever PID
 * namespace it runs; its pid is only named in the message.
 * @return 0 when the name may be tried again, PL_EBUSY, or -errno. */
static int clear_stale(const char *name, pl_err *err)
{
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    pl__ring_names(name, shm, path, sizeof shm);
    int fd;
    struct stat st;
    int rc = pl__shm_open_owned(shm, path, O_RDWR, WHAT, &fd, &st, err);
    if (rc != 0)
        return rc < 0 ? rc : 0; /* gone meanwhile */
    /* A creator holds the flock until its header is complete. */
    if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
        close(fd);
        return pl__err(err, PL_EBUSY, "ring '%s' is being created by another process",
                       name);
    }
    int held = pl__shm_held(fd, PL__SHM_LOCK_OWNER + 1);
    if (held != 0) {
        int32_t pid = 0;
        const pl__ring_hdr *h = (uint64_t)st.st_size >= PL__RING_PAGE
                                    ? pl__ring_map_header_ro(fd)
                                    : NULL;
        if (h) {
            pid = h->producer_pid;
            munmap((void *)h, PL__RING_PAGE);
        }
        close(fd);
        return held < 0 ? pl__err(err, held, "cannot lock %s: %s", path, strerror(-held))
                        : pl__err(err, PL_EBUSY, "ring '%s' is in use by producer process %d",
                                  name, (int)pid);
    }
    /* Unlink only the file inspected, not one a racing creator just made. */
    int e = -pl__shm_unlink_same(shm, path, &st);
    if (e) {
        close(fd);
        return pl__err(err, -e, "cannot remove stale %s: %s", path, strerror(e));
    }
    close(fd);
    return 0;
}

/* ----------------------------------------------------------------- producer */

PL_API uint64_t pl_ring_bytes(uint32_t n_slots, uint64_t slot_bytes)
{
    if (n_slots > PL__RING_MAX_SLOTS || slot_bytes > PL_RING_MAX_BYTES)
        return UINT64_MAX;
    uint64_t stride = (slot_bytes + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE;
    return pl__ring_header_bytes(n_slots) + (uint64_t)n_slots * stride; /* < 2^16 * 2^35 */
}

PL_API int pl_ring_create(const char *name, uint32_t n_slots, uint64_t slot_bytes,
                          int32_t consumer_pid, pl_ring **out, pl_err *err)
{
    return pl_ring_create_for(name, n_slots, slot_bytes, consumer_pid, NULL, out, err);
}

PL_API int pl_ring_create_for(const char *name, uint32_t n_slots, uint64_t slot_bytes,
                              int32_t consumer_pid, const pl_db_info *db, pl_ring **out,
                              pl_err *err)
{
    *out = NULL;
    PL_TRY(pl__shm_check_name(name, PL_RING_NAME_MAX, WHAT, err));
    PL_FAIL_IF(n_slots < 1 || n_slots > PL__RING_MAX_SLOTS, err, PL_EUSAGE,
               "ring '%s': %u slots; between 1 and %u are allowed", name, n_slots,
               PL__RING_MAX_SLOTS);
    PL_FAIL_IF(slot_bytes < 1, err, PL_EUSAGE, "ring '%s': slot size is 0", name);
    PL_FAIL_IF(consumer_pid < 0, err, PL_EUSAGE, "ring '%s': consumer pid %d", name,
               (int)consumer_pid);
    PL_FAIL_IF(db && db->n_types > PL_MAX_TYPES, err, PL_EUSAGE,
               "ring '%s': %u edge types; at most %d", name, (unsigned)db->n_types,
               PL_MAX_TYPES);
    uint64_t hdr_bytes = pl__ring_header_bytes(n_slots);
    uint64_t stride = (slot_bytes + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE;
    uint64_t total = pl_ring_bytes(n_slots, slot_bytes);
    PL_FAIL_IF(total > PL_RING_MAX_BYTES, err, PL_EUSAGE,
               "ring '%s' of %u slots x %llu bytes needs %s%llu bytes, over the limit of "
               "%llu bytes", name, n_slots, (unsigned long long)slot_bytes,
               total == UINT64_MAX ? "over " : "",
               (unsigned long long)(total == UINT64_MAX ? PL_RING_MAX_BYTES : total),
               (unsigned long long)PL_RING_MAX_BYTES);
    char what[PL_RING_NAME_MAX + 64];
    snprintf(what, sizeof what, "ring '%s' of %u slots x %llu bytes", name, n_slots,
             (unsigned long long)slot_bytes);
    PL_TRY(pl__shm_check_space(total, what, err));

    pl_ring *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "out of memory");
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    pl__ring_names(name, shm, path, sizeof shm);
    int fd = -1, rc = 0;
    for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
        fd = pl__shm_create(shm, path, err);
        if (fd >= 0)
            break;
        if (fd != -EEXIST) {
            rc = fd;
            break;
        }
        rc = clear_stale(name, err);
        if (rc < 0)
            break;
    }
    if (fd < 0) {
        free(r);
        return rc < 0 ? rc
                      : pl__err(err, PL_EBUSY, "%s keeps reappearing; another process "
                                               "creates rings of this name", path);
    }
    /* Held until the header is complete: clear_stale() in another process must
     * not take a half-built segment for a stale one. */
    flock(fd, LOCK_EX);
    void *base = MAP_FAILED;
    /* Held for the ring's lifetime (r->fd): reclaimers leave it alone. */
    rc = pl__shm_hold(fd, PL__SHM_LOCK_OWNER);
    if (rc < 0) {
        pl__err(err, rc, "cannot lock %s: %s", path, strerror(-rc));
        goto fail;
    }
    rc = pl__shm_reserve(fd, path, total, err);
    if (rc < 0)
        goto fail;
    base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        rc = pl__err(err, -errno, "cannot map %s (%llu bytes): %s", path,
                     (unsigned long long)total, strerror(errno));
        goto fail;
    }
    pl__ring_hdr *h = base; /* a new segment reads as zeros */
    memcpy(h->magic, PL__RING_MAGIC, 8);
    h->version = PL__RING_VERSION;
    h->n_slots = n_slots;
    h->slot_bytes = slot_bytes;
    h->slot_stride = stride;
    h->header_bytes = hdr_bytes;
    h->total_bytes = total;
    h->fixed_bytes = offsetof(pl__ring_hdr, ready);
    h->created_ns = pl__shm_now_ns(CLOCK_REALTIME);
    h->producer_pid = (int32_t)getpid();
    h->producer_start = pl__shm_pid_start(h->producer_pid);
    memcpy(h->name, name, strlen(name) + 1);
    if (db) {
        h->source.known = 1;
        h->source.gene_fingerprint = db->gene_fingerprint;
        h->source.n_types = (uint32_t)db->n_types;
        memcpy(h->source.edge_fingerprint, db->edge_fingerprint,
               db->n_types * sizeof db->edge_fingerprint[0]);
        h->source.db_fingerprint = db->db_fingerprint;
    }
    atomic_store_explicit(&h->consumer_start, pl__shm_pid_start(consumer_pid),
                          memory_order_relaxed);
    atomic_store_explicit(&h->consumer_pid, consumer_pid, memory_order_relaxed);
    atomic_store_explicit(&h->state, PL_RING_RUNNING, memory_order_relaxed);
    /* release: every field above is visible to a process that loads init == 1 */
    atomic_store_explicit(&h->init, 1, memory_order_release);
    pl__shm_futex_wake(&h->init);
    flock(fd, LOCK_UN);

    r->h = h;
    r->slots = (unsigned char *)base + hdr_bytes;
    r->map_bytes = total;
    r->slot_bytes = slot_bytes;
    r->stride = stride;
    r->n_slots = n_slots;
    r->fd = fd;
    r->producer = 1;
    r->producer_pid = h->producer_pid;
    r->producer_start = h->producer_start;
    r->source = h->source;
    pthread_mutex_init(&r->clock.mu, NULL);
    r->clock.total = &h->producer_wait_ns;
    memcpy(r->name, name, strlen(name) + 1);
    *out = r;
    return 0;

fail:
    if (base != MAP_FAILED)
        munmap(base, total);
    shm_unlink(shm);
    close(fd);
    free(r);
    return rc;
}

PL_API void *pl_ring_slot(pl_ring *r, uint64_t batch)
{
    return r->slots + (batch % r->n_slots) * r->stride;
}

/* Producer: is the consumer still there? @return 0 or PL_EPEER. */
static int check_consumer(pl_ring *r, pl_err *err)
{
    pl__ring_hdr *h = r->h;
    PL_FAIL_IF(atomic_load_explicit(&h->consumer_gone, memory_order_acquire), err,
               PL_EPEER, "consumer of ring '%s' detached", r->name);
    int32_t pid = atomic_load_explicit(&h->consumer_pid, memory_order_acquire);
    uint64_t start = atomic_load_explicit(&h->consumer_start, memory_order_acquire);
    PL_FAIL_IF(pid != 0 && !pl__shm_pid_alive(pid, start), err, PL_EPEER,
               "consumer process %d died (ring '%s')", (int)pid, r->name);
    return 0;
}

PL_API int pl_ring_acquire(pl_ring *r, uint64_t batch, pl_err *err)
{
    pl__ring_hdr *h = r->h;
    int waiting = 0, rc = 0;
    uint64_t checked = 0;
    for (;;) {
        /* Load the futex word before the count (both acquire; the consumer stores
         * them in the opposite order, with release): a release between the two
         * loads changes the word, so the wait below returns at once instead of
         * missing the wake. The acquire on the count also orders the consumer's
         * reads of the old batch before our writes into the slot. */
        uint32_t word = atomic_load_explicit(&h->consumed_futex, memory_order_acquire);
        uint64_t consumed = atomic_load_explicit(&h->batches_consumed, memory_order_acquire);
        if (batch < consumed + r->n_slots)
            break;
        if (!waiting) {
            clock_enter(&r->clock);
            waiting = 1;
            checked = pl__shm_now_ns(CLOCK_MONOTONIC);
        }
        pl__shm_futex_wait(&h->consumed_futex, word, SLICE_NS);
        uint64_t now = clock_tick(&r->clock);
        if (now - checked >= SLICE_NS ||
            atomic_load_explicit(&h->consumer_gone, memory_order_relaxed)) {
            checked = now;
            if (check_consumer(r, NULL) < 0) {
                /* The consumer releases before it detaches or exits: once it is
                 * seen gone (acquire), the count holds its last release, which
                 * may have freed this slot (a consumer that drained the epoch
                 * and left while we slept is no failure). */
                if (batch < atomic_load_explicit(&h->batches_consumed, memory_order_acquire) +
                                r->n_slots)
                    break;
                rc = check_consumer(r, err);
                if (rc < 0)
                    break;
            }
        }
    }
    if (waiting)
        clock_leave(&r->clock);
    /* acquire: pairs with the release store that published the slot's
     * previous batch, maybe from another thread of this process. The
     * consumer's release of that batch orders it before our writes already,
     * but through the consumer's process, where ThreadSanitizer cannot follow
     * (it reported this reuse as a race between two serve workers); the load
     * states the order between our own threads where the tool sees it. */
    if (rc == 0 && batch >= r->n_slots)
        (void)atomic_load_explicit(&h->ready[batch % r->n_slots], memory_order_acquire);
    return rc;
}

PL_API void pl_ring_publish(pl_ring *r, uint64_t batch, uint32_t n_samples)
{
    pl__ring_hdr *h = r->h;
    _Atomic uint32_t *ready = &h->ready[batch % r->n_slots];
    atomic_fetch_add_explicit(&h->samples_produced, n_samples, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->batches_produced, 1, memory_order_relaxed);
    /* release: the slot's bytes (and the counters) written before this store
     * are visible to the consumer once its acquire load sees the new value */
    atomic_store_explicit(ready, (uint32_t)(batch + 1), memory_order_release);
    pl__shm_futex_wake(ready);
}

PL_API void pl_ring_set_total(pl_ring *r, uint64_t n_batches)
{
    atomic_store_explicit(&r->h->n_batches, n_batches, memory_order_release);
}

/* Wake the consumer wherever it sleeps: it records the slot it waits on; if it
 * goes to sleep just after this wake, its next slice sees the new state. */
static void wake_consumer(pl_ring *r)
{
    uint32_t s = atomic_load_explicit(&r->h->consumer_wait_slot, memory_order_relaxed);
    pl__shm_futex_wake(&r->h->ready[s % r->n_slots]);
}

/* Move RUNNING -> DONE or FAILED (with `msg`); later calls change nothing. */
static void end_epoch(pl_ring *r, uint64_t n_batches, int set_total, const char *msg)
{
    pl__ring_hdr *h = r->h;
    if (atomic_load_explicit(&h->state, memory_order_relaxed) != PL_RING_RUNNING)
        return;
    if (set_total)
        atomic_store_explicit(&h->n_batches, n_batches, memory_order_relaxed);
    if (msg) /* shortened in the middle, so that the reason at the end survives */
        pl__msg_fit(h->errmsg, sizeof h->errmsg, msg, strlen(msg));
    /* release: n_batches and errmsg are visible to whoever sees the new state */
    atomic_store_explicit(&h->state, msg ? PL_RING_FAILED : PL_RING_DONE,
                          memory_order_release);
    wake_consumer(r);
}

PL_API void pl_ring_finish(pl_ring *r, uint64_t n_batches, const char *msg)
{
    end_epoch(r, n_batches, 1, msg);
}

PL_API int pl_ring_next_epoch(pl_ring *r, uint64_t n_batches, pl_err *err)
{
    pl__ring_hdr *h = r->h;
    uint64_t end = atomic_load_explicit(&h->n_batches, memory_order_relaxed);
    PL_FAIL_IF(atomic_load_explicit(&h->state, memory_order_relaxed) != PL_RING_DONE ||
                   n_batches < end,
               err, PL_EUSAGE, "ring '%s': another epoch needs a finished one (%llu batches)",
               r->name, (unsigned long long)n_batches);
    atomic_store_explicit(&h->n_batches, n_batches, memory_order_relaxed);
    /* release: the new end is visible to whoever sees RUNNING */
    atomic_store_explicit(&h->state, PL_RING_RUNNING, memory_order_release);
    return 0;
}

/* ----------------------------------------------------------------- consumer */

/* Map an existing, initialised segment and check its header.
 * @return 0; 1 when it is not there or not sized yet; 2 when it is not
 * initialised yet (after waiting up to a slice for that); or < 0. */
static int open_existing(const char *name, pl_ring *r, pl_err *err)
{
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    pl__ring_names(name, shm, path, sizeof shm);
    int fd;
    struct stat st;
    int rc = pl__shm_open_owned(shm, path, O_RDWR, WHAT, &fd, &st, err);
    if (rc != 0)
        return rc;
    if ((uint64_t)st.st_size < PL__RING_PAGE) {
        close(fd);
        return 1; /* not sized yet */
    }
    const pl__ring_hdr *h = pl__ring_map_header_ro(fd);
    if (!h) {
        int e = errno;
        close(fd);
        return pl__err(err, -e, "cannot map %s: %s", path, strerror(e));
    }
    /* acquire: pairs with the creator's release store of init */
    if (atomic_load_explicit(&h->init, memory_order_acquire) != 1) {
        /* Sleep until the creator wakes init or one slice passes. */
        pl__shm_futex_wait((_Atomic uint32_t *)&h->init, 0, SLICE_NS);
        munmap((void *)h, PL__RING_PAGE);
        close(fd);
        return 2;
    }
    pl__ring_layout l;
    char why[128];
    int bad = pl__ring_check_header(h, (uint64_t)st.st_size, name, &l, why, sizeof why);
    munmap((void *)h, PL__RING_PAGE);
    if (bad) {
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: malformed ring header: %s", path, why);
    }
    /* Held until pl_ring_detach() (r->fd): reclaimers leave the ring alone. */
    rc = pl__shm_hold(fd, PL__SHM_LOCK_PEER);
    if (rc < 0) {
        close(fd);
        return pl__err(err, rc, "cannot lock %s: %s", path, strerror(-rc));
    }
    void *base = mmap(NULL, l.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        close(fd);
        return pl__err(err, -e, "cannot map %s (%llu bytes): %s", path,
                       (unsigned long long)l.total_bytes, strerror(e));
    }
    r->h = base;
    r->slots = (unsigned char *)base + l.header_bytes;
    r->map_bytes = l.total_bytes;
    r->slot_bytes = l.slot_bytes;
    r->stride = l.stride;
    r->n_slots = l.n_slots;
    r->fd = fd;
    r->producer_pid = l.producer_pid;
    r->producer_start = l.producer_start;
    r->source = l.source;
    return 0;
}

PL_API int pl_ring_attach(const char *name, int timeout_ms, pl_ring **out, pl_err *err)
{
    *out = NULL;
    PL_TRY(pl__shm_check_name(name, PL_RING_NAME_MAX, WHAT, err));
    pl_ring *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "out of memory");
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
                                       : pl__shm_now_ns(CLOCK_MONOTONIC) +
                                             (uint64_t)timeout_ms * 1000000u;
    /* Watch /dev/shm before the first look, so that no creation is missed. */
    int ifd = pl__shm_watch();
    int rc;
    for (;;) {
        rc = open_existing(name, r, err);
        if (rc <= 0)
            break;
        if (pl__shm_now_ns(CLOCK_MONOTONIC) >= deadline) {
            rc = pl__err(err, PL_ETIMEDOUT, "no ring '%s' ready in %s/%s%s within %d ms",
                         name, PL__SHM_DIR, PL__RING_PREFIX, name, timeout_ms);
            break;
        }
        if (rc == 1)
            pl__shm_wait_appear(ifd, deadline, APPEAR_POLL_MS);
    }
    if (ifd >= 0)
        close(ifd);
    if (rc < 0) {
        free(r);
        return rc;
    }
    pl__ring_hdr *h = r->h;
    int32_t self = (int32_t)getpid();
    int32_t cur = atomic_load_explicit(&h->consumer_pid, memory_order_acquire);
    for (;;) {
        /* A live consumer holds its byte of the liveness lock, in whatever
         * PID namespace it runs (its pid may name nobody here). */
        if (cur != 0 && cur != self &&
            !atomic_load_explicit(&h->consumer_gone, memory_order_relaxed) &&
            (pl__shm_role_held(r->fd, PL__SHM_LOCK_PEER) != 0 ||
             pl__shm_pid_alive(cur, atomic_load_explicit(&h->consumer_start,
                                                          memory_order_relaxed)))) {
            munmap(h, r->map_bytes);
            close(r->fd);
            free(r);
            return pl__err(err, PL_EBUSY, "ring '%s' already has consumer process %d", name,
                           (int)cur);
        }
        /* Clear the old consumer's start time first: a producer that sees our pid
         * then sees 0 (unknown, tolerated) or ours, never the old one. */
        atomic_store_explicit(&h->consumer_start, 0, memory_order_release);
        if (atomic_compare_exchange_strong(&h->consumer_pid, &cur, self))
            break;
    }
    atomic_store_explicit(&h->consumer_start, pl__shm_pid_start(self), memory_order_release);
    atomic_store_explicit(&h->consumer_gone, 0, memory_order_release);
    pthread_mutex_init(&r->clock.mu, NULL);
    r->clock.total = &h->consumer_wait_ns;
    memcpy(r->name, name, strlen(name) + 1);
    *out = r;
    return 0;
}

/* Consumer: what the header says about batch `batch` without waiting.
 * @return 0 published, 1 end of epoch, 2 not yet, or < 0. */
static int look(pl_ring *r, uint64_t batch, pl_err *err)
{
    pl__ring_hdr *h = r->h;
    /* acquire: pairs with the release store in pl_ring_publish(); the slot's
     * bytes may be read once the word holds batch + 1 */
    if (atomic_load_explicit(&h->ready[batch % r->n_slots], memory_order_acquire) ==
        (uint32_t)(batch + 1))
        return 0;
    /* acquire: pairs with the release store of state in end_epoch() */
    uint32_t state = atomic_load_explicit(&h->state, memory_order_acquire);
    if (state == PL_RING_RUNNING)
        return 2;
    if (state == PL_RING_DONE) {
        uint64_t n = atomic_load_explicit(&h->n_batches, memory_order_relaxed);
        return batch >= n ? 1 : 2;
    }
    if (state == PL_RING_FAILED) {
        char msg[PL__RING_MSG_MAX];
        memcpy(msg, h->errmsg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        return pl__err(err, PL_EPEER, "producer of ring '%s' failed: %s", r->name, msg);
    }
    return pl__err(err, PL_ECORRUPT, "ring '%s': malformed header: state %u", r->name,
                   state);
}

PL_API int pl_ring_next(pl_ring *r, uint64_t batch, const void **slot, pl_err *err)
{
    return pl_ring_next_within(r, batch, -1, slot, err);
}

PL_API int pl_ring_next_within(pl_ring *r, uint64_t batch, int64_t max_ns, const void **slot,
                               pl_err *err)
{
    pl__ring_hdr *h = r->h;
    *slot = NULL;
    /* Only this process writes the count. */
    uint64_t consumed = atomic_load_explicit(&h->batches_consumed, memory_order_relaxed);
    PL_FAIL_IF(batch < consumed, err, PL_EUSAGE,
               "ring '%s': batch %llu was already released", r->name,
               (unsigned long long)batch);
    PL_FAIL_IF(batch - consumed >= r->n_slots, err, PL_EUSAGE,
               "ring '%s': batch %llu is %u or more batches after the oldest unreleased "
               "one (%llu); release batches first", r->name, (unsigned long long)batch,
               r->n_slots, (unsigned long long)consumed);
    uint32_t s = (uint32_t)(batch % r->n_slots);
    int waiting = 0, rc;
    uint64_t checked = 0, began = 0;
    for (;;) {
        uint32_t word = atomic_load_explicit(&h->ready[s], memory_order_relaxed);
        rc = look(r, batch, err);
        if (rc != 2)
            break;
        if (!waiting) {
            clock_enter(&r->clock);
            waiting = 1;
            began = checked = pl__shm_now_ns(CLOCK_MONOTONIC);
            atomic_store_explicit(&h->consumer_wait_slot, s, memory_order_relaxed);
        } else if (max_ns >= 0 && checked - began >= (uint64_t)max_ns) {
            break; /* rc == 2: not yet */
        }
        /* `word` was loaded before look(): a publish since then changed it and
         * the wait returns at once. */
        int woke = pl__shm_futex_wait(&h->ready[s], word, SLICE_NS);
        uint64_t now = clock_tick(&r->clock);
        if (woke == -EINTR) {
            /* A signal handler ran (futex waits with a timeout are not restarted,
             * SA_RESTART or not): return, so that the caller can act on it
             * (Ctrl-C, a SIGTERM handler) even while a stopped producer publishes
             * nothing; calling again goes on waiting. */
            rc = look(r, batch, err);
            if (rc == 2)
                rc = pl__err(err, -EINTR, "ring '%s': wait for batch %llu interrupted by a "
                             "signal", r->name, (unsigned long long)batch);
            break;
        }
        if (now - checked >= SLICE_NS) {
            checked = now;
            if (!pl__shm_pid_alive(r->producer_pid, r->producer_start)) {
                /* Whatever the producer stored came before its death: look once
                 * more before giving up. */
                rc = look(r, batch, err);
                if (rc == 2)
                    rc = pl__err(err, PL_EPEER, "producer process %d died (ring '%s')",
                                 (int)r->producer_pid, r->name);
                break;
            }
        }
    }
    if (waiting)
        clock_leave(&r->clock);
    if (rc == 0)
        *slot = r->slots + (uint64_t)s * r->stride;
    return rc;
}

PL_API void pl_ring_release(pl_ring *r, uint64_t batch, uint32_t n_samples)
{
    pl__ring_hdr *h = r->h;
    uint64_t consumed = atomic_load_explicit(&h->batches_consumed, memory_order_relaxed);
    if (batch < consumed)
        return; /* already released */
    atomic_fetch_add_explicit(&h->samples_consumed, n_samples, memory_order_relaxed);
    /* release (count first, then the futex word; pl_ring_acquire loads them in the
     * opposite order): our reads of the released slots happen before a producer
     * that sees the new count writes into them */
    atomic_store_explicit(&h->batches_consumed, batch + 1, memory_order_release);
    atomic_store_explicit(&h->consumed_futex, (uint32_t)(batch + 1), memory_order_release);
    pl__shm_futex_wake(&h->consumed_futex);
}

/* ------------------------------------------------------------- both sides */

PL_API void pl_ring_destroy(pl_ring *r)
{
    if (!r)
        return;
    if (!r->producer) {
        pl_ring_detach(r);
        return;
    }
    end_epoch(r, 0, 0, "the producer closed the ring before the end of the epoch");
    munmap(r->h, r->map_bytes);
    /* Remove the name only while it still names our segment. */
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    pl__ring_names(r->name, shm, path, sizeof shm);
    struct stat mine;
    if (fstat(r->fd, &mine) == 0)
        pl__shm_unlink_same(shm, path, &mine);
    close(r->fd);
    pthread_mutex_destroy(&r->clock.mu);
    free(r);
}

PL_API void pl_ring_detach(pl_ring *r)
{
    if (!r)
        return;
    if (r->producer) {
        pl_ring_destroy(r);
        return;
    }
    /* release: the consumer's last reads come before the producer sees it gone */
    atomic_store_explicit(&r->h->consumer_gone, 1, memory_order_release);
    pl__shm_futex_wake(&r->h->consumed_futex);
    munmap(r->h, r->map_bytes);
    close(r->fd);
    pthread_mutex_destroy(&r->clock.mu);
    free(r);
}

PL_API void pl_ring_source_get(const pl_ring *r, pl_ring_source *out)
{
    *out = r->source;
}

PL_API void pl_ring_stats_get(const pl_ring *r, pl_ring_stats *st)
{
    pl__ring_layout l = {
        .n_slots = r->n_slots,
        .slot_bytes = r->slot_bytes,
        .stride = r->stride,
        .total_bytes = r->map_bytes,
        .producer_pid = r->producer_pid,
    };
    pl__ring_fill_stats(r->h, &l, st);
    memcpy(st->name, r->name, sizeof st->name);
}
