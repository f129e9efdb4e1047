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

/* The samples TSV as a row provider (build_input.h). */
struct pl__samples_tsv {
    pl__text tx;
    int open;
    const pl_strtab *genes;
    int drop_unknown;
    int n, gcol, id;           /* columns in all, the genes and id columns */
    int label_col[MAX_FIELDS]; /* field index of label i */
    uint32_t n_labels;
    char *label_names[MAX_FIELDS];
    uint64_t row;
    int32_t *g;
    uint64_t cap_g;
    float labels[MAX_FIELDS];
    pl__field f[MAX_FIELDS + 1]; /* a row of n <= MAX_FIELDS columns, and one more */
};

static int tsv_header(pl__samples_tsv *t, pl_err *err)
{
    pl__text *tx = &t->tx;
    pl__field *f = t->f;
    int rc = pl__text_next(tx, err);
    if (rc < 0)
        return rc;
    PL_FAIL_IF(rc == 0, err, PL_EPARSE, "%s:1:1: no header row (expected a 'genes' "
               "column)", tx->path);
    t->n = pl__text_fields(tx, f, MAX_FIELDS + 1);
    if (t->n > MAX_FIELDS)
        return pl__text_fail(tx, f[MAX_FIELDS].col, err, "more than %d columns", MAX_FIELDS);
    t->gcol = t->id = -1;
    for (int i = 0; i < t->n; i++) {
        if (f[i].len == 0)
            return pl__text_fail(tx, f[i].col, err, "empty column name in the header");
        PL_TRY(pl__text_check_name(tx, &f[i], "column name", err));
        for (int j = 0; j < i; j++)
            if (f[j].len == f[i].len && !memcmp(f[j].s, f[i].s, f[i].len))
                return pl__text_fail(tx, f[i].col, err, "duplicate column '%.*s' in the "
                                     "header", (int)f[i].len, f[i].s);
        if (f[i].len == 5 && !memcmp(f[i].s, "genes", 5)) {
            t->gcol = i;
        } else if (f[i].len == 2 && !memcmp(f[i].s, "id", 2)) {
            t->id = i;
        } else {
            t->label_names[t->n_labels] = strndup(f[i].s, f[i].len);
            if (!t->label_names[t->n_labels])
                return pl__err(err, -ENOMEM, "out of memory");
            t->label_col[t->n_labels++] = i;
        }
    }
    if (t->gcol < 0)
        return pl__text_fail(tx, 1, err, "the header has no 'genes' column");
    return 0;
}

/* The genes of field `gf` into t->g; *unknown counts names not in the list
 * (drop mode). */
static int tsv_genes(pl__samples_tsv *t, const pl__field *gf, uint32_t *ng, uint32_t *unknown,
                     pl_err *err)
{
    pl__text *tx = &t->tx;
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
                return pl__text_fail(tx, gf->col, err, "sample has no genes");
            return pl__text_fail(tx, g.col, err, "empty gene name in '%.*s'", (int)gf->len,
                                 gf->s);
        }
        int64_t gi = pl__strtab_find(t->genes, g.s, g.len);
        if (gi < 0) {
            if (!t->drop_unknown)
                return pl__text_fail(tx, g.col, err, "unknown gene '%.*s'", (int)g.len, g.s);
            (*unknown)++;
            continue;
        }
        if (pl__grow(&t->g, &t->cap_g, *ng + 1, 4) < 0)
            return pl__err(err, -ENOMEM, "out of memory");
        t->g[(*ng)++] = (int32_t)gi;
    }
    return 0;
}

static int tsv_next(void *ctx, pl__sample_row *r, pl_err *err)
{
    pl__samples_tsv *t = ctx;
    pl__text *tx = &t->tx;
    pl__field *f = t->f;
    int rc = pl__text_next(tx, err);
    if (rc <= 0)
        return rc;
    uint64_t row = t->row++;
    int nf = pl__text_fields(tx, f, MAX_FIELDS + 1);
    if (nf != t->n)
        return pl__text_fail(tx, nf > t->n ? f[t->n].col : (uint32_t)tx->cur_len + 1, err,
                             "expected %d columns as in the header, found %d", t->n, nf);
    uint32_t ng = 0, unknown = 0;
    PL_TRY(tsv_genes(t, &f[t->gcol], &ng, &unknown, err));
    uint64_t id = row;
    if (t->id >= 0 && pl__parse_u64(&f[t->id], &id) < 0)
        return pl__text_fail(tx, f[t->id].col, err, "bad id '%.*s' (expected an "
                             "unsigned 64-bit integer)", (int)f[t->id].len, f[t->id].s);
    for (uint32_t l = 0; l < t->n_labels; l++) {
        const pl__field *lf = &f[t->label_col[l]];
        int pr = 0;
        if (pl__field_missing(lf)) {
            t->labels[l] = NAN;
        } else if ((pr = pl__parse_float(lf, &t->labels[l])) < 0) {
            return pl__text_fail(tx, lf->col, err,
                                 pr == PL_ERANGE ? "label '%.*s' in column '%s' is out of the "
                                                   "float32 range (magnitude above "
                                                   "3.4028235e+38)"
                                                 : "bad number '%.*s' in column '%s'",
                                 (int)lf->len, lf->s, t->label_names[l]);
        }
    }
    *r = (pl__sample_row){id, t->g, ng, t->labels, unknown > 0, NULL};
    return 1;
}

