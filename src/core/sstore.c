#include "sstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "error.h"
#include "fileio.h"
#include "vec.h"

struct file_header {
    char magic[8];
    uint32_t version, n_labels;
    uint64_t n_samples, n_blocks;
    uint32_t block_rows, reserved;
    uint64_t lmdb_bytes, lmdb_checksum; /* 0 until pl__sstore_seal() */
    uint64_t checksum;                  /* XXH64 of the 56 bytes above */
};
_Static_assert(sizeof(struct file_header) == PL_SSTORE_HEADER, "header size");

struct block_header {
    uint32_t magic, comp_size, raw_size, n_rows;
    uint64_t first_row, checksum;
};
_Static_assert(sizeof(struct block_header) == PL_BLOCK_HEADER, "block header size");

int pl__sstore_create(pl__sstore_writer *w, const char *path, uint32_t n_labels,
                      pl_err *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->n_labels = n_labels;
    w->path = strdup(path);
    w->ids = malloc(PL_BLOCK_ROWS * sizeof *w->ids);
    w->gptr = malloc((PL_BLOCK_ROWS + 1) * sizeof *w->gptr);
    w->labels = malloc((size_t)PL_BLOCK_ROWS * (n_labels ? n_labels : 1) * sizeof(float));
    w->cctx = ZSTD_createCCtx();
    if (!w->path || !w->ids || !w->gptr || !w->labels || !w->cctx)
        return pl__err(err, -ENOMEM, "%s: out of memory", path);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, 3);
    w->gptr[0] = 0;
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0)
        return pl__err(err, -errno, "%s: %s", path, strerror(errno));
    w->offset = PL_SSTORE_HEADER;
    return 0;
}

static int flush_block(pl__sstore_writer *w, pl_err *err)
{
    if (w->n == 0)
        return 0;
    uint32_t n = w->n, L = w->n_labels;
    size_t raw_size = pl__block_raw_size(n, w->n_refs, L);
    if (pl__grow(&w->raw, &w->raw_cap, raw_size, 1) < 0)
        return pl__err(err, -ENOMEM, "%s: out of memory", w->path);
    unsigned char *r = w->raw;
    uint32_t hdr[2] = {n, (uint32_t)w->n_refs};
    memcpy(r, hdr, 8);
    r += 8;
    memcpy(r, w->ids, 8 * (size_t)n);
    r += 8 * (size_t)n;
    memcpy(r, w->gptr, 4 * (size_t)(n + 1));
    r += 4 * (size_t)(n + 1);
    memcpy(r, w->genes, 4 * w->n_refs);
    r += 4 * w->n_refs;
    memcpy(r, w->labels, 4 * (size_t)n * L);

    size_t bound = PL_BLOCK_HEADER + ZSTD_compressBound(raw_size);
    if (pl__grow(&w->buf, &w->buf_cap, bound, 1) < 0)
        return pl__err(err, -ENOMEM, "%s: out of memory", w->path);
    unsigned char *out = w->buf;
    size_t comp = ZSTD_compress2(w->cctx, out + PL_BLOCK_HEADER, bound - PL_BLOCK_HEADER,
                                 w->raw, raw_size);
    if (ZSTD_isError(comp))
        return pl__err(err, PL_EZSTD, "%s: %s", w->path, ZSTD_getErrorName(comp));

    struct pl__block_entry e = {
        .offset = w->offset,
        .comp_size = (uint32_t)comp,
        .raw_size = (uint32_t)raw_size,
        .first_row = w->n_samples - n,
        .n_rows = n,
        .n_refs = (uint32_t)w->n_refs,
        .checksum = pl__xxh64(out + PL_BLOCK_HEADER, comp, 0),
    };
    struct block_header bh = {PL_BLOCK_MAGIC, e.comp_size, e.raw_size, n, e.first_row,
                              e.checksum};
    memcpy(out, &bh, sizeof bh);
    PL_TRY(pl__write_all(w->fd, out, PL_BLOCK_HEADER + comp, w->offset, w->path, err));
    if (pl__grow(&w->index, &w->cap_blocks, w->n_blocks + 1, sizeof e) < 0)
        return pl__err(err, -ENOMEM, "%s: out of memory", w->path);
    w->index[w->n_blocks++] = e;
    w->offset += PL_BLOCK_HEADER + comp;
    w->n = 0;
    w->n_refs = 0;
    return 0;
}

