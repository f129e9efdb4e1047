/* pl__serve: the producer pipeline (produce.h) with the shared-memory ring
 * as its sink. Delivery b of the run (a batch, or a part of one) goes to ring
 * slot b % n_slots; after the last one the ring is kept until the consumer
 * drained it, or died. */
#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "produce.h"
#include "ring/reclaim.h"
#include "src/core/error.h"
#include "src/core/parse.h"
#include "src/core/progress.h"
#include "src/core/shm.h"
#include "table_shared.h"

static char abort_name[PL_RING_NAME_MAX + 16];
static const pl__table *abort_table; /* a shared table, set once it is loaded */

void pl__serve_abort(void)
{
    if (abort_name[0])
        shm_unlink(abort_name);
    if (abort_table)
        pl__table_shared_leave(abort_table->shm_fd, abort_table->shm_path);
}

/* The ring as the pipeline's sink: delivery b of the epoch is ring batch
 * base + b, in slot (base + b) % n_slots. */
typedef struct ring_sink {
    pl_ring *r;
    uint64_t base; /* the epoch's first ring batch: the deliveries of those before */
} ring_sink;

static int ring_acquire(void *ctx, uint64_t b, unsigned char **slot, pl_err *err)
{
    ring_sink *s = ctx;
    PL_TRY(pl_ring_acquire(s->r, s->base + b, err));
    *slot = pl_ring_slot(s->r, s->base + b);
    return 0;
}

static void ring_publish(void *ctx, uint64_t b, uint32_t n)
{
    ring_sink *s = ctx;
    pl_ring_publish(s->r, s->base + b, n);
}

static double mib(uint64_t bytes) { return (double)bytes / 1048576.0; }

static uint64_t serve_limit(const pl__serve_opts *o)
{
    return o->max_ring_bytes ? o->max_ring_bytes : PL__SERVE_RING_BYTES;
}

/* Slots within the limit (parts.h), and the batches split to fit them. */
static int size_ring(const pl__serve_opts *o, pl__producer *p, uint32_t *n_slots, pl_err *err)
{
    uint64_t slot_bytes;
    PL_TRY(pl__parts_fit(&p->needs, o->slots, 1, serve_limit(o), pl_ring_bytes(o->slots, 0),
                         "--max-ring-bytes", n_slots, &slot_bytes, err));
    return pl__producer_size(p, slot_bytes, err);
}

/* The ready line of an epoch (the consumer waits for it). */
static void announce(const pl__serve_opts *o, const pl__producer *p, uint32_t n_slots)
{
    printf("ring %s: %u slots x %llu bytes, %llu batches, %llu deliveries\n", o->ring,
           n_slots, (unsigned long long)p->slot_bytes, (unsigned long long)p->n_batches,
           (unsigned long long)pl__producer_deliveries(p));
    fflush(stdout);
}

/* Produce one epoch's deliveries as ring batches base.. and keep the ring
 * until the consumer drained them (or died). */
static int epoch(pl__producer *p, pl_ring *r, uint64_t base, uint32_t n_slots, pl_err *err)
{
    uint64_t n = pl__producer_deliveries(p);
    ring_sink rs = {r, base};
    pl__sink sink = {&rs, ring_acquire, ring_publish, NULL};
    int rc = pl__producer_start(p, &sink, err);
    if (rc == 0)
        rc = pl__producer_join(p, err);
    if (rc < 0 && rc != PL_EPEER) {
        pl_ring_finish(r, base + atomic_load(&p->next), err->msg);
        /* Let the consumer read the failure before the segment goes. */
        pl_ring_acquire(r, base + atomic_load(&p->next) + n_slots, NULL);
        return rc;
    }
    PL_TRY(rc);
    pl_ring_finish(r, base + n, NULL);
    /* Keep the segment until the consumer drained it (or died). */
    if (n)
        PL_TRY(pl_ring_acquire(r, base + n - 1 + n_slots, err));
    return 0;
}

/* The next request of --more-epochs on stdin, "epoch E START\n" (E the epoch,
 * START its first plan batch). @return 0, 1 at the end of stdin or once the
 * consumer process is gone, PL_EUSAGE for another line. */
static int next_request(const pl__serve_opts *o, uint64_t consumer_start, uint64_t *e,
                        uint64_t *start, pl_err *err)
{
    char line[96];
    size_t n = 0;
    for (;;) {
        struct pollfd pfd = {.fd = 0, .events = POLLIN};
        int k = poll(&pfd, 1, 1000);
        if (k < 0 && errno == EINTR)
            continue;
        PL_FAIL_IF(k < 0, err, -errno, "stdin: %s", strerror(errno));
        if (k == 0) { /* its death closes stdin, unless a forked child holds it too */
            if (o->consumer_pid && !pl__shm_pid_alive(o->consumer_pid, consumer_start))
                return 1; /* gone, a zombie, or its pid now another process's */
            continue;
        }
        ssize_t got = read(0, line + n, 1);
        if (got < 0 && errno == EINTR)
            continue;
        PL_FAIL_IF(got < 0, err, -errno, "stdin: %s", strerror(errno));
        if (got == 0 && n == 0)
            return 1;
        if (got == 0 || line[n] == '\n' || n + 1 == sizeof line)
            break;
        n++;
    }
    line[n] = '\0';
    /* "epoch E START": two whole decimal fields after the word */
    const char *sp = strncmp(line, "epoch ", 6) ? NULL : strchr(line + 6, ' ');
    pl__field fe = {0}, fs = {0};
    if (sp) {
        fe = (pl__field){line + 6, (uint32_t)(sp - line - 6), 7};
        fs = (pl__field){sp + 1, (uint32_t)strlen(sp + 1), (uint32_t)(sp - line) + 2};
    }
    PL_FAIL_IF(!sp || pl__parse_u64(&fe, e) < 0 || pl__parse_u64(&fs, start) < 0, err,
               PL_EUSAGE, "stdin: request '%.40s' is not 'epoch E START'", line);
    return 0;
}

