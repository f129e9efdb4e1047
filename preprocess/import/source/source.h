/* A downloaded input file as a stream of lines.
 *
 * pl__src_open() reads a regular file, a FIFO or a pipe ("-" is standard
 * input) and recognises its compression by its first bytes, never by its
 * name: gzip (1f 8b; several members in a row are read as one stream), zstd
 * (28 b5 2f fd; several frames likewise) or plain text. It decompresses in
 * chunks and hands out one line at a time, so a file of any size is read in
 * bounded memory (the buffer grows only to hold the longest line).
 *
 * Lines: split at '\n'; a trailing '\r' is dropped; a last line without a
 * newline still counts. A line longer than the line limit (pl__src_limits(),
 * 1 MiB unless raised) is an error naming "file:line" and the limit, so a
 * file without newlines (/dev/zero, a compressed bomb) never holds more than
 * about twice the limit in memory. zstd frames whose window exceeds the text
 * limit are refused naming the window and the limit. Every line is checked before it is handed out: a NUL
 * byte or invalid UTF-8 is an error naming "file:line:col" (col = 1-based
 * byte). A compressed stream that ends early or is corrupt is an error naming
 * the file and the line being read.
 */
#ifndef PL_IMPORT_SOURCE_H
#define PL_IMPORT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"
#include "src/core/parse.h"

/** Compression recognised by pl__src_open(). */
typedef enum pl_src_codec {
    PL_SRC_PLAIN = 0,
    PL_SRC_GZIP = 1,
    PL_SRC_ZSTD = 2,
} pl_src_codec;

typedef struct pl_src pl_src;

/** Default longest line: 1 MiB. */
#define PL_SRC_MAX_LINE_DEFAULT (UINT64_C(1) << 20)
/** Default largest whole text held in memory (an SBML model) and largest
 *  zstd window: 256 MiB. */
#define PL_SRC_MAX_TEXT_DEFAULT (UINT64_C(1) << 28)

/** Deepest nesting of YAML collections (models, recipes) read: libyaml's
 *  time grows with the square of the flow nesting. */
#define PL_YAML_MAX_DEPTH 64

/** Limits of every source opened afterwards (process-wide; set once by the
 *  command line before reading). 0 keeps the current value. `max_line`: the
 *  longest line in bytes; `max_text`: the largest text pl__src_text() reads
 *  and the largest zstd window accepted (at most 2^31). */
void pl__src_set_limits(uint64_t max_line, uint64_t max_text);

/** The current limits (`NULL` pointers are skipped). */
void pl__src_limits(uint64_t *max_line, uint64_t *max_text);

/** Parse a limit: a positive decimal number of bytes, optionally followed by
 *  k, M or G (powers of 1024). @return 0, or -1 when it is not one. */
int pl__src_parse_limit(const char *s, uint64_t *out);

/** Open `path` ("-": standard input, not closed by pl__src_close()) and read
 *  its first bytes to recognise the compression. `path` is copied.
 *  Errors: a file that cannot be opened or read, a directory (-EISDIR).
 *  @return 0 or a negative code; on failure `*out` is NULL. */
int pl__src_open(const char *path, pl_src **out, pl_err *err);

/** Release the source; accepts NULL. */
void pl__src_close(pl_src *s);

/** The next line, without its '\n' (and '\r'). `*line` points into the
 *  source's buffer and stays valid until the next call; it is not
 *  NUL-terminated.
 *  @return 1 with a line, 0 at the end of the input, or a negative code:
 *  PL_EPARSE (NUL byte, invalid UTF-8, truncated or corrupt compressed
 *  data), -errno (read error), -ENOMEM. */
int pl__src_line(pl_src *s, const char **line, size_t *len, pl_err *err);

/** The whole decompressed text of `path` as one NUL-terminated string of
 *  lines each ending in '\n' (lines checked as by pl__src_line()); `*out`
 *  is malloc'd. Errors as pl__src_line(), and PL_EPARSE naming the line where
 *  the text passes the text limit.
 *  @return 0 or a negative code; on failure `*out` is NULL. */
int pl__src_text(const char *path, char **out, size_t *len, pl_err *err);

/** The size and XXH64 (seed 0) of the bytes, as read (compressed or not),
 *  of the last source of `path` ("-": standard input) read to its end in
 *  this process: what a build read, whatever the file is (a link, a FIFO,
 *  standard input). @return 1 with them, 0 when no such read happened. */
int pl__src_digest(const char *path, uint64_t *bytes, uint64_t *sum);

/** 1-based number of the line last returned (0 before the first). */
uint64_t pl__src_lineno(const pl_src *s);

/** The path as given to pl__src_open(); owned by the source. */
const char *pl__src_path(const pl_src *s);

/** The compression recognised. */
pl_src_codec pl__src_codec(const pl_src *s);

/** Name of a codec: "plain", "gzip" or "zstd". */
const char *pl__src_codec_name(pl_src_codec c);

/** Decompressed bytes handed out so far (line terminators included). */
uint64_t pl__src_bytes(const pl_src *s);

/** Share of the file's bytes (compressed, as stored) read so far, 0 to 1,
 *  for progress estimates; 0 for a pipe or standard input that is one. */
double pl__src_frac(const pl_src *s);

/** Fail with PL_EPARSE and "path:line:col: reason" for the line last
 *  returned (col 0 leaves the column out).
 *  @return PL_EPARSE. */
int pl__src_fail(const pl_src *s, uint32_t col, pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** 1-based offset in field `f` of its first control character (C0, DEL, or
 *  the first byte of a C1 U+0080..U+009F), or 0 when it has none: names
 *  from inputs are refused with one, never printed raw. */
uint32_t pl__src_control_at(const pl__field *f);

/** Split `line[0..len)` at every `sep` byte (empty fields kept; spaces around
 *  a field are NOT trimmed) or, when `sep` is ' ', at runs of spaces and tabs
 *  (leading and trailing blanks ignored). Stores at most `max` fields.
 *  @return the number of fields on the line (may exceed `max`). */
int pl__src_split(const char *line, size_t len, char sep, pl__field *f, int max);

#endif
