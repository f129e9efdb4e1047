/* The pieces of `pertload bench payload` that its two modes share: the
 * one-plan comparison (bench_payload.c) and the whole-epochs comparison
 * against the disk's own rates (bench_payload_epochs.c). */
#ifndef PL_BENCH_PAYLOAD_H
#define PL_BENCH_PAYLOAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "loader/produce.h"

/* Slots for the producer: delivery b is written into slot b % n once
 * delivery b - n of that slot was published (workers finish out of order;
 * a slot is never written by two of them at once). */
typedef struct pl__bench_pool {
    unsigned char *mem;
    uint64_t slot_bytes;
    uint32_t n;
    _Atomic uint64_t samples;
    _Atomic uint64_t *published; /* [n] deliveries published per slot */
    _Atomic int stopped;
} pl__bench_pool;

/* The payload's place in its file, and how it is read by the producer. */
typedef struct pl__bench_payload_file {
    uint64_t offset, rows, row_bytes;
    int direct;
} pl__bench_payload_file;

/** Drop `path` from the page cache (POSIX_FADV_DONTNEED after fdatasync). */
void pl__bench_drop_cache(const char *path);

/** Bytes/s of reading [off, off + len) of `path` front to back in 4 MiB
 *  reads, O_DIRECT where the file system and `off` allow (*direct says). */
int pl__bench_sequential(const char *path, uint64_t off, uint64_t len, double *rate, int *direct,
                         pl_err *err);

/** One epoch of the producer with options `po` from a cold cache (`file`
 *  dropped) into the slots of `pl` (grown to the plan's largest batch):
 *  bytes/s of payload; *pf where the payload lies and how it was read. */
int pl__bench_producer_round(const pl__produce_opts *po, const char *file, pl__bench_pool *pl,
                             double *rate, pl__bench_payload_file *pf, pl_err *err);

/** What both modes read: `file` (`cap` bytes) the payload file of database
 *  `db`, and the producer's options `po` for it: the plan of seed 1 on one
 *  rank in batches of `B` rows, rows in order (the caller sets order,
 *  shuffle and blocks), `T` threads. */
void pl__bench_payload_setup(const char *db, uint64_t B, uint64_t T, char *file, size_t cap,
                             pl__produce_opts *po);

/** The median of v[0..n), n <= 64. */
double pl__bench_median(const double *v, unsigned n);

/** `pertload bench payload DB --epochs ...` (bench_payload_epochs.c): the
 *  disk's sequential and random-row rates beside pertload's in-order, block
 *  and shuffled epochs, on the same file, in one run. argv[0] is "payload". */
int pl__bench_payload_epochs(int argc, char **argv);

#endif
