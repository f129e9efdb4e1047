/* Shared-memory ring between one producer process and one consumer process.
 * The segment layout and who writes which word are in ring_layout.h.
 *
 * Waiting is a futex wait on the word that will change (a slot's ready word
 * for the consumer, consumed_futex for the producers), in slices of SLICE_NS:
 * between slices the waiter checks that its peer process still lives, so a
 * dead peer is noticed within about one slice and nobody spins or hangs.
 * Time spent waiting is added to the header's wait counters slice by slice, so
 * that `pertload top` sees a wait in progress too. */
#include "ring_layout.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "src/core/error.h"

#define SHM_DIR "/dev/shm"
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
    char name[PL_RING_NAME_MAX + 1];
};

/* ------------------------------------------------------------------ helpers */

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* FUTEX_WAIT and FUTEX_WAKE, not the _PRIVATE variants: the words live in a
 * mapping shared between processes. @return 0 when woken, -ETIMEDOUT,
 * -EAGAIN (the word no longer held `expect`) or -EINTR. */
static int futex_wait(_Atomic uint32_t *word, uint32_t expect, long long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &ts, NULL, 0);
    return rc < 0 ? -errno : 0;
}

static void futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

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
    uint64_t now = now_ns(CLOCK_MONOTONIC);
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
    uint64_t now = now_ns(CLOCK_MONOTONIC);
    clock_flush(c, now);
    pthread_mutex_unlock(&c->mu);
    return now;
}

/* A thread stops waiting. */
static void clock_leave(wait_clock *c)
{
    pthread_mutex_lock(&c->mu);
    clock_flush(c, now_ns(CLOCK_MONOTONIC));
    c->waiters--;
    pthread_mutex_unlock(&c->mu);
}

/* Read the state letter and start time (field 22) of /proc/PID/stat. */
static int read_proc_stat(int32_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* Read to the end of the file (its size is not known: /proc reports 0). */
    size_t n = 0;
    ssize_t got = 0;
    while (n < sizeof buf - 1 &&
           ((got = read(fd, buf + n, sizeof buf - 1 - n)) > 0 || (got < 0 && errno == EINTR)))
        n += got > 0 ? (size_t)got : 0;
    int e = got < 0 ? errno : 0;
    close(fd);
    if (e || n == 0)
        return e ? -e : -EIO;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields restart after
     * the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -EIO;
    *state = p[2];
    p += 3; /* at the blank before field 4; each step moves to the next field */
    for (int field = 4; field <= 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -EIO;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 0;
}

uint64_t pl__ring_pid_start(int32_t pid)
{
    char state = 0;
    uint64_t start = 0;
    return pid > 0 && read_proc_stat(pid, &state, &start) == 0 ? start : 0;
}

int pl__ring_pid_alive(int32_t pid, uint64_t start)
{
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 0;
    char state = 0;
    uint64_t t = 0;
    if (read_proc_stat(pid, &state, &t) < 0)
        return !(kill(pid, 0) < 0 && errno == ESRCH); /* no /proc: kill() decides */
    if (state == 'Z' || state == 'X' || state == 'x')
        return 0;                                      /* a zombie is dead */
    return !(start && t && t != start);                /* a recycled pid is not ours */
}

static int check_name(const char *name, pl_err *err)
{
    PL_FAIL_IF(!name, err, PL_EUSAGE, "ring name missing");
    size_t n = strnlen(name, PL_RING_NAME_MAX + 1);
    PL_FAIL_IF(n == 0, err, PL_EUSAGE, "ring name is empty");
    PL_FAIL_IF(n > PL_RING_NAME_MAX, err, PL_EUSAGE,
               "ring name '%.80s%s' is longer than %d characters", name,
               strlen(name) > 80 ? "..." : "", PL_RING_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        PL_FAIL_IF(!ok, err, PL_EUSAGE,
                   "ring name '%s' holds character 0x%02x; names hold only [A-Za-z0-9_.-]",
                   name, c);
    }
    /* No '/' can pass the loop above; ".." is refused as well, so that a name
     * never reads as a path step wherever it is used. */
    PL_FAIL_IF(strstr(name, "..") != NULL, err, PL_EUSAGE, "ring name '%s' holds '..'", name);
    return 0;
}

/* A segment is used only when it is a regular file of this user closed to
 * group and others, as pl_ring_create() makes it (0600): /dev/shm is shared
 * by all users, and a segment another user can write could feed a consumer
 * forged batches or stall a producer. Checked on the open file (fstat), so
 * the name cannot be swapped between check and use; shm_open() adds
 * O_NOFOLLOW. `err` may be NULL. */
static int check_owner(const struct stat *st, const char *path, pl_err *err)
{
    PL_FAIL_IF(!S_ISREG(st->st_mode), err, -EPERM,
               "%s is not a regular file; refusing to use it as a ring", path);
    PL_FAIL_IF(st->st_uid != geteuid(), err, -EPERM,
               "%s belongs to uid %u, not to this user (uid %u); refusing to use or remove "
               "another user's ring",
               path, (unsigned)st->st_uid, (unsigned)geteuid());
    PL_FAIL_IF(st->st_mode & 077, err, -EPERM,
               "%s has mode %04o; rings must be closed to group and others (0600)", path,
               (unsigned)(st->st_mode & 07777));
    return 0;
}

static void shm_name(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/" PL__RING_PREFIX "%s", name);
}

static void shm_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, SHM_DIR "/" PL__RING_PREFIX "%s", name);
}

