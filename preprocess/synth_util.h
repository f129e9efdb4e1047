/* The tools of `pertload synth` (synth.c): xoshiro256** streams seeded by
 * splitmix64, a power-law id sampler (Walker's alias table), and output files
 * written to `path`.tmp and renamed into place when complete. */
#ifndef PL_SYNTH_UTIL_H
#define PL_SYNTH_UTIL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "pertload.h"

#define ALPHA 0.9 /* power-law exponent of endpoint weights */

typedef struct rng {
    uint64_t s[4];
} rng;

static inline uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Seed the stream of one component. */
static inline void rng_seed(rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed;
    x = splitmix64(&x) ^ (stream * 0xD1B54A32D192ED03ull);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** */
static inline uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1). */
static inline double rng_unif(rng *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

/* Uniform in [0, n) for n < 2^32. */
static inline uint32_t rng_below(rng *r, uint32_t n)
{
    return (uint32_t)(((rng_next(r) >> 32) * n) >> 32);
}

/* Draws ids with weight 1/(rank + r0)^ALPHA over a random ranking of a random subset
 * of the ids, in O(1) with Walker's alias table (Vose's construction). */
typedef struct plaw {
    uint32_t n;       /* ids drawn from */
    uint32_t *id;     /* [n_all]: the first n are the subset, by rank */
    uint32_t *thr;    /* [n] keep slot k when 32 random bits are below thr[k] */
    uint32_t *alias;  /* [n] otherwise take alias[k] */
} plaw;

/** Release a sampler (its arrays; `p` itself is the caller's). */
void pl__plaw_free(plaw *p);

/** Rank a random n-subset of 0..n_all-1 (1 <= n <= n_all) with weights
 *  1/(rank + r0)^ALPHA, r0 = 1 + n / 200. @return 0 or -ENOMEM. */
int pl__plaw_init(plaw *p, rng *r, uint32_t n_all, uint32_t n, pl_err *err);

static inline uint32_t plaw_draw(const plaw *p, rng *r)
{
    uint64_t x = rng_next(r);
    uint32_t k = (uint32_t)(((x >> 32) * p->n) >> 32);
    return p->id[(uint32_t)x < p->thr[k] ? k : p->alias[k]];
}

/** Fill v[0..k) with distinct draws of `p` (uniform in [0, n_uniform) when `p`
 *  is NULL); k <= the number of ids that can be drawn. */
void pl__draw_distinct(const plaw *p, rng *r, uint32_t n_uniform, uint32_t *v, uint32_t k);

typedef struct wfile {
    FILE *f;
    char *buf;
    char path[PATH_MAX], tmp[PATH_MAX + 8];
} wfile;

/** Create `path`.tmp for writing (1 MiB buffer); nothing to release on failure. */
int pl__w_open(wfile *w, const char *path, pl_err *err);

/** Write n bytes. @return 0 or -errno naming the file. */
int pl__w_put(wfile *w, const void *p, size_t n, pl_err *err);

/** Close and drop the temporary file (after a failure). */
void pl__w_abort(wfile *w);

/** Flush, close and rename into place. Releases `w` whatever happens. */
int pl__w_close(wfile *w, pl_err *err);

/** Write v in decimal at p; @return the end. */
char *pl__put_u64(char *p, uint64_t v);

#endif
