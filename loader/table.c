#include "table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io.h"
#include "masks/masks.h"
#include "src/core/db.h"
#include "src/core/error.h"

#define HALF_BYTES ((size_t)4 << 20) /* each half of the read buffer */
#define MAX_GROUP 256u               /* blocks read in one group */

typedef struct group {
    uint64_t first, count; /* blocks */
} group;

/* Blocks first.. that fit one half of `half` bytes (at least one block). */
static group next_group(const pl_db *db, uint64_t first, size_t half)
{
    group gr = {first, 0};
    size_t bytes = 0;
    while (first + gr.count < db->meta.n_blocks && gr.count < MAX_GROUP) {
        size_t b = PL_BLOCK_HEADER + db->blocks[first + gr.count].comp_size;
        if (gr.count && bytes + b > half)
            break;
        bytes += b;
        gr.count++;
    }
    return gr;
}

/* buf_index: the registered half, or -1 when registration was refused. */
static int issue(pl__io *io, const pl_db *db, group gr, char *half, int buf_index,
                 pl_err *err)
{
    size_t at = 0; /* a group fits its half (next_group) */
    for (uint64_t b = gr.first; b < gr.first + gr.count; b++) {
        const struct pl__block_entry *e = &db->blocks[b];
        size_t len = PL_BLOCK_HEADER + e->comp_size;
        PL_TRY(pl__io_read(io, db->samples_fd, half + at, len, e->offset, buf_index, b, err));
        at += len;
    }
    return pl__io_submit(io, err);
}

/* Decode the blocks of a completed group into the table. */
static int decode(pl_db *db, const pl_graph *g, group gr, const char *half, pl__table *t,
                  uint64_t *refs, pl_err *err)
{
    size_t at = 0;
    pl__block_view v;
    for (uint64_t b = gr.first; b < gr.first + gr.count; b++) {
        const struct pl__block_entry *e = &db->blocks[b];
        size_t len = PL_BLOCK_HEADER + e->comp_size;
        PL_TRY(pl__block_decode(half + at, len, e, b, t->n_labels, db->meta.n_genes, db->dctx,
                                db->raw, &v, err));
        at += len;
        uint64_t row = e->first_row;
        memcpy(t->ids + row, v.ids, 8 * (size_t)v.n);
        memcpy(t->labels + row * t->n_labels, v.labels, 4 * (size_t)v.n * t->n_labels);
        for (uint32_t i = 0; i < v.n; i++, row++) {
            uint32_t k = v.gptr[i + 1] - v.gptr[i], bad;
            int64_t m = pl__masks_genes(g->n_genes, v.genes + v.gptr[i], k, t->genes + *refs,
                                        &bad);
            PL_FAIL_IF(m < 0, err, PL_ECORRUPT, "sample row %llu: gene out of range",
                       (unsigned long long)row);
            uint64_t total = 0;
            for (uint32_t kind = 0; kind < g->n_lists; kind++) {
                uint64_t bnd = pl__masks_bound(g, kind, t->genes + *refs, (uint32_t)m);
                total += bnd;
                if (bnd > t->max_kind_bound)
                    t->max_kind_bound = bnd;
            }
            if (total > t->max_bound)
                t->max_bound = total;
            t->weight[row] = total + (uint64_t)m < UINT32_MAX ? (uint32_t)(total + (uint64_t)m)
                                                             : UINT32_MAX;
            if ((uint32_t)m > t->max_genes)
                t->max_genes = (uint32_t)m;
            *refs += (uint64_t)m;
            t->gptr[row + 1] = *refs;
        }
    }
    return 0;
}

static int load(pl_db *db, const pl_graph *g, pl__io *io, char *buf, size_t hb, int reg,
                pl__table *t, pl_err *err)
{
    uint64_t refs = 0;
    group cur = next_group(db, 0, hb);
    int half = 0;
    if (cur.count)
        PL_TRY(issue(io, db, cur, buf, reg ? 0 : -1, err));
    while (cur.count) {
        /* Reads of the next group go out before this one is decoded. */
        for (uint64_t i = 0; i < cur.count; i++) {
            uint64_t tag;
            int64_t res;
            PL_TRY(pl__io_wait(io, &tag, &res, err));
            PL_FAIL_IF(res < 0, err, (int)res, "%s: reading block %llu: %s", PL_FILE_SAMPLES,
                       (unsigned long long)tag,
                       res == PL_ECORRUPT ? "the file ends before the block (truncated after "
                                            "the database was opened)"
                                          : pl_strerror((int)res));
        }
        group nxt = next_group(db, cur.first + cur.count, hb);
        if (nxt.count)
            PL_TRY(issue(io, db, nxt, buf + (size_t)(1 - half) * hb, reg ? 1 - half : -1,
                         err));
        PL_TRY(decode(db, g, cur, buf + (size_t)half * hb, t, &refs, err));
        cur = nxt;
        half = 1 - half;
    }
    return 0;
}

