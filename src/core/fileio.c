#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: %s", path, strerror(errno));
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
