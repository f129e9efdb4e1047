/* Budgeted epoch plans over a database (plan_db.h, pl_plan_new_db). */
#include "plan_db.h"

#include <errno.h>
#include <stdlib.h>

#include "io.h"
#include "src/core/error.h"

int pl__plan_budgeted(const pl_plan_opts *o, const pl__table *t, int payload,
                      uint64_t payload_row_bytes, const char *db, pl_plan **out, pl_err *err)
{
    *out = NULL;
    if (!payload)
        return pl_plan_new_costs(o, t->weight, out, err);
    PL_FAIL_IF(!payload_row_bytes, err, PL_EUSAGE, "%s has no payload to budget", db);
    PL_FAIL_IF(payload_row_bytes > UINT32_MAX, err, PL_EUSAGE,
               "payload rows of %llu bytes are too large to budget",
               (unsigned long long)payload_row_bytes);
    uint32_t *bytes = malloc((t->n ? t->n : 1) * sizeof *bytes);
    PL_FAIL_IF(!bytes, err, -ENOMEM, "out of memory");
    for (uint64_t i = 0; i < t->n; i++)
        bytes[i] = (uint32_t)payload_row_bytes;
    int rc = pl_plan_new_costs(o, bytes, out, err);
    free(bytes);
    return rc;
}

PL_API int pl_plan_new_db(pl_db *db, const pl_plan_opts *o, int budget_payload, pl_plan **out,
                          pl_err *err)
{
    *out = NULL;
    const pl_db_info *info = pl_db_info_get(db);
    pl_plan_opts po = *o;
    po.n_samples = info->n_samples;
    if (!po.budget)
        return pl_plan_new(&po, out, err);
    pl_graph *g = NULL;
    pl__table t;
    int rc = pl_graph_load(db, &g, err);
    if (rc == 0) {
        rc = pl__table_load(db, g, PL_IO_AUTO, &t, err);
        if (rc == 0) {
            rc = pl__plan_budgeted(&po, &t, budget_payload, info->payload_row_bytes,
                                   "the database", out, err);
            pl__table_free(&t);
        }
    }
    pl_graph_free(g);
    return rc;
}
