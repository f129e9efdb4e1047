/* The decoders of database values (src/core/dbformat.c, sstore.c) on
 * arbitrary bytes, as read from LMDB with the trailer checked (a trailer is
 * no defence against a corrupt writer, so the decoders trust nothing).
 *
 * Input: u8 kind, then by kind
 *   0 meta:    the "meta"/"meta" record
 *   1 names:   u16 n, a "names" value that must hold n names
 *   2 inc:     u32 limit, a roaring bitmap (decoded twice into one array)
 *   3 zstd:    u24 expected size, a zstd value
 *   4 blocks:  u32 n_samples, u8 n_labels, u32 samples_bytes, the index
 *   5 trailer: u8 sub-database, u8 key length, key, value with its trailer
 *   6 rules:   u16 n_reactions, u16 n_rules, u8 n_genes, an edges/"rules" value
 *              (kind 6 only for the byte 6; other bytes select kind byte % 6)
 * Accepted values must keep the promises the readers rely on. */
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzutil.h"
#include "src/core/dbformat.h"
#include "src/core/rule.h"
#include "src/core/sstore.h"

static uint32_t le(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void fuzz_meta(const uint8_t *v, size_t len)
{
    struct pl__meta m;
    pl_err err;
    if (pl__meta_decode(v, len, &m, &err) < 0)
        return;
    if (m.n_types < 1 || m.n_types > PL_MAX_TYPES || m.n_genes < 1 || m.n_genes > INT32_MAX ||
        m.n_blocks * PL_BLOCK_ROWS < m.n_samples || m.payload_ndim > 7)
        fuzz_fail("accepted inconsistent metadata");
}

static void fuzz_names(const uint8_t *v, size_t len, uint64_t n)
{
    const char **names;
    pl_err err;
    if (pl__names_split("genes", v, len, n, &names, &err) < 0) {
        if (names)
            fuzz_fail("a failed split returned names");
        return;
    }
    const char *end = (const char *)v + len;
    for (uint64_t i = 0; i < n; i++) {
        if (names[i] < (const char *)v || names[i] >= end ||
            !memchr(names[i], '\0', (size_t)(end - names[i])))
            fuzz_fail("name %llu outside the value", (unsigned long long)i);
    }
    free(names);
}

static void fuzz_inc(const uint8_t *v, size_t len, uint64_t limit)
{
    uint32_t *vals = NULL;
    uint64_t cap = 0, n = 0;
    pl_err err;
    for (int round = 0; round < 2; round++) {
        uint64_t before = n;
        if (pl__inc_decode(v, len, limit, &vals, &cap, &n, "inc/kind 0/gene 0", &err) < 0) {
            if (n != before)
                fuzz_fail("a failed decode appended positions");
            break;
        }
        if (n <= before || n > cap)
            fuzz_fail("an accepted bitmap appended no positions");
        for (uint64_t i = before; i < n; i++)
            if (vals[i] >= limit || (i > before && vals[i] <= vals[i - 1]))
                fuzz_fail("accepted position %u (limit %llu)", vals[i],
                          (unsigned long long)limit);
    }
    free(vals);
}

static void fuzz_zstd(const uint8_t *v, size_t len, size_t want)
{
    void *out;
    pl_err err;
    if (pl__zstd_decode(v, len, want, &out, "edges/type 0", &err) == 0) {
        if (want)
            (void)((volatile char *)out)[want - 1];
        free(out);
    } else if (out) {
        fuzz_fail("a failed decode returned a buffer");
    }
}

static void fuzz_blocks(const uint8_t *v, size_t len, uint64_t n_samples, uint32_t n_labels,
                        uint64_t samples_bytes)
{
    struct pl__meta m = {.n_samples = n_samples, .n_labels = n_labels,
                         .n_blocks = (n_samples + PL_BLOCK_ROWS - 1) / PL_BLOCK_ROWS,
                         .samples_bytes = samples_bytes};
    struct pl__block_entry *e;
    pl_err err;
    if (pl__blocks_decode(v, len, &m, &e, &err) < 0)
        return;
    uint64_t rows = 0;
    for (uint64_t b = 0; b < m.n_blocks; b++) {
        if (e[b].first_row != rows || e[b].n_rows < 1 || e[b].n_rows > PL_BLOCK_ROWS)
            fuzz_fail("accepted block entry %llu", (unsigned long long)b);
        rows += e[b].n_rows;
    }
    if (rows != n_samples)
        fuzz_fail("accepted an index of %llu rows for %llu", (unsigned long long)rows,
                  (unsigned long long)n_samples);
    free(e);
}

static void fuzz_trailer(const uint8_t *p, size_t size)
{
    if (size < 2 || (size_t)p[1] + 2 > size)
        return;
    MDB_val k = {p[1], (void *)(p + 2)}, v = {size - 2 - p[1], (void *)(p + 2 + p[1])};
    pl_err err;
    if (pl__db_check(p[0] % PL_DBI_COUNT, &k, &v, &err) < 0 && !strstr(err.msg, "key "))
        fuzz_fail("a checksum failure without its key: %s", err.msg);
}

/* Accepted programs evaluate to 0 or 1 for any deleted set. */
static void fuzz_rules(const uint8_t *v, size_t len, uint64_t n_rx, uint64_t n_rules,
                       uint64_t n_genes)
{
    if (len % 4 || len / 4 < n_rx + 1)
        return;
    uint32_t *w = malloc(len ? len : 1);
    if (!w)
        return;
    memcpy(w, v, len);
    const uint32_t *off, *code;
    uint32_t depth;
    pl_err err;
    if (pl__rules_decode(w, len, n_rx, len / 4 - n_rx - 1, n_rules, n_genes, &off, &code,
                         &depth, &err) == 0) {
        const int32_t sets[3][2] = {{0, 1}, {1, 2}, {0, 2}};
        for (uint64_t r = 0; r < n_rx; r++)
            for (int s = 0; s < 3; s++)
                if (off[r + 1] > off[r] &&
                    pl__rule_eval(code + off[r], off[r + 1] - off[r], sets[s], 2) > 1)
                    fuzz_fail("a rule evaluated to neither true nor false");
        if (depth > PL__RULE_MAX_DEPTH)
            fuzz_fail("accepted a program of depth %u", depth);
    } else if (!strstr(err.msg, "key edges/rules")) {
        fuzz_fail("a rules failure without its key: %s", err.msg);
    }
    free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] == 6 ? 6 : data[0] % 6) {
    case 0:
        fuzz_meta(p, n);
        break;
    case 1:
        if (n >= 2)
            fuzz_names(p + 2, n - 2, le(p, 2));
        break;
    case 2:
        if (n >= 4)
            fuzz_inc(p + 4, n - 4, le(p, 4) ? le(p, 4) : (uint64_t)UINT32_MAX + 1);
        break;
    case 3:
        if (n >= 3)
            fuzz_zstd(p + 3, n - 3, le(p, 3));
        break;
    case 4:
        if (n >= 9)
            fuzz_blocks(p + 9, n - 9, le(p, 4), p[4], le(p + 5, 4));
        break;
    case 6:
        if (n >= 5)
            fuzz_rules(p + 5, n - 5, le(p, 2), le(p + 2, 2), p[4]);
        break;
    default:
        fuzz_trailer(p, n);
        break;
    }
    return 0;
}
