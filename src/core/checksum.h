/* Checksums of stored values and blocks: XXH64 (seed 0). */
#ifndef PL_CORE_CHECKSUM_H
#define PL_CORE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/** XXH64 of `len` bytes at `p` with `seed`. */
uint64_t pl__xxh64(const void *p, size_t len, uint64_t seed);

/** XXH64 (seed 0) of bytes given in pieces: zero-initialise, then
 *  pl__xxh64_update() each piece; pl__xxh64_digest() equals pl__xxh64() of
 *  their concatenation. */
typedef struct pl__xxh64_state {
    uint64_t v[4], total;
    unsigned char buf[32];
    uint32_t n_buf;
    uint32_t started; /* v[] seeded */
} pl__xxh64_state;

void pl__xxh64_update(pl__xxh64_state *s, const void *p, size_t len);
uint64_t pl__xxh64_digest(const pl__xxh64_state *s);

#endif
