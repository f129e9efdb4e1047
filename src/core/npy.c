#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

static const struct {
    const char *in, *norm;
    uint32_t size;
} dtypes[] = {
    {"<i4", "<i4", 4}, {"<i8", "<i8", 8}, {"<f4", "<f4", 4}, {"<f2", "<f2", 2},
    {"|u1", "|u1", 1}, {"<u1", "|u1", 1}, {"u1", "|u1", 1},  {"|i1", "|i1", 1},
    {"<u4", "<u4", 4}, {"<f8", "<f8", 8}, {"|b1", "|b1", 1},
};

/* Value of 'key' in the header dict: pointer just after "'key':" and spaces. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p++ != ':')
        return NULL;
    while (*p == ' ')
        p++;
    return p;
}

int pl__npy_open(pl__npy *n, const char *path, pl_err *err)
{
    memset(n, 0, sizeof *n);
    n->path = path;
    n->fd = -1;
    /* O_NONBLOCK: a FIFO is refused below, not waited on. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int e = fstat(fd, &st) < 0 ? errno : 0;
    if (e == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
        e = errno;
    if (e == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        PL_FAIL_IF(S_ISDIR(st.st_mode), err, -EISDIR, "%s: cannot read: %s", path,
                   strerror(EISDIR));
        return pl__err(err, -EINVAL, "%s: cannot read: not a regular file", path);
    }
    if (e) {
        close(fd);
        return pl__err(err, -e, "%s: cannot read: %s", path, strerror(e));
    }
    return pl__npy_open_fd(n, fd, path, err);
}

int pl__npy_open_fd(pl__npy *n, int fd, const char *path, pl_err *err)
{
    memset(n, 0, sizeof *n);
    n->path = path;
    n->fd = fd;
    struct stat st;
    PL_FAIL_IF(fstat(n->fd, &st) < 0, err, -errno, "%s: cannot read: %s", path,
               strerror(errno));
    n->file_size = (uint64_t)st.st_size;
    unsigned char pre[12];
    ssize_t got = pread(n->fd, pre, sizeof pre, 0);
    PL_FAIL_IF(got < 0, err, -errno, "%s: read failed: %s", path, strerror(errno));
    PL_FAIL_IF(got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0, err, PL_EPARSE,
               "%s: not a .npy file (bad magic)", path);
    uint32_t hlen, pre_len;
    if (pre[6] == 1) {
        hlen = pre[8] | (uint32_t)pre[9] << 8;
        pre_len = 10;
    } else if ((pre[6] == 2 || pre[6] == 3) && got == 12) {
        hlen = pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
               (uint32_t)pre[11] << 24;
        pre_len = 12;
    } else {
        return pl__err(err, PL_EPARSE, "%s: unsupported .npy version %u", path, pre[6]);
    }
    PL_FAIL_IF(hlen > (1u << 20), err, PL_EPARSE, "%s: .npy header too long", path);
    char *h = malloc(hlen + 1);
    if (!h)
        return pl__err(err, -ENOMEM, "out of memory");
    if (pread(n->fd, h, hlen, pre_len) != (ssize_t)hlen) {
        free(h);
        return pl__err(err, PL_EPARSE, "%s: truncated .npy header", path);
    }
    h[hlen] = '\0';
    int rc = 0;
    const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
               *sh = dict_value(h, "shape");
    if (!d || !fo || !sh || *d != '\'' || *sh != '(') {
        rc = pl__err(err, PL_EPARSE, "%s: malformed .npy header", path);
        goto out;
    }
    d++;
    const char *q = strchr(d, '\'');
    size_t dl = q ? (size_t)(q - d) : 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strlen(dtypes[i].in) == dl && !strncmp(d, dtypes[i].in, dl)) {
            strcpy(n->descr, dtypes[i].norm);
            n->itemsize = dtypes[i].size;
        }
    if (!n->itemsize) {
        rc = pl__err(err, PL_EPARSE, "%s: unsupported dtype '%.*s'", path, (int)dl, d);
        goto out;
    }
    if (strncmp(fo, "False", 5) != 0) {
        rc = pl__err(err, PL_EPARSE, "%s: Fortran-ordered arrays are not supported "
                     "(save with C order)", path);
        goto out;
    }
    const char *p = sh + 1;
    n->count = 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        /* Digits only: strtoull would also take leading blanks and a sign
         * ("\t-1" as 2^64 - 1). */
        char *end = (char *)p;
        errno = 0;
        unsigned long long v = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
        if (end == p || errno || n->ndim == 8) {
            rc = pl__err(err, PL_EPARSE, "%s: malformed shape in .npy header", path);
            goto out;
        }
        n->shape[n->ndim++] = v;
        if (__builtin_mul_overflow(n->count, (uint64_t)v, &n->count)) {
            rc = pl__err(err, PL_EPARSE, "%s: shape too large in .npy header", path);
            goto out;
        }
        p = end;
    }
    n->offset = pre_len + hlen;
    uint64_t bytes;
    if (__builtin_mul_overflow(n->count, (uint64_t)n->itemsize, &bytes) ||
        bytes > UINT64_MAX - n->offset || (uint64_t)st.st_size != n->offset + bytes) {
        rc = pl__err(err, PL_EPARSE, "%s: file size %lld does not match the shape in its "
                     "header (%llu elements of %u bytes)", path, (long long)st.st_size,
                     (unsigned long long)n->count, n->itemsize);
        goto out;
    }
out:
    free(h);
    return rc;
}

int pl__npy_map(pl__npy *n, pl_err *err)
{
    n->map_size = (size_t)(n->offset + n->count * n->itemsize);
    void *p = mmap(NULL, n->map_size, PROT_READ, MAP_PRIVATE, n->fd, 0);
    PL_FAIL_IF(p == MAP_FAILED, err, -errno, "%s: cannot map: %s", n->path, strerror(errno));
    n->map = p;
    return 0;
}

void pl__npy_close(pl__npy *n)
{
    if (!n)
        return;
    if (n->map)
        munmap((void *)n->map, n->map_size);
    if (n->fd >= 0)
        close(n->fd);
    n->map = NULL;
    n->fd = -1;
}

size_t pl__npy_header(char *buf, size_t cap, const char *descr, const uint64_t *shape,
                      uint32_t ndim, size_t align)
{
    char dict[512];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       descr);
    for (uint32_t i = 0; i < ndim; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%llu%s",
                        (unsigned long long)shape[i], ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
    size_t total = 10 + (size_t)len + 1; /* magic, version, u16 length, dict, '\n' */
    total = (total + align - 1) / align * align;
    if (total > cap || total - 10 > 65535)
        return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t hlen = total - 10;
    buf[8] = (char)(hlen & 0xFF);
    buf[9] = (char)(hlen >> 8);
    memcpy(buf + 10, dict, (size_t)len);
    memset(buf + 10 + len, ' ', total - 10 - (size_t)len - 1);
    buf[total - 1] = '\n';
    return total;
}
