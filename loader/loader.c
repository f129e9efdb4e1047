/* The in-process loader: the producer pipeline (produce.h) collates batches
 * into host buffers, a dispatcher uploads them through a backend (upload.h)
 * into device buffers, and the consumer takes them in order.
 *
 * Buffers and their states (changed under `lock`, waited for on `cond`):
 *
 *   host buffer h, H of them (the workers plus the depth); batch u uses
 *   u % H:  FREE -> FILLING (a worker collates u into it) -> FILLED
 *   (published) -> COPYING (its copy queued, event `copied` recorded right
 *   after the copy) -> FREE. The worker that takes h for batch u + H
 *   synchronises on `copied` before writing, so a buffer is never refilled
 *   while the device still reads it.
 *
 *   device buffer d, D = depth of them; batch u uses u % D:  FREE -> QUEUED
 *   (copy and expansion queued, event `ready` after both) -> HELD (returned by
 *   pl_loader_next; the data are there once `ready` completed) -> FREE
 *   (pl_loader_release). When the consumer names the stream its work on the
 *   batch went to, event `released` is recorded there and the next copy into
 *   d waits for it on the device.
 *
 * Batches here are the producer's deliveries: a batch too large for a host
 * buffer comes as several parts (parts.h), each a delivery of its own; the
 * consumer sees the plan batch and the part in pl_device_batch.
 *
 * So each batch goes free -> filling -> copying -> ready -> in use -> free,
 * through the same code on both backends. Threads: the workers; one
 * background thread that loads the graph and the sample table, allocates the
 * buffers, starts the workers and then dispatches uploads in batch order;
 * the backend's own (CUDA's, or the host backend's copy thread); and the
 * consumer's. Every wait also ends on a failure or on close, so nothing
 * hangs: the first failure is kept and returned by pl_loader_next(). */
#include "loader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collate/slot.h"
#include "masks/masks.h"
#include "pl_config.h"
#include "produce.h"
#include "src/core/error.h"
#include "upload.h"

_Static_assert((int)PL_MASK_NONE == (int)PL_DENSE_NONE &&
                   (int)PL_MASK_BITS == (int)PL_DENSE_BITS &&
                   (int)PL_MASK_BOOL == (int)PL_DENSE_BOOL,
               "public and collation dense modes agree");

#define MASK_ALIGN 256u
#define DEFAULT_BUFFER_BYTES ((uint64_t)256 << 20)

enum { H_FREE, H_FILLING, H_FILLED, H_COPYING };
enum { D_FREE, D_QUEUED, D_HELD };

typedef struct hbuf {
    unsigned char *p;
    pl__upload_event *copied;
    int state;
    uint64_t batch; /* the batch in it, FILLING to COPYING */
    uint64_t next;  /* the next batch allowed in */
    uint32_t n;
} hbuf;

typedef struct dbuf {
    unsigned char *p; /* the slot copy; the masks at mask_off */
    pl__upload_event *ready, *released;
    int state;
    int release_pending; /* `released` was recorded on a consumer stream */
    uint64_t batch, next; /* deliveries */
    uint64_t index, first; /* the plan batch, the part's first sample */
    uint32_t part, n_parts;
    uint32_t n;
    uint64_t bytes;
    uint64_t uploads;
} dbuf;

struct pl_loader {
    pl_loader_opts o;  /* o.db is not kept: db_path is */
    char *db_path;
    const pl__upload_ops *ops;
    pl__upload *up;
    pl__table_mem table_mem; /* the backend's page-locked memory, for the table */
    pl__producer prod;
    int prod_init;
    uint64_t n_batches;    /* plan batches of the run */
    uint64_t n_deliveries; /* batches and parts; UINT64_MAX until sized */
    uint32_t H, D;
    hbuf *hb;
    dbuf *db;
    /* device buffer layout, set once loaded */
    uint32_t n_lists;
    uint64_t mask_off, mask_bytes;
    uint64_t lens[PL__EXPAND_MAX]; /* per list kind, then genes */
    uint64_t out[PL__EXPAND_MAX];  /* mask offsets, same order */
    pl__sink sink;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int closing;
    int rc; /* first failure */
    pl_err err;
    uint64_t uploads, copy_waits;
    uint64_t taken; /* batches returned (consumer's) */
};

