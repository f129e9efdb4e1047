#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
