/* Budgeted epoch plans over a database: the rows' costs from its sample
 * table (loader/plan.h, steps 2c-3c). */
#ifndef PL_LOADER_PLAN_DB_H
#define PL_LOADER_PLAN_DB_H

#include "pertload.h"
#include "table.h"

/** The budgeted plan `o` (o->budget > 0) over the rows of `t`: each row costs
 *  its removed positions as the slot sizing counts them (t->weight: deleted
 *  genes plus pl__masks_bound over every kind, an upper bound of what it
 *  removes), or, with `payload`, its `payload_row_bytes` (0: no payload, a
 *  PL_EUSAGE naming `db`). */
int pl__plan_budgeted(const pl_plan_opts *o, const pl__table *t, int payload,
                      uint64_t payload_row_bytes, const char *db, pl_plan **out, pl_err *err);

#endif
