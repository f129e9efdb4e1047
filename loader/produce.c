/* The producer pipeline (overview in produce.h). */
#include "produce.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "masks/khop.h"
#include "masks/masks.h"
#include "plan.h"
#include "plan_db.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "table_shared.h"

typedef struct pl__worker {
    pl__producer *p;
    pl__io *io;
    int32_t *scratch;
    uint64_t scratch_len;
    uint64_t *rows, *ids;
    uint32_t *n_genes;
    const int32_t **genes;
    const float **labels;
    pl__khop_ctx *khop;
} worker;

/* The batches from start_batch on, once the plan is made. */
static int start_at(pl__producer *p, pl_err *err)
{
    uint64_t total = pl_plan_n_batches(p->plan);
    PL_FAIL_IF(p->o.start_batch > total, err, PL_EUSAGE,
               "--start-batch %llu is past the %llu batches of the epoch",
               (unsigned long long)p->o.start_batch, (unsigned long long)total);
    p->n_batches = total - p->o.start_batch;
    return 0;
}

/* A budgeted plan (plan.h, steps 2c-3c) from the loaded sample table. */
static int budget_plan(pl__producer *p, pl_err *err)
{
    PL_TRY(pl__plan_budgeted(&p->o.plan, &p->table, p->o.budget_payload,
                             p->cfg.payload_row_bytes, p->o.db, &p->plan, err));
    return start_at(p, err);
}

/* The plan over the subset's positions (plan.h, step 0; the database's rows
 * without a subset), mapped to its rows. */
static int subset_plan(pl__producer *p, pl_err *err)
{
    PL_TRY(pl_plan_new(&p->o.plan, &p->plan, err));
    if (p->subset.rows)
        pl__subset_apply(&p->subset, p->plan);
    return start_at(p, err);
}

int pl__producer_init(pl__producer *p, const pl__produce_opts *o, pl_err *err)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->o = *o;
    p->payload_fd = p->payload_dfd = -1;
    PL_TRY(pl_db_open(o->db, &p->db, err));
    p->o.plan.n_samples = pl_db_info_get(p->db)->n_samples;
    PL_FAIL_IF(o->rows && o->split, err, PL_EUSAGE, "--rows and --split cannot be combined");
    if (o->plan.budget) { /* the costs come with the sample table */
        PL_FAIL_IF(o->rows, err, PL_EUSAGE, "--rows and --budget cannot be combined");
        PL_FAIL_IF(o->split, err, PL_EUSAGE, "--split and --budget cannot be combined");
        return 0;
    }
    if (o->split) /* the level now; its rows come with the sample table */
        return pl__split_find(&p->split, pl_db_info_get(p->db), o->split, err);
    if (o->rows) {
        PL_TRY(pl__subset_load(&p->subset, o->rows, p->o.plan.n_samples, err));
        p->o.plan.n_samples = p->subset.n;
    }
    return subset_plan(p, err);
}

