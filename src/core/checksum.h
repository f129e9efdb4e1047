/* Checksums of stored values and blocks: XXH64 (seed 0). */
#ifndef PL_CORE_CHECKSUM_H
#define PL_CORE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/** XXH64 of `len` bytes at `p` with `seed`. */
uint64_t pl__xxh64(const void *p, size_t len, uint64_t seed);

#endif
