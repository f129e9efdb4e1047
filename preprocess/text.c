#include "text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "preprocess/import/source/source.h"
#include "src/core/error.h"

int pl__text_open(pl__text *t, const char *path, pl_err *err)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    /* Regular files, FIFOs and standard input hold text; a device or socket
     * would read as nothing or never end. */
    struct stat st;
    if (strcmp(path, "-") && stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISFIFO(st.st_mode) && !S_ISDIR(st.st_mode))
        return pl__err(err, -EINVAL, "%s: cannot read: not a regular file", path);
    PL_TRY(pl__src_open(path, &t->src, err));
    t->path = pl__src_path(t->src);
    return 0;
}

void pl__text_close(pl__text *t)
{
    if (t)
        pl__src_close(t->src);
    if (t)
        t->src = NULL;
}

double pl__text_frac(const pl__text *t) { return pl__src_frac(t->src); }

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

int pl__text_next(pl__text *t, pl_err *err)
{
    for (;;) {
        const char *s;
        size_t len;
        int rc = pl__src_line(t->src, &s, &len, err);
        if (rc <= 0)
            return rc;
        t->line = pl__src_lineno(t->src);
        /* A UTF-8 byte order mark opens the file: skip it (editors on Windows
         * write one; it would otherwise become part of the first name). */
        if (t->line == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
            s += 3, len -= 3;
        t->cur = s;
        t->cur_len = len;
        /* Any CR left is not part of a CRLF: a file with CR-only line endings
         * would otherwise read as one long line. (The source has refused
         * invalid UTF-8 and NUL bytes already.) */
        const char *cr = memchr(s, '\r', len);
        if (cr)
            return pl__text_fail(t, (uint32_t)(cr - s) + 1, err,
                                 "carriage return without line feed (CR-only line endings?)");
        size_t i = 0;
        while (i < len && is_space(s[i]))
            i++;
        if (i == len || s[i] == '#')
            continue;
        return 1;
    }
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
