/* Slot sizes and the deliveries of a run (overview in parts.h). */
#include "parts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "src/core/error.h"

#define PAGE 4096u

/* The weight of row r in the sizing's units: its table weight (deleted genes
 * and the bound of its removed lists), plus the bounds of the k-hop and
 * ontology lists when the batches carry them. Computed here rather than
 * stored, so a table shared read-only between ranks serves every option. */
static uint32_t row_weight(const pl__collate_cfg *c, const pl__table *t, uint32_t r)
{
    uint64_t w = t->weight[r];
    uint32_t n = (uint32_t)(t->gptr[r + 1] - t->gptr[r]);
    if (c->khop)
        w += pl__collate_khop_bound(c, n) / 4;
    if (c->onto)
        w += pl__collate_onto_bound(c, t->genes + t->gptr[r], n);
    return w < UINT32_MAX ? (uint32_t)w : UINT32_MAX;
}

static uint64_t page_up(uint64_t x)
{
    return x > UINT64_MAX - (PAGE - 1) ? UINT64_MAX & ~(uint64_t)(PAGE - 1)
                                       : (x + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

/* A histogram of eight buckets per power of two (12.5% apart), for the
 * percentile of the batches' weights without keeping one value per batch. */
#define HIST_BUCKETS (62 * 8)

static uint32_t bucket_of(uint64_t v)
{
    if (v < 8)
        return (uint32_t)v;
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v);
    return (e - 2) * 8 + (uint32_t)((v >> (e - 3)) & 7);
}

/* The largest value of bucket `b`. */
static uint64_t bucket_top(uint32_t b)
{
    if (b < 8)
        return b;
    uint32_t e = b / 8 + 2, m = b % 8;
    if (e - 3 >= 60)
        return UINT64_MAX;
    return ((uint64_t)(9 + m) << (e - 3)) - 1;
}

/* Slot bytes of n samples of total weight x (pl__table.weight): the
 * collation's bound (pl__collate_slot_bytes) with the genes counted among the
 * positions, plus the alignment of the gene list, which it counts apart. The
 * fixed part of n samples is computed once per n. */
typedef struct sizer {
    const pl__collate_cfg *c;
    uint64_t *fixed; /* [max_n + 1], 0 until computed */
} sizer;

static int sizer_init(sizer *z, const pl__collate_cfg *c, uint32_t max_n)
{
    z->c = c;
    z->fixed = calloc((size_t)max_n + 1, sizeof *z->fixed);
    return z->fixed ? 0 : -ENOMEM;
}

static uint64_t need(sizer *z, uint32_t n, uint64_t x)
{
    if (!z->fixed[n])
        z->fixed[n] = pl__collate_slot_bytes(z->c, n, 0, 0) + PL_SLOT_ALIGN;
    return z->fixed[n] + 4 * x; /* x < 2^52: no overflow */
}

int pl__parts_measure(const pl__collate_cfg *c, const pl__table *t, const pl_plan *plan,
                      uint64_t start_batch, pl__needs *out, pl_err *err)
{
    const uint32_t B = plan->o.batch_size;
    sizer z;
    PL_FAIL_IF(sizer_init(&z, c, B) < 0, err, -ENOMEM, "out of memory");
    uint64_t hist[HIST_BUCKETS] = {0}, count = 0, largest = 0, best = 0;
    uint64_t lo = 0, hi = 0, best_row = 0;
    if (start_batch < plan->n_batches) {
        pl__plan_span(plan, start_batch, &lo, &hi);
        best_row = plan->rows[lo];
    }
    for (uint64_t pb = start_batch; pb < plan->n_batches; pb++) {
        uint64_t x = 0;
        pl__plan_span(plan, pb, &lo, &hi);
        for (uint64_t i = lo; i < hi; i++) {
            uint32_t r = plan->rows[i], w = row_weight(c, t, r);
            x += w;
            if (w > best) {
                best = w;
                best_row = r;
            }
        }
        hist[bucket_of(x)]++;
        count++;
        uint64_t b = need(&z, (uint32_t)(hi - lo), x);
        largest = b > largest ? b : largest;
    }
    /* The 90th percentile, rounded up to its bucket's top. */
    uint64_t q = 0, seen = 0, target = count - count / 10;
    for (uint32_t b = 0; b < HIST_BUCKETS && count; b++) {
        seen += hist[b];
        if (seen >= target) {
            q = bucket_top(b);
            break;
        }
    }
    memset(out, 0, sizeof *out);
    out->typical = page_up(need(&z, B, q < ((uint64_t)1 << 50) ? 2 * q : (uint64_t)1 << 51));
    out->largest = page_up(largest);
    out->one = page_up(need(&z, 1, best));
    out->one_row = best_row;
    out->one_id = count ? t->ids[best_row] : 0;
    free(z.fixed);
    return 0;
}

int pl__parts_fit(const pl__needs *nd, uint32_t want, uint32_t keep, uint64_t limit,
                  uint64_t overhead, const char *limit_name, uint32_t *n_slots,
                  uint64_t *slot_bytes, pl_err *err)
{
    PL_FAIL_IF(want < 1 || keep > want, err, PL_EUSAGE, "%u slots, keeping %u", want, keep);
    PL_FAIL_IF(overhead >= limit, err, PL_EUSAGE, "%s (%llu bytes) leaves no room for slots",
               limit_name, (unsigned long long)limit);
    const uint64_t budget = limit - overhead;
    uint64_t full = nd->typical < nd->largest ? nd->typical : nd->largest;
    uint64_t size = full > nd->one ? full : nd->one;
    uint32_t pipe = want < 2 ? want : 2;
    pipe = keep > pipe ? keep : pipe;
    uint64_t n = budget / size;
    if (n >= pipe) {
        *n_slots = (uint32_t)(n < want ? n : want);
        *slot_bytes = size;
        return 0;
    }
    /* Fewer than `pipe` slots of that size fit: smaller ones, more splits. */
    uint64_t smaller = budget / pipe & ~(uint64_t)(PAGE - 1);
    if (smaller >= nd->one) {
        *n_slots = pipe;
        *slot_bytes = smaller;
        return 0;
    }
    uint64_t all = budget & ~(uint64_t)(PAGE - 1);
    if (keep <= 1 && all >= nd->one) {
        *n_slots = 1;
        *slot_bytes = all < size ? all : size;
        return 0;
    }
    uint32_t least = keep > 1 ? keep : 1;
    return pl__err(err, PL_EUSAGE,
                   "sample row %llu (id %llu) needs a slot of %llu bytes on its own; %u slot%s "
                   "of that size%s exceed%s %s (%llu bytes)",
                   (unsigned long long)nd->one_row, (unsigned long long)nd->one_id,
                   (unsigned long long)nd->one, least, least == 1 ? "" : "s",
                   overhead ? " and the header" : "", least == 1 && !overhead ? "s" : "",
                   limit_name, (unsigned long long)limit);
}

void pl__parts_init(pl__parts *s, uint64_t n_batches)
{
    memset(s, 0, sizeof *s);
    s->n_batches = s->n_deliveries = n_batches;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

int pl__parts_split(pl__parts *s, uint64_t batch, const uint32_t *cuts, uint32_t n_parts,
                    uint32_t size, pl_err *err)
{
    PL_FAIL_IF(n_parts < 2 || cuts[0] != 0 || cuts[n_parts - 1] >= size, err, PL_EUSAGE,
               "batch %llu: %u parts of %u samples", (unsigned long long)batch, n_parts, size);
    PL_FAIL_IF(batch >= s->n_batches || (s->n_split && batch <= s->batch[s->n_split - 1]), err,
               PL_EUSAGE, "batch %llu split out of order", (unsigned long long)batch);
    for (uint32_t i = 1; i < n_parts; i++)
        PL_FAIL_IF(cuts[i] <= cuts[i - 1], err, PL_EUSAGE, "batch %llu: parts out of order",
                   (unsigned long long)batch);
    /* batch, at and cut_at grow alike from the same capacity. */
    uint64_t need = s->n_split + 2, c1 = s->cap_split, c2 = c1, c3 = c1;
    int rc = grow((void **)&s->batch, &c1, need, sizeof *s->batch);
    if (rc == 0)
        rc = grow((void **)&s->at, &c2, need, sizeof *s->at);
    if (rc == 0)
        rc = grow((void **)&s->cut_at, &c3, need, sizeof *s->cut_at);
    if (rc == 0)
        rc = grow((void **)&s->cuts, &s->cap_cuts, s->n_cuts + n_parts + 1, sizeof *s->cuts);
    PL_FAIL_IF(rc < 0, err, -ENOMEM, "out of memory for the parts of batch %llu",
               (unsigned long long)batch);
    s->cap_split = c1;
    uint64_t j = s->n_split++;
    s->batch[j] = batch;
    s->at[j] = batch + (s->n_deliveries - s->n_batches);
    s->cut_at[j] = s->n_cuts;
    memcpy(s->cuts + s->n_cuts, cuts, n_parts * sizeof *cuts);
    s->cuts[s->n_cuts + n_parts] = size;
    s->n_cuts += n_parts + 1;
    s->cut_at[j + 1] = s->n_cuts;
    s->n_deliveries += n_parts - 1;
    return 0;
}

int pl__parts_plan(pl__parts *s, const pl__collate_cfg *c, const pl__table *t,
                   const pl_plan *plan, uint64_t start_batch, const pl__needs *nd,
                   uint64_t slot_bytes, pl_err *err)
{
    pl__parts_init(s, plan->n_batches > start_batch ? plan->n_batches - start_batch : 0);
    if (slot_bytes >= nd->largest)
        return 0; /* every batch fits whole */
    const uint32_t B = plan->o.batch_size;
    sizer z = {0};
    uint32_t *cuts = malloc(B * sizeof *cuts);
    int rc = cuts && sizer_init(&z, c, B) == 0 ? 0 : pl__err(err, -ENOMEM, "out of memory");
    for (uint64_t pb = start_batch; rc == 0 && pb < plan->n_batches; pb++) {
        uint64_t lo, hi;
        pl__plan_span(plan, pb, &lo, &hi);
        const uint32_t *rows = plan->rows + lo;
        uint32_t n = (uint32_t)(hi - lo);
        uint64_t x = 0;
        for (uint32_t i = 0; i < n; i++)
            x += row_weight(c, t, rows[i]);
        if (need(&z, n, x) <= slot_bytes)
            continue;
        /* As many samples a part as fit; a sample alone always does. */
        uint32_t n_parts = 1, k = 0;
        cuts[0] = 0;
        x = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t w = row_weight(c, t, rows[i]);
            if (k && need(&z, k + 1, x + w) > slot_bytes) {
                cuts[n_parts++] = i;
                x = k = 0;
            }
            if (k == 0 && need(&z, 1, w) > slot_bytes) {
                rc = pl__err(err, PL_ERANGE, "sample row %u needs more than a slot of %llu "
                             "bytes (a sizing bug)", rows[i], (unsigned long long)slot_bytes);
                break;
            }
            x += w;
            k++;
        }
        if (rc == 0)
            rc = pl__parts_split(s, pb - start_batch, cuts, n_parts, n, err);
    }
    free(z.fixed);
    free(cuts);
    return rc;
}

void pl__parts_get(const pl__parts *s, uint64_t d, pl__part *out)
{
    uint64_t lo = 0, hi = s->n_split;
    while (lo < hi) { /* the first split batch delivered after d */
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->at[mid] <= d)
            lo = mid + 1;
        else
            hi = mid;
    }
    *out = (pl__part){.batch = d, .n_parts = 1};
    if (lo == 0)
        return;
    uint64_t j = lo - 1, n_parts = s->cut_at[j + 1] - s->cut_at[j] - 1;
    if (d < s->at[j] + n_parts) {
        const uint32_t *cut = s->cuts + s->cut_at[j] + (d - s->at[j]);
        *out = (pl__part){s->batch[j], (uint32_t)(d - s->at[j]), (uint32_t)n_parts, cut[0],
                          cut[1] - cut[0]};
        return;
    }
    out->batch = d - (s->at[j] - s->batch[j]) - (n_parts - 1);
}

void pl__parts_free(pl__parts *s)
{
    free(s->batch);
    free(s->at);
    free(s->cut_at);
    free(s->cuts);
    pl__parts_init(s, 0);
}
