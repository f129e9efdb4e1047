/* POSIX shared-memory segments of one user under /dev/shm: the ring
 * (ring/ring.c) and the shared sample table (loader/table_shared.c) name,
 * open, check, size and remove their segments here, in the core below both
 * stages, with one set of rules:
 *   - a segment is used only when it is a regular file of this user closed to
 *     group and others (0600, or 0400 once read-only), checked with fstat() on
 *     the open file, so that the name cannot be swapped between check and use;
 *   - shm_open() adds O_NOFOLLOW, and O_NONBLOCK is added here, so that a
 *     FIFO planted under a name cannot block the open;
 *   - a name is removed only while it still names the file inspected
 *     (st_dev/st_ino), never one a racing creator just made;
 *   - an object's liveness is a lock on its file: each process that uses it
 *     holds an OFD read lock on a byte of the file (its role's) for as long
 *     as it uses it, which the kernel drops at its death; a reclaimer
 *     removes the object only when it takes a write lock on those bytes
 *     itself. Locks, unlike pids, hold across PID namespaces (containers
 *     sharing /dev/shm); pids and start times stay for display and for
 *     peers of one job, where a recycled pid must not pass for the
 *     original process (pl__shm_pid_alive()). */
#ifndef PL_CORE_SHM_H
#define PL_CORE_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "pertload.h"

#define PL__SHM_DIR "/dev/shm"

/** Whether process `pid` is alive: not gone, not a zombie, and (when
 *  `start` is non-zero) started at `start` clock ticks after boot, so that a
 *  recycled pid does not pass for the original process.
 *  @return 1 alive, 0 dead (pid <= 0 counts as dead). */
int pl__shm_pid_alive(int32_t pid, uint64_t start);

/** Start time of process `pid` (field 22 of /proc/PID/stat, clock ticks after
 *  boot). @return the start time, or 0 when it cannot be read. */
uint64_t pl__shm_pid_start(int32_t pid);

/* Liveness lock bytes (pl__shm_hold()): the creator of an object (a ring's
 * producer, an arena's worker) holds byte 0, a ring's consumer byte 1. */
#define PL__SHM_LOCK_OWNER 0u
#define PL__SHM_LOCK_PEER 1u

/** Hold byte `role` of segment `fd`'s liveness lock (an OFD read lock, which
 *  any number of processes share) for as long as this open file lives: the
 *  kernel drops it when its last descriptor is closed, at the latest when
 *  the process dies, whatever its PID namespace. Waits while a reclaimer
 *  holds the byte for a moment (pl__shm_held()). @return 0 or -errno. */
int pl__shm_hold(int fd, unsigned role);

/** Whether a process holds any of the first `roles` bytes of segment `fd`'s
 *  liveness lock (`fd` open for writing). When none does, this takes a write
 *  lock on them, kept until `fd` is closed, so that nobody starts to hold
 *  the segment between this check and its removal.
 *  @return 1 held (the object is live), 0 free (its users are dead), or
 *  -errno when the lock cannot be tried. */
int pl__shm_held(int fd, unsigned roles);

/** Whether another open of segment `fd` (another process, or another open
 *  in this one) holds byte `role` of its liveness lock; this open's own
 *  lock does not count. Takes no lock. @return 1, 0, or -errno. */
int pl__shm_role_held(int fd, unsigned role);

/** The shm_open() name ("/BASE") and the file path ("/dev/shm/BASE") of
 *  segment BASE, each into a buffer of `cap` bytes. */
void pl__shm_names(const char *base, char *shm, char *path, size_t cap);

/** Check an open segment's fstat() `st`: a regular file of this user with no
 *  group or other permission bits. `what` names the use in the message ("ring",
 *  "sample table"). `err` may be NULL. @return 0 or -EPERM. */
int pl__shm_check_owner(const struct stat *st, const char *path, const char *what,
                        pl_err *err);

/** Open segment `shm` (file `path`) with `flags` (O_NONBLOCK and O_CLOEXEC
 *  added) and check it with pl__shm_check_owner(). Sets *fd and *st on
 *  success. @return 0, 1 when no such segment exists, or < 0. */
int pl__shm_open_owned(const char *shm, const char *path, int flags, const char *what,
                       int *fd, struct stat *st, pl_err *err);

/** Create segment `shm` exclusively, mode 0600 whatever the umask, read and
 *  write. @return the descriptor, -EEXIST (no message) when the name is
 *  taken, or another negative code with `err` set. */
int pl__shm_create(const char *shm, const char *path, pl_err *err);

/** Check that `total` bytes fit in half of the free space of /dev/shm, so
 *  that one segment never fills it. `what` names the segment in the message.
 *  @return 0 or -ENOSPC (-errno when the free space cannot be read). */
int pl__shm_check_space(uint64_t total, const char *what, pl_err *err);

/** Size the new segment `fd` to `total` bytes and reserve its pages, so that a
 *  full /dev/shm fails here instead of with SIGBUS on a later write.
 *  @return 0 or -errno. */
int pl__shm_reserve(int fd, const char *path, uint64_t total, pl_err *err);

/** Remove segment `shm` when `path` still names the file of fstat() `st`.
 *  @return 0 (removed, or nothing to remove) or -errno. */
int pl__shm_unlink_same(const char *shm, const char *path, const struct stat *st);

/** Clock `id` in nanoseconds. */
uint64_t pl__shm_now_ns(clockid_t id);

/** Check a segment name: 1 to `max` characters of [A-Za-z0-9_.-], no "..",
 *  so that a name never reads as a path step. `what` names the use in the
 *  message ("ring"). `err` may be NULL. @return 0 or PL_EUSAGE. */
int pl__shm_check_name(const char *name, size_t max, const char *what, pl_err *err);

/** FUTEX_WAIT on a word of a mapping shared between processes (not the
 *  _PRIVATE variant), for at most `ns` nanoseconds. @return 0 when woken,
 *  -ETIMEDOUT, -EAGAIN (the word no longer held `expect`) or -EINTR. */
int pl__shm_futex_wait(_Atomic uint32_t *word, uint32_t expect, long long ns);

/** FUTEX_WAKE every waiter on a word of a shared mapping. */
void pl__shm_futex_wake(_Atomic uint32_t *word);

/** An inotify descriptor watching /dev/shm for new or changed segments, or -1
 *  where inotify is not available (pl__shm_wait_appear() then sleeps). */
int pl__shm_watch(void);

/** Sleep until something happens in /dev/shm (watch `ifd` of
 *  pl__shm_watch()), at most `max_ms` and not past the CLOCK_MONOTONIC
 *  `deadline` (UINT64_MAX: none). */
void pl__shm_wait_appear(int ifd, uint64_t deadline, int max_ms);

#endif
