/* The sample-store block decoder (pl__block_decode, src/core/sstore.c) on
 * arbitrary bytes, with an index entry that matches the block's header and
 * checksum, so that decompression and the row structure are what is tested.
 *
 * Input: u8 mode, u8 n_labels, u16 n_genes - 1, then
 *   mode even: u32 raw_size, u32 n_rows, u32 n_refs, then a zstd frame;
 *   mode odd:  a raw block, compressed here (its own counts give the entry's).
 * An accepted block must hold n_rows rows of at least one gene each, gene
 * indices in range, and labels inside the raw buffer. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzzutil.h"
#include "src/core/checksum.h"
#include "src/core/dbformat.h"
#include "src/core/sstore.h"

#define MAX_RAW (1u << 22)

static uint32_t le32(const uint8_t *p)
{
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static ZSTD_DCtx *dctx;

static void decode(const uint8_t *comp, size_t comp_size, struct pl__block_entry e,
                   uint32_t n_labels, uint64_t n_genes)
{
    if (e.raw_size > MAX_RAW)
        return;
    e.comp_size = (uint32_t)comp_size;
    e.checksum = pl__xxh64(comp, comp_size, 0);
    uint8_t *block = malloc(PL_BLOCK_HEADER + comp_size);
    void *raw = malloc(e.raw_size ? e.raw_size : 1);
    if (!block || !raw)
        fuzz_fail("out of memory");
    uint32_t head[4] = {PL_BLOCK_MAGIC, e.comp_size, e.raw_size, e.n_rows};
    memcpy(block, head, 16);
    memcpy(block + 16, &e.first_row, 8);
    memcpy(block + 24, &e.checksum, 8);
    memcpy(block + PL_BLOCK_HEADER, comp, comp_size);
    pl__block_view v;
    pl_err err;
    int rc = pl__block_decode(block, PL_BLOCK_HEADER + comp_size, &e, 7, n_labels, n_genes,
                              dctx, raw, &v, &err);
    if (rc == 0) {
        if (v.n != e.n_rows || v.n_refs != e.n_refs || v.gptr[0] != 0 || v.gptr[v.n] != v.n_refs)
            fuzz_fail("accepted a block that does not match its entry");
        for (uint32_t i = 0; i < v.n; i++)
            if (v.gptr[i + 1] <= v.gptr[i])
                fuzz_fail("accepted row %u without genes", i);
        for (uint32_t i = 0; i < v.n_refs; i++)
            if (v.genes[i] < 0 || (uint64_t)v.genes[i] >= n_genes)
                fuzz_fail("accepted gene index %d", v.genes[i]);
        const volatile float *l = v.labels;
        if (v.n && n_labels)
            (void)l[(uint64_t)v.n * n_labels - 1];
    } else if (rc != PL_ECORRUPT || !strstr(err.msg, "block 7")) {
        fuzz_fail("refusal without PL_ECORRUPT and the block's number: %s", err.msg);
    }
    free(raw);
    free(block);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    if (!dctx && !(dctx = ZSTD_createDCtx()))
        fuzz_fail("out of memory");
    uint32_t n_labels = data[1];
    uint64_t n_genes = (uint64_t)(data[2] | data[3] << 8) + 1;
    struct pl__block_entry e = {.first_row = 1024};
    if (data[0] % 2 == 0) {
        if (size < 16)
            return 0;
        e.raw_size = le32(data + 4);
        e.n_rows = le32(data + 8);
        e.n_refs = le32(data + 12);
        decode(data + 16, size - 16, e, n_labels, n_genes);
        return 0;
    }
    const uint8_t *raw = data + 4;
    size_t raw_size = size - 4;
    if (raw_size > MAX_RAW)
        return 0;
    e.raw_size = (uint32_t)raw_size;
    if (raw_size >= 8) {
        e.n_rows = le32(raw);
        e.n_refs = le32(raw + 4);
    }
    void *comp;
    size_t n;
    pl_err err = {0};
    if (pl__zstd_encode(raw, raw_size, 1, &comp, &n, &err) < 0)
        fuzz_fail("zstd: %s", err.msg);
    decode(comp, n, e, n_labels, n_genes);
    free(comp);
    return 0;
}
