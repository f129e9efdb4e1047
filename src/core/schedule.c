/* The affected-term schedule of a batch (pl_schedule_affected): which slots
 * of a DCell schedule any sample of the batch affects, by group and stratum,
 * so that a model computes those terms only and keeps the wild type's outputs
 * for the rest. One pass over the batch's term lists marks the slots; one pass
 * over the slots writes the positions, gather and scatter columns in order,
 * of the marked slots and of the rest. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A run array p[0..n] of the map: p[0] == 0 (`first_zero`), ascending, and
 * p[n] == end (when `end` is not UINT64_MAX). */
static int check_run(const char *name, const void *p, int wide, uint32_t n, int first_zero,
                     uint64_t end, pl_err *err)
{
#define AT(i) (wide ? ((const uint64_t *)p)[i] : ((const uint32_t *)p)[i])
    PL_FAIL_IF(first_zero && AT(0) != 0, err, PL_EUSAGE, "schedule map: %s[0] is %llu, not 0",
               name, (unsigned long long)AT(0));
    for (uint32_t i = 0; i < n; i++)
        PL_FAIL_IF(AT(i + 1) < AT(i), err, PL_EUSAGE,
                   "schedule map: %s[%u] = %llu is below %s[%u] = %llu", name, i + 1,
                   (unsigned long long)AT(i + 1), name, i, (unsigned long long)AT(i));
    PL_FAIL_IF(end != UINT64_MAX && AT(n) != end, err, PL_EUSAGE,
               "schedule map: %s[%u] is %llu, not %llu", name, n, (unsigned long long)AT(n),
               (unsigned long long)end);
#undef AT
    return 0;
}

/* The map against its own sizes: every slot of term_slot below n_terms,
 * groups covering the slots and strata the groups in order, the input and
 * output runs ascending, the state at most PL_SCHEDULE_MAX_COLUMNS columns:
 * the writes of pl_schedule_affected then stay within the rooms its
 * documentation gives. */
static int check_map(const pl_schedule_map *m, pl_err *err)
{
    for (uint32_t t = 0; t < m->n_terms; t++)
        PL_FAIL_IF(m->term_slot[t] >= m->n_terms, err, PL_EUSAGE,
                   "schedule map: term_slot[%u] = %u, outside 0..%u", t, m->term_slot[t],
                   m->n_terms - 1);
    PL_TRY(check_run("stratum_ptr", m->stratum_ptr, 0, m->n_strata, 1, m->n_groups, err));
    PL_TRY(check_run("group_ptr", m->group_ptr, 0, m->n_groups, 1, m->n_terms, err));
    PL_TRY(check_run("slot_in_ptr", m->slot_in_ptr, 1, m->n_terms, 1, UINT64_MAX, err));
    PL_TRY(check_run("slot_out", m->slot_out, 1, m->n_terms, 0, UINT64_MAX, err));
    PL_FAIL_IF(m->slot_out[m->n_terms] > PL_SCHEDULE_MAX_COLUMNS, err, PL_EUSAGE,
               "schedule map: %llu state columns, more than the limit %u",
               (unsigned long long)m->slot_out[m->n_terms], PL_SCHEDULE_MAX_COLUMNS);
    return 0;
}

PL_API int pl_schedule_affected(const pl_schedule_map *m, const int32_t *terms,
                                const int64_t *ptr, uint32_t n_samples,
                                const pl_schedule_affected_out *out, pl_err *err)
{
    PL_FAIL_IF(ptr[0] != 0, err, PL_ERANGE, "term lists: ptr[0] is %lld, not 0",
               (long long)ptr[0]);
    for (uint32_t b = 0; b < n_samples; b++)
        PL_FAIL_IF(ptr[b + 1] < ptr[b], err, PL_ERANGE,
                   "term lists: ptr[%u] = %lld is below ptr[%u] = %lld", b + 1,
                   (long long)ptr[b + 1], b, (long long)ptr[b]);
    for (uint32_t b = 0; b < n_samples; b++) {
        for (int64_t i = ptr[b]; i < ptr[b + 1]; i++)
            PL_FAIL_IF(terms[i] < 0 || (uint32_t)terms[i] >= m->n_terms, err, PL_ERANGE,
                       "term lists: sample %u names term %d, outside 0..%u", b, terms[i],
                       m->n_terms ? m->n_terms - 1 : 0);
    }
    PL_TRY(check_map(m, err)); /* the term lists first: they read no array of m */
    uint8_t *hit = calloc(m->n_terms ? m->n_terms : 1, 1);
    if (!hit)
        return pl__err(err, -ENOMEM, "the affected-term schedule: out of memory");
    out->sample_ptr[0] = 0;
    for (uint32_t b = 0; b < n_samples; b++) {
        int64_t *s = out->sample_slots + ptr[b];
        for (int64_t i = ptr[b]; i < ptr[b + 1]; i++) {
            uint32_t slot = m->term_slot[terms[i]];
            s[i - ptr[b]] = slot;
            hit[slot] = 1;
        }
        qsort(s, (size_t)(ptr[b + 1] - ptr[b]), sizeof *s, cmp_i64);
        out->sample_ptr[b + 1] = ptr[b + 1];
    }
    int64_t np[2] = {0, 0}, ng[2] = {0, 0}, ns[2] = {0, 0};
    int64_t *gptr[2] = {out->group_ptr, out->rest_group_ptr};
    int64_t *pos[2] = {out->positions, out->rest_positions};
    int64_t *gaptr[2] = {out->gather_ptr, out->rest_gather_ptr};
    int64_t *ga[2] = {out->gather, out->rest_gather};
    int64_t *scptr[2] = {out->scatter_ptr, out->rest_scatter_ptr};
    int64_t *sc[2] = {out->scatter, out->rest_scatter};
    for (int w = 0; w < 2; w++)
        gptr[w][0] = gaptr[w][0] = scptr[w][0] = 0;
    for (uint32_t st = 0; st < m->n_strata; st++) {
        for (uint32_t g = m->stratum_ptr[st]; g < m->stratum_ptr[st + 1]; g++) {
            for (uint32_t slot = m->group_ptr[g]; slot < m->group_ptr[g + 1]; slot++) {
                int w = !hit[slot]; /* 0: affected, 1: the rest */
                pos[w][np[w]++] = slot - m->group_ptr[g];
                uint64_t a = m->slot_in_ptr[slot], n = m->slot_in_ptr[slot + 1] - a;
                memcpy(ga[w] + ng[w], m->slot_in + a, n * sizeof *ga[w]);
                ng[w] += (int64_t)n;
                for (uint64_t c = m->slot_out[slot]; c < m->slot_out[slot + 1]; c++)
                    sc[w][ns[w]++] = (int64_t)c;
            }
            gptr[0][g + 1] = np[0];
            gptr[1][g + 1] = np[1];
        }
        for (int w = 0; w < 2; w++) {
            gaptr[w][st + 1] = ng[w];
            scptr[w][st + 1] = ns[w];
        }
    }
    free(hit);
    return 0;
}
