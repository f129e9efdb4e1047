/* Line-oriented reader of the UTF-8 text inputs of `pertload build`.
 *
 * The bytes come from the line source (preprocess/import/source.h): a regular
 * file, a FIFO or standard input ("-"), plain, gzip or zstd as its first bytes
 * say, read in bounded memory.
 *
 * Fields: a line that contains a tab is split at every tab (empty fields kept,
 * spaces around a field trimmed); any other line is split at runs of spaces.
 * Lines whose first non-blank character is '#' and blank lines (nothing but
 * spaces, tabs, vertical tabs and form feeds) are skipped. A UTF-8 byte order
 * mark at the start of the file is skipped; lines end with LF or CRLF, and any
 * other CR (old Mac line endings) is an error. Errors name
 * "file:line:column: reason", column being the 1-based byte column (after any
 * byte order mark) where the offending field starts.
 */
#ifndef PL_PREPROCESS_TEXT_H
#define PL_PREPROCESS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"
#include "src/core/parse.h"

struct pl_src;

typedef struct pl__text {
    const char *path;     /* as errors name it ("<stdin>" for "-"); owned by src */
    struct pl_src *src;   /* the line source */
    uint64_t line;        /* 1-based number of the current line */
    const char *cur;      /* current line (without newline / CR) */
    size_t cur_len;
} pl__text;

/** Open `path` for reading: a regular file (also one that reports no size,
 *  as in /proc), a FIFO (waited on until a writer opens it) or "-" for
 *  standard input; gzip and zstd are recognised by their first bytes.
 *  Errors: a missing or unreadable file, a directory (-EISDIR), a device or
 *  socket (-EINVAL, "not a regular file"), naming it. */
int pl__text_open(pl__text *t, const char *path, pl_err *err);

/** Release the source; safe on a zeroed struct. */
void pl__text_close(pl__text *t);

/** Advance to the next non-blank, non-comment line.
 *  @return 1 with a line, 0 at the end, PL_EPARSE on invalid UTF-8, a NUL
 *  byte or a CR not followed by LF. */
int pl__text_next(pl__text *t, pl_err *err);

/** Fail with PL_EPARSE naming the field's line and column when field `f` (a
 *  name: a column of a header) holds a character that cannot be seen or
 *  tells names apart that look identical: C0 and C1 controls, Unicode format
 *  characters (category Cf: U+FEFF, U+200B..U+200F, U+2060, ...) and spaces
 *  other than U+0020 (U+00A0 no-break space, ...). `what` names the field in
 *  the message ("column name"). @return 0 when the name is clean. */
int pl__text_check_name(const pl__text *t, const pl__field *f, const char *what, pl_err *err);

/** Split the current line into at most `max` fields.
 *  @return the number of fields in the line (may exceed `max`; only the
 *  first `max` are stored). */
int pl__text_fields(const pl__text *t, pl__field *f, int max);

/** Fail with PL_EPARSE: "path:line:col: reason". */
int pl__text_fail(const pl__text *t, uint32_t col, pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** 1 when the n bytes at s contain the word w, ignoring ASCII case (header
 *  recognition), else 0. */
int pl__text_contains_ci(const char *s, size_t n, const char *w);

/** Fraction of the file read so far (of its compressed bytes), for progress
 *  estimates; 0 for a pipe. */
double pl__text_frac(const pl__text *t);

#endif