int pl__table_load(pl_db *db, const pl_graph *g, int io_mode, pl__table *t, pl_err *err)
{
    return pl__table_load_with(db, g, io_mode, NULL, t, err);
}

uint64_t pl__table_refs(const pl_db *db)
{
    uint64_t total = 0;
    for (uint64_t b = 0; b < db->meta.n_blocks; b++)
        total += db->blocks[b].n_refs;
    return total;
}

int pl__table_load_with(pl_db *db, const pl_graph *g, int io_mode, const pl__table_mem *mem,
                        pl__table *t, pl_err *err)
{
    memset(t, 0, sizeof *t);
    t->n = db->meta.n_samples;
    t->n_labels = db->meta.n_labels;
    uint64_t total_refs = pl__table_refs(db), n_lab = t->n * t->n_labels;
    t->ids = malloc((t->n ? t->n : 1) * 8);
    t->gptr = calloc(t->n + 1, 8);
    t->genes = malloc((total_refs ? total_refs : 1) * 4);
    t->labels = malloc((n_lab ? n_lab : 1) * 4);
    t->weight = malloc((t->n ? t->n : 1) * 4);
    int rc = !t->ids || !t->gptr || !t->genes || !t->labels || !t->weight
                 ? pl__err(err, -ENOMEM, "out of memory for %llu samples",
                           (unsigned long long)t->n)
                 : pl__table_decode(db, g, io_mode, mem, t, err);
    if (rc < 0)
        pl__table_free(t);
    return rc;
}

int pl__table_decode(pl_db *db, const pl_graph *g, int io_mode, const pl__table_mem *mem,
                     pl__table *t, pl_err *err)
{
    /* A half holds at least the largest block. */
    size_t biggest = 0;
    for (uint64_t b = 0; b < db->meta.n_blocks; b++)
        if (PL_BLOCK_HEADER + db->blocks[b].comp_size > biggest)
            biggest = PL_BLOCK_HEADER + db->blocks[b].comp_size;
    size_t half = biggest > HALF_BYTES ? biggest : HALF_BYTES;
    half = (half + 4095) & ~(size_t)4095;
    char *buf = NULL;
    pl__io *io = NULL;
    int rc;
    if (mem) {
        rc = mem->alloc(mem->ctx, 2 * half, (void **)&buf, err);
        t->locked = rc == 0;
    } else {
        buf = aligned_alloc(4096, 2 * half);
        rc = buf ? 0 : pl__err(err, -ENOMEM, "out of memory");
        if (rc == 0)
            t->locked = mlock(buf, 2 * half) == 0;
    }
    if (rc == 0)
        rc = pl__io_open(&io, io_mode, 2 * MAX_GROUP, err);
    if (rc == 0) {
        void *bufs[2] = {buf, buf + half};
        size_t lens[2] = {half, half};
        t->backend = pl__io_backend(io);
        /* Registration pins the buffers and counts against RLIMIT_MEMLOCK:
         * where it is refused, plain reads do the same work. */
        t->registered = pl__io_register(io, bufs, lens, 2, NULL) == 0;
    }
    if (rc == 0)
        rc = load(db, g, io, buf, half, t->registered, t, err);
    /* Drain reads still in flight before their buffer goes. */
    while (io && pl__io_pending(io)) {
        uint64_t tag;
        int64_t res;
        if (pl__io_wait(io, &tag, &res, NULL) < 0)
            break;
    }
    pl__io_close(io);
    if (mem && buf) {
        mem->free(mem->ctx, buf);
    } else if (buf) {
        if (t->locked)
            munlock(buf, 2 * half);
        free(buf);
    }
    return rc;
}

void pl__table_free(pl__table *t)
{
    if (!t)
        return;
    if (t->release) {
        t->release(t);
        memset(t, 0, sizeof *t);
        return;
    }
    free(t->ids);
    free(t->gptr);
    free(t->genes);
    free(t->labels);
    free(t->weight);
    memset(t, 0, sizeof *t);
}
