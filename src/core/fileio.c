#include "fileio.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void pl__rmtree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
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
