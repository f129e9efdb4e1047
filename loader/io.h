/* Read backends behind one small interface: io_uring, or plain pread where
 * io_uring is unavailable (seccomp, old kernel) or not wanted. The choice is
 * made at run time and reported.
 *
 * Requests carry a 64-bit tag; completions come back in any order. A read is
 * complete only when all its bytes arrived: short reads are resumed inside
 * the backend, so a completion's result is the full length or a negative
 * code: PL_ECORRUPT when the file ended before the read's last byte (a
 * truncated file), else -errno. */
#ifndef PL_LOADER_IO_H
#define PL_LOADER_IO_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

enum { PL_IO_AUTO = 0, PL_IO_URING = 1, PL_IO_PREAD = 2 };

typedef struct pl__io pl__io;

/** Open a backend with room for `depth` reads in flight.
 *  @param mode PL_IO_AUTO (io_uring, else pread; also from the environment
 *  variable PERTLOAD_IO=uring|pread), PL_IO_URING (fail without it) or
 *  PL_IO_PREAD. */
int pl__io_open(pl__io **out, int mode, unsigned depth, pl_err *err);

/** Release; NULL accepted. Must have no read in flight. */
void pl__io_close(pl__io *io);

/** "io_uring" or "pread". */
const char *pl__io_backend(const pl__io *io);

/** Register `n` buffers (page-locked by the kernel for io_uring); reads into
 *  them may pass their index as `buf_index` for fixed-buffer reads. */
int pl__io_register(pl__io *io, void *const *bufs, const size_t *lens, unsigned n,
                    pl_err *err);

/** Queue a read of `len` bytes at `off` of `fd` into `buf`.
 *  @param buf_index a registered buffer holding `buf`, or -1. */
int pl__io_read(pl__io *io, int fd, void *buf, size_t len, uint64_t off, int buf_index,
                uint64_t tag, pl_err *err);

/** Start every queued read. */
int pl__io_submit(pl__io *io, pl_err *err);

/** Wait for one completion. @param res its length, PL_ECORRUPT (end of
 *  file first) or a negative errno.
 *  @return 0, or a negative code when nothing is in flight or waiting failed. */
int pl__io_wait(pl__io *io, uint64_t *tag, int64_t *res, pl_err *err);

/** Reads queued or in flight. */
unsigned pl__io_pending(const pl__io *io);

#endif
