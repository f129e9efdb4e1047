/* Checked LMDB values: body + XXH64(body, seed = XXH64(key)). */
#include "dbformat.h"

#include <errno.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "checksum.h"
#include "error.h"
#include "vec.h"

const char *const pl__dbi_names[PL_DBI_COUNT] = {"meta", "names", "edges", "inc",
                                                    "onto", "feat", "cats"};

void pl__key_describe(int dbi, const void *kp, size_t klen, char *buf, size_t cap)
{
    const unsigned char *k = kp;
    if (dbi == PL_DBI_INC && klen == 6) {
        unsigned kind = (unsigned)k[0] << 8 | k[1];
        unsigned long gene = (unsigned long)k[2] << 24 | (unsigned long)k[3] << 16 |
                             (unsigned long)k[4] << 8 | k[5];
        snprintf(buf, cap, "inc/kind %u/gene %lu", kind, gene);
    } else if (dbi == PL_DBI_ONTO && klen == 5 && k[0] < 0x20) {
        unsigned long gene = (unsigned long)k[1] << 24 | (unsigned long)k[2] << 16 |
                             (unsigned long)k[3] << 8 | k[4];
        snprintf(buf, cap, "onto/%s/gene %lu", k[0] == PL_ONTO_KIND_TERM ? "term"
                 : k[0] == PL_ONTO_KIND_ANN ? "annotation" : "kind ?", gene);
    } else if (dbi == PL_DBI_CATS && klen == 5 && k[0] == 'c') {
        unsigned long c = (unsigned long)k[1] << 24 | (unsigned long)k[2] << 16 |
                          (unsigned long)k[3] << 8 | k[4];
        snprintf(buf, cap, "cats/column %lu", c);
    } else if (dbi == PL_DBI_EDGES && klen == 2 && k[0] == 'e') {
        snprintf(buf, cap, "edges/type %u", k[1]);
    } else {
        snprintf(buf, cap, "%s/%.*s", pl__dbi_names[dbi], (int)klen, (const char *)k);
    }
}

static uint64_t trailer(const void *key, size_t klen, const void *val, size_t len)
{
    return pl__xxh64(val, len, pl__xxh64(key, klen, 0));
}

int pl__db_put(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void *val, size_t len, unsigned flags, pl_err *err)
{
    MDB_val k = {klen, (void *)key}, v = {len + 8, NULL};
    int rc = mdb_put(txn, dbi, &k, &v, flags | MDB_RESERVE);
    if (rc) {
        char kd[96];
        pl__key_describe(which, key, klen, kd, sizeof kd);
        return pl__err(err, pl__lmdb_code(rc), "writing %s: %s", kd, mdb_strerror(rc));
    }
    uint64_t sum = trailer(key, klen, val, len);
    if (len)
        memcpy(v.mv_data, val, len);
    memcpy((char *)v.mv_data + len, &sum, 8);
    return 0;
}

int pl__db_check(int which, const MDB_val *k, const MDB_val *v, pl_err *err)
{
    uint64_t sum;
    if (v->mv_size >= 8) {
        memcpy(&sum, (const char *)v->mv_data + v->mv_size - 8, 8);
        if (sum == trailer(k->mv_data, k->mv_size, v->mv_data, v->mv_size - 8))
            return 0;
    }
    char kd[96];
    pl__key_describe(which, k->mv_data, k->mv_size, kd, sizeof kd);
    return pl__err(err, PL_ECORRUPT, "key %s: checksum mismatch", kd);
}

int pl__db_get(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
               const void **val, size_t *len, pl_err *err)
{
    MDB_val k = {klen, (void *)key}, v;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND)
        return -ENOENT;
    if (rc) {
        char kd[96];
        pl__key_describe(which, key, klen, kd, sizeof kd);
        return pl__err(err, pl__lmdb_code(rc), "reading %s: %s", kd, mdb_strerror(rc));
    }
    PL_TRY(pl__db_check(which, &k, &v, err));
    *val = v.mv_data;
    *len = v.mv_size - 8;
    return 0;
}

