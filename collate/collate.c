/* Collation of a batch into a slot (layout rationale in collate.h). */
#include "collate.h"

#include <errno.h>
#include <string.h>

#include "masks/khop.h"
#include "masks/masks.h"
#include "src/core/db.h"
#include "src/core/error.h"

#define ALIGN(x) (((x) + PL_SLOT_ALIGN - 1) & ~(uint64_t)(PL_SLOT_ALIGN - 1))

static const char *const meta_kinds[3] = {"gpr", "reaction", "rmr"};

void pl__collate_cfg_init(pl__collate_cfg *c, const pl_db *db, const pl_graph *g,
                          uint32_t batch_size, uint32_t dense)
{
    const pl_db_info *info = pl_db_info_get(db);
    memset(c, 0, sizeof *c);
    c->g = g;
    c->n_genes = (uint32_t)info->n_genes;
    c->n_labels = info->n_labels;
    c->dense = dense;
    c->max_batch = batch_size;
    memcpy(c->payload_dtype, info->payload_dtype, sizeof c->payload_dtype);
    c->payload_ndim = info->payload_ndim;
    memcpy(c->payload_shape, info->payload_shape, sizeof c->payload_shape);
    c->payload_row_bytes = info->payload_dtype[0] ? info->payload_row_bytes : 0;
    for (uint32_t k = 0; k < g->n_lists; k++)
        c->list_len[k] = g->kind[k].count;
}

/* dst = a then b, cut to cap - 1 bytes as snprintf would: the names of a
 * batch's arrays without printf (which was 8% of the instructions of sparse
 * collation under callgrind). */
static void join(char *dst, size_t cap, const char *a, const char *b)
{
    size_t la = strnlen(a, cap - 1), lb = strnlen(b, cap - 1 - la);
    memcpy(dst, a, la);
    memcpy(dst + la, b, lb);
    dst[la + lb] = '\0';
}

static struct pl_slot_array *add(struct pl_slot_header *h, const char *name,
                                 const char *dtype, uint64_t offset, uint64_t nbytes,
                                 uint32_t ndim, uint64_t d0, uint64_t d1);

/* Name of list kind k ("edges/<type>" or "gpr", ...). */
static void kind_name(const pl__collate_cfg *c, uint32_t k, char *buf, size_t cap)
{
    if (k < c->g->n_types)
        join(buf, cap, "edges/", c->g->type_names[k]);
    else
        join(buf, cap, meta_kinds[k - c->g->n_types], "");
}

static uint64_t dense_row_bytes(const pl__collate_cfg *c, uint64_t len)
{
    return c->dense == PL_DENSE_BITS ? 8 * ((len + 63) / 64) : len;
}

/* Array count and the bytes of the header with its descriptors. */
static uint32_t n_arrays(const pl__collate_cfg *c)
{
    uint32_t n = 5 + 2 * c->g->n_lists + (c->payload_row_bytes ? 1 : 0);
    if (c->khop)
        n += 3 + 2 * pl__khop_n_types(c->khop);
    if (c->onto)
        n += c->dense ? 6 : 4;
    if (c->dense)
        n += 1 + c->g->n_lists;
    return n;
}

/* Offsets of the fixed part, in layout order. */
typedef struct fixed {
    uint64_t ids, rows, labels, pptr, ptr[PL_MAX_TYPES + 3], payload, gene_mask,
        mask[PL_MAX_TYPES + 3], end;
    uint64_t khop_gptr, khop_capped, khop_eptr[PL_MAX_TYPES];
    uint64_t onto_ptr[2], onto_mask[2]; /* terms, annotations */
} fixed;

/* Length of ontology list j (0 terms, 1 annotations). */
static uint64_t onto_len(const pl__collate_cfg *c, int j)
{
    return j ? c->onto->n_annotations : c->onto->n_terms;
}

