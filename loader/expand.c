/* Expansion jobs from collated slots, and the CPU run of a job (the
 * algorithm is in expand.h, shared with the CUDA kernel). */
#include "expand.h"

#include <stdio.h>
#include <string.h>

#include "collate/slot.h"
#include "src/core/error.h"

static const char *const meta_kinds[3] = {"gpr", "reaction", "rmr"};

/* The slot array called `name`, found through the slot's descriptors
 * (collate/slot.h names them). */
static const struct pl_slot_array *find(const struct pl_slot_header *h, const char *name,
                                        uint32_t *hint)
{
    const struct pl_slot_array *a = (const struct pl_slot_array *)(h + 1);
    /* Arrays are looked up in layout order, so the search starts after the
     * previous hit and wraps around. */
    for (uint32_t step = 0; step < h->n_arrays; step++) {
        uint32_t i = (*hint + step) % h->n_arrays;
        if (!strcmp(a[i].name, name)) {
            *hint = i + 1;
            return &a[i];
        }
    }
    return NULL;
}

int pl__expand_job_init(pl__expand_job *j, const void *slot, uint32_t dense, uint32_t n_types,
                        const char *const *type_names, uint32_t n_lists, const uint64_t *lens,
                        const uint64_t *out, pl_err *err)
{
    const struct pl_slot_header *h = slot;
    PL_FAIL_IF(n_lists + 1 > PL__EXPAND_MAX || n_lists < n_types || n_lists > n_types + 3, err,
               PL_EUSAGE, "expansion of %u list kinds", n_lists);
    PL_FAIL_IF(memcmp(h->magic, PL_SLOT_MAGIC, 8) != 0, err, PL_ECORRUPT,
               "batch slot: bad magic");
    memset(j, 0, sizeof *j);
    j->dense = dense;
    j->n = h->n_samples;
    j->n_lists = n_lists + 1;
    uint32_t hint = 0;
    char name[2][PL_SLOT_NAME_MAX + 16];
    for (uint32_t k = 0; k <= n_lists; k++) {
        if (k == n_lists) {
            snprintf(name[0], sizeof name[0], "perturbation_indices");
            snprintf(name[1], sizeof name[1], "perturbation_ptr");
        } else if (k < n_types) {
            snprintf(name[0], sizeof name[0], "edges/%s/removed", type_names[k]);
            snprintf(name[1], sizeof name[1], "edges/%s/ptr", type_names[k]);
        } else {
            snprintf(name[0], sizeof name[0], "%s/removed", meta_kinds[k - n_types]);
            snprintf(name[1], sizeof name[1], "%s/ptr", meta_kinds[k - n_types]);
        }
        const struct pl_slot_array *rem = find(h, name[0], &hint);
        const struct pl_slot_array *ptr = find(h, name[1], &hint);
        PL_FAIL_IF(!rem || !ptr, err, PL_ECORRUPT, "batch %llu: the slot has no array %s",
                   (unsigned long long)h->batch, rem ? name[1] : name[0]);
        pl__expand_list *l = &j->list[k];
        l->removed = rem->offset;
        l->ptr = ptr->offset;
        l->out = out[k];
        l->len = (uint32_t)lens[k];
        uint64_t row = pl__expand_row_bytes(dense, lens[k]);
        l->tiles = (uint32_t)((row + PL__EXPAND_TILE - 1) / PL__EXPAND_TILE);
        l->first = j->tiles;
        j->tiles += l->tiles;
    }
    return 0;
}

void pl__expand_run(const pl__expand_job *j, const unsigned char *slot, unsigned char *masks)
{
    uint64_t grid = pl__expand_grid(j);
    for (uint64_t t = 0; t < grid; t++) {
        pl__expand_tile w = pl__expand_locate(j, t, slot, masks);
        pl__expand_fill(j, &w, 0, 1);
        pl__expand_scatter(j, &w, 0, 1);
    }
}