int pl__zstd_encode(const void *v, size_t len, int level, void **out, size_t *out_len,
                    pl_err *err)
{
    *out = NULL;
    size_t cap = ZSTD_compressBound(len);
    void *buf = malloc(cap ? cap : 1);
    if (!buf)
        return pl__err(err, -ENOMEM, "out of memory compressing %zu bytes", len);
    size_t n = ZSTD_compress(buf, cap, v, len, level);
    if (ZSTD_isError(n)) {
        free(buf);
        return pl__err(err, PL_EZSTD, "compressing: %s", ZSTD_getErrorName(n));
    }
    *out = buf;
    *out_len = n;
    return 0;
}

int pl__db_put_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    const void *val, size_t len, pl_err *err)
{
    void *buf;
    size_t n;
    PL_TRY(pl__zstd_encode(val, len, 3, &buf, &n, err));
    int rc = pl__db_put(txn, dbi, which, key, klen, buf, n, 0, err);
    free(buf);
    return rc;
}

/* Item size of a payload dtype (the ones pl_build stores), 0 when unknown. */
static uint32_t payload_itemsize(const char dtype[8])
{
    static const struct {
        char name[4];
        uint32_t size;
    } ok[] = {{"<f4", 4}, {"<f2", 2}, {"|u1", 1}, {"<i4", 4}};
    if (!memchr(dtype, '\0', 8))
        return 0;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(dtype, ok[i].name))
            return ok[i].size;
    return 0;
}

static int meta_payload_ok(const struct pl__meta *m)
{
    if (!m->payload_dtype[0]) {
        for (size_t i = 0; i < sizeof m->payload_dtype; i++)
            if (m->payload_dtype[i])
                return 0;
        return m->payload_ndim == 0 && m->payload_row_bytes == 0 && m->payload_offset == 0 &&
               m->payload_bytes == 0;
    }
    uint64_t row = payload_itemsize(m->payload_dtype), data, end;
    if (!row || m->payload_ndim > 7 || m->payload_offset < 16 ||
        m->payload_offset % PL_PAYLOAD_ALIGN != 0)
        return 0;
    for (uint32_t i = 0; i < m->payload_ndim; i++)
        if (__builtin_mul_overflow(row, m->payload_shape[i], &row))
            return 0;
    return row != 0 && row == m->payload_row_bytes &&
           !__builtin_mul_overflow(row, m->n_samples, &data) &&
           !__builtin_add_overflow(data, m->payload_offset, &end) && end == m->payload_bytes;
}

int pl__meta_decode(const void *v, size_t len, struct pl__meta *out, pl_err *err)
{
    PL_FAIL_IF(len != sizeof *out || memcmp(v, PL_META_MAGIC, 8) != 0, err, PL_ECORRUPT,
               "key meta/meta: not a pertload metadata record (%zu bytes)", len);
    struct pl__meta m;
    memcpy(&m, v, sizeof m);
    /* No edge type only with metabolism or an ontology (a metabolism-only or
     * ontology-only database). */
    int bad = (m.n_types < 1 && m.has_metabolism != 1 && m.n_terms == 0) ||
              m.n_types > PL_MAX_TYPES ||
              m.n_genes < 1 ||
              m.n_genes > INT32_MAX || m.block_rows != PL_BLOCK_ROWS ||
              m.n_blocks != m.n_samples / PL_BLOCK_ROWS + (m.n_samples % PL_BLOCK_ROWS != 0) ||
              m.samples_bytes < 64 || m.has_metabolism > 1 || m.n_reactions > INT32_MAX ||
              m.n_metabolites > INT32_MAX || m.n_gpr > UINT32_MAX || m.n_rmr > UINT32_MAX;
    /* Edge positions are uint32 (pl_build stops below UINT32_MAX). */
    for (uint32_t t = 0; t < PL_MAX_TYPES; t++)
        bad |= t < m.n_types ? m.n_edges[t] >= UINT32_MAX : m.n_edges[t] != 0;
    if (!m.has_metabolism)
        bad |= m.n_reactions || m.n_metabolites || m.n_gpr || m.n_rmr;
    /* Rules: GPR needs them; programs are indexed by uint32 offsets. */
    bad |= (m.reaction_rule != PL_REACTION_ANY && m.reaction_rule != PL_REACTION_GPR) ||
           m.n_categories > PL_MAX_CATEGORIES || m.n_rules > m.n_reactions ||
           m.n_rule_words > UINT32_MAX ||
           (m.n_rules == 0) != (m.n_rule_words == 0) ||
           (m.reaction_rule == PL_REACTION_GPR && m.n_rules == 0);
    /* Ontology: uint32 indices throughout; strata and groups only with terms. */
    bad |= m.n_terms > UINT32_MAX - 1 || m.n_term_ann > UINT32_MAX ||
           m.n_term_children > UINT32_MAX || m.n_term_direct > UINT32_MAX ||
           m.n_term_groups > m.n_terms || m.n_strata > m.n_term_groups ||
           (m.n_terms > 0) != (m.n_strata > 0);
    PL_FAIL_IF(bad, err, PL_ECORRUPT, "key meta/meta: inconsistent counts");
    PL_FAIL_IF(!meta_payload_ok(&m), err, PL_ECORRUPT,
               "key meta/meta: inconsistent payload description");
    *out = m;
    return 0;
}