static void fixed_layout(const pl__collate_cfg *c, uint32_t n, fixed *f)
{
    uint64_t at = ALIGN(sizeof(struct pl_slot_header) +
                        (uint64_t)n_arrays(c) * sizeof(struct pl_slot_array));
    f->ids = at;
    at = ALIGN(at + 8 * (uint64_t)n);
    f->rows = at;
    at = ALIGN(at + 8 * (uint64_t)n);
    f->labels = at;
    at = ALIGN(at + 4 * (uint64_t)n * c->n_labels);
    f->pptr = at;
    at = ALIGN(at + 8 * (uint64_t)(n + 1));
    for (uint32_t k = 0; k < c->g->n_lists; k++) {
        f->ptr[k] = at;
        at = ALIGN(at + 8 * (uint64_t)(n + 1));
    }
    if (c->khop) {
        f->khop_gptr = at;
        at = ALIGN(at + 8 * (uint64_t)(n + 1));
        f->khop_capped = at;
        at = ALIGN(at + (uint64_t)n);
        for (uint32_t j = 0; j < pl__khop_n_types(c->khop); j++) {
            f->khop_eptr[j] = at;
            at = ALIGN(at + 8 * (uint64_t)(n + 1));
        }
    }
    for (int j = 0; c->onto && j < 2; j++) {
        f->onto_ptr[j] = at;
        at = ALIGN(at + 8 * (uint64_t)(n + 1));
    }
    /* Page-aligned, so that payload rows can be read into it with O_DIRECT. */
    at = (at + PL_SLOT_PAGE - 1) & ~(uint64_t)(PL_SLOT_PAGE - 1);
    f->payload = at;
    at = ALIGN(at + c->payload_row_bytes * n);
    if (c->dense) {
        f->gene_mask = at;
        at = ALIGN(at + dense_row_bytes(c, c->n_genes) * n);
        for (uint32_t k = 0; k < c->g->n_lists; k++) {
            f->mask[k] = at;
            at = ALIGN(at + dense_row_bytes(c, c->list_len[k]) * n);
        }
        for (int j = 0; c->onto && j < 2; j++) {
            f->onto_mask[j] = at;
            at = ALIGN(at + dense_row_bytes(c, onto_len(c, j)) * n);
        }
    }
    f->end = at;
}

uint64_t pl__collate_payload_offset(const pl__collate_cfg *c, uint32_t n)
{
    fixed f;
    fixed_layout(c, n, &f);
    return f.payload;
}

uint64_t pl__collate_slot_bytes(const pl__collate_cfg *c, uint32_t n, uint64_t genes,
                                uint64_t positions)
{
    fixed f;
    fixed_layout(c, n, &f);
    /* Variable part: each list's region is aligned and padded for sentinels. */
    uint64_t extra = 0; /* the alignment of each k-hop and ontology list; their
                           bounds are counted in positions */
    if (c->khop)
        extra = (1 + pl__khop_n_types(c->khop)) * (uint64_t)PL_SLOT_ALIGN;
    if (c->onto)
        extra += 2 * (uint64_t)PL_SLOT_ALIGN;
    return f.end + ALIGN(4 * (genes + 1)) +
           (uint64_t)c->g->n_lists * ALIGN(4 * PL__MASKS_PAD + PL_SLOT_ALIGN) + 4 * positions +
           extra;
}

uint64_t pl__collate_khop_bound(const pl__collate_cfg *c, uint64_t n_pert)
{
    uint64_t set = pl__khop_genes_bound(c->khop, n_pert), sum = set;
    for (uint32_t j = 0; j < pl__khop_n_types(c->khop); j++)
        sum += pl__khop_edges_bound(c->khop, j, set);
    return 4 * sum;
}

/* The k-hop lists of the batch from `at` on (after the removed lists):
 * regions laid out at their bounds, each sample's set and edges written
 * straight into them, then each list moved down to follow the previous one.
 * @return the end of the last list, or PL_ERANGE (a sizing bug). */