int pl__sstore_add(pl__sstore_writer *w, uint64_t id, const int32_t *genes, uint32_t n,
                   const float *labels, pl_err *err)
{
    if (pl__grow(&w->genes, &w->cap_refs, w->n_refs + n, sizeof *w->genes) < 0)
        return pl__err(err, -ENOMEM, "%s: out of memory", w->path);
    memcpy(w->genes + w->n_refs, genes, 4 * (size_t)n);
    w->n_refs += n;
    w->ids[w->n] = id;
    memcpy(w->labels + (size_t)w->n * w->n_labels, labels, 4 * (size_t)w->n_labels);
    w->gptr[++w->n] = (uint32_t)w->n_refs;
    w->n_samples++;
    if (w->n == PL_BLOCK_ROWS)
        return flush_block(w, err);
    return 0;
}

/* Seal `h` with its checksum, write it at offset 0 and fsync. */
static int write_header(int fd, const char *path, struct file_header *h, pl_err *err)
{
    h->checksum = pl__xxh64(h, offsetof(struct file_header, checksum), 0);
    PL_TRY(pl__write_all(fd, h, sizeof *h, 0, path, err));
    if (fsync(fd) < 0)
        return pl__err(err, -errno, "%s: fsync: %s", path, strerror(errno));
    return 0;
}

int pl__sstore_finish(pl__sstore_writer *w, pl_err *err)
{
    PL_TRY(flush_block(w, err));
    struct file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PL_SSTORE_MAGIC, 8);
    h.version = PL_FORMAT_VERSION;
    h.n_labels = w->n_labels;
    h.n_samples = w->n_samples;
    h.n_blocks = w->n_blocks;
    h.block_rows = PL_BLOCK_ROWS;
    return write_header(w->fd, w->path, &h, err);
}

int pl__sstore_seal(const char *path, const char *lmdb_path, pl_err *err)
{
    struct file_header h;
    pl__sstore_header parsed;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    PL_FAIL_IF(fd < 0, err, -errno, "%s: %s", path, strerror(errno));
    int rc = pl__read_all(fd, &h, sizeof h, 0, path, err);
    if (rc == 0)
        rc = pl__sstore_read_header(&h, &parsed, err);
    if (rc == 0)
        rc = pl__file_xxh64(lmdb_path, &h.lmdb_bytes, &h.lmdb_checksum, err);
    if (rc == 0)
        rc = write_header(fd, path, &h, err);
    close(fd);
    return rc;
}