static double tsv_frac(void *ctx)
{
    return pl__text_frac(&((pl__samples_tsv *)ctx)->tx);
}

int pl__samples_tsv_open(pl__samples_tsv **tsv, const char *path, const pl_strtab *genes,
                         int drop_unknown, pl__build_samples *out, pl_err *err)
{
    pl__samples_tsv *t = *tsv = calloc(1, sizeof *t);
    if (!t)
        return pl__err(err, -ENOMEM, "out of memory");
    t->genes = genes;
    t->drop_unknown = drop_unknown;
    PL_TRY(pl__text_open(&t->tx, path, err));
    t->open = 1;
    PL_TRY(tsv_header(t, err));
    *out = (pl__build_samples){t->n_labels, (const char *const *)t->label_names, tsv_next,
                               tsv_frac, t, NULL, 0, NULL};
    return 0;
}

void pl__samples_tsv_close(pl__samples_tsv *t)
{
    if (!t)
        return;
    if (t->open)
        pl__text_close(&t->tx);
    for (uint32_t i = 0; i < t->n_labels; i++)
        free(t->label_names[i]);
    free(t->g);
    free(t);
}

static int push_dropped(builder *b, uint64_t row)
{
    if (pl__grow(&b->dropped_rows, &b->cap_dropped, b->n_dropped + 1, 8) < 0)
        return NOMEM(b);
    b->dropped_rows[b->n_dropped++] = row;
    return 0;
}

/* A provider's row against the gene list and its labels. */
static int check_row(builder *b, const pl__sample_row *r, uint64_t row)
{
    PL_FAIL_IF(r->n_genes == 0 && !r->dropped, b->err, PL_EPARSE,
               "samples: row %llu has no genes", (unsigned long long)row + 1);
    for (uint32_t i = 0; i < r->n_genes; i++)
        PL_FAIL_IF(r->genes[i] < 0 || (uint64_t)r->genes[i] >= b->n_genes, b->err, PL_EPARSE,
                   "samples: row %llu: gene index %d is out of range (%llu genes)",
                   (unsigned long long)row + 1, r->genes[i], (unsigned long long)b->n_genes);
    return 0;
}

int pl__build_store_samples(builder *b, const pl__build_samples *s)
{
    pl__progress pg;
    char sp[4096];
    PL_FAIL_IF(s->n_labels > MAX_FIELDS, b->err, PL_EUSAGE, "samples: %u labels (at most %d)",
               s->n_labels, MAX_FIELDS);
    b->label_names = calloc(s->n_labels + 1, sizeof(char *));
    if (!b->label_names)
        return NOMEM(b);
    for (uint32_t l = 0; l < s->n_labels; l++) {
        if (!(b->label_names[l] = strdup(s->label_names[l])))
            return NOMEM(b);
        b->n_labels = l + 1;
    }
    PL_TRY(pl__build_cats_begin(b, s));
    int rc = pl__sstore_create(&b->sw,
                               pl__path_join(sp, sizeof sp, b->tmp.path, PL_FILE_SAMPLES),
                               b->n_labels, b->err);
    pl__progress_start(&pg, b->o->progress, "samples", 0);
    pl__sample_row r;
    while (rc == 0 && (rc = s->next(s->ctx, &r, b->err)) == 1) {
        uint64_t row = b->n_rows_in++;
        if ((row & 4095) == 0)
            pl__progress_update(&pg, row, s->frac ? s->frac(s->ctx) : 0);
        rc = check_row(b, &r, row);
        if (rc == 0 && r.dropped) {
            b->st.dropped_samples++;
            rc = push_dropped(b, row);
        } else if (rc == 0) {
            rc = pl__build_cats_add(b, &r, row);
            if (rc == 0)
                rc = pl__sstore_add(&b->sw, r.id, r.genes, r.n_genes, r.labels, b->err);
        }
    }
    if (rc == 0) /* the levels are complete once the last row is given */
        rc = pl__build_cats_end(b, s);
    pl__progress_end(&pg, b->n_rows_in);
    if (rc == 0)
        rc = pl__sstore_finish(&b->sw, b->err);
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

