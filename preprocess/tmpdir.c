#include "tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/fileio.h"

/* The marker's text, written once the lock is held: a marker without it
 * (a build killed between the two steps, or a file system without flock)
 * is never taken for an abandoned one. */
static const char marker_text[] = "pertload temporary build directory\n";

/* Whether every entry of the directory `fd` is a regular file of `uid`:
 * all that a build writes there. */
static int only_own_files(int fd, uid_t uid)
{
    int list = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = list < 0 ? NULL : fdopendir(list);
    if (!d) {
        if (list >= 0)
            close(list);
        return 0;
    }
    int ok = 1;
    for (struct dirent *e; ok && (e = readdir(d));) {
        struct stat st;
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            ok = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                 S_ISREG(st.st_mode) && st.st_uid == uid;
    }
    closedir(d);
    return ok;
}

/* The marker of the directory `fd` when it proves the directory abandoned:
 * a regular file of `uid` holding marker_text, still linked, locked by no
 * one. @return its descriptor, locked, or -1. */
static int lock_abandoned(int fd, uid_t uid)
{
    int m = openat(fd, PL__TMP_MARKER, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (m < 0)
        return -1;
    struct stat st;
    char text[sizeof marker_text];
    /* A finished build unlinks the marker after it renames the directory
     * and lets the lock go only after that: a marker locked here but
     * unlinked is such a build's. */
    if (fstat(m, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
        flock(m, LOCK_EX | LOCK_NB) == 0 && fstat(m, &st) == 0 && st.st_nlink == 1 &&
        st.st_size == (off_t)sizeof marker_text - 1 &&
        pread(m, text, sizeof text, 0) == (ssize_t)sizeof text - 1 &&
        !memcmp(text, marker_text, sizeof text - 1))
        return m;
    close(m);
    return -1;
}

/* Remove `name` of `parent` when it is an abandoned temporary directory. */
static void remove_if_abandoned(int parent, const char *name)
{
    uid_t me = geteuid();
    struct stat st, now;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != me)
        return;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    int m = -1;
    if (fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
        (m = lock_abandoned(fd, me)) >= 0 && only_own_files(fd, me))
        pl__rmtree_at(parent, name, me, &st);
    if (m >= 0)
        close(m);
    close(fd);
}

/* The abandoned temporary directories of `base` in `parent`. */
static void sweep(int parent, const char *base)
{
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    size_t plen = strlen(prefix);
    int list = fcntl(parent, F_DUPFD_CLOEXEC, 0);
    DIR *d = list < 0 ? NULL : fdopendir(list);
    if (!d) {
        if (list >= 0)
            close(list);
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, plen))
            remove_if_abandoned(parent, e->d_name);
    closedir(d);
}

static void release(pl__tmpdir *t)
{
    if (t->marker >= 0)
        close(t->marker); /* the lock goes with it */
    if (t->fd >= 0)
        close(t->fd);
    if (t->parent >= 0)
        close(t->parent);
    t->marker = t->fd = t->parent = -1;
    t->made = 0;
}

int pl__tmpdir_create(pl__tmpdir *t, const char *out, pl_err *err)
{
    memset(t, 0, sizeof *t);
    t->parent = t->fd = t->marker = -1;
    const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
    char dir[4096];
    size_t dlen = slash ? (slash == out ? 1 : (size_t)(slash - out)) : 1;
    if (dlen >= sizeof dir || strlen(out) + 22 >= sizeof t->path)
        return pl__err(err, -ENAMETOOLONG, "%s: %s", out, strerror(ENAMETOOLONG));
    memcpy(dir, slash ? out : ".", dlen);
    dir[dlen] = '\0';
    int rc = 0;
    for (int tries = 0;; tries++) {
        uint64_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
            int e = errno ? errno : EIO;
            rc = pl__err(err, -e, "%s: no random name: %s", out, strerror(e));
            break;
        }
        snprintf(t->path, sizeof t->path, "%s.tmp-%016llx", out, (unsigned long long)r);
        t->name = t->path + (base - out);
        if (t->parent < 0) {
            t->parent = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (t->parent < 0 && errno == EACCES) /* write and search only: no sweep */
                t->parent = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (t->parent < 0) {
                rc = pl__err(err, -errno, "%s: cannot create: %s", t->path, strerror(errno));
                break;
            }
            sweep(t->parent, base);
        }
        if (mkdirat(t->parent, t->name, 0755) == 0)
            break;
        if (errno != EEXIST || tries == 15) {
            rc = pl__err(err, -errno, "%s: cannot create: %s", t->path, strerror(errno));
            break;
        }
    }
    if (rc < 0) {
        release(t);
        return rc;
    }
    t->fd = openat(t->parent, t->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (t->fd < 0 || fstat(t->fd, &t->st) < 0) {
        rc = pl__err(err, -errno, "%s: cannot open: %s", t->path, strerror(errno));
        unlinkat(t->parent, t->name, AT_REMOVEDIR); /* only ever an empty directory */
        release(t);
        return rc;
    }
    if (t->st.st_uid != geteuid()) { /* swapped under us: not ours to remove */
        release(t);
        return pl__err(err, -EPERM, "%s: replaced by another user's directory", t->path);
    }
    t->made = 1;
    t->marker = openat(t->fd, PL__TMP_MARKER,
                       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (t->marker < 0) {
        rc = pl__err(err, -errno, "%s/%s: cannot create: %s", t->path, PL__TMP_MARKER,
                     strerror(errno));
    } else if (flock(t->marker, LOCK_EX) == 0) { /* a sweep may hold it a moment */
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", t->path, PL__TMP_MARKER);
        rc = pl__write_all(t->marker, marker_text, sizeof marker_text - 1, 0, p, err);
    }
    if (rc < 0)
        pl__tmpdir_discard(t);
    return rc;
}

int pl__tmpdir_commit(pl__tmpdir *t, const char *out, pl_err *err)
{
    const char *slash = strrchr(out, '/'), *base = slash ? slash + 1 : out;
    /* The marker stays until the directory is `out`: a build killed before
     * the rename leaves a directory a later build recognises and removes. */
    PL_FAIL_IF(fsync(t->fd) < 0, err, -errno, "%s: fsync: %s", t->path, strerror(errno));
    PL_FAIL_IF(renameat(t->parent, t->name, t->parent, base) < 0, err, -errno,
               "%s: cannot move into place: %s", out, strerror(errno));
    t->made = 0;
    int rc = 0;
    if (unlinkat(t->fd, PL__TMP_MARKER, 0) < 0 || fsync(t->fd) < 0)
        rc = pl__err(err, -errno, "%s/%s: cannot remove: %s", out, PL__TMP_MARKER,
                     strerror(errno));
    fsync(t->parent);
    release(t);
    return rc;
}

void pl__tmpdir_discard(pl__tmpdir *t)
{
    if (!t->made)
        return;
    pl__rmtree_at(t->parent, t->name, geteuid(), &t->st);
    release(t);
}
