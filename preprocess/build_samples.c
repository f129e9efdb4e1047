/* pl_build: a sample-row provider's rows into the sample store (the samples
 * TSV's provider: the sample table reader, build.c), and the payload copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/checksum.h"
#include "src/core/fileio.h"
#include "src/core/npy.h"
#include "src/core/progress.h"
#include "src/core/vec.h"

#include "builder.h"

/* ----------------------------------------------------------------- samples */

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