int pl__names_split(const char *key, const void *v, size_t len, uint64_t n,
                    const char ***out, pl_err *err)
{
    *out = NULL;
    /* Each name takes at least its NUL: more names than bytes cannot be. */
    PL_FAIL_IF(n > len, err, PL_ECORRUPT, "key names/%s: %zu bytes cannot hold %llu names",
               key, len, (unsigned long long)n);
    const char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        return pl__err(err, -ENOMEM, "out of memory");
    const char *p = v, *end = p + len;
    for (uint64_t i = 0; i < n; i++) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        if (!z) {
            free(names);
            return pl__err(err, PL_ECORRUPT, "key names/%s: %llu names, expected %llu", key,
                           (unsigned long long)i, (unsigned long long)n);
        }
        names[i] = p;
        p = z + 1;
    }
    if (p != end) {
        free(names);
        return pl__err(err, PL_ECORRUPT, "key names/%s: more names than expected", key);
    }
    *out = names;
    return 0;
}

int pl__inc_decode(const void *v, size_t len, uint64_t limit, uint32_t **vals, uint64_t *cap,
                   uint64_t *n, const char *kd, pl_err *err)
{
    roaring_bitmap_t *r = roaring_bitmap_portable_deserialize_safe(v, len);
    PL_FAIL_IF(!r, err, PL_ECORRUPT, "key %s: not a valid roaring bitmap", kd);
    uint64_t card = roaring_bitmap_get_cardinality(r);
    size_t size = roaring_bitmap_portable_size_in_bytes(r);
    int rc = 0;
    if (size != len)
        rc = pl__err(err, PL_ECORRUPT, "key %s: %zu bytes, the bitmap has %zu", kd, len, size);
    else if (card == 0 || card > limit)
        rc = pl__err(err, PL_ECORRUPT, "key %s: %llu positions, the kind has %llu", kd,
                     (unsigned long long)card, (unsigned long long)limit);
    else if (pl__grow(vals, cap, *n + card, sizeof **vals) < 0)
        rc = pl__err(err, -ENOMEM, "key %s: out of memory (%llu positions)", kd,
                     (unsigned long long)(*n + card));
    if (rc == 0) {
        uint32_t *dst = *vals + *n;
        roaring_uint32_iterator_t it;
        roaring_init_iterator(r, &it);
        uint32_t got = roaring_read_uint32_iterator(&it, dst, (uint32_t)card);
        /* The read is bounded by the claimed cardinality; more or fewer values
         * than claimed, or positions out of order or range, are corruption. */
        int bad = got != card || it.has_value;
        for (uint32_t i = 0; !bad && i < got; i++)
            bad = dst[i] >= limit || (i > 0 && dst[i] <= dst[i - 1]);
        if (bad)
            rc = pl__err(err, PL_ECORRUPT, "key %s: positions out of range or order", kd);
        else
            *n += card;
    }
    roaring_bitmap_free(r);
    return rc;
}