static int open_payload(pl__producer *p, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(p->db);
    if (!info->payload_dtype[0])
        return 0;
    char path[4096];
    pl__path_join(path, sizeof path, p->o.db, PL_FILE_PAYLOAD);
    p->payload_offset = p->db->meta.payload_offset;
    /* The file pl_db_open() checked against the metadata. */
    p->payload_fd = fcntl(p->db->payload_fd, F_DUPFD_CLOEXEC, 0);
    PL_FAIL_IF(p->payload_fd < 0, err, -errno, "%s: %s", path, strerror(errno));
    /* O_DIRECT when rows are whole pages (the header is page-padded, and the
     * slot's payload region is page-aligned) and the file system accepts it;
     * otherwise reads go through the page cache, still straight into the
     * slot. The direct descriptor must reach that same file. */
    if (info->payload_row_bytes % PL_PAYLOAD_ALIGN == 0) {
        struct stat a, b;
        p->payload_dfd = pl__open_regular(path, O_DIRECT, NULL);
        if (p->payload_dfd >= 0 &&
            (fstat(p->payload_dfd, &a) < 0 || fstat(p->payload_fd, &b) < 0 ||
             a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
            close(p->payload_dfd);
            p->payload_dfd = -1;
        }
        p->payload_direct = p->payload_dfd >= 0;
    }
    return 0;
}

/* The k-hop structure of the run (the slot sizing adds each sample's bound
 * of its k-hop lists, loader/parts.c). */
static int khop_load(pl__producer *p, pl_err *err)
{
    uint32_t types[PL_MAX_TYPES];
    int nt = pl__khop_parse_types(p->db, p->o.khop_types, types, err);
    PL_TRY(nt < 0 ? nt : 0);
    PL_TRY(pl__khop_new(p->db, types, (uint32_t)nt, p->o.khop,
                        p->o.khop_max_genes ? p->o.khop_max_genes : PL_KHOP_MAX_GENES, &p->khop,
                        err));
    p->cfg.khop = p->khop;
    return 0;
}

/* The ontology of the database (the slot sizing adds each sample's bound of
 * its ontology lists, pl__collate_onto_bound). */
static int onto_load(pl__producer *p, pl_err *err)
{
    PL_TRY(pl_ontology_load(p->db, &p->onto, err));
    PL_FAIL_IF(p->onto->n_annotations > INT32_MAX || p->onto->n_terms > INT32_MAX, err,
               PL_EUSAGE, "%s: %llu ontology annotations: more than a batch's int32 lists "
               "can index (serve --no-ontology leaves them out)", p->o.db,
               (unsigned long long)p->onto->n_annotations);
    p->cfg.onto = p->onto;
    return 0;
}

int pl__producer_load(pl__producer *p, pl_err *err)
{
    PL_TRY(pl_graph_load(p->db, &p->g, err));
    int rc = p->o.shared_table ? pl__table_load_shared(p->db, p->g, p->o.io_mode, &p->table, err)
                               : 1;
    if (rc == -EPERM || rc == -EACCES) {
        /* Another user's object at the shared name (which anyone can
         * predict): never a reason to stop; this process keeps its own. */
        fprintf(stderr, "pertload: warning: %s; this process uses a private sample table\n",
                err->msg);
        rc = 1;
    }
    PL_TRY(rc);
    if (rc == 1)
        PL_TRY(pl__table_load_with(p->db, p->g, p->o.io_mode, p->o.table_mem, &p->table,
                                   err));
    PL_TRY(open_payload(p, err));
    pl__collate_cfg_init(&p->cfg, p->db, p->g, p->o.plan.batch_size, p->o.dense);
    if (p->o.split) {
        PL_TRY(pl__subset_split(&p->subset, &p->split, p->db, err));
        p->o.plan.n_samples = p->subset.n;
        PL_TRY(subset_plan(p, err));
    }
    if (!p->plan)
        PL_TRY(budget_plan(p, err));
    if (p->o.khop_types)
        PL_TRY(khop_load(p, err));
    if (!p->o.no_ontology && pl_db_info_get(p->db)->n_terms)
        PL_TRY(onto_load(p, err));
    return pl__parts_measure(&p->cfg, &p->table, p->plan, p->o.start_batch, &p->needs, err);
}

int pl__producer_size(pl__producer *p, uint64_t slot_bytes, pl_err *err)
{
    pl__parts_free(&p->parts);
    p->slot_bytes = slot_bytes;
    return pl__parts_plan(&p->parts, &p->cfg, &p->table, p->plan, p->o.start_batch,
                          &p->needs, slot_bytes, err);
}

int pl__producer_replan(pl__producer *p, uint64_t epoch, uint64_t start_batch, pl_err *err)
{
    free(p->ws);
    free(p->th);
    p->ws = NULL;
    p->th = NULL;
    atomic_store(&p->next, 0);
    atomic_store(&p->stop, 0);
    p->rc = 0;
    pl_plan_free(p->plan);
    p->plan = NULL;
    p->o.plan.epoch = epoch;
    p->o.plan.from = 0; /* an elastic resume's position is its first epoch's */
    p->o.start_batch = start_batch;
    /* The subset's rows (a split's too) were taken at init or load. */
    PL_TRY(p->o.plan.budget ? budget_plan(p, err) : subset_plan(p, err));
    return pl__parts_measure(&p->cfg, &p->table, p->plan, p->o.start_batch, &p->needs, err);
}

/* The first failure wins; every worker then stops after the batch in hand. */
static void fail(pl__producer *p, int rc, const pl_err *err)
{
    pthread_mutex_lock(&p->lock);
    int first = p->rc == 0;
    if (first) {
        p->rc = rc;
        p->err = *err;
    }
    pthread_mutex_unlock(&p->lock);
    atomic_store(&p->stop, 1);
    if (first && p->sink->stop)
        p->sink->stop(p->sink->ctx, rc, err);
}

void pl__producer_stop(pl__producer *p)
{
    atomic_store(&p->stop, 1);
    if (p->sink && p->sink->stop)
        p->sink->stop(p->sink->ctx, 0, NULL);
}

static int read_payload(worker *w, unsigned char *dst, uint32_t n, pl_err *err)
{
    pl__producer *p = w->p;
    uint64_t rb = p->cfg.payload_row_bytes;
    /* Direct reads need a page-aligned destination: slots are page-aligned. */
    int fd = p->payload_direct && (uintptr_t)dst % PL_PAYLOAD_ALIGN == 0 ? p->payload_dfd
                                                                         : p->payload_fd;
    /* Rows that follow each other in the file and in the batch (an in-order
     * plan) are read together: one read per run, tagged with its first row. */
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && w->rows[j] == w->rows[j - 1] + 1; j++)
            ;
        PL_TRY(pl__io_read(w->io, fd, dst + i * rb, (j - i) * rb,
                           p->payload_offset + w->rows[i] * rb, -1, i, err));
    }
    return pl__io_submit(w->io, err);
}

