/* One table (PL_ERRORS in pertload.h) names every library code; errno values
 * go through strerror. */
#include "error.h"

#include <errno.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

PL_API const char *pl_strerror(int code)
{
    switch (code) {
#define PL__ERR_TEXT(name, c, text) case c: return text;
        PL_ERRORS(PL__ERR_TEXT)
#undef PL__ERR_TEXT
    case 0: return "success";
    default: break;
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error";
}

PL_API const char *pl_errname(int code)
{
    switch (code) {
#define PL__ERR_NAME(name, c, text) case c: return #name;
        PL_ERRORS(PL__ERR_NAME)
#undef PL__ERR_NAME
    case 0: return "OK";
    case -ENOENT: return "ENOENT";
    case -EACCES: return "EACCES";
    case -ENOSPC: return "ENOSPC";
    case -ENOMEM: return "ENOMEM";
    case -EIO: return "EIO";
    case -EINVAL: return "EINVAL";
    case -EEXIST: return "EEXIST";
    case -EFBIG: return "EFBIG";
    case -EISDIR: return "EISDIR";
    case -ENOTDIR: return "ENOTDIR";
    default: return "E?";
    }
}

void pl__msg_fit(char *dst, size_t cap, const char *src, size_t len)
{
    if (cap == 0)
        return;
    if (len < cap) {
        memmove(dst, src, len);
        dst[len] = '\0';
        return;
    }
    static const char gap[] = "...";
    const size_t g = sizeof gap - 1;
    if (cap <= 2 * g + 1) {
        memmove(dst, src, cap - 1);
        dst[cap - 1] = '\0';
        return;
    }
    /* A message starts with its file and ends with its reason: keep a quarter
     * of the room for the head, the rest for the tail, cutting at UTF-8
     * character boundaries. */
    size_t head = (cap - 1 - g) / 4, tail = cap - 1 - g - head;
    const unsigned char *u = (const unsigned char *)src;
    while (head > 0 && (u[head] & 0xC0) == 0x80)
        head--;
    size_t from = len - tail;
    while (from < len && (u[from] & 0xC0) == 0x80)
        from++;
    memmove(dst, src, head);
    memcpy(dst + head, gap, g);
    memmove(dst + head + g, src + from, len - from);
    dst[head + g + len - from] = '\0';
}

size_t pl__ctrl_escape(char *dst, size_t cap, const char *src, size_t len, int keep_tab)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned c = s[i];
        char e[8];
        size_t k;
        if ((c < 0x20 && !(c == '\t' && keep_tab)) || c == 0x7f) {
            e[0] = '\\', e[1] = 'x', e[2] = hex[c >> 4], e[3] = hex[c & 15], k = 4;
        } else if (c == 0xc2 && i + 1 < len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f) {
            unsigned d = s[++i];
            memcpy(e, "\\u00", 4), e[4] = hex[d >> 4], e[5] = hex[d & 15], k = 6;
        } else {
            e[0] = (char)c, k = 1;
        }
        if (o + k >= cap)
            break;
        memcpy(dst + o, e, k);
        o += k;
    }
    dst[o] = '\0';
    return o;
}

/* 1 when p[0..n) holds a control character pl__ctrl_escape() writes out. */
static int has_ctrl(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++)
        if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f ||
            (s[i] == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
            return 1;
    return 0;
}

/* Format into err->msg, controls escaped; a message that does not fit loses
 * its middle. */
static void set_msgv(pl_err *err, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (n >= (int)sizeof err->msg || (n > 0 && has_ctrl(err->msg, (size_t)n))) {
        char *full = malloc((size_t)n + 1), *esc = malloc((size_t)n * 6 + 1);
        if (full && esc) {
            vsnprintf(full, (size_t)n + 1, fmt, again);
            size_t e = pl__ctrl_escape(esc, (size_t)n * 6 + 1, full, (size_t)n, 1);
            pl__msg_fit(err->msg, sizeof err->msg, esc, e);
        } else if (n < (int)sizeof err->msg) {
            pl__ctrl_escape(err->msg, sizeof err->msg, err->msg, 0, 1); /* nothing rather than raw */
        }
        free(full);
        free(esc);
    }
    va_end(again);
}

int pl__err(pl_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_msgv(err, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int pl__err_prefix(pl_err *err, const char *fmt, ...)
{
    if (!err)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int h = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t o = strnlen(err->msg, sizeof err->msg - 1);
    char *all = h >= 0 ? malloc((size_t)h + 2 + o + 1) : NULL;
    if (!all)
        return err->code; /* the reason stays as it was */
    va_start(ap, fmt);
    vsnprintf(all, (size_t)h + 1, fmt, ap);
    va_end(ap);
    memcpy(all + h, ": ", 2);
    memcpy(all + h + 2, err->msg, o);
    pl__msg_fit(err->msg, sizeof err->msg, all, (size_t)h + 2 + o);
    free(all);
    return err->code;
}

int pl__err_code(pl_err *err, int code)
{
    if (err)
        err->code = code;
    return code;
}

int pl__lmdb_code(int rc)
{
    if (rc == 0)
        return 0;
    if (rc > 0 && rc < 4096)
        return -rc; /* LMDB passes errno values through */
    if (rc == MDB_MAP_FULL)
        return -ENOSPC;
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
        return PL_ECORRUPT;
    if (rc == MDB_VERSION_MISMATCH)
        return PL_EFORMAT;
    return PL_ELMDB;
}
