/* pl__serve: worker threads collate the batches of a plan into ring slots.
 *
 * Each worker takes the next batch number, waits for its slot, starts the
 * payload reads of the batch straight into the slot, collates the masks while
 * those reads are in flight, waits for them and publishes the batch. */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collate/collate.h"
#include "io.h"
#include "masks/masks.h"
#include "plan.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/progress.h"
#include "table.h"

typedef struct server {
    const pl__serve_opts *o;
    pl_db *db;
    pl_graph *g;
    pl__table table;
    pl_plan *plan;
    pl_ring *ring;
    pl__collate_cfg cfg;
    uint64_t slot_bytes, n_batches; /* batches in the ring */
    int payload_fd;
    int payload_direct;
    uint64_t payload_offset;
    _Atomic uint64_t next;
    _Atomic int stop;
    pthread_mutex_t lock;
    int rc;
    pl_err err;
} server;

static char abort_name[PL_RING_NAME_MAX + 16];

void pl__serve_abort(void)
{
    if (abort_name[0])
        shm_unlink(abort_name);
}

static void fail(server *s, int rc, const pl_err *err)
{
    pthread_mutex_lock(&s->lock);
    if (s->rc == 0) {
        s->rc = rc;
        s->err = *err;
    }
    pthread_mutex_unlock(&s->lock);
    atomic_store(&s->stop, 1);
}

typedef struct worker {
    server *s;
    pl__io *io;
    int32_t *scratch;
    uint64_t scratch_len;
    uint64_t *rows, *ids;
    uint32_t *n_genes;
    const int32_t **genes;
    const float **labels;
} worker;

static int read_payload(worker *w, unsigned char *dst, uint32_t n, pl_err *err)
{
    server *s = w->s;
    uint64_t rb = s->cfg.payload_row_bytes;
    for (uint32_t i = 0; i < n; i++)
        PL_TRY(pl__io_read(w->io, s->payload_fd, dst + i * rb, rb,
                           s->payload_offset + w->rows[i] * rb, -1, i, err));
    return pl__io_submit(w->io, err);
}

static int wait_payload(worker *w, pl_err *err)
{
    int rc = 0;
    while (pl__io_pending(w->io)) {
        uint64_t tag;
        int64_t res;
        PL_TRY(pl__io_wait(w->io, &tag, &res, err));
        if (res < 0 && rc == 0)
            rc = pl__err(err, (int)res, "%s: reading the payload of row %llu: %s",
                         PL_FILE_PAYLOAD, (unsigned long long)w->rows[tag],
                         strerror((int)-res));
    }
    return rc;
}

static int one_batch(worker *w, uint64_t b, pl_err *err)
{
    server *s = w->s;
    uint64_t pb = s->o->start_batch + b; /* plan batch */
    PL_TRY(pl_ring_acquire(s->ring, b, err));
    unsigned char *slot = pl_ring_slot(s->ring, b);
    uint32_t n = pl_plan_batch(s->plan, pb, w->rows);
    const pl__table *t = &s->table;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = w->rows[i];
        w->ids[i] = t->ids[r];
        w->genes[i] = t->genes + t->gptr[r];
        w->n_genes[i] = (uint32_t)(t->gptr[r + 1] - t->gptr[r]);
        w->labels[i] = t->labels + r * t->n_labels;
    }
    if (s->cfg.payload_row_bytes)
        PL_TRY(read_payload(w, slot + pl__collate_payload_offset(&s->cfg, n), n, err));
    pl__batch_src src = {n, w->ids, w->rows, w->genes, w->n_genes, w->labels};
    int rc = pl__collate(&s->cfg, &src, slot, s->slot_bytes, pb, s->o->plan.epoch, w->scratch,
                         w->scratch_len, err);
    int rc2 = s->cfg.payload_row_bytes ? wait_payload(w, rc < 0 ? NULL : err) : 0;
    PL_TRY(rc);
    PL_TRY(rc2);
    pl_ring_publish(s->ring, b, n);
    return 0;
}

static void *work(void *arg)
{
    worker *w = arg;
    server *s = w->s;
    pl_err err = {0};
    while (!atomic_load(&s->stop)) {
        uint64_t b = atomic_fetch_add(&s->next, 1);
        if (b >= s->n_batches)
            break;
        int rc = one_batch(w, b, &err);
        if (rc < 0) {
            fail(s, rc, &err);
            break;
        }
    }
    return NULL;
}

static int worker_init(worker *w, server *s, pl_err *err)
{
    uint32_t B = s->o->plan.batch_size;
    memset(w, 0, sizeof *w);
    w->s = s;
    w->scratch_len = s->table.max_kind_bound + PL__MASKS_PAD;
    w->scratch = malloc(w->scratch_len * 4);
    w->rows = malloc(B * sizeof *w->rows);
    w->ids = malloc(B * sizeof *w->ids);
    w->n_genes = malloc(B * sizeof *w->n_genes);
    w->genes = malloc(B * sizeof *w->genes);
    w->labels = malloc(B * sizeof *w->labels);
    PL_FAIL_IF(!w->scratch || !w->rows || !w->ids || !w->n_genes || !w->genes || !w->labels,
               err, -ENOMEM, "out of memory");
    return pl__io_open(&w->io, s->o->io_mode, B ? B : 1, err);
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
}