/* The file ended inside the read of rows[i..] (consecutive rows of a batch
 * of n): name the row and offset where it ends. */
static int payload_cut(worker *w, uint64_t i, uint32_t n, pl_err *err)
{
    pl__producer *p = w->p;
    uint64_t rb = p->cfg.payload_row_bytes, first = w->rows[i], k = 1;
    while (i + k < n && w->rows[i + k] == first + k)
        k++;
    struct stat st;
    uint64_t size = fstat(p->payload_fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    uint64_t start = p->payload_offset + first * rb, row = first;
    if (size > start)
        row += (size - start) / rb < k ? (size - start) / rb : k - 1;
    return pl__err(err, PL_ECORRUPT, "%s/%s: row %llu (offset %llu): the file ends at byte "
                   "%llu (truncated after the database was opened)", p->o.db, PL_FILE_PAYLOAD,
                   (unsigned long long)row,
                   (unsigned long long)(p->payload_offset + row * rb),
                   (unsigned long long)size);
}

static int wait_payload(worker *w, uint32_t n, pl_err *err)
{
    pl__producer *p = w->p;
    int rc = 0;
    while (pl__io_pending(w->io)) {
        uint64_t tag;
        int64_t res;
        PL_TRY(pl__io_wait(w->io, &tag, &res, err));
        if (res >= 0 || rc < 0)
            continue;
        if (res == PL_ECORRUPT) /* end of file first */
            rc = payload_cut(w, tag, n, err);
        else
            rc = pl__err(err, (int)res, "%s/%s: reading row %llu (offset %llu): %s", p->o.db,
                         PL_FILE_PAYLOAD, (unsigned long long)w->rows[tag],
                         (unsigned long long)(p->payload_offset +
                                              w->rows[tag] * p->cfg.payload_row_bytes),
                         pl_strerror((int)res));
    }
    return rc;
}

/* Delivery `b`: a whole batch or one part of it. */
static int one_batch(worker *w, uint64_t b, pl_err *err)
{
    pl__producer *p = w->p;
    const pl__sink *sink = p->sink;
    pl__part part;
    pl__parts_get(&p->parts, b, &part);
    uint64_t pb = p->o.start_batch + part.batch; /* plan batch */
    unsigned char *slot;
    PL_TRY(sink->acquire(sink->ctx, b, &slot, err));
    uint32_t n = pl_plan_batch(p->plan, pb, w->rows);
    if (part.n_parts > 1) {
        memmove(w->rows, w->rows + part.first, part.n * sizeof *w->rows);
        n = part.n;
    }
    const pl__table *t = &p->table;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = w->rows[i];
        w->ids[i] = t->ids[r];
        w->genes[i] = t->genes + t->gptr[r];
        w->n_genes[i] = (uint32_t)(t->gptr[r + 1] - t->gptr[r]);
        w->labels[i] = t->labels + r * t->n_labels;
    }
    if (p->cfg.payload_row_bytes)
        PL_TRY(read_payload(w, slot + pl__collate_payload_offset(&p->cfg, n), n, err));
    pl__batch_src src = {n, w->ids, w->rows, w->genes, w->n_genes, w->labels,
                         part.part, part.n_parts, part.first, w->khop};
    int rc = pl__collate(&p->cfg, &src, slot, p->slot_bytes, pb, p->o.plan.epoch, w->scratch,
                         w->scratch_len, err);
    int rc2 = p->cfg.payload_row_bytes ? wait_payload(w, n, rc < 0 ? NULL : err) : 0;
    PL_TRY(rc);
    PL_TRY(rc2);
    sink->publish(sink->ctx, b, n);
    return 0;
}

