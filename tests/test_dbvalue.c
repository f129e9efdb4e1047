/* The decoders of database values (src/core/dbformat.c, sstore.c) on values
 * made here: a consistent one passes, and each inconsistency, overflow or
 * count that would cost a huge allocation is refused with PL_ECORRUPT and a
 * message naming the key. fuzz/fuzz_dbvalue feeds them arbitrary bytes. */
#include <criterion/criterion.h>
#include <roaring/roaring.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "pertload.h"
#include "src/core/dbformat.h"
#include "src/core/sstore.h"

/* ------------------------------------------------------------------ meta */

/* Two edge types, 10 genes, 2000 samples in 2 blocks, metabolism, and a
 * float32 payload [S, 3, 2] after a 4096-byte header. */
static struct pl__meta good_meta(void)
{
    struct pl__meta m;
    memset(&m, 0, sizeof m);
    memcpy(m.magic, PL_META_MAGIC, 8);
    m.format_version = PL_FORMAT_VERSION;
    m.n_types = 2;
    m.n_genes = 10;
    m.n_edges[0] = 5;
    m.n_edges[1] = 7;
    m.has_metabolism = 1;
    m.n_reactions = 4;
    m.n_metabolites = 3;
    m.n_gpr = 6;
    m.n_rmr = 9;
    m.n_samples = 2000;
    m.n_labels = 2;
    m.block_rows = PL_BLOCK_ROWS;
    m.n_blocks = 2;
    m.samples_bytes = 5000;
    memcpy(m.payload_dtype, "<f4", 4);
    m.payload_ndim = 2;
    m.payload_shape[0] = 3;
    m.payload_shape[1] = 2;
    m.payload_row_bytes = 24;
    m.payload_offset = PL_PAYLOAD_ALIGN;
    m.payload_bytes = PL_PAYLOAD_ALIGN + 24 * 2000;
    m.reaction_rule = PL_REACTION_GPR;
    m.n_rules = 3;
    m.n_rule_words = 7;
    return m;
}

static void meta_refused(const struct pl__meta *m, const char *part)
{
    struct pl__meta out;
    pl_err err = {0};
    int rc = pl__meta_decode(m, sizeof *m, &out, &err);
    cr_assert_eq(rc, PL_ECORRUPT, "expected PL_ECORRUPT (%s), got %d", part, rc);
    cr_assert(strstr(err.msg, part), "message '%s' lacks '%s'", err.msg, part);
}

