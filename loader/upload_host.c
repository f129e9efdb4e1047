/* The host upload backend: the "device" is host memory and a copy thread
 * stands in for the stream. Work is queued in order into a fixed ring of jobs
 * and the copy thread runs the jobs one by one; the jobs run so far are
 * counted, and an event is the count its record saw queued: it is complete
 * once that many jobs ran. The expansion runs the CUDA kernel's algorithm on
 * the CPU (expand.h). So the loader's buffer logic runs here exactly as with
 * CUDA, asynchronous completions included, and tests on machines without a
 * GPU cover it. */
#include "upload.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/core/error.h"

_Atomic unsigned pl__upload_host_copy_delay_us;

enum { JOB_COPY, JOB_EXPAND };

typedef struct job {
    int kind;
    void *dst;
    const void *src;
    size_t bytes;
    pl__expand_job expand; /* JOB_EXPAND: dst = masks, src = slot */
} job;

#define QUEUE 64u /* jobs queued at most; queueing more waits, as a full stream does */

struct pl__upload {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work, done_cond;
    uint64_t queued, done; /* jobs queued, jobs run */
    int quit;
    job q[QUEUE];          /* job i at q[i % QUEUE] */
};

struct pl__upload_event {
    uint64_t target; /* complete once `done` reaches it */
};

static void run_job(job *j)
{
    if (j->kind == JOB_COPY) {
        unsigned us = atomic_load(&pl__upload_host_copy_delay_us);
        if (us) {
            struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
        memcpy(j->dst, j->src, j->bytes);
    } else {
        pl__expand_run(&j->expand, j->src, j->dst);
    }
}

static void *copy_thread(void *arg)
{
    pl__upload *u = arg;
    pthread_mutex_lock(&u->lock);
    for (;;) {
        while (u->done == u->queued && !u->quit)
            pthread_cond_wait(&u->work, &u->lock);
        if (u->done == u->queued)
            break;
        job *j = &u->q[u->done % QUEUE];
        pthread_mutex_unlock(&u->lock);
        run_job(j); /* the slot stays ours until `done` moves past it */
        pthread_mutex_lock(&u->lock);
        u->done++;
        pthread_cond_broadcast(&u->done_cond);
    }
    pthread_mutex_unlock(&u->lock);
    return NULL;
}

static int host_devices(char *why, size_t cap)
{
    (void)why;
    (void)cap;
    return 1;
}

static void host_close(pl__upload *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->lock);
    u->quit = 1;
    pthread_cond_signal(&u->work);
    pthread_mutex_unlock(&u->lock);
    pthread_join(u->thread, NULL);
    pthread_mutex_destroy(&u->lock);
    pthread_cond_destroy(&u->work);
    pthread_cond_destroy(&u->done_cond);
    free(u);
}

static int host_open(int device, pl__upload **out, pl_err *err)
{
    *out = NULL;
    PL_FAIL_IF(device != 0, err, PL_EUSAGE, "the host backend has one device (0), not %d",
               device);
    pl__upload *u = calloc(1, sizeof *u);
    PL_FAIL_IF(!u, err, -ENOMEM, "out of memory");
    pthread_mutex_init(&u->lock, NULL);
    pthread_cond_init(&u->work, NULL);
    pthread_cond_init(&u->done_cond, NULL);
    if (pthread_create(&u->thread, NULL, copy_thread, u) != 0) {
        pthread_mutex_destroy(&u->lock);
        pthread_cond_destroy(&u->work);
        pthread_cond_destroy(&u->done_cond);
        free(u);
        return pl__err(err, -EAGAIN, "cannot start the copy thread");
    }
    *out = u;
    return 0;
}

static int host_alloc(pl__upload *u, size_t bytes, void **p, pl_err *err)
{
    (void)u;
    *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    PL_FAIL_IF(!*p, err, -ENOMEM, "out of memory for a %zu-byte buffer", bytes);
    return 0;
}

static void host_free(pl__upload *u, void *p)
{
    (void)u;
    free(p);
}

static int event_new(pl__upload *u, int timing, pl__upload_event **ev, pl_err *err)
{
    (void)u;
    (void)timing;
    *ev = calloc(1, sizeof **ev);
    PL_FAIL_IF(!*ev, err, -ENOMEM, "out of memory");
    return 0;
}

