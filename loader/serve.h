/* The producer of `pertload serve`: epoch plan -> sample table -> collation
 * by worker threads -> shared-memory ring. */
#ifndef PL_LOADER_SERVE_H
#define PL_LOADER_SERVE_H

#include <stdint.h>

#include "pertload.h"

/** The default bound on a ring's size (segment header included). */
#define PL__SERVE_RING_BYTES ((uint64_t)256 << 20)

typedef struct pl__serve_opts {
    const char *db, *ring;
    pl_plan_opts plan;      /* n_samples is filled from the database */
    const char *rows;       /* the subset of rows (subset.h), or NULL: all */
    const char *split;      /* or a split's rows (subset.h), or NULL */
    uint64_t start_batch;   /* resume: first plan batch to produce */
    uint32_t dense;         /* PL_DENSE_* (collate/collate.h) */
    uint32_t threads;
    uint32_t slots;         /* the most slots; fewer when they do not fit max_ring_bytes */
    uint64_t max_ring_bytes; /* the segment's largest size; 0: PL__SERVE_RING_BYTES */
    int32_t consumer_pid;
    int io_mode;            /* PL_IO_* (loader/io.h) */
    int budget_payload;     /* plan.budget counts payload bytes, not removed positions */
    int verbose;            /* print the ready line and a summary */
    const char *khop_types; /* k-hop lists (loader/produce.h): NULL for none */
    uint32_t khop, khop_max_genes;
    int shared_table;       /* one sample table per database and node (loader/table.h) */
    int no_ontology;        /* leave out the ontology lists (loader/produce.h) */
    int more_epochs;        /* after an epoch, run the next one stdin asks for */
} pl__serve_opts;

/** Produce one epoch into a new ring and wait until the consumer drained it
 *  (or died: PL_EPEER). The ring is removed on return.
 *  With more_epochs, serve then reads requests from stdin, one a line:
 *  "epoch E START" runs epoch E of the same plan options from plan batch
 *  START in the same ring (pl_ring_next_epoch(): its batches go on from the
 *  last epoch's), announced by a ready line like the first; the end of stdin
 *  (or the consumer's death) ends serve with 0. The database, graph and
 *  sample table stay loaded; the slot size stays (batches split to fit).
 *  Slots are sized for a typical batch within max_ring_bytes (loader/parts.h); a batch that does
 *  not fit one comes in parts, one slot each: the ring carries deliveries.
 *  @return 0, PL_EUSAGE (not even one sample fits max_ring_bytes), ... */
int pl__serve(const pl__serve_opts *o, pl_err *err);

/** Remove the ring of the running pl__serve(), and its shared sample table
 *  when no other process uses it (async-signal-safe; for the CLI's signal
 *  handler). pl__serve() holds SIGTERM, SIGINT and SIGHUP while it
 *  creates the ring, so such a handler never misses a ring just created. */
void pl__serve_abort(void);

#endif
