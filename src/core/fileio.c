#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"

int pl__write_all(int fd, const void *p, size_t len, uint64_t off, const char *path,
                  pl_err *err)
{
    const char *c = p;
    while (len > 0) {
        ssize_t n = pwrite(fd, c, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return pl__err(err, -errno, "%s: write failed: %s", path, strerror(errno));
        }
        if (n == 0)
            return pl__err(err, -ENOSPC, "%s: write failed: %s", path, strerror(ENOSPC));
        c += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int pl__write_error(const char *path, int e, char *why, size_t cap)
{
    struct rlimit rl;
    struct stat st;
    if ((e == EFBIG || e == EIO) && getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY &&
        (e == EFBIG || (stat(path, &st) == 0 && (uint64_t)st.st_size >= rl.rlim_cur))) {
        snprintf(why, cap, "%s: the file size limit (ulimit -f) is %llu bytes",
                 strerror(EFBIG), (unsigned long long)rl.rlim_cur);
        return -EFBIG;
    }
    struct statvfs fs;
    if ((e == ENOSPC || e == EIO) && statvfs(path, &fs) == 0) {
        uint64_t free_bytes = (uint64_t)fs.f_bavail * fs.f_frsize;
        if (e == ENOSPC || free_bytes < (1u << 20)) {
            snprintf(why, cap, "no space left on device (%llu bytes free)",
                     (unsigned long long)free_bytes);
            return -ENOSPC;
        }
    }
    snprintf(why, cap, "%s", strerror(e));
    return -e;
}

int pl__read_all(int fd, void *p, size_t len, uint64_t off, const char *path, pl_err *err)
{
    char *c = p;
    while (len > 0) {
        ssize_t n = pread(fd, c, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return pl__err(err, -errno, "%s: read failed: %s", path, strerror(errno));
        }
        if (n == 0)
            return pl__err(err, PL_ECORRUPT, "%s: truncated at offset %llu", path,
                           (unsigned long long)off);
        c += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "of an unknown type";
}

int pl__open_regular(const char *path, int flags, pl_err *err)
{
    /* O_NONBLOCK: opening a FIFO would wait for a writer; O_NOFOLLOW: the
     * file must be the database's own, not a link to another. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | flags);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            return pl__err(err, PL_ECORRUPT, "%s: a symbolic link, not a regular file (the "
                           "files of a database must be its own)", path);
        return pl__err(err, -e, "%s: %s", path, strerror(e));
    }
    struct stat st;
    int e = fstat(fd, &st) < 0 ? errno : 0;
    if (e == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: %s, not a regular file", path,
                       file_kind(st.st_mode));
    }
    if (e == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
        e = errno;
    if (e) {
        close(fd);
        return pl__err(err, -e, "%s: %s", path, strerror(e));
    }
    return fd;
}

/* ------------------------------------------------------------- removal
 *
 * Every step is relative to an open directory and never follows a symbolic
 * link: a directory is entered through openat(O_NOFOLLOW | O_DIRECTORY) and
 * only when the descriptor is the very directory that was lstat'ed (same
 * st_dev and st_ino), so that swapping a name for a link, or for another
 * directory, between the look and the step cannot lead the removal out of
 * the tree. Other file systems mounted inside are not entered. */

#define RM_MAX_DEPTH 128

static int rm_dir_at(int parent, const char *name, const struct stat *st, uid_t owner,
                     int depth);

/* Remove every entry of the open directory `fd`, which lies on `dev`. */
static int rm_entries(int fd, dev_t dev, uid_t owner, int depth)
{
    int list = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = list < 0 ? NULL : fdopendir(list);
    if (!d) {
        int e = errno;
        if (list >= 0)
            close(list);
        return -e;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        int r = 0;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            r = errno == ENOENT ? 0 : -errno;
        else if (!S_ISDIR(st.st_mode))
            r = unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT ? -errno : 0;
        else if (st.st_dev != dev)
            r = -EXDEV;
        else
            r = rm_dir_at(fd, e->d_name, &st, owner, depth + 1);
        if (r < 0 && rc == 0)
            rc = r;
    }
    closedir(d);
    return rc;
}

/* Remove the directory `name` of `parent`, lstat'ed as `st`, and its tree. */
static int rm_dir_at(int parent, const char *name, const struct stat *st, uid_t owner,
                     int depth)
{
    if (owner != (uid_t)-1 && st->st_uid != owner)
        return -EPERM;
    if (depth > RM_MAX_DEPTH)
        return -ELOOP;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat now;
    int rc = 0;
    if (fstat(fd, &now) < 0)
        rc = -errno;
    else if (now.st_dev != st->st_dev || now.st_ino != st->st_ino)
        rc = -ESTALE; /* the name was swapped after the look */
    if (rc == 0)
        rc = rm_entries(fd, st->st_dev, owner, depth);
    close(fd);
    if (rc == 0 && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        rc = -errno;
    return rc;
}

int pl__rmtree_at(int parent, const char *name, uid_t owner, const struct stat *want)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (want && (st.st_dev != want->st_dev || st.st_ino != want->st_ino))
        return -ESTALE;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
    return rm_dir_at(parent, name, &st, owner, 0);
}

int pl__rmtree(const char *path)
{
    char dir[4096];
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0 || len >= sizeof dir)
        return -EINVAL;
    memcpy(dir, path, len);
    dir[len] = '\0';
    char *slash = strrchr(dir, '/'), *name = slash ? slash + 1 : dir;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return -EINVAL;
    const char *parent = !slash ? "." : slash == dir ? "/" : dir;
    if (slash && slash != dir)
        *slash = '\0';
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = pl__rmtree_at(fd, name, (uid_t)-1, NULL);
    close(fd);
    return rc;
}

char *pl__path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

uint64_t pl__file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int pl__file_xxh64(const char *path, uint64_t *bytes, uint64_t *sum, pl_err *err)
{
    int fd = pl__open_regular(path, 0, err);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return pl__err(err, -e, "%s: %s", path, strerror(e));
    }
    size_t n = (size_t)st.st_size;
    void *p = NULL;
    if (n > 0) {
        p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return pl__err(err, -e, "%s: cannot map %zu bytes: %s", path, n, strerror(e));
        }
        madvise(p, n, MADV_SEQUENTIAL);
    }
    close(fd);
    *bytes = n;
    *sum = pl__xxh64(p ? p : (const void *)"", n, 0);
    if (p)
        munmap(p, n);
    return 0;
}