static int run(const pl__serve_opts *o, pl__producer *p, pl_ring **ring, pl_err *err)
{
    double t0 = pl__now();
    /* the consumer as it is now: a later process given its pid is not it */
    uint64_t consumer_start = pl__shm_pid_start(o->consumer_pid);
    pl__produce_opts po = {.db = o->db, .plan = o->plan, .rows = o->rows, .split = o->split,
                           .start_batch = o->start_batch,
                           .dense = o->dense, .threads = o->threads, .io_mode = o->io_mode,
                           .budget_payload = o->budget_payload,
                           .khop_types = o->khop_types, .khop = o->khop,
                           .khop_max_genes = o->khop_max_genes,
                           .shared_table = o->shared_table,
                           .no_ontology = o->no_ontology};
    PL_TRY(pl__producer_init(p, &po, err));
    PL_TRY(pl__producer_load(p, err));
    if (p->table.shm_base)
        abort_table = &p->table;
    uint32_t n_slots;
    pl__ring_reclaim(0, NULL, NULL); /* rings of killed runs, before /dev/shm is measured */
    PL_TRY(size_ring(o, p, &n_slots, err));
    uint64_t n_deliveries = pl__producer_deliveries(p);
    /* From the segment's creation on, a termination signal must find its name
     * in abort_name: hold those signals until both are done (no other thread
     * runs yet, so a blocked signal waits for this one). */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    sigaddset(&term, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &term, &old);
    int rc = pl_ring_create_for(o->ring, n_slots, p->slot_bytes, o->consumer_pid,
                                pl_db_info_get(p->db), ring, err);
    if (rc == 0)
        snprintf(abort_name, sizeof abort_name, "/pertload-%s", o->ring);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    PL_TRY(rc);
    pl_ring *r = *ring;
    pl_ring_set_total(r, n_deliveries);
    if (o->verbose) {
        announce(o, p, n_slots);
        const pl__needs *nd = &p->needs;
        const pl__table *t = &p->table;
        fprintf(stderr, "pertload serve: %llu samples %s in %.2f s (%s%s), payload %s, "
                "%u worker threads\n", (unsigned long long)t->n,
                !t->shm_base     ? "loaded"
                : t->shm_created ? "loaded into a shared table"
                                 : "attached from a shared table",
                pl__now() - t0, t->shm_base ? t->shm_path : t->backend,
                !t->shm_base && t->locked ? ", page-locked buffers" : "",
                p->payload_fd < 0 ? "none" : p->payload_direct ? "O_DIRECT" : "buffered",
                o->threads);
        fprintf(stderr, "pertload serve: %.1f MiB ring (limit %.1f MiB): %u slots of %.2f MiB; "
                "a typical batch needs %.2f MiB, the largest %.2f MiB, the largest sample "
                "(row %llu) %.2f MiB; %llu of %llu batches split, %llu deliveries\n",
                mib(pl_ring_bytes(n_slots, p->slot_bytes)),
                mib(serve_limit(o)), n_slots,
                mib(p->slot_bytes), mib(nd->typical), mib(nd->largest),
                (unsigned long long)nd->one_row, mib(nd->one),
                (unsigned long long)p->parts.n_split, (unsigned long long)p->n_batches,
                (unsigned long long)n_deliveries);
    }
    for (uint64_t base = 0;;) {
        PL_TRY(epoch(p, r, base, n_slots, err));
        base += pl__producer_deliveries(p);
        uint64_t e = 0, start = 0;
        if (!o->more_epochs || (rc = next_request(o, consumer_start, &e, &start, err)) == 1)
            return 0;
        PL_TRY(rc);
        PL_TRY(pl__producer_replan(p, e, start, err));
        PL_TRY(pl__producer_size(p, p->slot_bytes, err));
        PL_TRY(pl_ring_next_epoch(r, base + pl__producer_deliveries(p), err));
        if (o->verbose)
            announce(o, p, n_slots);
    }
}

int pl__serve(const pl__serve_opts *o, pl_err *err)
{
    pl__producer *p = calloc(1, sizeof *p);
    if (!p)
        return pl__err(err, -ENOMEM, "out of memory");
    pl_ring *ring = NULL;
    int rc = run(o, p, &ring, err);
    pl_ring_destroy(ring);
    abort_name[0] = '\0';
    abort_table = NULL;
    pl__producer_free(p);
    free(p);
    return rc;
}
