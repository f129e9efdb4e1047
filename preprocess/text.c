#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"

/* Read `fd` to its end into a new buffer: files of /proc and /sys report a
 * size of 0 (or a page) and cannot be mapped, yet have contents. */
static int read_to_eof(pl__text *t, int fd, pl_err *err)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    PL_FAIL_IF(!buf, err, -ENOMEM, "out of memory");
    for (;;) {
        if (len == cap) {
            char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                return pl__err(err, -ENOMEM, "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return pl__err(err, -e, "%s: cannot read: %s", t->path, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    t->data = buf;
    t->size = len;
    t->owned = 1;
    return 0;
}

/* A UTF-8 byte order mark opens the file: skip it (editors on Windows write
 * one; it would otherwise become part of the first name). */
static void skip_bom(pl__text *t)
{
    if (t->size >= 3 && !memcmp(t->data, "\xEF\xBB\xBF", 3))
        t->pos = 3;
}

int pl__text_open(pl__text *t, const char *path, pl_err *err)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    errno = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    int rc = 0;
    void *p = MAP_FAILED;
    if (st.st_size > 0)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
        t->size = (size_t)st.st_size;
        madvise(p, t->size, MADV_SEQUENTIAL);
        t->data = p;
    } else if (st.st_size == 0 || errno == ENODEV || errno == EINVAL) {
        rc = read_to_eof(t, fd, err);
    } else {
        rc = pl__err(err, -errno, "%s: cannot map: %s", path, strerror(errno));
    }
    close(fd);
    if (rc == 0)
        skip_bom(t);
    return rc;
}

void pl__text_close(pl__text *t)
{
    if (t && t->data && t->owned)
        free((void *)t->data);
    else if (t && t->data)
        munmap((void *)t->data, t->size);
    if (t)
        t->data = NULL;
}

int pl__text_fail(const pl__text *t, uint32_t col, pl_err *err, const char *fmt, ...)
{
    char reason[PL_ERR_MSG_MAX];
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
        size_t len = s[i] < 0x80 ? 1 : pl__utf8_seq(s + i, n - i);
        if (len == 0)
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
        /* Any CR left is not part of a CRLF: a file with CR-only line endings
         * would otherwise read as one long line. */
        const char *cr = memchr(s, '\r', len);
        if (cr)
            return pl__text_fail(t, (uint32_t)(cr - s) + 1, err,
                                 "carriage return without line feed (CR-only line endings?)");
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

/* Code point of the valid UTF-8 sequence at s[0..n) and its length. */
static uint32_t utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
    unsigned c = s[0];
    *len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    if (*len > n)
        *len = n; /* not reached on text pl__text_next() accepted */
    uint32_t cp = *len == 1 ? c : c & (0xFFu >> (*len + 1));
    for (size_t k = 1; k < *len; k++)
        cp = cp << 6 | (s[k] & 0x3F);
    return cp;
}

/* What makes code point `cp` unfit for a name, or NULL. */
static const char *invisible_kind(uint32_t cp)
{
    /* Unicode format characters (category Cf), as of Unicode 15. */
    static const uint32_t cf[][2] = {
        {0xAD, 0xAD},         {0x600, 0x605},       {0x61C, 0x61C},     {0x6DD, 0x6DD},
        {0x70F, 0x70F},       {0x890, 0x891},       {0x8E2, 0x8E2},     {0x180E, 0x180E},
        {0x200B, 0x200F},     {0x202A, 0x202E},     {0x2060, 0x2064},   {0x2066, 0x206F},
        {0xFEFF, 0xFEFF},     {0xFFF9, 0xFFFB},     {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
        {0x13430, 0x1343F},   {0x1BCA0, 0x1BCA3},   {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
        {0xE0020, 0xE007F},
    };
    /* Spaces and separators other than U+0020 (categories Zs, Zl, Zp). */
    static const uint32_t sp[][2] = {
        {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
        {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
    };
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
        return "a control character";
    for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++)
        if (cp >= cf[i][0] && cp <= cf[i][1])
            return "an invisible format character";
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        if (cp >= sp[i][0] && cp <= sp[i][1])
            return "a space other than U+0020";
    return NULL;
}

int pl__text_check_name(const pl__text *t, const pl__field *f, const char *what, pl_err *err)
{
    const unsigned char *s = (const unsigned char *)f->s;
    for (size_t i = 0, len; i < f->len; i += len) {
        uint32_t cp = utf8_decode(s + i, f->len - i, &len);
        const char *kind = invisible_kind(cp);
        if (kind)
            return pl__text_fail(t, f->col + (uint32_t)i, err,
                                 "%s contains U+%04X, %s", what, (unsigned)cp, kind);
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

int pl__text_contains_ci(const char *s, size_t n, const char *w)
{
    size_t m = strlen(w);
    for (size_t i = 0; i + m <= n; i++)
        if (strncasecmp(s + i, w, m) == 0)
            return 1;
    return 0;
}