int pl__zstd_decode(const void *v, size_t len, size_t want, void **out, const char *kd,
                    pl_err *err)
{
    *out = NULL;
    /* A frame that declares its size must declare exactly `want`; checking it
     * first keeps a corrupt count from costing a huge allocation. */
    unsigned long long declared = ZSTD_getFrameContentSize(v, len);
    PL_FAIL_IF(declared == ZSTD_CONTENTSIZE_ERROR ||
                   (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != want),
               err, PL_ECORRUPT, "key %s: %s (expected %zu bytes)", kd,
               declared == ZSTD_CONTENTSIZE_ERROR ? "not a zstd frame" : "wrong size", want);
    void *buf = malloc(want ? want : 1);
    if (!buf)
        return pl__err(err, -ENOMEM, "out of memory (%zu bytes)", want);
    size_t got = ZSTD_decompress(buf, want, v, len);
    if (ZSTD_isError(got) || got != want) {
        free(buf);
        return pl__err(err, PL_ECORRUPT, "key %s: %s (expected %zu bytes)", kd,
                       ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size", want);
    }
    *out = buf;
    return 0;
}

int pl__db_get_zstd(MDB_txn *txn, MDB_dbi dbi, int which, const void *key, size_t klen,
                    size_t want, void **out, pl_err *err)
{
    const void *v;
    size_t n;
    *out = NULL;
    PL_TRY(pl__db_get(txn, dbi, which, key, klen, &v, &n, err));
    char kd[96];
    pl__key_describe(which, key, klen, kd, sizeof kd);
    return pl__zstd_decode(v, n, want, out, kd, err);
}

/* ---------------------------------------------------------- node features */

static const char *const node_types[PL_N_NODE_TYPES] = PL_NODE_TYPES;

int pl__node_type(const char *name)
{
    for (int t = 0; t < PL_N_NODE_TYPES; t++)
        if (!strcmp(name, node_types[t]))
            return t;
    return -1;
}

uint64_t pl__node_count(const struct pl__meta *m, int type)
{
    const uint64_t n[PL_N_NODE_TYPES] = {m->n_genes, m->n_reactions, m->n_metabolites,
                                         m->n_terms};
    return type >= 0 && type < PL_N_NODE_TYPES ? n[type] : 0;
}

int pl__feat_decode(const void *v, size_t len, const struct pl__meta *m, int type,
                    struct pl__feat_header *h, const void **data, pl_err *err)
{
    const char *name = node_types[type];
    PL_FAIL_IF(len < sizeof *h, err, PL_ECORRUPT, "key feat/%s: %zu bytes, shorter than its "
               "header", name, len);
    memcpy(h, v, sizeof *h);
    uint64_t item = !memcmp(h->dtype, "<f4\0\0\0\0\0", 8)   ? 4
                    : !memcmp(h->dtype, "<f2\0\0\0\0\0", 8) ? 2
                                                               : 0;
    PL_FAIL_IF(!item, err, PL_ECORRUPT, "key feat/%s: unknown dtype", name);
    for (size_t i = 0; i < sizeof h->reserved / sizeof h->reserved[0]; i++)
        PL_FAIL_IF(h->reserved[i], err, PL_ECORRUPT, "key feat/%s: reserved words not zero",
                   name);
    PL_FAIL_IF(h->rows != pl__node_count(m, type), err, PL_ECORRUPT,
               "key feat/%s: %llu rows, the database has %llu %s nodes", name,
               (unsigned long long)h->rows, (unsigned long long)pl__node_count(m, type), name);
    uint64_t bytes;
    PL_FAIL_IF(h->cols == 0 || __builtin_mul_overflow(h->rows, h->cols, &bytes) ||
                   __builtin_mul_overflow(bytes, item, &bytes) || bytes != len - sizeof *h,
               err, PL_ECORRUPT, "key feat/%s: %zu bytes of data, not %llu x %llu elements of "
               "%llu bytes", name, len - sizeof *h, (unsigned long long)h->rows,
               (unsigned long long)h->cols, (unsigned long long)item);
    *data = (const char *)v + sizeof *h;
    return 0;
}