void pl__sstore_writer_free(pl__sstore_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    free(w->path);
    free(w->ids);
    free(w->gptr);
    free(w->labels);
    free(w->genes);
    free(w->buf);
    free(w->raw);
    free(w->index);
    ZSTD_freeCCtx(w->cctx);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

int pl__sstore_read_header(const void *hdr, pl__sstore_header *out, pl_err *err)
{
    struct file_header h;
    memcpy(&h, hdr, sizeof h);
    PL_FAIL_IF(memcmp(h.magic, PL_SSTORE_MAGIC, 8) != 0, err, PL_ECORRUPT,
               "%s: not a pertload sample store (bad magic)", PL_FILE_SAMPLES);
    /* The version before the checksum: another version may place it elsewhere. */
    PL_FAIL_IF(h.version != PL_FORMAT_VERSION, err, PL_EFORMAT,
               "%s: format version %u, this pertload reads version %u (rebuild the "
               "database)", PL_FILE_SAMPLES, h.version, PL_FORMAT_VERSION);
    PL_FAIL_IF(h.checksum != pl__xxh64(&h, offsetof(struct file_header, checksum), 0), err,
               PL_ECORRUPT, "%s: header checksum mismatch", PL_FILE_SAMPLES);
    *out = (pl__sstore_header){.version = h.version, .n_labels = h.n_labels,
                               .block_rows = h.block_rows, .n_samples = h.n_samples,
                               .n_blocks = h.n_blocks, .lmdb_bytes = h.lmdb_bytes,
                               .lmdb_checksum = h.lmdb_checksum};
    return 0;
}

int pl__sstore_check_header(const pl__sstore_header *h, uint64_t n_samples,
                            uint64_t n_blocks, uint32_t n_labels, pl_err *err)
{
    PL_FAIL_IF(h->n_samples != n_samples || h->n_blocks != n_blocks ||
                   h->n_labels != n_labels || h->block_rows != PL_BLOCK_ROWS,
               err, PL_ECORRUPT, "%s: header does not match the database metadata",
               PL_FILE_SAMPLES);
    return 0;
}

int pl__blocks_decode(const void *v, size_t len, const struct pl__meta *m,
                      struct pl__block_entry **out, pl_err *err)
{
    uint64_t nb = m->n_blocks;
    *out = NULL;
    PL_FAIL_IF(nb > len / sizeof **out || len != nb * sizeof **out, err, PL_ECORRUPT,
               "key meta/blocks: %zu bytes for %llu blocks", len, (unsigned long long)nb);
    struct pl__block_entry *e = malloc(len ? len : 1);
    if (!e)
        return pl__err(err, -ENOMEM, "out of memory");
    memcpy(e, v, len);
    uint64_t row = 0, off = PL_SSTORE_HEADER;
    for (uint64_t b = 0; b < nb; b++) {
        if (e[b].first_row != row || e[b].offset != off || e[b].n_rows == 0 ||
            e[b].n_rows > PL_BLOCK_ROWS ||
            e[b].raw_size != pl__block_raw_size(e[b].n_rows, e[b].n_refs, m->n_labels)) {
            free(e);
            return pl__err(err, PL_ECORRUPT, "key meta/blocks: entry %llu inconsistent",
                           (unsigned long long)b);
        }
        row += e[b].n_rows;
        off += PL_BLOCK_HEADER + e[b].comp_size; /* < 2^64: len / 40 entries of < 2^33 */
    }
    if (row != m->n_samples || off != m->samples_bytes) {
        free(e);
        return pl__err(err, PL_ECORRUPT, "key meta/blocks: does not cover the sample store");
    }
    *out = e;
    return 0;
}

int pl__block_decode(const void *block, size_t len, const struct pl__block_entry *e,
                     uint64_t which, uint32_t n_labels, uint64_t n_genes,
                     ZSTD_DCtx *dctx, void *raw, pl__block_view *v, pl_err *err)
{
    struct block_header bh;
    PL_FAIL_IF(len < PL_BLOCK_HEADER || len - PL_BLOCK_HEADER < e->comp_size, err,
               PL_ECORRUPT, "%s: block %llu: truncated", PL_FILE_SAMPLES,
               (unsigned long long)which);
    memcpy(&bh, block, sizeof bh);
    PL_FAIL_IF(bh.magic != PL_BLOCK_MAGIC || bh.comp_size != e->comp_size ||
                   bh.raw_size != e->raw_size || bh.n_rows != e->n_rows ||
                   bh.first_row != e->first_row || bh.checksum != e->checksum,
               err, PL_ECORRUPT, "%s: block %llu: header does not match the index",
               PL_FILE_SAMPLES, (unsigned long long)which);
    PL_FAIL_IF(e->raw_size < pl__block_raw_size(0, 0, 0), err, PL_ECORRUPT,
               "%s: block %llu: raw size %u too small", PL_FILE_SAMPLES,
               (unsigned long long)which, e->raw_size);
    const unsigned char *comp = (const unsigned char *)block + PL_BLOCK_HEADER;
    PL_FAIL_IF(pl__xxh64(comp, e->comp_size, 0) != e->checksum, err, PL_ECORRUPT,
               "%s: block %llu: checksum mismatch", PL_FILE_SAMPLES,
               (unsigned long long)which);
    size_t got = ZSTD_decompressDCtx(dctx, raw, e->raw_size, comp, e->comp_size);
    PL_FAIL_IF(ZSTD_isError(got) || got != e->raw_size, err, PL_ECORRUPT,
               "%s: block %llu: %s", PL_FILE_SAMPLES, (unsigned long long)which,
               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong raw size");

    const unsigned char *r = raw;
    uint32_t hdr[2];
    memcpy(hdr, r, 8);
    uint32_t n = hdr[0], refs = hdr[1];
    PL_FAIL_IF(n != e->n_rows || refs != e->n_refs ||
                   pl__block_raw_size(n, refs, n_labels) != e->raw_size,
               err, PL_ECORRUPT, "%s: block %llu: inconsistent sizes", PL_FILE_SAMPLES,
               (unsigned long long)which);
    v->n = n;
    v->n_refs = refs;
    v->ids = (const uint64_t *)(r + 8);
    v->gptr = (const uint32_t *)(r + 8 + 8 * (size_t)n);
    v->genes = (const int32_t *)(v->gptr + n + 1);
    v->labels = (const float *)(v->genes + refs);
    PL_FAIL_IF(v->gptr[0] != 0 || v->gptr[n] != refs, err, PL_ECORRUPT,
               "%s: block %llu: bad gene offsets", PL_FILE_SAMPLES, (unsigned long long)which);
    for (uint32_t i = 0; i < n; i++)
        PL_FAIL_IF(v->gptr[i + 1] <= v->gptr[i], err, PL_ECORRUPT,
                   "%s: block %llu: row %u has no genes", PL_FILE_SAMPLES,
                   (unsigned long long)which, i);
    for (uint32_t i = 0; i < refs; i++)
        PL_FAIL_IF(v->genes[i] < 0 || (uint64_t)v->genes[i] >= n_genes, err, PL_ECORRUPT,
                   "%s: block %llu: gene index %d out of range", PL_FILE_SAMPLES,
                   (unsigned long long)which, v->genes[i]);
    return 0;
}
