/* The producer pipeline shared by `pertload serve` (batches into a
 * shared-memory ring) and the in-process loader (batches into host buffers
 * that are uploaded to a device): epoch plan -> sample table -> worker
 * threads. Each worker takes the next delivery number (a whole batch, or a
 * part of a batch too large for one slot: loader/parts.h), asks the sink for
 * its slot, starts the payload reads straight into the slot, collates the
 * masks while those reads are in flight, waits for them and publishes the
 * delivery to the sink.
 *
 * Lifecycle: init (database and plan) -> load (graph, sample table, what the
 * batches need) -> size (the sink's slot size; batches split to fit) -> start
 * (workers) -> join -> free. A sink decides where slots live, how large they
 * may be and when one may be written; the pipeline is the same for every
 * sink. */
#ifndef PL_LOADER_PRODUCE_H
#define PL_LOADER_PRODUCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "collate/collate.h"
#include "loader/parts.h"
#include "loader/table.h"
#include "pertload.h"
#include "subset.h"

/** Where batches go, delivery by delivery: deliveries count from 0 at the
 *  first one produced (plan batch start_batch, or its first part). Called
 *  from worker threads, any number at once. */
typedef struct pl__sink {
    void *ctx;
    /** Wait until delivery `b` may be written; set `*slot` to its slot of
     *  pl__producer.slot_bytes bytes. @return 0, or a negative code with `err`
     *  set (the worker then stops and the run fails with it). */
    int (*acquire)(void *ctx, uint64_t b, unsigned char **slot, pl_err *err);
    /** Delivery `b` of `n_samples` samples is complete in its slot. */
    void (*publish)(void *ctx, uint64_t b, uint32_t n_samples);
    /** The run is stopping: `rc` < 0 with `err` for the first failure of a
     *  worker, 0 (err NULL) for pl__producer_stop(). Waits in acquire() should
     *  return. May be NULL. */
    void (*stop)(void *ctx, int rc, const pl_err *err);
} pl__sink;

typedef struct pl__produce_opts {
    const char *db;
    pl_plan_opts plan;    /* n_samples is filled from the database (or the subset) */
    const char *rows;     /* the subset of rows (subset.h: "A:B" or a .npy), or NULL */
    const char *split;    /* or the rows of a split (subset.h: "COLUMN=LEVEL" or
                             "LEVEL"), or NULL; not with `rows` */
    uint64_t start_batch; /* resume: first plan batch to produce */
    uint32_t dense;       /* PL_DENSE_* collated on the CPU into the slot */
    uint32_t threads;     /* worker threads; 0 means 1 */
    int io_mode;          /* PL_IO_* (loader/io.h) */
    /* plan.budget > 0: a row costs its payload bytes (not its removed
     * positions, the sample table's weight); the plan is made at load. */
    int budget_payload;
    /* The sample table's read buffers: NULL for aligned_alloc + mlock, or a
     * GPU backend's page-locked allocator; must outlive pl__producer_load(). */
    const pl__table_mem *table_mem;
    /* Perturbation neighbourhoods (masks/khop.h): khop_types NULL for none,
     * else a comma-separated list of the edge types to walk khop hops, with
     * at most khop_max_genes genes a set (0: PL_KHOP_MAX_GENES). */
    const char *khop_types;
    uint32_t khop;
    uint32_t khop_max_genes;
    /* 1: one sample table per database and node in shared memory
     * (pl__table_load_shared); 0: this process's own. */
    int shared_table;
    /* 1: leave out the ontology lists that every batch of a database with an
     * ontology carries (collate/slot.h). */
    int no_ontology;
} pl__produce_opts;

struct pl__worker;

typedef struct pl__producer {
    pl__produce_opts o;
    /* init */
    pl_db *db;
    pl_plan *plan;        /* budgeted plans and splits: made at load, from the rows'
                             costs or labels */
    pl__subset subset;    /* the rows of o.rows or o.split (empty without) */
    pl__split split;      /* o.split's level; its rows are taken at load, from the
                             sample table */
    uint64_t n_batches;   /* batches to produce: the plan's from start_batch on */
    /* load */
    pl_graph *g;
    pl__table table;
    pl__collate_cfg cfg;
    struct pl__khop *khop; /* NULL without k-hop lists */
    pl_ontology *onto;     /* NULL without ontology lists */
    pl__needs needs;      /* what the run's batches need */
    /* size */
    uint64_t slot_bytes;  /* a slot's size, a multiple of 4096 */
    pl__parts parts;      /* the deliveries: batches, split where they do not fit */
    int payload_fd;       /* -1 without payload */
    int payload_dfd;      /* the same file opened O_DIRECT, or -1 */
    int payload_direct;   /* payload read with O_DIRECT */
    uint64_t payload_offset;
    /* run */
    const pl__sink *sink;
    _Atomic uint64_t next; /* deliveries taken by workers */
    _Atomic int stop;
    pthread_mutex_t lock;
    int rc;               /* first failure of a worker */
    pl_err err;
    struct pl__worker *ws;
    pthread_t *th;
    uint32_t started;
} pl__producer;

/** Open the database and compute the plan (cheap: no graph, no samples),
 *  except a budgeted one or a split's, which load makes from the sample
 *  table (a split's level is checked here, against the metadata).
 *  `p` needs no preparation; pl__producer_free() it even on failure.
 *  @return 0, PL_EUSAGE (start_batch past the epoch, a bad subset or split),
 *  or the database's code. */
int pl__producer_init(pl__producer *p, const pl__produce_opts *o, pl_err *err);

/** Load the graph and the sample table, open the payload, make a budgeted
 *  or split plan, and measure what the run's batches need (p->needs).
 *  @return 0, PL_EUSAGE (no row holds the split's level, start_batch past
 *  the epoch), or the loading's code. */
int pl__producer_load(pl__producer *p, pl_err *err);

/** Use slots of `slot_bytes` (a multiple of 4096, at least p->needs.one:
 *  pl__parts_fit() chooses it) and split the batches that do not fit.
 *  @return 0, -ENOMEM. */
int pl__producer_size(pl__producer *p, uint64_t slot_bytes, pl_err *err);

/** Deliveries of the run (after pl__producer_size()). */
static inline uint64_t pl__producer_deliveries(const pl__producer *p)
{
    return p->parts.n_deliveries;
}

/** Start the workers (after pl__producer_size()); they run until every
 *  delivery is published, a worker fails, or pl__producer_stop(). On failure
 *  none is left running. */
int pl__producer_start(pl__producer *p, const pl__sink *sink, pl_err *err);

/** Ask the workers to stop after the delivery in hand (any thread). */
void pl__producer_stop(pl__producer *p);

/** Wait for the workers. @return 0, or the first failure of a worker. */
int pl__producer_join(pl__producer *p, pl_err *err);

/** Another epoch of the same run (workers joined): the plan of `epoch` from
 *  plan batch `start_batch` over the same database, subset and options, and
 *  what its batches need (p->needs); pl__producer_size() follows, then
 *  pl__producer_start(). The loaded graph, sample table and payload stay;
 *  the plan's elastic resume position (pl_plan_opts.from) is reset to 0.
 *  @return 0, PL_EUSAGE (start_batch past the epoch), -ENOMEM. */
int pl__producer_replan(pl__producer *p, uint64_t epoch, uint64_t start_batch, pl_err *err);

/** Release everything (workers must have been joined); after
 *  pl__producer_init(), whatever it returned. */
void pl__producer_free(pl__producer *p);

#endif