static int64_t khop_lists(const pl__collate_cfg *c, const pl__batch_src *src,
                          unsigned char *base, const fixed *f, uint64_t at, uint64_t cap,
                          struct pl_slot_header *h, uint64_t batch, pl_err *err)
{
    const pl__khop *kh = c->khop;
    const uint32_t n = src->n, nt = pl__khop_n_types(kh);
    uint64_t region[PL_MAX_TYPES + 1], end = at, sbound = 0;
    for (uint32_t i = 0; i < n; i++)
        sbound += pl__khop_genes_bound(kh, src->n_genes[i]);
    region[0] = at;
    end = ALIGN(at + 4 * sbound);
    for (uint32_t j = 0; j < nt; j++) {
        uint64_t b = 0;
        for (uint32_t i = 0; i < n; i++)
            b += pl__khop_edges_bound(kh, j, pl__khop_genes_bound(kh, src->n_genes[i]));
        region[j + 1] = end;
        end = ALIGN(end + 4 * b);
    }
    PL_FAIL_IF(end > cap, err, PL_ERANGE, "batch %llu: its k-hop lists do not fit its slot",
               (unsigned long long)batch);
    int64_t *gptr = (int64_t *)(base + f->khop_gptr), *eptr[PL_MAX_TYPES];
    unsigned char *capped = base + f->khop_capped;
    int32_t *genes = (int32_t *)(base + region[0]);
    gptr[0] = 0;
    for (uint32_t j = 0; j < nt; j++) {
        eptr[j] = (int64_t *)(base + f->khop_eptr[j]);
        eptr[j][0] = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        int cut;
        int32_t *set = genes + gptr[i];
        uint32_t m = pl__khop_genes(src->khop, src->genes[i], src->n_genes[i], set, &cut);
        gptr[i + 1] = gptr[i] + m;
        capped[i] = (unsigned char)cut;
        for (uint32_t j = 0; j < nt; j++) {
            int64_t e = pl__khop_edges(src->khop, j, set, m,
                                       (int32_t *)(base + region[j + 1]) + eptr[j][i]);
            PL_FAIL_IF(e < 0, err, (int)e, "batch %llu: out of memory sorting k-hop edges",
                       (unsigned long long)batch);
            eptr[j][i + 1] = eptr[j][i] + e;
        }
    }
    char name[PL_SLOT_NAME_MAX];
    add(h, "khop/genes", "<i4", at, 4 * (uint64_t)gptr[n], 1, (uint64_t)gptr[n], 0);
    add(h, "khop/genes/ptr", "<i8", f->khop_gptr, 8 * (uint64_t)(n + 1), 1, n + 1, 0);
    add(h, "khop/capped", "|u1", f->khop_capped, n, 1, n, 0);
    at = ALIGN(at + 4 * (uint64_t)gptr[n]);
    for (uint32_t j = 0; j < nt; j++) {
        uint64_t len = (uint64_t)eptr[j][n];
        memmove(base + at, base + region[j + 1], 4 * len);
        const char *tn = c->g->type_names[pl__khop_type(kh, j)];
        join(name, sizeof name, "khop/edges/", tn);
        add(h, name, "<i4", at, 4 * len, 1, len, 0);
        join(name + strlen(name), sizeof name - strlen(name), "/ptr", "");
        add(h, name, "<i8", f->khop_eptr[j], 8 * (uint64_t)(n + 1), 1, n + 1, 0);
        at = ALIGN(at + 4 * len);
    }
    return (int64_t)at;
}

/* Per ontology list, the sizes of the genes' stored sets summed, capped at
 * the list's length: room for pl_ontology_removed() of the sample. */
static void onto_bounds(const pl_ontology *o, const int32_t *genes, uint32_t n, uint64_t *t,
                        uint64_t *a)
{
    uint64_t st = 0, sa = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = (uint32_t)genes[i];
        if (g >= o->n_genes) /* pl_ontology_removed refuses it */
            continue;
        st += o->gene_term_ptr[g + 1] - o->gene_term_ptr[g];
        sa += o->gene_ann_ptr[g + 1] - o->gene_ann_ptr[g];
    }
    *t = st < o->n_terms ? st : o->n_terms;
    *a = sa < o->n_annotations ? sa : o->n_annotations;
}

uint64_t pl__collate_onto_bound(const pl__collate_cfg *c, const int32_t *genes, uint32_t n)
{
    uint64_t t = 0, a = 0;
    if (c->onto)
        onto_bounds(c->onto, genes, n, &t, &a);
    return t + a;
}

static void dense_rows(const pl__collate_cfg *c, unsigned char *dst, uint64_t len,
                       const int32_t *removed, const int64_t *ptr, uint32_t n);

