/* Streaming line reader over plain, gzip and zstd input (see source.h).
 *
 * Two buffers: `in` holds compressed bytes as read from the descriptor, `buf`
 * the decompressed text. Lines are cut from buf[start..end); when no newline
 * is left there, the unread tail moves to the front of `buf` (which doubles
 * when one line fills it) and the decoder appends more text behind it. Only
 * one read(2) size of input and one buffer of text are held at a time. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "src/core/checksum.h"
#include "src/core/error.h"
#include "src/core/parse.h"
#include "src/core/vec.h"

enum { IN_CAP = 1 << 18, BUF_CAP0 = 1 << 20 };

/* Set by the command line before any source opens; read-only afterwards. */
static uint64_t max_line_limit = PL_SRC_MAX_LINE_DEFAULT;
static uint64_t max_text_limit = PL_SRC_MAX_TEXT_DEFAULT;

void pl__src_set_limits(uint64_t max_line, uint64_t max_text)
{
    if (max_line)
        max_line_limit = max_line;
    if (max_text)
        max_text_limit = max_text;
}

void pl__src_limits(uint64_t *max_line, uint64_t *max_text)
{
    if (max_line)
        *max_line = max_line_limit;
    if (max_text)
        *max_text = max_text_limit;
}

int pl__src_parse_limit(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10, end++;
    else if (*end == 'M')
        shift = 20, end++;
    else if (*end == 'G')
        shift = 30, end++;
    if (errno || *end || v == 0 || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* The window log of the largest zstd window within the text limit. */
static int window_log_max(void)
{
    int log = 10;
    while (log < 31 && (UINT64_C(1) << (log + 1)) <= max_text_limit)
        log++;
    return log;
}

struct pl_src {
    char *path;
    int fd, own_fd;
    pl_src_codec codec;
    unsigned char *in;      /* compressed input */
    size_t in_pos, in_len;
    int in_eof;             /* the descriptor reported end of file */
    char *buf;              /* decompressed text */
    size_t cap, start, scan, end;
    int out_eof;            /* no more text will come */
    int frame_open;         /* gzip member / zstd frame started, not finished */
    uint64_t max_line;      /* the line limit when opened */
    pl__xxh64_state raw;    /* of the bytes read from the descriptor */
    int raw_eof;            /* the descriptor reported its end */
    uint64_t line, bytes;
    z_stream z;
    int z_init;
    ZSTD_DCtx *zd;
};

static const char *display(const char *path) { return strcmp(path, "-") ? path : "<stdin>"; }

/* One read(2) of at most cap bytes into dst (a pipe hands out what it has),
 * retried on EINTR; the bytes go into the digest of what was read, and 0 of
 * them marks the raw end of the input. */
static int read_raw(pl_src *s, void *dst, size_t cap, size_t *got, pl_err *err)
{
    ssize_t r;
    while ((r = read(s->fd, dst, cap)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        int e = errno;
        return pl__err(err, -e, "%s:%llu: read error: %s", s->path,
                       (unsigned long long)s->line + 1, strerror(e));
    }
    if (r == 0)
        s->raw_eof = 1;
    pl__xxh64_update(&s->raw, dst, (size_t)r);
    *got = (size_t)r;
    return 0;
}

/* Append what the descriptor gives to in[in_len..); sets in_eof at its end. */
static int read_in(pl_src *s, pl_err *err)
{
    if (s->in_pos > 0) {
        memmove(s->in, s->in + s->in_pos, s->in_len - s->in_pos);
        s->in_len -= s->in_pos;
        s->in_pos = 0;
    }
    if (s->in_len < IN_CAP && !s->in_eof) {
        size_t got;
        PL_TRY(read_raw(s, s->in + s->in_len, IN_CAP - s->in_len, &got, err));
        if (got == 0)
            s->in_eof = 1;
        s->in_len += got;
    }
    return 0;
}

int pl__src_open(const char *path, pl_src **out, pl_err *err)
{
    *out = NULL;
    pl_src *s = calloc(1, sizeof *s);
    PL_FAIL_IF(!s, err, -ENOMEM, "%s: out of memory", path);
    s->path = strdup(display(path));
    s->in = malloc(IN_CAP);
    s->max_line = max_line_limit;
    s->cap = BUF_CAP0;
    s->buf = malloc(s->cap);
    s->fd = -1;
    int rc = 0;
    if (!s->path || !s->in || !s->buf) {
        rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    if (!strcmp(path, "-")) {
        s->fd = 0;
    } else {
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            rc = pl__err(err, -errno, "%s: cannot open: %s", path, strerror(errno));
            goto fail;
        }
        s->own_fd = 1;
    }
    struct stat st;
    if (fstat(s->fd, &st) < 0) {
        rc = pl__err(err, -errno, "%s: cannot stat: %s", s->path, strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = pl__err(err, -EISDIR, "%s: cannot read: %s", s->path, strerror(EISDIR));
        goto fail;
    }
    if (S_ISREG(st.st_mode))
        posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* The magic bytes decide; a pipe may hand them out a few at a time. */
    while (s->in_len < 4 && !s->in_eof)
        if ((rc = read_in(s, err)) < 0)
            goto fail;
    const unsigned char *m = s->in;
    if (s->in_len >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
        s->codec = PL_SRC_GZIP;
        if (inflateInit2(&s->z, 15 + 16) != Z_OK) {
            rc = pl__err(err, -ENOMEM, "%s: cannot start the gzip decoder", s->path);
            goto fail;
        }
        s->z_init = 1;
        s->frame_open = 1;
    } else if (s->in_len >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
        s->codec = PL_SRC_ZSTD;
        s->zd = ZSTD_createDCtx();
        if (!s->zd ||
            ZSTD_isError(ZSTD_DCtx_setParameter(s->zd, ZSTD_d_windowLogMax, window_log_max()))) {
            rc = pl__err(err, -ENOMEM, "%s: cannot start the zstd decoder", s->path);
            goto fail;
        }
    } else {
        s->codec = PL_SRC_PLAIN;
    }
    *out = s;
    return 0;
fail:
    pl__src_close(s);
    return rc;
}

/* The digests of the sources read to their end, latest last. */
typedef struct digest {
    char *path;
    uint64_t bytes, sum;
} digest;

static pthread_mutex_t digests_lock = PTHREAD_MUTEX_INITIALIZER;
static digest *digests;
static uint64_t n_digests, cap_digests;

static void keep_digest(const pl_src *s)
{
    char *p = strdup(s->path);
    pthread_mutex_lock(&digests_lock);
    if (p && pl__grow(&digests, &cap_digests, n_digests + 1, sizeof *digests) == 0) {
        digests[n_digests++] = (digest){p, s->raw.total, pl__xxh64_digest(&s->raw)};
        p = NULL;
    }
    pthread_mutex_unlock(&digests_lock);
    free(p);
}

int pl__src_digest(const char *path, uint64_t *bytes, uint64_t *sum)
{
    const char *key = display(path);
    int found = 0;
    pthread_mutex_lock(&digests_lock);
    for (uint64_t i = n_digests; i-- > 0 && !found;)
        if (!strcmp(digests[i].path, key)) {
            *bytes = digests[i].bytes;
            *sum = digests[i].sum;
            found = 1;
        }
    pthread_mutex_unlock(&digests_lock);
    return found;
}

void pl__src_close(pl_src *s)
{
    if (!s)
        return;
    if (s->raw_eof)
        keep_digest(s);
    if (s->own_fd && s->fd >= 0)
        close(s->fd);
    if (s->z_init)
        inflateEnd(&s->z);
    ZSTD_freeDCtx(s->zd);
    free(s->in);
    free(s->buf);
    free(s->path);
    free(s);
}

static int truncated(pl_src *s, pl_err *err)
{
    return pl__err(err, PL_EPARSE,
                   "%s:%llu: truncated %s stream: the input ends inside compressed data",
                   s->path, (unsigned long long)s->line + 1, pl__src_codec_name(s->codec));
}

/* Plain text: what is left of the magic-byte read first, then the file. */
static int fill_plain(pl_src *s, pl_err *err)
{
    size_t room = s->cap - s->end;
    if (s->in_pos < s->in_len) {
        size_t n = s->in_len - s->in_pos;
        n = n < room ? n : room;
        memcpy(s->buf + s->end, s->in + s->in_pos, n);
        s->in_pos += n;
        s->end += n;
        return 0;
    }
    size_t got;
    PL_TRY(read_raw(s, s->buf + s->end, room, &got, err));
    if (got == 0)
        s->out_eof = 1;
    s->end += got;
    return 0;
}

static int fill_gzip(pl_src *s, pl_err *err)
{
    for (;;) {
        if (s->in_pos == s->in_len && !s->in_eof)
            PL_TRY(read_in(s, err));
        if (!s->frame_open) {
            /* Between members: the end, or the magic of the next one. */
            while (s->in_len - s->in_pos < 2 && !s->in_eof)
                PL_TRY(read_in(s, err));
            if (s->in_pos == s->in_len) {
                s->out_eof = 1;
                return 0;
            }
            const unsigned char *m = s->in + s->in_pos;
            if (s->in_len - s->in_pos < 2 || m[0] != 0x1f || m[1] != 0x8b)
                return pl__err(err, PL_EPARSE,
                               "%s:%llu: data after the end of the gzip stream is not "
                               "another gzip member", s->path,
                               (unsigned long long)s->line + 1);
            inflateReset(&s->z);
            s->frame_open = 1;
        }
        s->z.next_in = s->in + s->in_pos;
        s->z.avail_in = (uInt)(s->in_len - s->in_pos);
        s->z.next_out = (Bytef *)s->buf + s->end;
        s->z.avail_out = (uInt)(s->cap - s->end);
        int r = inflate(&s->z, Z_NO_FLUSH);
        s->in_pos = s->in_len - s->z.avail_in;
        size_t made = (size_t)((char *)s->z.next_out - (s->buf + s->end));
        s->end += made;
        if (r == Z_STREAM_END)
            s->frame_open = 0;
        else if (r == Z_BUF_ERROR) {
            if (s->in_pos == s->in_len && s->in_eof)
                return truncated(s, err);
        } else if (r != Z_OK)
            return pl__err(err, PL_EPARSE, "%s:%llu: corrupt gzip data (%s)", s->path,
                           (unsigned long long)s->line + 1,
                           s->z.msg ? s->z.msg : "inflate failed");
        if (made > 0)
            return 0;
    }
}

static int fill_zstd(pl_src *s, pl_err *err)
{
    for (;;) {
        if (s->in_pos == s->in_len && !s->in_eof)
            PL_TRY(read_in(s, err));
        ZSTD_inBuffer zin = {s->in, s->in_len, s->in_pos};
        ZSTD_outBuffer zout = {s->buf + s->end, s->cap - s->end, 0};
        size_t r = ZSTD_decompressStream(s->zd, &zout, &zin);
        int moved = zout.pos > 0 || zin.pos != s->in_pos;
        if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
            return pl__err(err, PL_EPARSE, "%s:%llu: a zstd frame with a window above the "
                           "memory limit of %llu bytes (zstd --long; raise the limit with "
                           "--max-text or the recipe key max_text, up to 2G)", s->path,
                           (unsigned long long)s->line + 1,
                           (unsigned long long)max_text_limit);
        if (ZSTD_isError(r))
            return pl__err(err, PL_EPARSE, "%s:%llu: corrupt zstd data (%s)", s->path,
                           (unsigned long long)s->line + 1, ZSTD_getErrorName(r));
        s->in_pos = zin.pos;
        s->end += zout.pos;
        /* 0: a frame is done and flushed. A call that moved nothing (at the
         * end of the input) returns the next frame's header size instead. */
        if (moved)
            s->frame_open = r != 0;
        if (zout.pos > 0)
            return 0;
        if (s->in_pos == s->in_len && s->in_eof) {
            if (s->frame_open)
                return truncated(s, err);
            s->out_eof = 1;
            return 0;
        }
    }
}

/* Offset of the first NUL byte or invalid UTF-8 sequence in p[0..n), or n;
 * `*nul` tells which. Eight bytes at a time while they are ASCII and not 0. */
static size_t check_text(const unsigned char *p, size_t n, int *nul)
{
    const uint64_t hi = 0x8080808080808080ULL, lo = 0x0101010101010101ULL;
    size_t i = 0;
    for (;;) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (((w | ((w - lo) & ~w)) & hi) != 0)
                break;
            i += 8;
        }
        if (i >= n)
            return n;
        unsigned c = p[i];
        if (c == 0) {
            *nul = 1;
            return i;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = pl__utf8_seq(p + i, n - i);
        if (len == 0) {
            *nul = 0;
            return i;
        }
        i += len;
    }
}

static int too_long(const pl_src *s, uint64_t line, pl_err *err)
{
    return pl__err(err, PL_EPARSE, "%s:%llu: a line longer than the limit of %llu bytes "
                   "(raise it with --max-line or the recipe key max_line)", s->path,
                   (unsigned long long)line, (unsigned long long)s->max_line);
}

int pl__src_line(pl_src *s, const char **line, size_t *len, pl_err *err)
{
    const char *p;
    size_t n;
    for (;;) {
        const char *nl = memchr(s->buf + s->scan, '\n', s->end - s->scan);
        if (nl) {
            p = s->buf + s->start;
            n = (size_t)(nl - p);
            s->start = s->scan = (size_t)(nl - s->buf) + 1;
            s->bytes += n + 1;
            break;
        }
        s->scan = s->end;
        if (s->out_eof) {
            if (s->start == s->end)
                return 0;
            p = s->buf + s->start; /* a last line without a newline */
            n = s->end - s->start;
            s->start = s->scan = s->end;
            s->bytes += n;
            break;
        }
        /* Move the unread tail to the front; double the buffer when one line
         * fills it, up to the line limit. */
        size_t tail = s->end - s->start;
        if (tail > s->max_line + 1) /* + 1: a '\r' before the newline */
            return too_long(s, s->line + 1, err);
        if (s->start > 0) {
            memmove(s->buf, s->buf + s->start, tail);
            s->start = 0;
            s->scan = s->end = tail;
        }
        if (s->end == s->cap) {
            size_t cap = s->cap * 2;
            char *b = realloc(s->buf, cap);
            PL_FAIL_IF(!b || cap < s->cap, err, -ENOMEM, "%s:%llu: out of memory (line of %zu bytes)",
                       s->path, (unsigned long long)s->line + 1, tail);
            s->buf = b;
            s->cap = cap;
        }
        switch (s->codec) {
        case PL_SRC_GZIP: PL_TRY(fill_gzip(s, err)); break;
        case PL_SRC_ZSTD: PL_TRY(fill_zstd(s, err)); break;
        default: PL_TRY(fill_plain(s, err)); break;
        }
    }
    s->line++;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (n > s->max_line)
        return too_long(s, s->line, err);
    int nul = 0;
    size_t bad = check_text((const unsigned char *)p, n, &nul);
    if (bad < n) {
        if (nul)
            return pl__src_fail(s, (uint32_t)bad + 1, err, "NUL byte in a text file");
        return pl__src_fail(s, (uint32_t)bad + 1, err, "invalid UTF-8 (byte 0x%02x)",
                            (unsigned char)p[bad]);
    }
    *line = p;
    *len = n;
    return 1;
}

int pl__src_text(const char *path, char **out, size_t *len, pl_err *err)
{
    *out = NULL;
    pl_src *src;
    PL_TRY(pl__src_open(path, &src, err));
    char *buf = NULL;
    uint64_t n = 0, cap = 0;
    const char *line;
    size_t ll;
    int rc;
    while ((rc = pl__src_line(src, &line, &ll, err)) > 0) {
        if (n + ll + 1 > max_text_limit) {
            rc = pl__src_fail(src, 0, err, "the text passes the limit of %llu bytes held in "
                              "memory (raise it with --max-text or the recipe key max_text)",
                              (unsigned long long)max_text_limit);
            break;
        }
        if (pl__grow(&buf, &cap, n + ll + 2, 1) < 0) {
            rc = pl__err(err, -ENOMEM, "%s: out of memory", pl__src_path(src));
            break;
        }
        memcpy(buf + n, line, ll);
        n += ll;
        buf[n++] = '\n';
    }
    pl__src_close(src);
    if (rc == 0 && !buf && !(buf = malloc(1)))
        rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

uint64_t pl__src_lineno(const pl_src *s) { return s->line; }
const char *pl__src_path(const pl_src *s) { return s->path; }
pl_src_codec pl__src_codec(const pl_src *s) { return s->codec; }
uint64_t pl__src_bytes(const pl_src *s) { return s->bytes; }

double pl__src_frac(const pl_src *s)
{
    struct stat st;
    if (!s || fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
        return 0.0;
    off_t at = lseek(s->fd, 0, SEEK_CUR);
    double f = at > 0 ? (double)at / (double)st.st_size : 0.0;
    return f < 1.0 ? f : 1.0;
}

const char *pl__src_codec_name(pl_src_codec c)
{
    return c == PL_SRC_GZIP ? "gzip" : c == PL_SRC_ZSTD ? "zstd" : "plain";
}

int pl__src_fail(const pl_src *s, uint32_t col, pl_err *err, const char *fmt, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (col)
        return pl__err(err, PL_EPARSE, "%s:%llu:%u: %s", s->path, (unsigned long long)s->line,
                       col, reason);
    return pl__err(err, PL_EPARSE, "%s:%llu: %s", s->path, (unsigned long long)s->line,
                   reason);
}

uint32_t pl__src_control_at(const pl__field *f)
{
    const unsigned char *s = (const unsigned char *)f->s;
    for (uint32_t i = 0; i < f->len; i++)
        if (s[i] < 0x20 || s[i] == 0x7f ||
            (s[i] == 0xc2 && i + 1 < f->len && s[i + 1] >= 0x80 && s[i + 1] <= 0x9f))
            return i + 1;
    return 0;
}

int pl__src_split(const char *line, size_t len, char sep, pl__field *f, int max)
{
    int k = 0;
    size_t i = 0;
    if (sep == ' ') {
        for (;;) {
            while (i < len && (line[i] == ' ' || line[i] == '\t'))
                i++;
            if (i >= len)
                return k;
            size_t a = i;
            while (i < len && line[i] != ' ' && line[i] != '\t')
                i++;
            if (k < max)
                f[k] = (pl__field){line + a, (uint32_t)(i - a), (uint32_t)a + 1};
            k++;
        }
    }
    for (;;) {
        const char *q = memchr(line + i, sep, len - i);
        size_t b = q ? (size_t)(q - line) : len;
        if (k < max)
            f[k] = (pl__field){line + i, (uint32_t)(b - i), (uint32_t)i + 1};
        k++;
        if (!q)
            return k;
        i = b + 1;
    }
}
