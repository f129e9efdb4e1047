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

/* Format into err->msg; a message that does not fit loses its middle. */
static void set_msgv(pl_err *err, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (n >= (int)sizeof err->msg) {
        char *full = malloc((size_t)n + 1);
        if (full) {
            vsnprintf(full, (size_t)n + 1, fmt, again);
            pl__msg_fit(err->msg, sizeof err->msg, full, (size_t)n);
            free(full);
        }
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