/* The ontology lists of the batch from `at` on: each sample's lists written
 * by pl_ontology_removed() straight into two regions laid out at their
 * bounds, the annotations then moved down to follow the terms; their dense
 * masks when asked for. @return the end of the lists, or a negative code
 * (PL_ERANGE: a sizing bug or a gene out of range; -ENOMEM). */
static int64_t onto_lists(const pl__collate_cfg *c, const pl__batch_src *src,
                          unsigned char *base, const fixed *f, uint64_t at, uint64_t cap,
                          struct pl_slot_header *h, uint64_t batch, pl_err *err)
{
    static const char *const names[2][3] = {
        {"ontology/term/removed", "ontology/term/ptr", "ontology/term/mask"},
        {"ontology/annotation/removed", "ontology/annotation/ptr", "ontology/annotation/mask"}};
    const pl_ontology *o = c->onto;
    const uint32_t n = src->n;
    uint64_t tb = 0, ab = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t, a;
        onto_bounds(o, src->genes[i], src->n_genes[i], &t, &a);
        tb += t;
        ab += a;
    }
    uint64_t region[2] = {at, ALIGN(at + 4 * tb)};
    PL_FAIL_IF(ALIGN(region[1] + 4 * ab) > cap, err, PL_ERANGE,
               "batch %llu: its ontology lists do not fit its slot", (unsigned long long)batch);
    int64_t *ptr[2] = {(int64_t *)(base + f->onto_ptr[0]), (int64_t *)(base + f->onto_ptr[1])};
    uint32_t *terms = (uint32_t *)(base + region[0]), *ann = (uint32_t *)(base + region[1]);
    ptr[0][0] = ptr[1][0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nt;
        uint64_t na;
        int rc = pl_ontology_removed(o, src->genes[i], src->n_genes[i], terms + ptr[0][i], &nt,
                                     ann + ptr[1][i], &na);
        PL_FAIL_IF(rc < 0, err, rc, "batch %llu: sample %llu: %s", (unsigned long long)batch,
                   (unsigned long long)src->ids[i],
                   rc == PL_ERANGE ? "a gene outside the ontology" : "out of memory");
        ptr[0][i + 1] = ptr[0][i] + nt;
        ptr[1][i + 1] = ptr[1][i] + (int64_t)na;
    }
    for (int j = 0; j < 2; j++) {
        uint64_t len = (uint64_t)ptr[j][n];
        if (j)
            memmove(base + at, base + region[1], 4 * len);
        add(h, names[j][0], "<i4", at, 4 * len, 1, len, 0);
        add(h, names[j][1], "<i8", f->onto_ptr[j], 8 * (uint64_t)(n + 1), 1, n + 1, 0);
        if (c->dense) {
            uint64_t row = dense_row_bytes(c, onto_len(c, j));
            dense_rows(c, base + f->onto_mask[j], onto_len(c, j),
                       (const int32_t *)(base + at), ptr[j], n);
            add(h, names[j][2], c->dense == PL_DENSE_BOOL ? "|b1" : "<u8", f->onto_mask[j],
                row * n, 2, n, c->dense == PL_DENSE_BOOL ? onto_len(c, j) : row / 8);
        }
        at = ALIGN(at + 4 * len);
    }
    return (int64_t)at;
}

static struct pl_slot_array *add(struct pl_slot_header *h, const char *name,
                                 const char *dtype, uint64_t offset, uint64_t nbytes,
                                 uint32_t ndim, uint64_t d0, uint64_t d1)
{
    struct pl_slot_array *a = (struct pl_slot_array *)(h + 1) + h->n_arrays++;
    memset(a, 0, sizeof *a);
    join(a->name, sizeof a->name, name, "");
    join(a->dtype, sizeof a->dtype, dtype, "");
    a->ndim = ndim;
    a->offset = offset;
    a->nbytes = nbytes;
    a->shape[0] = d0;
    a->shape[1] = d1;
    return a;
}

