/* pl_build: the samples TSV into the sample store, and the payload copy. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/checksum.h"
#include "src/core/fileio.h"
#include "src/core/npy.h"
#include "src/core/progress.h"
#include "src/core/vec.h"
#include "text.h"

#include "builder.h"

/* ----------------------------------------------------------------- samples */

static int is_missing(const pl__field *f)
{
    static const char *const na[] = {"NA", "NaN", "nan"};
    if (f->len == 0)
        return 1;
    for (int i = 0; i < 3; i++)
        if (f->len == strlen(na[i]) && !memcmp(f->s, na[i], f->len))
            return 1;
    return 0;
}

typedef struct sample_cols {
    int n, genes, id;
    int label_col[MAX_FIELDS]; /* field index of label i */
} sample_cols;

static int read_samples_header(builder *b, pl__text *tx, sample_cols *c)
{
    pl__field f[MAX_FIELDS + 1]; /* one more, to point at the first one too many */
    int rc = pl__text_next(tx, b->err);
    if (rc < 0)
        return rc;
    PL_FAIL_IF(rc == 0, b->err, PL_EPARSE, "%s:1:1: no header row (expected a 'genes' "
               "column)", tx->path);
    c->n = pl__text_fields(tx, f, MAX_FIELDS + 1);
    if (c->n > MAX_FIELDS)
        return pl__text_fail(tx, f[MAX_FIELDS].col, b->err, "more than %d columns",
                             MAX_FIELDS);
    c->genes = c->id = -1;
    b->label_names = calloc((size_t)c->n, sizeof(char *));
    if (!b->label_names)
        return NOMEM(b);
    for (int i = 0; i < c->n; i++) {
        if (f[i].len == 0)
            return pl__text_fail(tx, f[i].col, b->err, "empty column name in the header");
        PL_TRY(pl__text_check_name(tx, &f[i], "column name", b->err));
        for (int j = 0; j < i; j++)
            if (f[j].len == f[i].len && !memcmp(f[j].s, f[i].s, f[i].len))
                return pl__text_fail(tx, f[i].col, b->err, "duplicate column '%.*s' in the "
                                     "header", (int)f[i].len, f[i].s);
        if (f[i].len == 5 && !memcmp(f[i].s, "genes", 5)) {
            c->genes = i;
        } else if (f[i].len == 2 && !memcmp(f[i].s, "id", 2)) {
            c->id = i;
        } else {
            b->label_names[b->n_labels] = strndup(f[i].s, f[i].len);
            if (!b->label_names[b->n_labels])
                return NOMEM(b);
            c->label_col[b->n_labels++] = i;
        }
    }
    if (c->genes < 0)
        return pl__text_fail(tx, 1, b->err, "the header has no 'genes' column");
    return 0;
}

static int push_dropped(builder *b, uint64_t row)
{
    if (pl__grow(&b->dropped_rows, &b->cap_dropped, b->n_dropped + 1, 8) < 0)
        return NOMEM(b);
    b->dropped_rows[b->n_dropped++] = row;
    return 0;
}