Test(dbvalue, meta_consistent_passes)
{
    struct pl__meta m = good_meta(), out;
    pl_err err;
    cr_assert_eq(pl__meta_decode(&m, sizeof m, &out, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(&m, &out, sizeof m), 0);
    /* without payload or metabolism */
    memset(m.payload_dtype, 0, sizeof m.payload_dtype);
    m.payload_ndim = 0;
    memset(m.payload_shape, 0, sizeof m.payload_shape);
    m.payload_row_bytes = m.payload_offset = m.payload_bytes = 0;
    m.has_metabolism = 0;
    m.n_reactions = m.n_metabolites = m.n_gpr = m.n_rmr = 0;
    m.reaction_rule = PL_REACTION_ANY;
    m.n_rules = m.n_rule_words = 0;
    cr_assert_eq(pl__meta_decode(&m, sizeof m, &out, &err), 0, "%s", err.msg);
    /* no samples at all */
    m.n_samples = m.n_blocks = 0;
    cr_assert_eq(pl__meta_decode(&m, sizeof m, &out, &err), 0, "%s", err.msg);
}

Test(dbvalue, meta_refuses_bad_sizes_and_counts)
{
    struct pl__meta m = good_meta(), out;
    pl_err err;
    cr_assert_eq(pl__meta_decode(&m, sizeof m - 1, &out, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "key meta/meta: not a pertload metadata record"), "%s", err.msg);
    m.magic[0] = 'X';
    meta_refused(&m, "not a pertload metadata record");
    const char *counts = "key meta/meta: inconsistent counts";
    m = good_meta(), m.n_types = 0;
    meta_refused(&m, counts);
    m = good_meta(), m.n_types = PL_MAX_TYPES + 1;
    meta_refused(&m, counts);
    m = good_meta(), m.n_genes = (uint64_t)INT32_MAX + 1;
    meta_refused(&m, counts);
    m = good_meta(), m.n_blocks = 3;
    meta_refused(&m, counts);
    m = good_meta(), m.n_samples = UINT64_MAX; /* n_blocks must not wrap */
    m.n_blocks = 0;
    meta_refused(&m, counts);
    m = good_meta(), m.n_edges[1] = UINT32_MAX;
    meta_refused(&m, counts);
    m = good_meta(), m.n_edges[2] = 1; /* beyond n_types */
    meta_refused(&m, counts);
    m = good_meta(), m.n_reactions = (uint64_t)INT32_MAX + 1;
    meta_refused(&m, counts);
    m = good_meta(), m.n_rmr = (uint64_t)UINT32_MAX + 1;
    meta_refused(&m, counts);
    m = good_meta(), m.has_metabolism = 0; /* with GPR and RMR counts */
    meta_refused(&m, counts);
    m = good_meta(), m.has_metabolism = 2;
    meta_refused(&m, counts);
    m = good_meta(), m.reaction_rule = 0;
    meta_refused(&m, counts);
    m = good_meta(), m.reaction_rule = 3;
    meta_refused(&m, counts);
    m = good_meta(), m.n_rules = 5; /* more rules than reactions */
    meta_refused(&m, counts);
    m = good_meta(), m.n_rules = 0; /* rule gpr without rules */
    m.n_rule_words = 0;
    meta_refused(&m, counts);
    m = good_meta(), m.n_rule_words = 0; /* rules without words */
    meta_refused(&m, counts);
    m = good_meta(), m.n_rule_words = (uint64_t)UINT32_MAX + 1;
    meta_refused(&m, counts);
    m = good_meta(), m.n_categories = PL_MAX_CATEGORIES + 1;
    meta_refused(&m, counts);
}

Test(dbvalue, meta_refuses_bad_payload_descriptions)
{
    const char *payload = "key meta/meta: inconsistent payload description";
    struct pl__meta m = good_meta();
    memcpy(m.payload_dtype, "<f8", 4);
    meta_refused(&m, payload);
    m = good_meta(), memset(m.payload_dtype, 'f', 8);
    meta_refused(&m, payload);
    m = good_meta(), m.payload_row_bytes = 25;
    meta_refused(&m, payload);
    m = good_meta(), m.payload_ndim = 8;
    meta_refused(&m, payload);
    m = good_meta(), m.payload_offset = 100; /* not aligned for O_DIRECT */
    meta_refused(&m, payload);
    m = good_meta(), m.payload_bytes -= 1;
    meta_refused(&m, payload);
    /* a shape whose product wraps to the stored row size */
    m = good_meta(), m.payload_shape[0] = (UINT64_C(1) << 62) + 3;
    meta_refused(&m, payload);
    /* row size times samples wraps */
    m = good_meta(), m.n_samples = UINT64_C(1) << 62, m.n_blocks = m.n_samples / PL_BLOCK_ROWS;
    meta_refused(&m, payload);
    /* no dtype, but a size */
    m = good_meta(), memset(m.payload_dtype, 0, 8);
    meta_refused(&m, payload);
}

/* ----------------------------------------------------------------- names */

Test(dbvalue, names_split)
{
    const char v[] = "YAL001C\0YAL002W\0\0x"; /* three names, one empty, then junk */
    const char **names;
    pl_err err;
    cr_assert_eq(pl__names_split("genes", v, 17, 3, &names, &err), 0, "%s", err.msg);
    cr_assert_str_eq(names[0], "YAL001C");
    cr_assert_str_eq(names[1], "YAL002W");
    cr_assert_str_eq(names[2], "");
    free(names);
    cr_assert_eq(pl__names_split("genes", v, 17, 4, &names, &err), PL_ECORRUPT);
    cr_assert_null(names);
    cr_assert(strstr(err.msg, "key names/genes: 3 names, expected 4"), "%s", err.msg);
    cr_assert_eq(pl__names_split("genes", v, 17, 2, &names, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "more names than expected"), "%s", err.msg);
    cr_assert_eq(pl__names_split("genes", v, 18, 3, &names, &err), PL_ECORRUPT);
    /* a count no value can hold is refused before any allocation */
    cr_assert_eq(pl__names_split("labels", v, 17, UINT64_C(1) << 60, &names, &err),
                 PL_ECORRUPT);
    cr_assert(strstr(err.msg, "key names/labels: 17 bytes cannot hold"), "%s", err.msg);
    cr_assert_eq(pl__names_split("labels", "", 0, 0, &names, &err), 0, "%s", err.msg);
    free(names);
}

/* ------------------------------------------------------------- incidence */

/* The portable serialization of a bitmap of `n` positions. */
static char *portable(const uint32_t *pos, uint32_t n, size_t *len)
{
    roaring_bitmap_t *r = roaring_bitmap_of_ptr(n, pos);
    *len = roaring_bitmap_portable_size_in_bytes(r);
    char *buf = malloc(*len);
    cr_assert_not_null(buf);
    cr_assert_eq(roaring_bitmap_portable_serialize(r, buf), *len);
    roaring_bitmap_free(r);
    return buf;
}

Test(dbvalue, inc_decode)
{
    const uint32_t pos[] = {3, 70000, 9, 140000};
    size_t len;
    char *v = portable(pos, 4, &len);
    uint32_t *vals = NULL;
    uint64_t cap = 0, n = 0;
    pl_err err;
    cr_assert_eq(pl__inc_decode(v, len, 140001, &vals, &cap, &n, "inc/kind 1/gene 2", &err), 0,
                 "%s", err.msg);
    cr_assert_eq(n, 4);
    uint32_t want[] = {3, 9, 70000, 140000};
    cr_assert_arr_eq(vals, want, sizeof want);
    /* appended after what is there */
    cr_assert_eq(pl__inc_decode(v, len, 140001, &vals, &cap, &n, "k", &err), 0, "%s", err.msg);
    cr_assert_eq(n, 8);
    cr_assert_arr_eq(vals + 4, want, sizeof want);
    /* a position at the limit, a value with bytes after the bitmap, a cut one */
    cr_assert_eq(pl__inc_decode(v, len, 140000, &vals, &cap, &n, "inc/kind 1/gene 2", &err),
                 PL_ECORRUPT);
    cr_assert(strstr(err.msg, "key inc/kind 1/gene 2: "), "%s", err.msg);
    cr_assert_eq(n, 8, "a refused bitmap appended positions");
    char *longer = malloc(len + 1);
    memcpy(longer, v, len);
    longer[len] = 0;
    cr_assert_eq(pl__inc_decode(longer, len + 1, 1 << 20, &vals, &cap, &n, "k", &err),
                 PL_ECORRUPT);
    cr_assert(strstr(err.msg, "the bitmap has"), "%s", err.msg);
    cr_assert_eq(pl__inc_decode(v, len - 1, 1 << 20, &vals, &cap, &n, "k", &err), PL_ECORRUPT);
    /* an empty bitmap is never stored */
    size_t elen;
    char *empty = portable(pos, 0, &elen);
    cr_assert_eq(pl__inc_decode(empty, elen, 10, &vals, &cap, &n, "k", &err), PL_ECORRUPT);
    cr_assert_eq(n, 8);
    free(empty);
    free(longer);
    free(vals);
    free(v);
}

/* ------------------------------------------------------------------ zstd */

Test(dbvalue, zstd_decode)
{
    int32_t arr[64];
    for (int i = 0; i < 64; i++)
        arr[i] = i * 7;
    char comp[1024];
    size_t n = ZSTD_compress(comp, sizeof comp, arr, sizeof arr, 3);
    cr_assert(!ZSTD_isError(n));
    void *out;
    pl_err err;
    cr_assert_eq(pl__zstd_decode(comp, n, sizeof arr, &out, "edges/type 0", &err), 0, "%s",
                 err.msg);
    cr_assert_arr_eq(out, arr, sizeof arr);
    free(out);
    /* a frame declaring another size is refused before the allocation */
    cr_assert_eq(pl__zstd_decode(comp, n, (size_t)1 << 40, &out, "edges/type 0", &err),
                 PL_ECORRUPT);
    cr_assert_null(out);
    cr_assert(strstr(err.msg, "key edges/type 0: wrong size"), "%s", err.msg);
    cr_assert_eq(pl__zstd_decode(comp, n - 1, sizeof arr, &out, "gpr", &err), PL_ECORRUPT);
    cr_assert_null(out);
    cr_assert_eq(pl__zstd_decode("not zstd", 8, 4, &out, "gpr", &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "key gpr: not a zstd frame"), "%s", err.msg);
}

/* ------------------------------------------------------------ block index */

Test(dbvalue, blocks_decode)
{
    struct pl__meta m = good_meta();
    struct pl__block_entry e[2] = {
        {PL_SSTORE_HEADER, 1000, 0, 0, 1024, 2048, 0},
        {PL_SSTORE_HEADER + PL_BLOCK_HEADER + 1000, 900, 0, 1024, 976, 1500, 0}};
    e[0].raw_size = (uint32_t)pl__block_raw_size(1024, 2048, m.n_labels);
    e[1].raw_size = (uint32_t)pl__block_raw_size(976, 1500, m.n_labels);
    m.samples_bytes = e[1].offset + PL_BLOCK_HEADER + 900;
    struct pl__block_entry *out;
    pl_err err;
    cr_assert_eq(pl__blocks_decode(e, sizeof e, &m, &out, &err), 0, "%s", err.msg);
    cr_assert_arr_eq(out, e, sizeof e);
    free(out);
    cr_assert_eq(pl__blocks_decode(e, sizeof e - 1, &m, &out, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "key meta/blocks: 79 bytes for 2 blocks"), "%s", err.msg);
    e[1].first_row = 1023;
    cr_assert_eq(pl__blocks_decode(e, sizeof e, &m, &out, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "entry 1 inconsistent"), "%s", err.msg);
    e[1].first_row = 1024;
    m.samples_bytes += 1;
    cr_assert_eq(pl__blocks_decode(e, sizeof e, &m, &out, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "does not cover the sample store"), "%s", err.msg);
    m.samples_bytes -= 1;
    /* label and reference counts whose raw size wraps around 2^64 */
    m.n_labels = UINT32_MAX;
    cr_assert_eq(pl__blocks_decode(e, sizeof e, &m, &out, &err), PL_ECORRUPT);
    cr_assert_eq(pl__block_raw_size(UINT64_C(1) << 30, 0, UINT32_MAX - 2), UINT64_MAX);
    cr_assert_eq(pl__block_raw_size(UINT64_C(1) << 62, 0, 0), UINT64_MAX);
    cr_assert_eq(pl__block_raw_size(2, 3, 4), 12 + 24 + 12 + 32);
}

/* ------------------------------------------------------------- features */

/* A "feat" value of node type `type`: header, rows x cols float16 zeros. */
static char *feat_value(uint64_t rows, uint64_t cols, const char *dtype, size_t *len)
{
    struct pl__feat_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.dtype, dtype, strlen(dtype));
    h.rows = rows;
    h.cols = cols;
    *len = sizeof h + (size_t)(rows * cols * 2);
    char *v = calloc(1, *len);
    cr_assert(v);
    memcpy(v, &h, sizeof h);
    return v;
}

