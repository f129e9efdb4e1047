/* Segments under /dev/shm: naming, opening with the owner checks, sizing,
 * removal, the liveness locks of objects and of processes (rules in shm.h). */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "src/core/error.h"

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

uint64_t pl__shm_pid_start(int32_t pid)
{
    char state = 0;
    uint64_t start = 0;
    return pid > 0 && read_proc_stat(pid, &state, &start) == 0 ? start : 0;
}

int pl__shm_pid_alive(int32_t pid, uint64_t start)
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

/* Set (`type`: F_RDLCK, F_WRLCK) an OFD lock on bytes first..first+len-1 of
 * `fd`, waiting when `wait`. @return 0 or -errno (-EAGAIN: held by another). */
static int ofd_lock(int fd, short type, unsigned first, unsigned len, int wait)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = first, .l_len = len};
    int rc;
    while ((rc = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) < 0 && errno == EINTR) {
    }
    return rc < 0 ? (errno == EACCES ? -EAGAIN : -errno) : 0;
}

int pl__shm_hold(int fd, unsigned role)
{
    return ofd_lock(fd, F_RDLCK, role, 1, 1);
}

int pl__shm_held(int fd, unsigned roles)
{
    int rc = ofd_lock(fd, F_WRLCK, 0, roles, 0);
    return rc == -EAGAIN ? 1 : rc;
}

int pl__shm_role_held(int fd, unsigned role)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = role, .l_len = 1};
    return fcntl(fd, F_OFD_GETLK, &fl) < 0 ? -errno : fl.l_type != F_UNLCK;
}

void pl__shm_names(const char *base, char *shm, char *path, size_t cap)
{
    snprintf(shm, cap, "/%s", base);
    snprintf(path, cap, PL__SHM_DIR "/%s", base);
}

/* /dev/shm is shared by all users: a segment another user can write could
 * feed a reader forged data or stall a writer. */
int pl__shm_check_owner(const struct stat *st, const char *path, const char *what,
                        pl_err *err)
{
    PL_FAIL_IF(!S_ISREG(st->st_mode), err, -EPERM,
               "%s is not a regular file; refusing to use it as a %s", path, what);
    PL_FAIL_IF(st->st_uid != geteuid(), err, -EPERM,
               "%s belongs to uid %u, not to this user (uid %u); refusing to use or remove "
               "another user's %s",
               path, (unsigned)st->st_uid, (unsigned)geteuid(), what);
    PL_FAIL_IF(st->st_mode & 077, err, -EPERM,
               "%s has mode %04o; a %s must be closed to group and others (0600)", path,
               (unsigned)(st->st_mode & 07777), what);
    return 0;
}

int pl__shm_open_owned(const char *shm, const char *path, int flags, const char *what,
                       int *fd, struct stat *st, pl_err *err)
{
    *fd = shm_open(shm, flags | O_NONBLOCK | O_CLOEXEC, 0);
    if (*fd < 0 && errno == ENOENT)
        return 1;
    PL_FAIL_IF(*fd < 0, err, -errno, "cannot open %s: %s", path, strerror(errno));
    int rc = fstat(*fd, st) < 0 ? pl__err(err, -errno, "cannot stat %s: %s", path,
                                          strerror(errno))
                                : pl__shm_check_owner(st, path, what, err);
    if (rc < 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

int pl__shm_create(const char *shm, const char *path, pl_err *err)
{
    int fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        return -EEXIST;
    PL_FAIL_IF(fd < 0, err, -errno, "cannot create %s: %s", path, strerror(errno));
    if (fchmod(fd, 0600) < 0) { /* whatever the umask took away or added */
        int e = errno;
        shm_unlink(shm);
        close(fd);
        return pl__err(err, -e, "cannot set the mode of %s: %s", path, strerror(e));
    }
    return fd;
}

int pl__shm_check_space(uint64_t total, const char *what, pl_err *err)
{
    struct statvfs vfs;
    PL_FAIL_IF(statvfs(PL__SHM_DIR, &vfs) < 0, err, -errno,
               "cannot read the free space of %s: %s", PL__SHM_DIR, strerror(errno));
    uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    PL_FAIL_IF(total > free_bytes / 2, err, -ENOSPC,
               "%s needs %llu bytes, over the limit of %llu bytes (half of the %llu bytes "
               "free in %s)", what, (unsigned long long)total,
               (unsigned long long)(free_bytes / 2), (unsigned long long)free_bytes,
               PL__SHM_DIR);
    return 0;
}

int pl__shm_reserve(int fd, const char *path, uint64_t total, pl_err *err)
{
    PL_FAIL_IF(ftruncate(fd, (off_t)total) < 0, err, -errno,
               "cannot size %s to %llu bytes: %s", path, (unsigned long long)total,
               strerror(errno));
    int fe = posix_fallocate(fd, 0, (off_t)total);
    PL_FAIL_IF(fe != 0 && fe != EOPNOTSUPP && fe != EINVAL, err, -fe,
               "cannot reserve %llu bytes for %s: %s", (unsigned long long)total, path,
               strerror(fe));
    return 0;
}

int pl__shm_unlink_same(const char *shm, const char *path, const struct stat *st)
{
    struct stat now;
    if (stat(path, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
        shm_unlink(shm) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

uint64_t pl__shm_now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pl__shm_check_name(const char *name, size_t max, const char *what, pl_err *err)
{
    PL_FAIL_IF(!name, err, PL_EUSAGE, "%s name missing", what);
    size_t n = strnlen(name, max + 1);
    PL_FAIL_IF(n == 0, err, PL_EUSAGE, "%s name is empty", what);
    PL_FAIL_IF(n > max, err, PL_EUSAGE, "%s name '%.80s%s' is longer than %zu characters",
               what, name, strlen(name) > 80 ? "..." : "", max);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        PL_FAIL_IF(!ok, err, PL_EUSAGE,
                   "%s name '%s' holds character 0x%02x; names hold only [A-Za-z0-9_.-]",
                   what, name, c);
    }
    /* No '/' can pass the loop above; ".." is refused as well, so that a name
     * never reads as a path step wherever it is used. */
    PL_FAIL_IF(strstr(name, "..") != NULL, err, PL_EUSAGE, "%s name '%s' holds '..'", what,
               name);
    return 0;
}

int pl__shm_futex_wait(_Atomic uint32_t *word, uint32_t expect, long long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &ts, NULL, 0);
    return rc < 0 ? -errno : 0;
}

void pl__shm_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int pl__shm_watch(void)
{
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ifd >= 0 && inotify_add_watch(ifd, PL__SHM_DIR, IN_CREATE | IN_MOVED_TO | IN_MODIFY |
                                                             IN_ATTRIB) < 0) {
        close(ifd);
        ifd = -1;
    }
    return ifd;
}

void pl__shm_wait_appear(int ifd, uint64_t deadline, int max_ms)
{
    uint64_t now = pl__shm_now_ns(CLOCK_MONOTONIC);
    int ms = max_ms;
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
