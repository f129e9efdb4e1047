/* XXH64 (Yann Collet's xxHash, 64-bit variant), written out from the public
 * specification. Little-endian reads via memcpy: alignment-safe and fast. */
#include "checksum.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t round1(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
static inline uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ round1(0, v)) * P1 + P4; }

/* The last bytes (fewer than 32) into `h`, then the avalanche. */
static inline uint64_t finish(uint64_t h, const unsigned char *p, const unsigned char *end)
{
    for (; p + 8 <= end; p += 8)
        h = rotl(h ^ round1(0, rd64(p)), 27) * P1 + P4;
    if (p + 4 <= end) {
        h = rotl(h ^ ((uint64_t)rd32(p) * P1), 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++)
        h = rotl(h ^ (*p * P5), 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

uint64_t pl__xxh64(const void *src, size_t len, uint64_t seed)
{
    /* (NULL, 0) is a valid empty input; arithmetic on a null pointer is not. */
    const unsigned char *p = len ? src : (const unsigned char *)"", *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        const unsigned char *limit = end - 32;
        do {
            v1 = round1(v1, rd64(p));
            v2 = round1(v2, rd64(p + 8));
            v3 = round1(v3, rd64(p + 16));
            v4 = round1(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = merge(h, v1);
        h = merge(h, v2);
        h = merge(h, v3);
        h = merge(h, v4);
    } else {
        h = seed + P5;
    }
    return finish(h + (uint64_t)len, p, end);
}

void pl__xxh64_update(pl__xxh64_state *s, const void *src, size_t len)
{
    const unsigned char *p = src;
    if (!s->started) {
        s->v[0] = P1 + P2, s->v[1] = P2, s->v[2] = 0, s->v[3] = (uint64_t)0 - P1;
        s->started = 1;
    }
    s->total += len;
    while (len > 0) {
        if (s->n_buf == 0 && len >= 32) {
            s->v[0] = round1(s->v[0], rd64(p));
            s->v[1] = round1(s->v[1], rd64(p + 8));
            s->v[2] = round1(s->v[2], rd64(p + 16));
            s->v[3] = round1(s->v[3], rd64(p + 24));
            p += 32, len -= 32;
            continue;
        }
        size_t k = 32 - s->n_buf < len ? 32 - s->n_buf : len;
        memcpy(s->buf + s->n_buf, p, k);
        s->n_buf += (uint32_t)k, p += k, len -= k;
        if (s->n_buf == 32) {
            for (int i = 0; i < 4; i++)
                s->v[i] = round1(s->v[i], rd64(s->buf + 8 * i));
            s->n_buf = 0;
        }
    }
}

uint64_t pl__xxh64_digest(const pl__xxh64_state *s)
{
    uint64_t h;
    if (s->total >= 32) {
        const uint64_t *v = s->v;
        h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
        for (int i = 0; i < 4; i++)
            h = merge(h, v[i]);
    } else {
        h = P5;
    }
    return finish(h + s->total, s->buf, s->buf + s->n_buf);
}