static void *work(void *arg)
{
    worker *w = arg;
    pl__producer *p = w->p;
    pl_err err = {0};
    while (!atomic_load(&p->stop)) {
        uint64_t b = atomic_fetch_add(&p->next, 1);
        if (b >= p->parts.n_deliveries)
            break;
        int rc = one_batch(w, b, &err);
        if (rc < 0) {
            fail(p, rc, &err);
            break;
        }
    }
    return NULL;
}

static int worker_init(worker *w, pl__producer *p, pl_err *err)
{
    uint32_t B = p->o.plan.batch_size;
    memset(w, 0, sizeof *w);
    w->p = p;
    w->scratch_len = p->table.max_kind_bound + PL__MASKS_PAD;
    w->scratch = malloc(w->scratch_len * 4);
    w->rows = malloc(B * sizeof *w->rows);
    w->ids = malloc(B * sizeof *w->ids);
    w->n_genes = malloc(B * sizeof *w->n_genes);
    w->genes = malloc(B * sizeof *w->genes);
    w->labels = malloc(B * sizeof *w->labels);
    if (p->khop)
        w->khop = pl__khop_ctx_new(p->khop);
    PL_FAIL_IF(!w->scratch || !w->rows || !w->ids || !w->n_genes || !w->genes || !w->labels ||
                   (p->khop && !w->khop),
               err, -ENOMEM, "out of memory");
    return pl__io_open(&w->io, p->o.io_mode, B ? B : 1, err);
}

static void worker_free(worker *w)
{
    pl__io_close(w->io);
    free(w->scratch);
    free(w->rows);
    free(w->ids);
    free(w->n_genes);
    free(w->genes);
    free(w->labels);
    pl__khop_ctx_free(w->khop);
}

int pl__producer_start(pl__producer *p, const pl__sink *sink, pl_err *err)
{
    uint32_t T = p->o.threads ? p->o.threads : 1;
    p->sink = sink;
    p->ws = calloc(T, sizeof *p->ws);
    p->th = calloc(T, sizeof *p->th);
    PL_FAIL_IF(!p->ws || !p->th, err, -ENOMEM, "out of memory");
    int rc = 0;
    for (; rc == 0 && p->started < T; p->started++) {
        worker *w = &p->ws[p->started];
        rc = worker_init(w, p, err);
        if (rc == 0 && pthread_create(&p->th[p->started], NULL, work, w) != 0)
            rc = pl__err(err, -EAGAIN, "cannot start a worker thread");
        if (rc < 0) {
            worker_free(w);
            break;
        }
    }
    if (rc < 0) {
        atomic_store(&p->stop, 1);
        pl__producer_join(p, NULL);
    }
    return rc;
}

int pl__producer_join(pl__producer *p, pl_err *err)
{
    for (uint32_t i = 0; i < p->started; i++) {
        pthread_join(p->th[i], NULL);
        worker_free(&p->ws[i]);
    }
    p->started = 0;
    if (p->rc < 0) {
        if (err)
            *err = p->err;
        return p->rc;
    }
    return 0;
}

void pl__producer_free(pl__producer *p)
{
    free(p->ws);
    free(p->th);
    if (p->payload_fd >= 0)
        close(p->payload_fd);
    if (p->payload_dfd >= 0)
        close(p->payload_dfd);
    pl_plan_free(p->plan);
    pl__subset_free(&p->subset);
    pl__split_free(&p->split);
    pl__parts_free(&p->parts);
    pl__table_free(&p->table);
    pl__khop_free(p->khop);
    pl_ontology_free(p->onto);
    pl_graph_free(p->g);
    pl_db_close(p->db);
    pthread_mutex_destroy(&p->lock);
    memset(p, 0, sizeof *p);
    p->payload_fd = p->payload_dfd = -1;
}