/* Dense masks: kept = 1, removed = 0, for the B rows of one list kind, which
 * lie back to back. The removed elements of all rows form one ascending
 * stream of indices (row i's position p is element i * row_elems + p), so a
 * single cursor walks them. The region is built in chunks of DENSE_CHUNK
 * bytes in a buffer that stays in L1: the buffer holds kept values; the
 * chunk's removed elements are cleared, the chunk is copied out with
 * non-temporal stores (32 bytes at a time with AVX2), and the cleared words
 * are set back (the whole buffer when more than DENSE_TOUCHED were). Every
 * byte of the region is written once, at the speed of memset, and the
 * megabytes of a batch's masks do not evict the graph from the caches
 * (measured with `pertload bench collate`). */
#define DENSE_CHUNK 4096u
#define DENSE_TOUCHED 256u

typedef struct removed_cursor {
    const int32_t *pos;
    const int64_t *ptr;
    uint32_t n, row;    /* rows, current row */
    uint64_t j, j_end;  /* index into pos; end of the current row's entries */
    uint64_t row_elems; /* elements per row (bytes for bool, bits for bits) */
    uint64_t row_base;  /* element index of the current row's first element */
    uint64_t next;      /* element index of the next removed one, UINT64_MAX at the end */
} removed_cursor;

/* Point `next` at entry j, moving on to the next row with entries. */
static inline void cursor_settle(removed_cursor *c)
{
    while (c->j >= c->j_end) {
        if (c->row + 1 >= c->n) {
            c->next = UINT64_MAX;
            return;
        }
        c->row++;
        c->j_end = (uint64_t)c->ptr[c->row + 1];
        c->row_base += c->row_elems;
    }
    c->next = c->row_base + (uint32_t)c->pos[c->j];
}

static inline void cursor_init(removed_cursor *c, const int32_t *pos, const int64_t *ptr,
                               uint32_t n, uint64_t row_elems)
{
    *c = (removed_cursor){pos, ptr, n, 0, (uint64_t)ptr[0], n ? (uint64_t)ptr[1] : 0,
                          row_elems, 0, 0};
    cursor_settle(c);
}

#if defined(__SSE2__)
#include <immintrin.h>
__attribute__((target("avx2"))) static void stream_copy_avx2(unsigned char *dst,
                                                              const unsigned char *src,
                                                              uint64_t bytes)
{
    for (uint64_t at = 0; at < bytes; at += 32)
        _mm256_stream_si256((__m256i *)(dst + at), _mm256_load_si256((const __m256i *)(src + at)));
}
/* Copy `bytes` (a multiple of 64; dst and src 64-aligned) bypassing the
 * caches; avx2: the CPU has AVX2 (pl_graph.simd). */
static void stream_copy(unsigned char *dst, const unsigned char *src, uint64_t bytes, int avx2)
{
    if (avx2) {
        stream_copy_avx2(dst, src, bytes);
        return;
    }
    for (uint64_t at = 0; at < bytes; at += 16)
        _mm_stream_si128((__m128i *)(dst + at), _mm_load_si128((const __m128i *)(src + at)));
}
static inline void stream_fence(void) { _mm_sfence(); }
#else
static void stream_copy(unsigned char *dst, const unsigned char *src, uint64_t bytes, int avx2)
{
    (void)avx2;
    memcpy(dst, src, bytes);
}
static inline void stream_fence(void) {}
#endif