/* Open segment `shm` (file `path`) with `flags` (O_NONBLOCK and O_CLOEXEC
 * added: a FIFO planted under the name must not block the open) and check
 * it with check_owner(). Sets *fd and *st on success.
 * @return 0, 1 when no such segment exists, or < 0. */
static int open_owned(const char *shm, const char *path, int flags, int *fd, struct stat *st,
                      pl_err *err)
{
    *fd = shm_open(shm, flags | O_NONBLOCK | O_CLOEXEC, 0);
    if (*fd < 0 && errno == ENOENT)
        return 1;
    PL_FAIL_IF(*fd < 0, err, -errno, "cannot open %s: %s", path, strerror(errno));
    int rc = fstat(*fd, st) < 0 ? pl__err(err, -errno, "cannot stat %s: %s", path,
                                          strerror(errno))
                                : check_owner(st, path, err);
    if (rc < 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

/* The validated sizes of a header. */
typedef struct layout {
    uint32_t n_slots;
    uint64_t slot_bytes, stride, header_bytes, total_bytes;
    int32_t producer_pid;
    uint64_t producer_start;
} layout;

/* Validate a complete header (`init` already seen as 1 with acquire) against
 * the file size and the expected name; each field is read once into `out`.
 * @return 0, or -1 with the reason in `why`. */
static int check_header(const pl__ring_hdr *h, uint64_t file_bytes, const char *name,
                        layout *out, char *why, size_t cap)
{
    char nm[PL_RING_NAME_MAX + 1];
    memcpy(nm, h->name, sizeof nm);
    nm[PL_RING_NAME_MAX] = '\0';
    layout l = {
        .n_slots = h->n_slots,
        .slot_bytes = h->slot_bytes,
        .stride = h->slot_stride,
        .header_bytes = h->header_bytes,
        .total_bytes = h->total_bytes,
        .producer_pid = h->producer_pid,
        .producer_start = h->producer_start,
    };
    const char *bad = NULL;
    if (memcmp(h->magic, PL__RING_MAGIC, 8) != 0)
        bad = "magic is not " PL__RING_MAGIC;
    else if (h->version != PL__RING_VERSION)
        bad = "unsupported version";
    else if (h->fixed_bytes != offsetof(pl__ring_hdr, ready))
        bad = "header layout differs from this build's";
    else if (l.n_slots < 1 || l.n_slots > PL__RING_MAX_SLOTS)
        bad = "slot count out of range";
    else if (l.slot_bytes < 1 || l.slot_bytes > PL_RING_MAX_BYTES)
        bad = "slot size out of range";
    else if (l.stride != (l.slot_bytes + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE)
        bad = "slot stride inconsistent with the slot size";
    else if (l.header_bytes != pl__ring_header_bytes(l.n_slots))
        bad = "header size inconsistent with the slot count";
    else if (l.total_bytes != l.header_bytes + (uint64_t)l.n_slots * l.stride)
        bad = "total size inconsistent with the slots";
    else if (l.total_bytes != file_bytes)
        bad = "total size differs from the segment's size";
    else if (name && strcmp(nm, name) != 0)
        bad = "name differs from the segment's name";
    if (bad) {
        snprintf(why, cap, "%s", bad);
        return -1;
    }
    *out = l;
    return 0;
}

/* Map the first page of an open segment read-only. */
static const pl__ring_hdr *map_header_ro(int fd)
{
    void *p = mmap(NULL, PL__RING_PAGE, PROT_READ, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* An existing segment blocks pl_ring_create(): remove it when it is stale.
 * @return 0 when the name may be tried again, PL_EBUSY, or -errno. */
static int clear_stale(const char *name, pl_err *err)
{
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    shm_name(shm, sizeof shm, name);
    shm_path(path, sizeof path, name);
    int fd;
    struct stat st;
    int rc = open_owned(shm, path, O_RDONLY, &fd, &st, err);
    if (rc != 0)
        return rc < 0 ? rc : 0; /* gone meanwhile */
    /* A creator holds the lock until its header is complete. */
    if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
        close(fd);
        return pl__err(err, PL_EBUSY, "ring '%s' is being created by another process",
                       name);
    }
    int stale = 1;
    int32_t pid = 0;
    if ((uint64_t)st.st_size >= PL__RING_PAGE) {
        const pl__ring_hdr *h = map_header_ro(fd);
        if (h) {
            /* acquire: pairs with the creator's release store of `init` */
            if (atomic_load_explicit(&h->init, memory_order_acquire) == 1 &&
                memcmp(h->magic, PL__RING_MAGIC, 8) == 0) {
                pid = h->producer_pid;
                stale = !pl__ring_pid_alive(pid, h->producer_start);
            }
            munmap((void *)h, PL__RING_PAGE);
        }
    }
    if (!stale) {
        close(fd);
        return pl__err(err, PL_EBUSY, "ring '%s' is in use by producer process %d", name,
                       (int)pid);
    }
    /* Unlink only the file inspected, not one a racing creator just made. */
    struct stat now;
    if (stat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
        shm_unlink(shm) < 0 && errno != ENOENT) {
        int e = errno;
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
    *out = NULL;
    PL_TRY(check_name(name, err));
    PL_FAIL_IF(n_slots < 1 || n_slots > PL__RING_MAX_SLOTS, err, PL_EUSAGE,
               "ring '%s': %u slots; between 1 and %u are allowed", name, n_slots,
               PL__RING_MAX_SLOTS);
    PL_FAIL_IF(slot_bytes < 1, err, PL_EUSAGE, "ring '%s': slot size is 0", name);
    PL_FAIL_IF(consumer_pid < 0, err, PL_EUSAGE, "ring '%s': consumer pid %d", name,
               (int)consumer_pid);
    uint64_t hdr_bytes = pl__ring_header_bytes(n_slots);
    uint64_t stride = (slot_bytes + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE;
    uint64_t total = pl_ring_bytes(n_slots, slot_bytes);
    PL_FAIL_IF(total > PL_RING_MAX_BYTES, err, PL_EUSAGE,
               "ring '%s' of %u slots x %llu bytes needs %s%llu bytes, over the limit of "
               "%llu bytes", name, n_slots, (unsigned long long)slot_bytes,
               total == UINT64_MAX ? "over " : "",
               (unsigned long long)(total == UINT64_MAX ? PL_RING_MAX_BYTES : total),
               (unsigned long long)PL_RING_MAX_BYTES);
    struct statvfs vfs;
    PL_FAIL_IF(statvfs(SHM_DIR, &vfs) < 0, err, -errno, "cannot read the free space of %s: %s",
               SHM_DIR, strerror(errno));
    uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    PL_FAIL_IF(total > free_bytes / 2, err, -ENOSPC,
               "ring '%s' of %u slots x %llu bytes needs %llu bytes, over the limit of %llu "
               "bytes (half of the %llu bytes free in %s)", name, n_slots,
               (unsigned long long)slot_bytes, (unsigned long long)total,
               (unsigned long long)(free_bytes / 2), (unsigned long long)free_bytes, SHM_DIR);

    pl_ring *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "out of memory");
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    shm_name(shm, sizeof shm, name);
    shm_path(path, sizeof path, name);
    int fd = -1, rc = 0;
    for (int attempt = 0; attempt < 4 && fd < 0; attempt++) {
        fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0)
            break;
        if (errno != EEXIST) {
            rc = pl__err(err, -errno, "cannot create %s: %s", path, strerror(errno));
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
    if (fchmod(fd, 0600) < 0 || ftruncate(fd, (off_t)total) < 0) {
        rc = pl__err(err, -errno, "cannot size %s to %llu bytes: %s", path,
                     (unsigned long long)total, strerror(errno));
        goto fail;
    }
    /* Reserve the pages now: a full /dev/shm fails here instead of with SIGBUS
     * in the middle of an epoch. */
    int fe = posix_fallocate(fd, 0, (off_t)total);
    if (fe != 0 && fe != EOPNOTSUPP && fe != EINVAL) {
        rc = pl__err(err, -fe, "cannot reserve %llu bytes for %s: %s",
                     (unsigned long long)total, path, strerror(fe));
        goto fail;
    }
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
    h->created_ns = now_ns(CLOCK_REALTIME);
    h->producer_pid = (int32_t)getpid();
    h->producer_start = pl__ring_pid_start(h->producer_pid);
    memcpy(h->name, name, strlen(name) + 1);
    atomic_store_explicit(&h->consumer_start, pl__ring_pid_start(consumer_pid),
                          memory_order_relaxed);
    atomic_store_explicit(&h->consumer_pid, consumer_pid, memory_order_relaxed);
    atomic_store_explicit(&h->state, PL_RING_RUNNING, memory_order_relaxed);
    /* release: every field above is visible to a process that loads init == 1 */
    atomic_store_explicit(&h->init, 1, memory_order_release);
    futex_wake(&h->init);
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
    PL_FAIL_IF(pid != 0 && !pl__ring_pid_alive(pid, start), err, PL_EPEER,
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
            checked = now_ns(CLOCK_MONOTONIC);
        }
        futex_wait(&h->consumed_futex, word, SLICE_NS);
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
    futex_wake(ready);
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
    futex_wake(&r->h->ready[s % r->n_slots]);
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

/* ----------------------------------------------------------------- consumer */

/* Map an existing, initialised segment and check its header.
 * @return 0; 1 when it is not there or not sized yet; 2 when it is not
 * initialised yet (after waiting up to a slice for that); or < 0. */
static int open_existing(const char *name, pl_ring *r, pl_err *err)
{
    char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
    shm_name(shm, sizeof shm, name);
    shm_path(path, sizeof path, name);
    int fd;
    struct stat st;
    int rc = open_owned(shm, path, O_RDWR, &fd, &st, err);
    if (rc != 0)
        return rc;
    if ((uint64_t)st.st_size < PL__RING_PAGE) {
        close(fd);
        return 1; /* not sized yet */
    }
    const pl__ring_hdr *h = map_header_ro(fd);
    if (!h) {
        int e = errno;
        close(fd);
        return pl__err(err, -e, "cannot map %s: %s", path, strerror(e));
    }
    /* acquire: pairs with the creator's release store of init */
    if (atomic_load_explicit(&h->init, memory_order_acquire) != 1) {
        /* Sleep until the creator wakes init or one slice passes. */
        futex_wait((_Atomic uint32_t *)&h->init, 0, SLICE_NS);
        munmap((void *)h, PL__RING_PAGE);
        close(fd);
        return 2;
    }
    layout l;
    char why[128];
    int bad = check_header(h, (uint64_t)st.st_size, name, &l, why, sizeof why);
    munmap((void *)h, PL__RING_PAGE);
    if (bad) {
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: malformed ring header: %s", path, why);
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
    return 0;
}

/* Sleep until something happens in /dev/shm (or a short while passes). */
static void wait_appear(int ifd, uint64_t deadline)
{
    uint64_t now = now_ns(CLOCK_MONOTONIC);
    int ms = APPEAR_POLL_MS;
    if (deadline != UINT64_MAX) {
        uint64_t left = deadline > now ? (deadline - now + 999999) / 1000000 : 0;
        if (left < (uint64_t)ms)
            ms = (int)left;
    }
    if (ifd >= 0) {
        struct pollfd p = {.fd = ifd, .events = POLLIN};
        if (poll(&p, 1, ms) > 0) {
            char buf[4096];
            while (read(ifd, buf, sizeof buf) > 0) {
            }
        }
    } else if (ms > 0) {
        int step = ms < 10 ? ms : 10; /* no inotify: short sleeps */
        struct timespec ts = {0, step * 1000000L};
        nanosleep(&ts, NULL);
    }
}

PL_API int pl_ring_attach(const char *name, int timeout_ms, pl_ring **out, pl_err *err)
{
    *out = NULL;
    PL_TRY(check_name(name, err));
    pl_ring *r = calloc(1, sizeof *r);
    PL_FAIL_IF(!r, err, -ENOMEM, "out of memory");
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
                                       : now_ns(CLOCK_MONOTONIC) +
                                             (uint64_t)timeout_ms * 1000000u;
    /* Watch /dev/shm before the first look, so that no creation is missed. */
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ifd >= 0 && inotify_add_watch(ifd, SHM_DIR, IN_CREATE | IN_MOVED_TO | IN_MODIFY |
                                                        IN_ATTRIB) < 0) {
        close(ifd);
        ifd = -1;
    }
    int rc;
    for (;;) {
        rc = open_existing(name, r, err);
        if (rc <= 0)
            break;
        if (now_ns(CLOCK_MONOTONIC) >= deadline) {
            rc = pl__err(err, PL_ETIMEDOUT, "no ring '%s' ready in %s/%s%s within %d ms",
                         name, SHM_DIR, PL__RING_PREFIX, name, timeout_ms);
            break;
        }
        if (rc == 1)
            wait_appear(ifd, deadline);
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
        if (cur != 0 && cur != self &&
            !atomic_load_explicit(&h->consumer_gone, memory_order_relaxed) &&
            pl__ring_pid_alive(cur, atomic_load_explicit(&h->consumer_start,
                                                         memory_order_relaxed))) {
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
    atomic_store_explicit(&h->consumer_start, pl__ring_pid_start(self), memory_order_release);
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
    uint64_t checked = 0;
    for (;;) {
        uint32_t word = atomic_load_explicit(&h->ready[s], memory_order_relaxed);
        rc = look(r, batch, err);
        if (rc != 2)
            break;
        if (!waiting) {
            clock_enter(&r->clock);
            waiting = 1;
            checked = now_ns(CLOCK_MONOTONIC);
            atomic_store_explicit(&h->consumer_wait_slot, s, memory_order_relaxed);
        }
        /* `word` was loaded before look(): a publish since then changed it and
         * the wait returns at once. */
        int woke = futex_wait(&h->ready[s], word, SLICE_NS);
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
            if (!pl__ring_pid_alive(r->producer_pid, r->producer_start)) {
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
    futex_wake(&h->consumed_futex);
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
    shm_name(shm, sizeof shm, r->name);
    shm_path(path, sizeof path, r->name);
    struct stat mine, now;
    if (fstat(r->fd, &mine) == 0 && stat(path, &now) == 0 && mine.st_ino == now.st_ino &&
        mine.st_dev == now.st_dev)
        shm_unlink(shm);
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
    futex_wake(&r->h->consumed_futex);
    munmap(r->h, r->map_bytes);
    close(r->fd);
    pthread_mutex_destroy(&r->clock.mu);
    free(r);
}

static void fill_stats(const pl__ring_hdr *h, const layout *l, pl_ring_stats *st)
{
    memset(st, 0, sizeof *st);
    st->batches_produced = atomic_load_explicit(&h->batches_produced, memory_order_relaxed);
    st->samples_produced = atomic_load_explicit(&h->samples_produced, memory_order_relaxed);
    st->batches_consumed = atomic_load_explicit(&h->batches_consumed, memory_order_relaxed);
    st->samples_consumed = atomic_load_explicit(&h->samples_consumed, memory_order_relaxed);
    st->producer_wait_ns = atomic_load_explicit(&h->producer_wait_ns, memory_order_relaxed);
    st->consumer_wait_ns = atomic_load_explicit(&h->consumer_wait_ns, memory_order_relaxed);
    st->n_batches = atomic_load_explicit(&h->n_batches, memory_order_relaxed);
    st->created_ns = h->created_ns;
    st->slot_bytes = l->slot_bytes;
    st->total_bytes = l->total_bytes;
    st->n_slots = l->n_slots;
    st->producer_pid = l->producer_pid;
    st->consumer_pid = atomic_load_explicit(&h->consumer_pid, memory_order_relaxed);
    st->state = atomic_load_explicit(&h->state, memory_order_relaxed);
    memcpy(st->name, h->name, sizeof st->name);
    st->name[PL_RING_NAME_MAX] = '\0';
}

PL_API void pl_ring_stats_get(const pl_ring *r, pl_ring_stats *st)
{
    layout l = {
        .n_slots = r->n_slots,
        .slot_bytes = r->slot_bytes,
        .stride = r->stride,
        .total_bytes = r->map_bytes,
        .producer_pid = r->producer_pid,
    };
    fill_stats(r->h, &l, st);
    memcpy(st->name, r->name, sizeof st->name);
}

PL_API int pl_ring_list(pl_ring_stats *out, int cap)
{
    DIR *d = opendir(SHM_DIR);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int found = 0;
    const size_t plen = strlen(PL__RING_PREFIX);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name + plen;
        if (strncmp(e->d_name, PL__RING_PREFIX, plen) != 0 || check_name(name, NULL) < 0)
            continue;
        char shm[PL_RING_NAME_MAX + 32];
        shm_name(shm, sizeof shm, name);
        int fd = shm_open(shm, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0)
            continue; /* gone, or another user's */
        struct stat st;
        const pl__ring_hdr *h = NULL;
        if (fstat(fd, &st) == 0 && check_owner(&st, "", NULL) == 0 &&
            (uint64_t)st.st_size >= PL__RING_PAGE)
            h = map_header_ro(fd);
        close(fd);
        if (!h)
            continue;
        layout l;
        char why[128];
        /* acquire: pairs with the creator's release store of init */
        if (atomic_load_explicit(&h->init, memory_order_acquire) == 1 &&
            check_header(h, (uint64_t)st.st_size, name, &l, why, sizeof why) == 0) {
            if (found < cap && out)
                fill_stats(h, &l, &out[found]);
            found++;
        }
        munmap((void *)h, PL__RING_PAGE);
    }
    closedir(d);
    return found;
}