int pl__build_read_samples(builder *b, const char *path)
{
    pl__text tx;
    sample_cols c = {0};
    pl__progress pg;
    int32_t *genes = NULL;
    uint64_t cap_genes = 0;
    float labels[MAX_FIELDS];
    pl__field f[MAX_FIELDS + 1]; /* a row of c.n <= MAX_FIELDS columns, and one more */
    char sp[4096];
    int rc = pl__text_open(&tx, path, b->err);
    if (rc == 0)
        rc = read_samples_header(b, &tx, &c);
    if (rc == 0)
        rc = pl__sstore_create(&b->sw,
                               pl__path_join(sp, sizeof sp, b->tmp.path, PL_FILE_SAMPLES),
                               b->n_labels, b->err);
    pl__progress_start(&pg, b->o->progress, "samples", 0);
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        uint64_t row = b->n_rows_in++;
        if ((row & 4095) == 0)
            pl__progress_update(&pg, row, pl__text_frac(&tx));
        int nf = pl__text_fields(&tx, f, MAX_FIELDS + 1);
        if (nf != c.n) {
            rc = pl__text_fail(&tx, nf > c.n ? f[c.n].col : (uint32_t)tx.cur_len + 1, b->err,
                               "expected %d columns as in the header, found %d", c.n, nf);
            break;
        }
        const pl__field *gf = &f[c.genes];
        uint32_t ng = 0, unknown = 0;
        for (uint32_t i = 0, start = 0; i <= gf->len; i++) {
            if (i < gf->len && gf->s[i] != ';')
                continue;
            pl__field g = {gf->s + start, i - start, gf->col + start};
            while (g.len && g.s[0] == ' ')
                g.s++, g.len--, g.col++;
            while (g.len && g.s[g.len - 1] == ' ')
                g.len--;
            start = i + 1;
            if (g.len == 0) {
                if (gf->len == 0)
                    rc = pl__text_fail(&tx, gf->col, b->err, "sample has no genes");
                else
                    rc = pl__text_fail(&tx, g.col, b->err, "empty gene name in '%.*s'",
                                       (int)gf->len, gf->s);
                break;
            }
            int64_t gi = pl__strtab_find(&b->genes, g.s, g.len);
            if (gi < 0) {
                if (!b->o->drop_unknown_genes) {
                    rc = pl__text_fail(&tx, g.col, b->err, "unknown gene '%.*s'", (int)g.len,
                                       g.s);
                    break;
                }
                unknown++;
                continue;
            }
            if (pl__grow(&genes, &cap_genes, ng + 1, 4) < 0) {
                rc = NOMEM(b);
                break;
            }
            genes[ng++] = (int32_t)gi;
        }
        if (rc < 0)
            break;
        uint64_t id = row;
        if (c.id >= 0 && pl__parse_u64(&f[c.id], &id) < 0) {
            rc = pl__text_fail(&tx, f[c.id].col, b->err, "bad id '%.*s' (expected an "
                               "unsigned 64-bit integer)", (int)f[c.id].len, f[c.id].s);
            break;
        }
        for (uint32_t l = 0; l < b->n_labels; l++) {
            const pl__field *lf = &f[c.label_col[l]];
            int pr = 0;
            if (is_missing(lf)) {
                labels[l] = NAN;
            } else if ((pr = pl__parse_float(lf, &labels[l])) < 0) {
                rc = pl__text_fail(&tx, lf->col, b->err,
                                   pr == PL_ERANGE ? "label '%.*s' in column '%s' is out of the "
                                                     "float32 range (magnitude above "
                                                     "3.4028235e+38)"
                                                   : "bad number '%.*s' in column '%s'",
                                   (int)lf->len, lf->s, b->label_names[l]);
                break;
            }
        }
        if (rc < 0)
            break;
        if (unknown) {
            b->st.dropped_samples++;
            rc = push_dropped(b, row);
            continue;
        }
        rc = pl__sstore_add(&b->sw, id, genes, ng, labels, b->err);
    }
    pl__progress_end(&pg, b->n_rows_in);
    if (rc == 0)
        rc = pl__sstore_finish(&b->sw, b->err);
    free(genes);
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}


/* ----------------------------------------------------------------- payload */

/* Payload data goes out in PL_PAYLOAD_CHUNK pieces, each checksummed. */
static int chunk_flush(builder *b, chunker *c)
{
    if (c->fill == 0)
        return 0;
    if (pl__grow(&c->sums, &c->cap, c->n_sums + 1, 8) < 0)
        return NOMEM(b);
    c->sums[c->n_sums++] = pl__xxh64(c->buf, c->fill, 0);
    PL_TRY(pl__write_all(c->fd, c->buf, c->fill, c->written, c->path, b->err));
    c->written += c->fill;
    c->fill = 0;
    return 0;
}

static int chunk_put(builder *b, chunker *c, const char *p, uint64_t n)
{
    while (n > 0) {
        uint64_t take = PL_PAYLOAD_CHUNK - c->fill < n ? PL_PAYLOAD_CHUNK - c->fill : n;
        memcpy(c->buf + c->fill, p, take);
        c->fill += take;
        p += take;
        n -= take;
        if (c->fill == PL_PAYLOAD_CHUNK)
            PL_TRY(chunk_flush(b, c));
    }
    return 0;
}