static void feat_refused(const char *v, size_t len, int type, const char *part)
{
    struct pl__meta m = good_meta();
    struct pl__feat_header h;
    const void *data;
    pl_err err = {0};
    int rc = pl__feat_decode(v, len, &m, type, &h, &data, &err);
    cr_assert_eq(rc, PL_ECORRUPT, "expected PL_ECORRUPT (%s), got %d", part, rc);
    cr_assert(strstr(err.msg, part), "message '%s' lacks '%s'", err.msg, part);
}

Test(dbvalue, feat_decode)
{
    struct pl__meta m = good_meta(); /* 10 genes, 4 reactions, 3 metabolites */
    struct pl__feat_header h;
    const void *data;
    pl_err err = {0};
    size_t len;
    char *v = feat_value(4, 3, "<f2", &len);
    cr_assert_eq(pl__feat_decode(v, len, &m, pl__node_type("reaction"), &h, &data, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(h.rows, 4);
    cr_assert_eq(h.cols, 3);
    cr_assert_eq((const char *)data, v + sizeof h);
    feat_refused(v, len, pl__node_type("gene"), "key feat/gene: 4 rows, the database has 10");
    feat_refused(v, len, pl__node_type("term"), "key feat/term: 4 rows, the database has 0");
    feat_refused(v, len - 1, 1, "key feat/reaction: 23 bytes of data, not 4 x 3 elements");
    feat_refused(v, sizeof h - 1, 1, "shorter than its header");
    memcpy(v, "<f8", 3);
    feat_refused(v, len, 1, "key feat/reaction: unknown dtype");
    memcpy(v, "<f2", 3);
    ((struct pl__feat_header *)(void *)v)->reserved[4] = 1;
    feat_refused(v, len, 1, "reserved words not zero");
    free(v);
    v = feat_value(4, 0, "<f2", &len);
    feat_refused(v, len, 1, "not 4 x 0 elements");
    free(v);
    /* rows x cols x 2 overflows: refused, not wrapped to the value's size */
    v = feat_value(4, 0, "<f2", &len);
    ((struct pl__feat_header *)(void *)v)->cols = UINT64_MAX / 4 + 1;
    feat_refused(v, len, 1, "bytes of data, not 4 x");
    free(v);
    cr_assert_eq(pl__node_type("metabolite"), 2);
    cr_assert_eq(pl__node_type("cell"), -1);
    cr_assert_eq(pl__node_count(&m, 2), 3);
}
