/* One table (PL_ERRORS in pertload.h) names every library code; errno values
 * go through strerror. */
#include "error.h"

#include <errno.h>
#include <lmdb.h>
#include <stdarg.h>
#include <stdio.h>
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

int pl__err(pl_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int pl__err_prefix(pl_err *err, const char *fmt, ...)
{
    if (!err)
        return 0;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t h = strlen(head);
    if (h + 2 >= sizeof err->msg)
        h = sizeof err->msg - 3;
    memcpy(err->msg, head, h);
    memcpy(err->msg + h, ": ", 2);
    size_t rest = sizeof err->msg - h - 3;
    size_t o = strnlen(old, rest);
    memcpy(err->msg + h + 2, old, o);
    err->msg[h + 2 + o] = '\0';
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