static int check_payload(builder *b, const pl__npy *n, uint64_t *row_bytes)
{
    static const char *const ok[] = {"<f4", "<f2", "|u1", "<i4"};
    int good = 0;
    for (int i = 0; i < 4; i++)
        good |= !strcmp(n->descr, ok[i]);
    PL_FAIL_IF(!good, b->err, PL_EPARSE, "%s: payload dtype '%s' not supported (float32, "
               "float16, uint8 or int32)", n->path, n->descr);
    PL_FAIL_IF(n->ndim < 1 || n->shape[0] != b->n_rows_in, b->err, PL_EPARSE,
               "%s: payload has %llu rows, the samples file %llu", n->path,
               n->ndim ? (unsigned long long)n->shape[0] : 0ULL,
               (unsigned long long)b->n_rows_in);
    *row_bytes = n->itemsize; /* no overflow: pl__npy_open checked the whole size */
    for (uint32_t i = 1; i < n->ndim; i++)
        *row_bytes *= n->shape[i];
    PL_FAIL_IF(*row_bytes == 0, b->err, PL_EPARSE, "%s: payload rows are empty", n->path);
    return 0;
}

int pl__build_copy_payload(builder *b, const char *path, chunker *c)
{
    pl__npy n;
    char out[4096], hdr[PL_PAYLOAD_ALIGN], *row = NULL;
    uint64_t row_bytes = 0, shape[8];
    int rc = pl__npy_open(&n, path, b->err);
    if (rc == 0)
        rc = check_payload(b, &n, &row_bytes);
    memcpy(shape, n.shape, sizeof shape);
    shape[0] = b->n_rows_in - b->n_dropped;
    size_t hlen = pl__npy_header(hdr, sizeof hdr, n.descr, shape, n.ndim, PL_PAYLOAD_ALIGN);
    c->path = pl__path_join(out, sizeof out, b->tmp.path, PL_FILE_PAYLOAD);
    if (rc == 0) {
        c->fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (c->fd < 0)
            rc = pl__err(b->err, -errno, "%s: %s", out, strerror(errno));
    }
    if (rc == 0)
        rc = pl__write_all(c->fd, hdr, hlen, 0, out, b->err);
    c->written = hlen;
    c->buf = malloc(PL_PAYLOAD_CHUNK);
    row = malloc(PL_PAYLOAD_CHUNK);
    if (rc == 0 && (!c->buf || !row))
        rc = NOMEM(b);
    /* Copy the runs of kept rows between dropped ones with large reads. */
    for (uint64_t r = 0, d = 0; rc == 0 && r < b->n_rows_in; d++) {
        uint64_t end = d < b->n_dropped ? b->dropped_rows[d] : b->n_rows_in;
        for (uint64_t off = r * row_bytes; rc == 0 && off < end * row_bytes;) {
            uint64_t take = end * row_bytes - off;
            if (take > PL_PAYLOAD_CHUNK)
                take = PL_PAYLOAD_CHUNK;
            rc = pl__read_all(n.fd, row, take, n.offset + off, path, b->err);
            if (rc == 0)
                rc = chunk_put(b, c, row, take);
            off += take;
        }
        r = end + 1;
    }
    if (rc == 0)
        rc = chunk_flush(b, c);
    if (rc == 0 && fsync(c->fd) < 0)
        rc = pl__err(b->err, -errno, "%s: fsync: %s", out, strerror(errno));
    if (rc == 0) {
        struct pl__meta *m = &b->meta;
        memcpy(m->payload_dtype, n.descr, sizeof m->payload_dtype);
        m->payload_ndim = n.ndim - 1;
        for (uint32_t i = 1; i < n.ndim; i++)
            m->payload_shape[i - 1] = n.shape[i];
        m->payload_row_bytes = row_bytes;
        m->payload_offset = hlen;
        m->payload_bytes = b->st.payload_bytes = c->written;
    }
    free(row);
    pl__npy_close(&n);
    return rc;
}