static void set_failure(pl_loader *l, int rc, const pl_err *err)
{
    pthread_mutex_lock(&l->lock);
    if (l->rc == 0 && rc < 0) {
        l->rc = rc;
        if (err)
            l->err = *err;
        else
            pl__err(&l->err, rc, "%s", pl_strerror(rc));
    }
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Under `lock`. */
static int stopping(pl_loader *l)
{
    return l->closing || l->rc < 0 || atomic_load(&l->prod.stop);
}

/* ------------------------------------------------- the sink of the workers */

static int pool_acquire(void *ctx, uint64_t u, unsigned char **slot, pl_err *err)
{
    pl_loader *l = ctx;
    hbuf *h = &l->hb[u % l->H];
    pthread_mutex_lock(&l->lock);
    while (!(h->next == u && (h->state == H_FREE || h->state == H_COPYING)) && !stopping(l))
        pthread_cond_wait(&l->cond, &l->lock);
    if (stopping(l)) {
        pthread_mutex_unlock(&l->lock);
        return pl__err(err, -ECANCELED, "delivery %llu: the loader is stopping",
                       (unsigned long long)u);
    }
    int copying = h->state == H_COPYING;
    h->state = H_FILLING;
    h->batch = u;
    l->copy_waits += (uint64_t)copying;
    pthread_mutex_unlock(&l->lock);
    /* The copy of batch u - H out of this buffer may still be in flight. */
    if (copying)
        PL_TRY(l->ops->sync(l->up, h->copied, err));
    *slot = h->p;
    return 0;
}

static void pool_publish(void *ctx, uint64_t u, uint32_t n)
{
    pl_loader *l = ctx;
    hbuf *h = &l->hb[u % l->H];
    pthread_mutex_lock(&l->lock);
    h->state = H_FILLED;
    h->n = n;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void pool_stop(void *ctx, int rc, const pl_err *err)
{
    pl_loader *l = ctx;
    if (rc < 0)
        set_failure(l, rc, err);
    pthread_mutex_lock(&l->lock);
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* ------------------------------------------------------- background thread */

/* Host buffers for a typical batch within max_buffer_bytes (parts.h). */
static int size_buffers(pl_loader *l, pl_err *err)
{
    pl__producer *p = &l->prod;
    uint64_t budget = l->o.max_buffer_bytes ? l->o.max_buffer_bytes : DEFAULT_BUFFER_BYTES;
    uint32_t n;
    uint64_t slot_bytes;
    PL_TRY(pl__parts_fit(&p->needs, l->H, l->H, budget, 0, "max_buffer_bytes", &n,
                         &slot_bytes, err));
    PL_TRY(pl__producer_size(p, slot_bytes, err));
    pthread_mutex_lock(&l->lock);
    l->n_deliveries = pl__producer_deliveries(p);
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

static int alloc_buffers(pl_loader *l, pl_err *err)
{
    const pl__producer *p = &l->prod;
    const uint32_t B = p->o.plan.batch_size;
    l->n_lists = p->g->n_lists;
    for (uint32_t k = 0; k < l->n_lists; k++)
        l->lens[k] = p->cfg.list_len[k];
    l->lens[l->n_lists] = p->cfg.n_genes;
    l->mask_off = p->slot_bytes; /* a multiple of 4096 */
    uint64_t at = 0;
    if (l->o.dense)
        for (uint32_t k = 0; k <= l->n_lists; k++) {
            l->out[k] = at;
            at += (B * pl__expand_row_bytes(l->o.dense, l->lens[k]) + MASK_ALIGN - 1) &
                  ~(uint64_t)(MASK_ALIGN - 1);
        }
    l->mask_bytes = at;
    for (uint32_t i = 0; i < l->H; i++)
        PL_TRY(l->ops->host_alloc(l->up, p->slot_bytes, (void **)&l->hb[i].p, err));
    for (uint32_t i = 0; i < l->D; i++)
        PL_TRY(l->ops->dev_alloc(l->up, l->mask_off + l->mask_bytes, (void **)&l->db[i].p, err));
    return 0;
}

/* Queue batch u's copy from h into d, and its expansion. */
static int issue(pl_loader *l, hbuf *h, dbuf *d, pl_err *err)
{
    const pl__upload_ops *ops = l->ops;
    const struct pl_slot_header *hd = (const struct pl_slot_header *)h->p;
    if (d->release_pending) {
        PL_TRY(ops->wait_event(l->up, d->released, err));
        d->release_pending = 0;
    }
    PL_TRY(ops->copy(l->up, d->p, h->p, hd->used, err));
    PL_TRY(ops->record(l->up, h->copied, err));
    if (l->o.dense) {
        /* The job is read off the host copy; its offsets hold on the device's. */
        pl__expand_job job;
        PL_TRY(pl__expand_job_init(&job, h->p, l->o.dense, l->prod.g->n_types,
                                   l->prod.g->type_names, l->n_lists, l->lens, l->out, err));
        PL_TRY(ops->expand(l->up, &job, d->p, d->p + l->mask_off, err));
    }
    PL_TRY(ops->record(l->up, d->ready, err));
    d->bytes = hd->used;
    d->n = h->n;
    d->index = hd->batch;
    d->part = hd->part;
    d->n_parts = hd->n_parts;
    d->first = hd->first;
    return 0;
}

/* Upload batches in order as they are filled and device buffers free up. */
static void dispatch(pl_loader *l)
{
    for (uint64_t u = 0; u < l->n_deliveries; u++) {
        hbuf *h = &l->hb[u % l->H];
        dbuf *d = &l->db[u % l->D];
        pthread_mutex_lock(&l->lock);
        while (!(h->state == H_FILLED && h->batch == u) && !stopping(l))
            pthread_cond_wait(&l->cond, &l->lock);
        while (!(d->state == D_FREE && d->next == u) && !stopping(l))
            pthread_cond_wait(&l->cond, &l->lock);
        int stop = stopping(l);
        pthread_mutex_unlock(&l->lock);
        if (stop)
            return;
        pl_err err = {0};
        int rc = issue(l, h, d, &err);
        if (rc < 0) {
            set_failure(l, rc, &err);
            return;
        }
        pthread_mutex_lock(&l->lock);
        h->state = H_COPYING;
        h->next = u + l->H;
        d->state = D_QUEUED;
        d->batch = u;
        d->uploads++;
        l->uploads++;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
    }
}

static void *run(void *arg)
{
    pl_loader *l = arg;
    pl_err err = {0};
    int rc = pl__producer_load(&l->prod, &err);
    if (rc == 0)
        rc = size_buffers(l, &err);
    if (rc == 0)
        rc = alloc_buffers(l, &err);
    if (rc == 0) {
        pthread_mutex_lock(&l->lock);
        int closing = l->closing;
        pthread_mutex_unlock(&l->lock);
        if (!closing)
            rc = pl__producer_start(&l->prod, &l->sink, &err);
        if (!closing && rc == 0) {
            dispatch(l);
            pl__producer_stop(&l->prod); /* no-op when every batch was taken */
            pl__producer_join(&l->prod, NULL); /* failures went through pool_stop */
        }
    }
    if (rc < 0)
        set_failure(l, rc, &err);
    return NULL;
}

/* ------------------------------------------------------------- public API */

static int pick_backend(pl_loader *l, const pl_loader_opts *o, int *device, pl_err *err)
{
    *device = o->device;
    if (o->backend == PL_BACKEND_HOST) {
        l->ops = &pl__upload_host;
        return 0;
    }
#if PL_HAVE_CUDA
    char why[256] = "";
    int n = pl__upload_cuda.devices(why, sizeof why);
    if (n > 0) {
        PL_FAIL_IF(o->device >= n, err, PL_EUSAGE, "CUDA device %d: %d device%s visible",
                   o->device, n, n == 1 ? "" : "s");
        l->ops = &pl__upload_cuda;
        return 0;
    }
    PL_FAIL_IF(o->backend == PL_BACKEND_CUDA, err, -ENODEV, "no CUDA device visible: %s", why);
#else
    PL_FAIL_IF(o->backend == PL_BACKEND_CUDA, err, PL_EUSAGE,
               "the CUDA backend: this library was built without the CUDA path");
#endif
    l->ops = &pl__upload_host; /* AUTO without a device */
    *device = 0;
    return 0;
}

static int check_opts(const pl_loader_opts *o, pl_err *err)
{
    PL_FAIL_IF(!o->db, err, PL_EUSAGE, "pl_loader_open: no database path");
    PL_FAIL_IF(o->dense > PL_MASK_BOOL, err, PL_EUSAGE, "pl_loader_open: dense mode %u",
               o->dense);
    PL_FAIL_IF(o->depth == 1 || o->depth > 1024, err, PL_EUSAGE,
               "pl_loader_open: depth %u (2..1024 device buffers)", o->depth);
    PL_FAIL_IF(o->threads > 1024, err, PL_EUSAGE, "pl_loader_open: %u worker threads",
               o->threads);
    PL_FAIL_IF(o->backend < PL_BACKEND_AUTO || o->backend > PL_BACKEND_CUDA, err, PL_EUSAGE,
               "pl_loader_open: backend %d", o->backend);
    PL_FAIL_IF(o->device < 0, err, PL_EUSAGE, "pl_loader_open: device %d", o->device);
    return 0;
}

static int table_alloc(void *ctx, size_t bytes, void **p, pl_err *err)
{
    pl_loader *l = ctx;
    return l->ops->host_alloc(l->up, bytes, p, err);
}

static void table_free(void *ctx, void *p)
{
    pl_loader *l = ctx;
    l->ops->host_free(l->up, p);
}

static int start(pl_loader *l, const pl_loader_opts *o, pl_err *err)
{
    int device;
    PL_TRY(pick_backend(l, o, &device, err));
    PL_TRY(l->ops->open(device, &l->up, err));
    l->db_path = strdup(o->db);
    PL_FAIL_IF(!l->db_path, err, -ENOMEM, "out of memory");
    l->o.db = NULL;
    /* Slots stay sparse on the host: dense masks are the device's work. */
    pl__produce_opts po = {.db = l->db_path, .plan = o->plan, .start_batch = o->start_batch,
                           .dense = PL_DENSE_NONE, .threads = o->threads};
    /* With a device, the sample store is read into cudaHostAlloc'd buffers. */
    if (strcmp(l->ops->name, "host") != 0) {
        l->table_mem = (pl__table_mem){l, table_alloc, table_free};
        po.table_mem = &l->table_mem;
    }
    PL_FAIL_IF(o->plan.budget, err, PL_EUSAGE,
               "budgeted batches are served by pertload serve, not this loader");
    l->prod_init = 1;
    PL_TRY(pl__producer_init(&l->prod, &po, err));
    l->n_batches = l->prod.n_batches;
    l->n_deliveries = l->n_batches ? UINT64_MAX : 0;
    l->D = o->depth ? o->depth : 2;
    l->H = (o->threads ? o->threads : 1) + l->D;
    l->hb = calloc(l->H, sizeof *l->hb);
    l->db = calloc(l->D, sizeof *l->db);
    PL_FAIL_IF(!l->hb || !l->db, err, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < l->H; i++) {
        l->hb[i].next = i;
        PL_TRY(l->ops->event_new(l->up, 0, &l->hb[i].copied, err));
    }
    for (uint32_t i = 0; i < l->D; i++) {
        l->db[i].next = i;
        PL_TRY(l->ops->event_new(l->up, 0, &l->db[i].ready, err));
        PL_TRY(l->ops->event_new(l->up, 0, &l->db[i].released, err));
    }
    l->sink = (pl__sink){l, pool_acquire, pool_publish, pool_stop};
    PL_FAIL_IF(pthread_create(&l->thread, NULL, run, l) != 0, err, -EAGAIN,
               "cannot start the loader thread");
    l->thread_started = 1;
    return 0;
}

PL_API int pl_loader_open(const pl_loader_opts *o, pl_loader **out, pl_err *err)
{
    PL_FAIL_IF(!out || !o, err, PL_EUSAGE, "pl_loader_open: NULL argument");
    *out = NULL;
    PL_TRY(check_opts(o, err));
    pl_loader *l = calloc(1, sizeof *l);
    PL_FAIL_IF(!l, err, -ENOMEM, "out of memory");
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->o = *o;
    int rc = start(l, o, err);
    if (rc < 0) {
        pl_loader_close(l);
        return rc;
    }
    *out = l;
    return 0;
}

PL_API int pl_loader_next(pl_loader *l, pl_device_batch *b, pl_err *err)
{
    PL_FAIL_IF(!l || !b, err, PL_EUSAGE, "pl_loader_next: NULL argument");
    memset(b, 0, sizeof *b);
    uint64_t u = l->taken;
    dbuf *d = &l->db[u % l->D];
    pthread_mutex_lock(&l->lock);
    while (!(d->state == D_QUEUED && d->batch == u)) {
        if (u >= l->n_deliveries) { /* known once loaded */
            pthread_mutex_unlock(&l->lock);
            return 1;
        }
        if (l->rc < 0) {
            int rc = l->rc;
            if (err)
                *err = l->err;
            pthread_mutex_unlock(&l->lock);
            return rc;
        }
        if (d->state == D_HELD) { /* by batch u - D */
            pthread_mutex_unlock(&l->lock);
            return pl__err(err, PL_EUSAGE, "pl_loader_next: %u batches are held, the depth; "
                           "release one first", l->D);
        }
        pthread_cond_wait(&l->cond, &l->lock);
    }
    d->state = D_HELD;
    pthread_mutex_unlock(&l->lock);
    if (!l->ops->consumer_waits) {
        int rc = l->ops->sync(l->up, d->ready, err);
        if (rc < 0) {
            set_failure(l, rc, err);
            return rc;
        }
    }
    l->taken = u + 1;
    b->index = d->index;
    b->n_samples = d->n;
    b->dense = l->o.dense;
    b->part = d->part;
    b->n_parts = d->n_parts;
    b->first = d->first;
    b->slot = d->p;
    b->bytes = d->bytes;
    b->n_lists = l->n_lists;
    if (l->o.dense) {
        const unsigned char *m = d->p + l->mask_off;
        for (uint32_t k = 0; k < l->n_lists; k++) {
            b->mask[k] = m + l->out[k];
            b->mask_len[k] = l->lens[k];
        }
        b->gene_mask = m + l->out[l->n_lists];
        b->gene_len = l->lens[l->n_lists];
    }
    b->stream = l->ops->stream(l->up);
    b->event = l->ops->event_handle(d->ready);
    return 0;
}

/* The device buffer a batch the consumer holds lives in, or NULL. */
static dbuf *buffer_of(pl_loader *l, const pl_device_batch *b)
{
    for (uint32_t i = 0; b->slot && i < l->D; i++)
        if (l->db[i].p == b->slot)
            return &l->db[i];
    return NULL;
}

PL_API void pl_loader_release(pl_loader *l, pl_device_batch *b)
{
    dbuf *d = l && b ? buffer_of(l, b) : NULL;
    if (!d)
        return;
    /* A copy of a batch released before names a buffer that another batch
     * may hold now: a delivery is its plan batch and part. */
    uint64_t index = b->index;
    uint32_t part = b->part;
    int pending = 0;
    /* CUDA: NULL is the legacy default stream, which the loader's
     * non-blocking stream does not wait on by itself (pertload.h). */
    if (b->consumer_stream || l->ops->consumer_waits) {
        pl_err e = {0};
        int rc = l->ops->record_on(l->up, d->released, b->consumer_stream, &e);
        if (rc < 0) {
            memset(b, 0, sizeof *b); /* the buffer stays held: the device may still read it */
            set_failure(l, rc, &e);
            return;
        }
        pending = 1;
    }
    memset(b, 0, sizeof *b);
    pthread_mutex_lock(&l->lock);
    if (d->state == D_HELD && d->index == index && d->part == part) {
        d->state = D_FREE;
        d->next = d->batch + l->D;
        d->release_pending = pending;
        pthread_cond_broadcast(&l->cond);
    }
    pthread_mutex_unlock(&l->lock);
}

PL_API void pl_loader_close(pl_loader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->closing = 1;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
    if (l->thread_started)
        pthread_join(l->thread, NULL);
    if (l->up)
        l->ops->drain(l->up, NULL); /* queued copies and expansions complete */
    for (uint32_t i = 0; l->hb && i < l->H; i++) {
        if (l->hb[i].p)
            l->ops->host_free(l->up, l->hb[i].p);
        if (l->hb[i].copied)
            l->ops->event_free(l->up, l->hb[i].copied);
    }
    for (uint32_t i = 0; l->db && i < l->D; i++) {
        if (l->db[i].p)
            l->ops->dev_free(l->up, l->db[i].p);
        if (l->db[i].ready)
            l->ops->event_free(l->up, l->db[i].ready);
        if (l->db[i].released)
            l->ops->event_free(l->up, l->db[i].released);
    }
    if (l->ops)
        l->ops->close(l->up);
    if (l->prod_init)
        pl__producer_free(&l->prod);
    free(l->hb);
    free(l->db);
    free(l->db_path);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l);
}

PL_API const char *pl_loader_backend(const pl_loader *l)
{
    return l && l->ops ? l->ops->name : "none";
}

PL_API int pl_loader_devices(pl_err *err)
{
#if PL_HAVE_CUDA
    char why[256] = "";
    int n = pl__upload_cuda.devices(why, sizeof why);
    if (n <= 0)
        pl__err(err, 0, "no CUDA device visible: %s", why);
    return n > 0 ? n : 0;
#else
    pl__err(err, 0, "no CUDA device visible: this library was built without the CUDA path");
    return 0;
#endif
}

/* --------------------------------------------------------------- counters */

void pl__loader_stats_get(pl_loader *l, pl__loader_stats *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&l->lock);
    st->uploads = l->uploads;
    st->copy_waits = l->copy_waits;
    st->slot_bytes = l->mask_off;
    st->mask_bytes = l->mask_bytes;
    st->host_buffers = l->H;
    st->device_buffers = l->D;
    pthread_mutex_unlock(&l->lock);
}

uint64_t pl__loader_buffer_uploads(pl_loader *l, const pl_device_batch *b)
{
    dbuf *d = buffer_of(l, b);
    pthread_mutex_lock(&l->lock);
    uint64_t n = d ? d->uploads : 0;
    pthread_mutex_unlock(&l->lock);
    return n;
}

int pl__loader_sync(pl_loader *l, const pl_device_batch *b, pl_err *err)
{
    dbuf *d = buffer_of(l, b);
    PL_FAIL_IF(!d, err, PL_EUSAGE, "no batch");
    return l->ops->sync(l->up, d->ready, err);
}
