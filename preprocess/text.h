/* Line-oriented reader of the UTF-8 text inputs of `pertload build`.
 *
 * Fields: a line that contains a tab is split at every tab (empty fields kept,
 * spaces around a field trimmed); any other line is split at runs of spaces.
 * Lines whose first non-blank character is '#' and blank lines (nothing but
 * spaces, tabs, vertical tabs and form feeds) are skipped;
 * a trailing CR is ignored. Errors name "file:line:column: reason", column
 * being the 1-based byte column where the offending field starts.
 */
#ifndef PL_PREPROCESS_TEXT_H
#define PL_PREPROCESS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

typedef struct pl__field {
    const char *s;
    uint32_t len;
    uint32_t col; /* 1-based column of the first byte */
} pl__field;

typedef struct pl__text {
    const char *path;
    const char *data; /* whole file, mapped */
    size_t size, pos;
    uint64_t line;    /* 1-based number of the current line */
    const char *cur;  /* current line (without newline / CR) */
    size_t cur_len;
} pl__text;

/** Map `path` for reading. Errors: unreadable file (names it). */
int pl__text_open(pl__text *t, const char *path, pl_err *err);

/** Unmap; safe on a zeroed struct. */
void pl__text_close(pl__text *t);

/** Advance to the next non-blank, non-comment line.
 *  @return 1 with a line, 0 at the end, PL_EPARSE on invalid UTF-8 or a NUL
 *  byte. */
int pl__text_next(pl__text *t, pl_err *err);

/** Split the current line into at most `max` fields.
 *  @return the number of fields in the line (may exceed `max`; only the
 *  first `max` are stored). */
int pl__text_fields(const pl__text *t, pl__field *f, int max);

/** Fail with PL_EPARSE: "path:line:col: reason". */
int pl__text_fail(const pl__text *t, uint32_t col, pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Parse a whole field as a finite-or-infinite double. @return 0 or -1. */
int pl__parse_double(const pl__field *f, double *out);

/** Parse a whole field as a float32, correctly rounded: a decimal or
 *  hexadecimal number, or an infinity spelt as strtof() reads it ("inf",
 *  "-Infinity"). Magnitudes below the smallest float32 become subnormal or 0.
 *  @return 0; -1 when the field is not a number (or a NaN); PL_ERANGE when it
 *  is a finite number too large for float32 (beyond +-3.4028235e38). */
int pl__parse_float(const pl__field *f, float *out);

/** Parse a whole field as an unsigned 64-bit decimal. @return 0 or -1. */
int pl__parse_u64(const pl__field *f, uint64_t *out);

/** Fraction of the file consumed, for progress estimates. */
static inline double pl__text_frac(const pl__text *t)
{
    return t->size ? (double)t->pos / (double)t->size : 1.0;
}

#endif
