#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"

int pl__text_open(pl__text *t, const char *path, pl_err *err)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    errno = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        const char *why = strerror(e);
        if (e == 0 || S_ISDIR(st.st_mode)) {
            e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
            why = e == EISDIR ? strerror(e) : "not a regular file";
        }
        close(fd);
        return pl__err(err, -e, "%s: cannot read: %s", path, why);
    }
    t->size = (size_t)st.st_size;
    if (t->size > 0) {
        void *p = mmap(NULL, t->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return pl__err(err, -e, "%s: cannot map: %s", path, strerror(e));
        }
        madvise(p, t->size, MADV_SEQUENTIAL);
        t->data = p;
    }
    close(fd);
    return 0;
}

void pl__text_close(pl__text *t)
{
    if (t && t->data)
        munmap((void *)t->data, t->size);
    if (t)
        t->data = NULL;
}

int pl__text_fail(const pl__text *t, uint32_t col, pl_err *err, const char *fmt, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return pl__err(err, PL_EPARSE, "%s:%llu:%u: %s", t->path, (unsigned long long)t->line,
                   col, reason);
}

/* Field separators of a line without tabs; a line of nothing else is blank. */
static int is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* Byte offset of the first invalid UTF-8 sequence in s[0..n), or n. */
static size_t utf8_invalid_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned min;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            min = 0x800;
        } else if ((c & 0xF8) == 0xF0 && c <= 0xF4) {
            len = 4;
            min = 0x10000;
        } else {
            return i;
        }
        if (i + len > n)
            return i;
        unsigned cp = c & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

int pl__text_next(pl__text *t, pl_err *err)
{
    while (t->pos < t->size) {
        const char *s = t->data + t->pos;
        size_t rest = t->size - t->pos;
        const char *nl = memchr(s, '\n', rest);
        size_t len = nl ? (size_t)(nl - s) : rest;
        t->pos += nl ? len + 1 : len;
        t->line++;
        if (len > 0 && s[len - 1] == '\r')
            len--;
        t->cur = s;
        t->cur_len = len;
        size_t bad = utf8_invalid_at((const unsigned char *)s, len);
        if (bad < len)
            return pl__text_fail(t, (uint32_t)bad + 1, err, "invalid UTF-8 (byte 0x%02x)",
                                 (unsigned char)s[bad]);
        /* Names are stored NUL-terminated: a NUL inside one would split it. */
        const char *nul = memchr(s, '\0', len);
        if (nul)
            return pl__text_fail(t, (uint32_t)(nul - s) + 1, err, "NUL byte in a text file");
        size_t i = 0;
        while (i < len && is_space(s[i]))
            i++;
        if (i == len || s[i] == '#')
            continue;
        return 1;
    }
    return 0;
}


int pl__text_fields(const pl__text *t, pl__field *f, int max)
{
    const char *s = t->cur;
    size_t n = t->cur_len, i = 0;
    int k = 0;
    if (memchr(s, '\t', n)) {
        for (;;) {
            size_t start = i;
            while (i < n && s[i] != '\t')
                i++;
            size_t a = start, b = i;
            while (a < b && s[a] == ' ')
                a++;
            while (b > a && s[b - 1] == ' ')
                b--;
            if (k < max)
                f[k] = (pl__field){s + a, (uint32_t)(b - a), (uint32_t)a + 1};
            k++;
            if (i >= n)
                break;
            i++; /* the tab */
        }
        return k;
    }
    for (;;) {
        while (i < n && is_space(s[i]))
            i++;
        if (i >= n)
            break;
        size_t start = i;
        while (i < n && !is_space(s[i]))
            i++;
        if (k < max)
            f[k] = (pl__field){s + start, (uint32_t)(i - start), (uint32_t)start + 1};
        k++;
    }
    return k;
}

int pl__parse_double(const pl__field *f, double *out)
{
    char buf[64];
    if (f->len == 0 || f->len >= sizeof buf)
        return -1;
    memcpy(buf, f->s, f->len);
    buf[f->len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || isnan(v) || (errno == ERANGE && fabs(v) > 1.0))
        return -1;
    *out = v;
    return 0;
}

int pl__parse_float(const pl__field *f, float *out)
{
    char buf[64];
    if (f->len == 0 || f->len >= sizeof buf)
        return -1;
    memcpy(buf, f->s, f->len);
    buf[f->len] = '\0';
    char *end;
    errno = 0;
    float v = strtof(buf, &end);
    if (*end || isnan(v))
        return -1;
    if (isinf(v) && errno == ERANGE) /* an infinity spelt out sets no ERANGE */
        return PL_ERANGE;
    *out = v;
    return 0;
}

int pl__parse_u64(const pl__field *f, uint64_t *out)
{
    uint64_t v = 0;
    if (f->len == 0 || f->len > 20)
        return -1;
    for (uint32_t i = 0; i < f->len; i++) {
        unsigned d = (unsigned)(f->s[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