static void dense_rows(const pl__collate_cfg *c, unsigned char *dst, uint64_t len,
                       const int32_t *removed, const int64_t *ptr, uint32_t n)
{
    const int bits = c->dense == PL_DENSE_BITS;
    const int fill = bits ? 0xFF : 1;
    const uint64_t row = dense_row_bytes(c, len), bytes = row * n;
    _Alignas(64) unsigned char chunk[DENSE_CHUNK];
    uint32_t touched[DENSE_TOUCHED]; /* the chunk's cleared words or bytes, to restore */
    removed_cursor cur;
    cursor_init(&cur, removed, ptr, n, bits ? 8 * row : row);
    memset(chunk, fill, sizeof chunk);
    for (uint64_t at = 0; at < bytes; at += DENSE_CHUNK) {
        uint64_t size = bytes - at < DENSE_CHUNK ? bytes - at : DENSE_CHUNK;
        uint32_t n_touched = 0;
        if (bits) {
            uint64_t *w = (uint64_t *)chunk, base = 8 * at, end = 8 * (at + size);
            for (; cur.next < end; cur.j++, cursor_settle(&cur)) {
                uint32_t i = (uint32_t)((cur.next - base) >> 6);
                w[i] &= ~(UINT64_C(1) << ((cur.next - base) & 63));
                touched[n_touched < DENSE_TOUCHED ? n_touched : 0] = i;
                n_touched++;
            }
        } else {
            for (; cur.next < at + size; cur.j++, cursor_settle(&cur)) {
                uint32_t i = (uint32_t)(cur.next - at);
                chunk[i] = 0;
                touched[n_touched < DENSE_TOUCHED ? n_touched : 0] = i;
                n_touched++;
            }
        }
        uint64_t whole = size & ~(uint64_t)63;
        stream_copy(dst + at, chunk, whole, c->g->simd);
        memcpy(dst + at + whole, chunk + whole, size - whole);
        if (n_touched > DENSE_TOUCHED)
            memset(chunk, fill, sizeof chunk);
        else if (bits)
            for (uint32_t t = 0; t < n_touched; t++)
                ((uint64_t *)chunk)[touched[t]] = UINT64_MAX;
        else
            for (uint32_t t = 0; t < n_touched; t++)
                chunk[touched[t]] = 1;
    }
    stream_fence();
    /* Bits past a row's length in its last word are zero. */
    if (bits && len % 64)
        for (uint32_t i = 0; i < n; i++)
            ((uint64_t *)(dst + row * i))[row / 8 - 1] &= (UINT64_C(1) << (len % 64)) - 1;
}

