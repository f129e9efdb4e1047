/* Epoch plans (algorithm in plan.h). */
#include "plan.h"

#include <errno.h>
#include <stdlib.h>

#include "src/core/error.h"

PL_API int pl_plan_new(const pl_plan_opts *o, pl_plan **out, pl_err *err)
{
    *out = NULL;
    PL_FAIL_IF(o->world_size < 1 || o->rank >= o->world_size, err, PL_EUSAGE,
               "rank %u is not below world size %u", o->rank, o->world_size);
    PL_FAIL_IF(o->batch_size < 1, err, PL_EUSAGE, "batch size must be at least 1");
    PL_FAIL_IF(o->n_samples > UINT32_MAX, err, PL_EUSAGE, "too many samples for one plan");
    uint64_t n = o->n_samples, W = o->world_size;
    pl_plan *p = calloc(1, sizeof *p);
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t m = o->drop_last ? n / W : (n + W - 1) / W;
    if (p)
        p->rows = malloc((m ? m : 1) * sizeof *p->rows);
    if (!p || !order || !p->rows) {
        free(order);
        pl_plan_free(p);
        return pl__err(err, -ENOMEM, "out of memory for a plan of %llu samples",
                       (unsigned long long)n);
    }
    for (uint64_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    if (o->shuffle) {
        uint64_t s = o->seed + o->epoch * 0x9E3779B97F4A7C15ULL;
        for (uint64_t i = n; i-- > 1;) {
            uint64_t j = (uint64_t)(((unsigned __int128)pl__splitmix64(&s) * (i + 1)) >> 64);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    for (uint64_t k = 0; k < m; k++)
        p->rows[k] = order[(o->rank + k * W) % n];
    free(order);
    p->o = *o;
    p->m = m;
    p->n_batches = o->drop_last ? m / o->batch_size
                                : (m + o->batch_size - 1) / o->batch_size;
    *out = p;
    return 0;
}

PL_API void pl_plan_free(pl_plan *p)
{
    if (!p)
        return;
    free(p->rows);
    free(p);
}

PL_API uint64_t pl_plan_n_batches(const pl_plan *p) { return p->n_batches; }

PL_API uint64_t pl_plan_n_samples(const pl_plan *p) { return p->m; }

PL_API uint32_t pl_plan_batch(const pl_plan *p, uint64_t b, uint64_t *rows)
{
    if (b >= p->n_batches)
        return 0;
    uint64_t start = b * p->o.batch_size, end = start + p->o.batch_size;
    if (end > p->m)
        end = p->m;
    for (uint64_t i = start; i < end; i++)
        rows[i - start] = p->rows[i];
    return (uint32_t)(end - start);
}
