/* Internal error helpers: every stage reports failures through these. */
#ifndef PL_CORE_ERROR_H
#define PL_CORE_ERROR_H

#include "pertload.h"

/** Record `code` and a printf-style message in `err` (may be NULL); a
 *  message too long for `err->msg` is shortened in the middle (pl__msg_fit).
 *  Control characters in it (names from inputs) are escaped
 *  (pl__ctrl_escape, tabs kept), so a message never drives a terminal.
 *  @return `code`, so that callers can `return pl__err(err, code, ...)`. */
int pl__err(pl_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Copy the message `src` of `len` bytes into `dst` (`cap` bytes, NUL
 *  included). One that does not fit keeps its start and, above all, its end
 *  (where the reason is), with "..." in place of the middle: a long path
 *  never hides why something failed. `src` and `dst` may overlap. */
void pl__msg_fit(char *dst, size_t cap, const char *src, size_t len);

/** Copy `src[0..len)` into `dst` (`cap` bytes, NUL included; cut at a
 *  character when it does not fit) with every control character written
 *  out: C0 and DEL as "\xNN", C1 (U+0080..U+009F) as "\u00NN"; a tab is
 *  kept when `keep_tab`. At most 6 bytes per input byte.
 *  @return the bytes written (without the NUL). */
size_t pl__ctrl_escape(char *dst, size_t cap, const char *src, size_t len, int keep_tab);

/** Prefix the message already in `err` with "prefix: " (keeps the code); a
 *  result too long for `err->msg` is shortened in the middle (pl__msg_fit). */
int pl__err_prefix(pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Replace the code recorded in `err` (may be NULL), keeping its message.
 *  @return `code`. */
int pl__err_code(pl_err *err, int code);

/** Map an LMDB return code to a pertload code (-errno or PL_ELMDB). */
int pl__lmdb_code(int rc);

/** Fail with `code` and a message when `cond` holds (zstd's RETURN_ERROR_IF). */
#define PL_FAIL_IF(cond, err, code, ...)                                       \
    do {                                                                       \
        if (cond)                                                              \
            return pl__err((err), (code), __VA_ARGS__);                        \
    } while (0)

/** Propagate a negative return value. */
#define PL_TRY(expr)                                                           \
    do {                                                                       \
        int pl__rc = (expr);                                                   \
        if (pl__rc < 0)                                                        \
            return pl__rc;                                                     \
    } while (0)

#endif