int pl__collate(const pl__collate_cfg *c, const pl__batch_src *src, void *slot, uint64_t cap,
                uint64_t batch, uint64_t epoch, int32_t *scratch, uint64_t scratch_len,
                pl_err *err)
{
    const pl_graph *g = c->g;
    const uint32_t n = src->n, L = c->n_labels, K = g->n_lists;
    unsigned char *base = slot;
    fixed f;
    fixed_layout(c, n, &f);
    PL_FAIL_IF(f.end > cap, err, PL_ERANGE, "batch %llu: %llu bytes of fixed arrays exceed "
               "the slot (%llu)", (unsigned long long)batch, (unsigned long long)f.end,
               (unsigned long long)cap);
    struct pl_slot_header *h = slot;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, PL_SLOT_MAGIC, 8);
    h->version = PL_SLOT_VERSION;
    h->batch = batch;
    h->epoch = epoch;
    h->n_samples = n;
    h->dense = c->dense;
    h->part = src->part;
    h->n_parts = src->n_parts ? src->n_parts : 1;
    h->first = src->first;

    uint64_t *ids = (uint64_t *)(base + f.ids), *rows = (uint64_t *)(base + f.rows);
    float *labels = (float *)(base + f.labels);
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = src->ids[i];
        rows[i] = src->rows[i];
        memcpy(labels + (uint64_t)i * L, src->labels[i], 4 * (size_t)L);
    }
    add(h, "sample_id", "<u8", f.ids, 8 * (uint64_t)n, 1, n, 0);
    add(h, "row", "<u8", f.rows, 8 * (uint64_t)n, 1, n, 0);
    add(h, "labels", "<f4", f.labels, 4 * (uint64_t)n * L, 2, n, L);

    /* Perturbation indices. */
    uint64_t at = f.end, total = 0;
    int64_t *pptr = (int64_t *)(base + f.pptr);
    int32_t *pert = (int32_t *)(base + at);
    pptr[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        total += src->n_genes[i];
    PL_FAIL_IF(at + 4 * total > cap, err, PL_ERANGE, "batch %llu does not fit its slot",
               (unsigned long long)batch);
    for (uint32_t i = 0; i < n; i++) {
        memcpy(pert + pptr[i], src->genes[i], 4 * (size_t)src->n_genes[i]);
        pptr[i + 1] = pptr[i] + src->n_genes[i];
    }
    add(h, "perturbation_indices", "<i4", at, 4 * total, 1, total, 0);
    add(h, "perturbation_ptr", "<i8", f.pptr, 8 * (uint64_t)(n + 1), 1, n + 1, 0);
    at = ALIGN(at + 4 * total);

    /* Removed positions, list kind by list kind, straight into the slot; RMR
     * from the reactions written before it. */
    char name[PL_SLOT_NAME_MAX], kn[PL_SLOT_NAME_MAX - 16];
    const int32_t *rx = NULL;
    const int64_t *rx_ptr = NULL;
    for (uint32_t k = 0; k < K; k++) {
        int64_t *ptr = (int64_t *)(base + f.ptr[k]);
        int32_t *out = (int32_t *)(base + at);
        uint64_t bound = PL__MASKS_PAD;
        for (uint32_t i = 0; i < n; i++)
            bound += pl__masks_bound(g, k, src->genes[i], src->n_genes[i]);
        PL_FAIL_IF(at + 4 * bound > cap, err, PL_ERANGE, "batch %llu does not fit its slot",
                   (unsigned long long)batch);
        ptr[0] = 0;
        if (k >= g->n_gene_lists) {
            for (uint32_t i = 0; i < n; i++)
                ptr[i + 1] = ptr[i] + (int64_t)pl__masks_rmr(g, rx + rx_ptr[i],
                                                             (uint64_t)(rx_ptr[i + 1] -
                                                                        rx_ptr[i]),
                                                             out + ptr[i]);
        } else {
            for (uint32_t i = 0; i < n; i++) {
                if (src->n_genes[i] > 2 &&
                    pl__masks_bound(g, k, src->genes[i], src->n_genes[i]) + PL__MASKS_PAD >
                        scratch_len)
                    return pl__err(err, PL_ERANGE, "batch %llu: scratch too small",
                                   (unsigned long long)batch);
                ptr[i + 1] = ptr[i] + (int64_t)pl__masks_union(g, k, src->genes[i],
                                                               src->n_genes[i], out + ptr[i],
                                                               scratch);
            }
        }
        if (k == g->n_types + PL_LIST_REACTION) {
            rx = out;
            rx_ptr = ptr;
        }
        kind_name(c, k, kn, sizeof kn);
        join(name, sizeof name, kn, "/removed");
        add(h, name, "<i4", at, 4 * (uint64_t)ptr[n], 1, (uint64_t)ptr[n], 0);
        join(name, sizeof name, kn, "/ptr");
        add(h, name, "<i8", f.ptr[k], 8 * (uint64_t)(n + 1), 1, n + 1, 0);
        if (c->dense) {
            dense_rows(c, base + f.mask[k], c->list_len[k], out, ptr, n);
            join(name, sizeof name, kn, "/mask");
            uint64_t row = dense_row_bytes(c, c->list_len[k]);
            add(h, name, c->dense == PL_DENSE_BOOL ? "|b1" : "<u8", f.mask[k], row * n, 2, n,
                c->dense == PL_DENSE_BOOL ? c->list_len[k] : row / 8);
        }
        at = ALIGN(at + 4 * (uint64_t)ptr[n]);
    }
    if (c->dense) {
        dense_rows(c, base + f.gene_mask, c->n_genes, pert, pptr, n);
        uint64_t row = dense_row_bytes(c, c->n_genes);
        add(h, "gene/mask", c->dense == PL_DENSE_BOOL ? "|b1" : "<u8", f.gene_mask, row * n, 2,
            n, c->dense == PL_DENSE_BOOL ? c->n_genes : row / 8);
    }
    if (c->onto) {
        int64_t end = onto_lists(c, src, base, &f, at, cap, h, batch, err);
        if (end < 0)
            return (int)end;
        at = (uint64_t)end;
    }
    if (c->khop) {
        int64_t end = khop_lists(c, src, base, &f, at, cap, h, batch, err);
        if (end < 0)
            return (int)end;
        at = (uint64_t)end;
    }
    if (c->payload_row_bytes) {
        struct pl_slot_array *a = add(h, "payload", c->payload_dtype, f.payload,
                                      c->payload_row_bytes * n, 1 + c->payload_ndim, n, 0);
        for (uint32_t d = 0; d < c->payload_ndim; d++)
            a->shape[1 + d] = c->payload_shape[d];
    }
    h->used = at;
    return 0;
}
