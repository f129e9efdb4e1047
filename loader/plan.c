/* Epoch plans (algorithm in plan.h). */
#include "plan.h"

#include <errno.h>
#include <stdlib.h>

#include "src/core/error.h"

#define PL_GOLDEN 0x9E3779B97F4A7C15ULL
#define PL_BLOCK_ROWS_DEFAULT 16u

/* Fisher-Yates over a[0..n) from the top, drawing from splitmix64 state *s. */
static void shuffle_u32(uint32_t *a, uint64_t n, uint64_t *s)
{
    for (uint64_t i = n; i-- > 1;) {
        uint64_t j = (uint64_t)(((unsigned __int128)pl__splitmix64(s) * (i + 1)) >> 64);
        uint32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Steps 1b of plan.h: blocks of k rows permuted, then rows within windows of
 * w blocks. `tmp` has room for ceil(n / k) entries. */
static void block_order(uint32_t *order, uint32_t *tmp, uint64_t n, uint64_t k, uint64_t w,
                        uint64_t s)
{
    uint64_t nb = (n + k - 1) / k, at = 0;
    for (uint64_t b = 0; b < nb; b++)
        tmp[b] = (uint32_t)b;
    shuffle_u32(tmp, nb, &s);
    for (uint64_t b = 0; b < nb; b++)
        for (uint64_t r = tmp[b] * k; r < n && r < (tmp[b] + 1) * k; r++)
            order[at++] = (uint32_t)r;
    for (uint64_t b = 0, lo = 0; b < nb; b += w) {
        uint64_t hi = lo;
        for (uint64_t x = b; x < nb && x < b + w; x++) /* the window's rows */
            hi += tmp[x] == nb - 1 ? n - (nb - 1) * k : k;
        shuffle_u32(order + lo, hi - lo, &s);
        lo = hi;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Steps 2c-3c of plan.h: the rank's batches of the budgeted plan over the
 * n entries of `order`. Fills p->rows, p->off, p->gstart, p->m, p->n_batches. */
static int budget_batches(pl_plan *p, const pl_plan_opts *o, const uint32_t *order,
                          uint64_t n, const uint32_t *cost, pl_err *err)
{
    uint64_t W = o->world_size, G = 0, cur = 0, k = 0;
    uint64_t *start = malloc((n + 1) * sizeof *start); /* global batch starts */
    PL_FAIL_IF(!start, err, -ENOMEM, "out of memory for a plan of %llu samples",
               (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t c = cost[order[i]];
        if (k && (k == o->batch_size || cur + c > o->budget))
            k = 0;
        if (k == 0) {
            start[G++] = i;
            cur = 0;
        }
        cur += c;
        k++;
    }
    start[G] = n;
    uint64_t S = o->drop_last ? G / W : (G + W - 1) / W, m = 0;
    for (uint64_t s = 0; s < S; s++) {
        uint64_t g = (s * W + o->rank) % G;
        m += start[g + 1] - start[g];
    }
    uint64_t *fit = realloc(start, (G + 1) * sizeof *start);
    p->gstart = fit ? fit : start;
    p->n_global = G;
    p->rows = malloc((m ? m : 1) * sizeof *p->rows);
    p->off = malloc((S + 1) * sizeof *p->off);
    PL_FAIL_IF(!p->rows || !p->off, err, -ENOMEM, "out of memory for a plan of %llu samples",
               (unsigned long long)n);
    p->off[0] = 0;
    for (uint64_t s = 0, at = 0; s < S; s++) {
        uint64_t g = (s * W + o->rank) % G;
        for (uint64_t i = p->gstart[g]; i < p->gstart[g + 1]; i++)
            p->rows[at++] = order[i];
        p->off[s + 1] = at;
    }
    p->m = m;
    p->n_batches = S;
    return 0;
}

/* Step 2d of plan.h: rank r's batches of the weighted plan over the n
 * entries of `order`. Fills p->rows, p->off, p->step, p->m, p->n_batches. */
static int weighted_batches(pl_plan *p, const pl_plan_opts *o, const uint32_t *order,
                            uint64_t n, pl_err *err)
{
    uint64_t W = o->world_size, B = o->batch_size, sum = 0, top = 0;
    uint64_t before = 0;
    for (uint64_t r = 0; r < W; r++) {
        uint64_t w = o->rank_weights[r];
        PL_FAIL_IF(w < 1, err, PL_EUSAGE, "rank %llu has weight 0 (weights are at least 1)",
                   (unsigned long long)r);
        sum += w;
        top = w > top ? w : top;
        before += r < o->rank ? w : 0;
    }
    uint64_t T = (uint64_t)((unsigned __int128)B * sum / top);
    for (uint64_t r = 0, c = 0; r < W; r++) { /* every rank's batch holds a sample */
        uint64_t next = (uint64_t)((unsigned __int128)T * (c + o->rank_weights[r]) / sum);
        PL_FAIL_IF(next == (uint64_t)((unsigned __int128)T * c / sum), err, PL_EUSAGE,
                   "rank %llu's weight %u of %llu gives it no sample in a step of %llu "
                   "(raise the batch size)", (unsigned long long)r, o->rank_weights[r],
                   (unsigned long long)sum, (unsigned long long)T);
        c += o->rank_weights[r];
    }
    uint64_t lo = (uint64_t)((unsigned __int128)T * before / sum);
    uint64_t hi = (uint64_t)((unsigned __int128)T * (before + o->rank_weights[o->rank]) / sum);
    uint64_t S = o->drop_last ? n / T : (n + T - 1) / T, b = hi - lo;
    p->step = T;
    p->rows = malloc((S * b > 0 ? S * b : 1) * sizeof *p->rows);
    p->off = malloc((S + 1) * sizeof *p->off);
    PL_FAIL_IF(!p->rows || !p->off, err, -ENOMEM, "out of memory for a plan of %llu samples",
               (unsigned long long)n);
    for (uint64_t k = 0; k < S; k++) {
        for (uint64_t i = 0; i < b; i++)
            p->rows[k * b + i] = order[(k * T + lo + i) % n];
        p->off[k] = k * b;
    }
    p->off[S] = S * b;
    p->m = S * b;
    p->n_batches = S;
    return 0;
}

PL_API int pl_plan_new_costs(const pl_plan_opts *o, const uint32_t *cost, pl_plan **out,
                             pl_err *err)
{
    *out = NULL;
    PL_FAIL_IF(o->world_size < 1 || o->rank >= o->world_size, err, PL_EUSAGE,
               "rank %u is not below world size %u", o->rank, o->world_size);
    PL_FAIL_IF(o->batch_size < 1, err, PL_EUSAGE, "batch size must be at least 1");
    PL_FAIL_IF(o->n_samples > UINT32_MAX, err, PL_EUSAGE, "too many samples for one plan");
    PL_FAIL_IF(o->order > PL_ORDER_BLOCK, err, PL_EUSAGE, "unknown sample order %u", o->order);
    PL_FAIL_IF(o->from > o->n_samples, err, PL_EUSAGE,
               "the resume position %llu is past the %llu samples of the epoch",
               (unsigned long long)o->from, (unsigned long long)o->n_samples);
    PL_FAIL_IF(o->budget && !cost, err, PL_EUSAGE, "a budgeted plan needs the rows' costs");
    PL_FAIL_IF(o->budget && o->order != PL_ORDER_ROWS, err, PL_EUSAGE,
               "budgeted batches take the row order (not the block order)");
    PL_FAIL_IF(o->rank_weights && (o->budget || o->order != PL_ORDER_ROWS), err, PL_EUSAGE,
               "weighted ranks take the row order and fixed batch sizes (no budget)");
    const int block = o->order == PL_ORDER_BLOCK;
    /* n: the entries steps 2 onwards run over (the rest after `from`, 1e) */
    uint64_t all = o->n_samples, n = all - o->from, W = o->world_size, B = o->batch_size;
    uint64_t k = o->block_rows ? o->block_rows : PL_BLOCK_ROWS_DEFAULT;
    uint64_t w = o->window_blocks ? o->window_blocks : (B + k - 1) / k;
    uint64_t m = o->drop_last ? n / W : (n + W - 1) / W;
    if (block) /* whole batches per rank: S * B rows (plan.h, step 2b) */
        m = (o->drop_last ? n / (B * W) : (n + B * W - 1) / (B * W)) * B;
    pl_plan *p = calloc(1, sizeof *p);
    uint32_t *order = malloc((all ? all : 1) * sizeof *order);
    uint32_t *tmp = block ? malloc(((all + k - 1) / k + 1) * sizeof *tmp) : NULL;
    const int own_rows = !o->budget && !o->rank_weights; /* else sized as they are made */
    if (p && own_rows)
        p->rows = malloc((m ? m : 1) * sizeof *p->rows);
    if (!p || !order || (own_rows && !p->rows) || (block && !tmp)) {
        free(order);
        free(tmp);
        pl_plan_free(p);
        return pl__err(err, -ENOMEM, "out of memory for a plan of %llu samples",
                       (unsigned long long)n);
    }
    uint64_t s = o->seed + o->epoch * PL_GOLDEN;
    if (block) {
        block_order(order, tmp, all, k, w, s);
    } else {
        for (uint64_t i = 0; i < all; i++)
            order[i] = (uint32_t)i;
        if (o->shuffle)
            shuffle_u32(order, all, &s);
    }
    const uint32_t *rest = order + o->from; /* step 1e */
    int rc = 0;
    p->n_rest = n;
    p->step = B * W;
    if (o->budget) {
        rc = budget_batches(p, o, rest, n, cost, err);
    } else if (o->rank_weights) {
        rc = weighted_batches(p, o, rest, n, err);
    } else if (block) {
        for (uint64_t b = 0; b < m / B; b++) { /* steps 2b and 3b */
            uint64_t first = (b * W + o->rank) * B;
            for (uint64_t i = 0; i < B; i++)
                p->rows[b * B + i] = rest[(first + i) % n];
            qsort(p->rows + b * B, B, sizeof *p->rows, cmp_u32);
        }
    } else {
        for (uint64_t i = 0; i < m; i++)
            p->rows[i] = rest[(o->rank + i * W) % n];
    }
    free(order);
    free(tmp);
    if (rc < 0) {
        pl_plan_free(p);
        return rc;
    }
    p->o = *o;
    p->o.block_rows = (uint32_t)k;
    p->o.window_blocks = (uint32_t)(w < UINT32_MAX ? w : UINT32_MAX);
    p->o.rank_weights = NULL; /* read during the call only */
    if (own_rows) {
        p->m = m;
        p->n_batches = o->drop_last ? m / B : (m + B - 1) / B;
    }
    *out = p;
    return 0;
}

PL_API int pl_plan_new(const pl_plan_opts *o, pl_plan **out, pl_err *err)
{
    return pl_plan_new_costs(o, NULL, out, err);
}

PL_API void pl_plan_free(pl_plan *p)
{
    if (!p)
        return;
    free(p->rows);
    free(p->off);
    free(p->gstart);
    free(p);
}

PL_API uint64_t pl_plan_n_batches(const pl_plan *p) { return p->n_batches; }

PL_API uint64_t pl_plan_n_samples(const pl_plan *p) { return p->m; }

PL_API uint64_t pl_plan_position(const pl_plan *p, uint64_t steps)
{
    uint64_t k = steps < p->n_batches ? steps : p->n_batches, used;
    if (p->gstart) {
        uint64_t g = k * p->o.world_size;
        used = p->gstart[g < p->n_global ? g : p->n_global];
    } else {
        used = k * p->step < p->n_rest ? k * p->step : p->n_rest;
    }
    return p->o.from + used;
}

PL_API uint32_t pl_plan_batch(const pl_plan *p, uint64_t b, uint64_t *rows)
{
    if (b >= p->n_batches)
        return 0;
    uint64_t lo, hi;
    pl__plan_span(p, b, &lo, &hi);
    for (uint64_t i = lo; i < hi; i++)
        rows[i - lo] = p->rows[i];
    return (uint32_t)(hi - lo);
}