static void event_free(pl__upload *u, pl__upload_event *ev)
{
    (void)u;
    free(ev);
}

/* Queue a job: returns its slot in the ring with the lock held (waiting
 * while the ring is full); queue_end() publishes it to the copy thread. */
static job *queue_begin(pl__upload *u)
{
    pthread_mutex_lock(&u->lock);
    while (u->queued - u->done >= QUEUE)
        pthread_cond_wait(&u->done_cond, &u->lock);
    return &u->q[u->queued % QUEUE];
}

static void queue_end(pl__upload *u)
{
    u->queued++;
    pthread_cond_signal(&u->work);
    pthread_mutex_unlock(&u->lock);
}

static int copy(pl__upload *u, void *dev, const void *host, size_t bytes, pl_err *err)
{
    (void)err;
    job *j = queue_begin(u);
    j->kind = JOB_COPY;
    j->dst = dev;
    j->src = host;
    j->bytes = bytes;
    queue_end(u);
    return 0;
}

static int expand(pl__upload *u, const pl__expand_job *ej, const void *dev_slot,
                  void *dev_masks, pl_err *err)
{
    (void)err;
    job *j = queue_begin(u);
    j->kind = JOB_EXPAND;
    j->dst = dev_masks;
    j->src = dev_slot;
    j->bytes = 0;
    j->expand = *ej;
    queue_end(u);
    return 0;
}

static int record(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    (void)err;
    pthread_mutex_lock(&u->lock);
    ev->target = u->queued;
    pthread_mutex_unlock(&u->lock);
    return 0;
}

/* The host consumer has no stream: its work on a batch is complete when it
 * releases it, so the event is complete at once. */
static int record_on(pl__upload *u, pl__upload_event *ev, void *stream, pl_err *err)
{
    PL_FAIL_IF(stream != NULL, err, PL_EUSAGE, "the host backend has no streams");
    pthread_mutex_lock(&u->lock);
    ev->target = 0;
    pthread_mutex_unlock(&u->lock);
    return 0;
}

/* Queued work runs in order and an event of this backend is recorded on its
 * own queue or complete: nothing to wait for. */
static int wait_event(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    (void)u;
    (void)ev;
    (void)err;
    return 0;
}

static void wait_done(pl__upload *u, uint64_t target)
{
    pthread_mutex_lock(&u->lock);
    while (u->done < target)
        pthread_cond_wait(&u->done_cond, &u->lock);
    pthread_mutex_unlock(&u->lock);
}

static int sync_event(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    (void)err;
    pthread_mutex_lock(&u->lock);
    uint64_t target = ev->target;
    pthread_mutex_unlock(&u->lock);
    wait_done(u, target);
    return 0;
}

static int drain(pl__upload *u, pl_err *err)
{
    (void)err;
    pthread_mutex_lock(&u->lock);
    uint64_t target = u->queued;
    pthread_mutex_unlock(&u->lock);
    wait_done(u, target);
    return 0;
}

static int download(pl__upload *u, void *host, const void *dev, size_t bytes, pl_err *err)
{
    PL_TRY(drain(u, err));
    memcpy(host, dev, bytes);
    return 0;
}

static double elapsed(pl__upload *u, pl__upload_event *a, pl__upload_event *b)
{
    (void)u;
    (void)a;
    (void)b;
    return 0;
}

static void *stream(pl__upload *u)
{
    (void)u;
    return NULL;
}

static void *event_handle(pl__upload_event *ev)
{
    (void)ev;
    return NULL;
}

const pl__upload_ops pl__upload_host = {
    .name = "host",
    .consumer_waits = 0,
    .devices = host_devices,
    .open = host_open,
    .close = host_close,
    .host_alloc = host_alloc,
    .host_free = host_free,
    .dev_alloc = host_alloc,
    .dev_free = host_free,
    .event_new = event_new,
    .event_free = event_free,
    .copy = copy,
    .expand = expand,
    .record = record,
    .record_on = record_on,
    .wait_event = wait_event,
    .sync = sync_event,
    .drain = drain,
    .download = download,
    .elapsed = elapsed,
    .stream = stream,
    .event_handle = event_handle,
};
