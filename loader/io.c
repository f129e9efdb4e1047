#include "io.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"

/* One read: kept until it completed in full (short reads are resubmitted). */
typedef struct req {
    int fd, buf_index;
    char *buf;
    size_t len, done;
    uint64_t off, tag;
    int64_t res;
} req;

struct pl__io {
    int uring;
    struct io_uring ring;
    unsigned depth, pending;
    req *reqs;        /* [depth] */
    unsigned *free;   /* stack of free request indices */
    unsigned n_free;
    /* pread: finished requests wait here for pl__io_wait */
    unsigned *done;
    unsigned n_done;
};

int pl__io_open(pl__io **out, int mode, unsigned depth, pl_err *err)
{
    *out = NULL;
    if (mode == PL_IO_AUTO) {
        const char *env = getenv("PERTLOAD_IO");
        if (env && !strcmp(env, "pread"))
            mode = PL_IO_PREAD;
        else if (env && !strcmp(env, "uring"))
            mode = PL_IO_URING;
    }
    pl__io *io = calloc(1, sizeof *io);
    if (io) {
        io->reqs = calloc(depth, sizeof *io->reqs);
        io->free = malloc(depth * sizeof *io->free);
        io->done = malloc(depth * sizeof *io->done);
    }
    if (!io || !io->reqs || !io->free || !io->done) {
        pl__io_close(io);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    io->depth = depth;
    for (unsigned i = 0; i < depth; i++)
        io->free[io->n_free++] = depth - 1 - i;
    if (mode != PL_IO_PREAD) {
        int rc = io_uring_queue_init(depth, &io->ring, 0);
        if (rc == 0) {
            io->uring = 1;
        } else if (mode == PL_IO_URING) {
            pl__io_close(io);
            return pl__err(err, rc, "io_uring unavailable: %s", strerror(-rc));
        }
    }
    *out = io;
    return 0;
}

void pl__io_close(pl__io *io)
{
    if (!io)
        return;
    if (io->uring)
        io_uring_queue_exit(&io->ring);
    free(io->reqs);
    free(io->free);
    free(io->done);
    free(io);
}

const char *pl__io_backend(const pl__io *io) { return io->uring ? "io_uring" : "pread"; }

unsigned pl__io_pending(const pl__io *io) { return io->pending; }

int pl__io_register(pl__io *io, void *const *bufs, const size_t *lens, unsigned n,
                    pl_err *err)
{
    if (!io->uring)
        return 0;
    struct iovec *iov = calloc(n, sizeof *iov);
    if (!iov)
        return pl__err(err, -ENOMEM, "out of memory");
    for (unsigned i = 0; i < n; i++)
        iov[i] = (struct iovec){bufs[i], lens[i]};
    int rc = io_uring_register_buffers(&io->ring, iov, n);
    free(iov);
    PL_FAIL_IF(rc < 0, err, rc, "io_uring: registering %u buffers: %s", n, strerror(-rc));
    return 0;
}

static int queue_sqe(pl__io *io, unsigned i, pl_err *err)
{
    req *r = &io->reqs[i];
    struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
    if (!sqe) { /* queue full of unsubmitted entries: flush it */
        int rc = io_uring_submit(&io->ring);
        PL_FAIL_IF(rc < 0, err, rc, "io_uring_submit: %s", strerror(-rc));
        sqe = io_uring_get_sqe(&io->ring);
        PL_FAIL_IF(!sqe, err, -EBUSY, "io_uring: no submission entry free");
    }
    if (r->buf_index >= 0)
        io_uring_prep_read_fixed(sqe, r->fd, r->buf + r->done, (unsigned)(r->len - r->done),
                                 r->off + r->done, r->buf_index);
    else
        io_uring_prep_read(sqe, r->fd, r->buf + r->done, (unsigned)(r->len - r->done),
                           r->off + r->done);
    io_uring_sqe_set_data64(sqe, i);
    return 0;
}

int pl__io_read(pl__io *io, int fd, void *buf, size_t len, uint64_t off, int buf_index,
                uint64_t tag, pl_err *err)
{
    PL_FAIL_IF(io->n_free == 0, err, -EBUSY, "more than %u reads in flight", io->depth);
    unsigned i = io->free[--io->n_free];
    io->reqs[i] = (req){fd, buf_index, buf, len, 0, off, tag, 0};
    io->pending++;
    if (io->uring)
        return queue_sqe(io, i, err);
    /* pread: perform it now, report it at the next wait. */
    req *r = &io->reqs[i];
    while (r->done < r->len) {
        ssize_t n = pread(fd, r->buf + r->done, r->len - r->done, (off_t)(r->off + r->done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r->res = n < 0 ? -errno : PL_ECORRUPT; /* the file ended first */
            break;
        }
        r->done += (size_t)n;
    }
    if (r->res == 0)
        r->res = (int64_t)r->len;
    io->done[io->n_done++] = i;
    return 0;
}

int pl__io_submit(pl__io *io, pl_err *err)
{
    if (!io->uring)
        return 0;
    int rc = io_uring_submit(&io->ring);
    PL_FAIL_IF(rc < 0, err, rc, "io_uring_submit: %s", strerror(-rc));
    return 0;
}

int pl__io_wait(pl__io *io, uint64_t *tag, int64_t *res, pl_err *err)
{
    PL_FAIL_IF(io->pending == 0, err, -EINVAL, "no read in flight");
    unsigned i;
    if (!io->uring) {
        i = io->done[--io->n_done];
    } else {
        for (;;) {
            struct io_uring_cqe *cqe;
            int rc = io_uring_wait_cqe(&io->ring, &cqe);
            if (rc == -EINTR)
                continue;
            PL_FAIL_IF(rc < 0, err, rc, "io_uring_wait_cqe: %s", strerror(-rc));
            i = (unsigned)io_uring_cqe_get_data64(cqe);
            int r = cqe->res;
            io_uring_cqe_seen(&io->ring, cqe);
            req *q = &io->reqs[i];
            if (r > 0 && q->done + (size_t)r < q->len) { /* short read: resume */
                q->done += (size_t)r;
                PL_TRY(queue_sqe(io, i, err));
                PL_TRY(pl__io_submit(io, err));
                continue;
            }
            /* r == 0 with bytes missing: the file ended first */
            q->res = r < 0 ? r : q->done + (size_t)r < q->len ? PL_ECORRUPT : (int64_t)q->len;
            break;
        }
    }
    *tag = io->reqs[i].tag;
    *res = io->reqs[i].res;
    io->free[io->n_free++] = i;
    io->pending--;
    return 0;
}