static int open_payload(server *s, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(s->db);
    s->payload_fd = -1;
    if (!info->payload_dtype[0])
        return 0;
    char p[4096];
    pl__path_join(p, sizeof p, s->o->db, PL_FILE_PAYLOAD);
    s->payload_offset = s->db->meta.payload_offset;
    /* O_DIRECT when rows are whole pages (the header is page-padded), and the
     * file system accepts it; otherwise reads go through the page cache,
     * still straight into the slot. */
    if (info->payload_row_bytes % PL_PAYLOAD_ALIGN == 0) {
        s->payload_fd = open(p, O_RDONLY | O_CLOEXEC | O_DIRECT);
        s->payload_direct = s->payload_fd >= 0;
    }
    if (s->payload_fd < 0)
        s->payload_fd = open(p, O_RDONLY | O_CLOEXEC);
    PL_FAIL_IF(s->payload_fd < 0, err, -errno, "%s: %s", p, strerror(errno));
    return 0;
}

static int run(server *s, pl_err *err)
{
    const pl__serve_opts *o = s->o;
    double t0 = pl__now();
    PL_TRY(pl_db_open(o->db, &s->db, err));
    PL_TRY(pl_graph_load(s->db, &s->g, err));
    PL_TRY(pl__table_load(s->db, s->g, o->io_mode, &s->table, err));
    pl_plan_opts po = o->plan;
    po.n_samples = s->table.n;
    PL_TRY(pl_plan_new(&po, &s->plan, err));
    uint64_t total = pl_plan_n_batches(s->plan);
    PL_FAIL_IF(o->start_batch > total, err, PL_EUSAGE,
               "--start-batch %llu is past the %llu batches of the epoch",
               (unsigned long long)o->start_batch, (unsigned long long)total);
    s->n_batches = total - o->start_batch;
    PL_TRY(open_payload(s, err));
    uint32_t B = po.batch_size;
    pl__collate_cfg_init(&s->cfg, s->db, s->g, B, o->dense);
    s->slot_bytes = pl__collate_slot_bytes(&s->cfg, B, (uint64_t)B * s->table.max_genes,
                                           (uint64_t)B * s->table.max_bound);
    s->slot_bytes = (s->slot_bytes + 4095) & ~(uint64_t)4095;
    PL_TRY(pl_ring_create(o->ring, o->slots, s->slot_bytes, o->consumer_pid, &s->ring, err));
    snprintf(abort_name, sizeof abort_name, "/pertload-%s", o->ring);
    pl_ring_set_total(s->ring, s->n_batches);
    if (o->verbose) {
        printf("ring %s: %u slots x %llu bytes, %llu batches\n", o->ring, o->slots,
               (unsigned long long)s->slot_bytes, (unsigned long long)s->n_batches);
        fflush(stdout);
        fprintf(stderr, "pertload serve: %llu samples loaded in %.2f s (%s%s), payload %s, "
                "%u worker threads, %.1f MiB ring\n", (unsigned long long)s->table.n,
                pl__now() - t0, s->table.backend, s->table.locked ? ", page-locked buffers" : "",
                s->payload_fd < 0 ? "none" : s->payload_direct ? "O_DIRECT" : "buffered",
                o->threads, (double)s->slot_bytes * o->slots / 1048576.0);
    }
    uint32_t T = o->threads ? o->threads : 1;
    worker *ws = calloc(T, sizeof *ws);
    pthread_t *th = calloc(T, sizeof *th);
    uint32_t started = 0;
    int rc = ws && th ? 0 : pl__err(err, -ENOMEM, "out of memory");
    for (; rc == 0 && started < T; started++) {
        rc = worker_init(&ws[started], s, err);
        if (rc == 0 && pthread_create(&th[started], NULL, work, &ws[started]) != 0)
            rc = pl__err(err, -EAGAIN, "cannot start a worker thread");
        if (rc < 0) {
            worker_free(&ws[started]);
            atomic_store(&s->stop, 1);
        }
    }
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        worker_free(&ws[i]);
    }
    free(ws);
    free(th);
    if (rc == 0 && s->rc < 0) {
        rc = s->rc;
        *err = s->err;
    }
    if (rc < 0 && rc != PL_EPEER) {
        pl_ring_finish(s->ring, atomic_load(&s->next), err->msg);
        /* Let the consumer read the failure before the segment goes. */
        pl_ring_acquire(s->ring, atomic_load(&s->next) + o->slots, NULL);
        return rc;
    }
    PL_TRY(rc);
    pl_ring_finish(s->ring, s->n_batches, NULL);
    /* Keep the segment until the consumer drained it (or died). */
    if (s->n_batches)
        PL_TRY(pl_ring_acquire(s->ring, s->n_batches - 1 + o->slots, err));
    return 0;
}

int pl__serve(const pl__serve_opts *o, pl_err *err)
{
    server *s = calloc(1, sizeof *s);
    if (!s)
        return pl__err(err, -ENOMEM, "out of memory");
    s->o = o;
    s->payload_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    int rc = run(s, err);
    pl_ring_destroy(s->ring);
    abort_name[0] = '\0';
    if (s->payload_fd >= 0)
        close(s->payload_fd);
    pl_plan_free(s->plan);
    pl__table_free(&s->table);
    pl_graph_free(s->g);
    pl_db_close(s->db);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return rc;
}
