/* The shared-memory ring's segment layout (POSIX shm /pertload-NAME).
 *
 *   offset 0             header (struct pl__ring_hdr), header_bytes long: 4096
 *                        rounded up to a multiple of 4096 when the per-slot
 *                        ready words need more room
 *   header_bytes + i * slot_stride
 *                        slot i (i < n_slots), slot_stride = slot_bytes rounded
 *                        up to 4096, so every slot is 4096-aligned
 *   total_bytes          header_bytes + n_slots * slot_stride = the file size
 *
 * Batch b lives in slot b % n_slots. Who writes what:
 *   - the creator (producer) writes the immutable part, then sets `init` to 1
 *     with a release store; readers load `init` with acquire before trusting
 *     anything else, and validate every size against the file size;
 *   - the producer publishes batch b by writing its slot, then storing
 *     ready[b % n_slots] = (uint32_t)(b + 1) with release and waking that word;
 *   - the consumer takes batches in order; releasing batch b releases every
 *     batch up to b: batches_consumed becomes b + 1 (release store), then
 *     consumed_futex its low 32 bits, the word producers sleep on while their
 *     batch is >= batches_consumed + n_slots (they load the word first);
 *   - `state` goes RUNNING -> DONE or FAILED once an epoch (pl_ring_finish);
 *     `errmsg` is written before the release store of FAILED;
 *   - more epochs in one ring (pl_ring_next_epoch): after DONE and after the
 *     consumer released every batch, the producer stores the new end in
 *     n_batches, then RUNNING (release). Batch numbers go on from the last
 *     epoch's end (its first batch is the old n_batches), so ready[],
 *     batches_consumed and the counters stay monotonic and nothing is reset.
 *     The consumer learns of the epoch out of band, after the store
 *     (`serve --more-epochs`: a request line on serve's stdin, a ready line
 *     on its stdout), so it never reads the old end as the new one.
 * All cross-process words are lock-free C11 atomics; futex words are 32-bit
 * and waited on with the shared (non-private) futex operations.
 * The shared bytes are not trusted: a process that maps a segment keeps its own
 * copies of n_slots and the sizes, checked at attach, and never re-reads them.
 */
#ifndef PL_RING_LAYOUT_H
#define PL_RING_LAYOUT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pertload.h"
#include "src/core/shm.h"

#define PL__RING_MAGIC "PLRING01"     /* 8 bytes, no NUL stored */
#define PL__RING_VERSION 2u
#define PL__RING_PAGE 4096u
#define PL__RING_MSG_MAX 1024         /* producer failure message, NUL included */
#define PL__RING_MAX_SLOTS 65536u
#define PL__RING_PREFIX "pertload-"   /* file name prefix under /dev/shm */

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LONG_LOCK_FREE == 2 &&
                   ATOMIC_LLONG_LOCK_FREE == 2,
               "cross-process atomics must be lock-free");

typedef struct pl__ring_hdr {
    /* Immutable once `init` is 1. */
    char magic[8];                  /* PL__RING_MAGIC */
    uint32_t version;               /* PL__RING_VERSION */
    uint32_t n_slots;               /* 1..PL__RING_MAX_SLOTS */
    uint64_t slot_bytes;            /* usable bytes per slot, as requested */
    uint64_t slot_stride;           /* slot_bytes rounded up to PL__RING_PAGE */
    uint64_t header_bytes;          /* offset of slot 0 */
    uint64_t total_bytes;           /* size of the segment */
    uint64_t fixed_bytes;           /* offsetof(pl__ring_hdr, ready): layout check */
    uint64_t created_ns;            /* CLOCK_REALTIME at creation */
    uint64_t producer_start;        /* producer's start time (/proc stat field 22) */
    int32_t producer_pid;
    uint32_t reserved0;
    char name[PL_RING_NAME_MAX + 1];
    pl_ring_source source;          /* the database served (pl_ring_create_for) */

    /* Lifecycle words. */
    alignas(64) _Atomic uint32_t init;        /* 1 once the header is complete */
    _Atomic uint32_t state;                   /* PL_RING_RUNNING, _DONE, _FAILED */
    _Atomic int32_t consumer_pid;             /* 0 until known */
    _Atomic uint32_t consumer_gone;           /* 1 after pl_ring_detach() */
    _Atomic uint64_t consumer_start;          /* consumer's start time, 0 unknown */
    _Atomic uint64_t n_batches;               /* batches of the epoch, 0 unknown */
    _Atomic uint32_t consumer_wait_slot;      /* slot the consumer last slept on */

    /* Written by the producer (one cache line, apart from the consumer's). */
    alignas(64) _Atomic uint64_t batches_produced;
    _Atomic uint64_t samples_produced;
    _Atomic uint64_t producer_wait_ns;

    /* Written by the consumer. */
    alignas(64) _Atomic uint64_t batches_consumed;
    _Atomic uint64_t samples_consumed;
    _Atomic uint64_t consumer_wait_ns;
    _Atomic uint32_t consumed_futex;          /* (uint32_t)batches_consumed */

    char errmsg[PL__RING_MSG_MAX];            /* set with state FAILED */

    /* [n_slots] (uint32_t)(b + 1) once batch b of that slot is published. */
    alignas(64) _Atomic uint32_t ready[];
} pl__ring_hdr;

_Static_assert(offsetof(pl__ring_hdr, ready) <= PL__RING_PAGE, "header too big");

/** Bytes of the header for `n_slots` slots: the fixed part plus the ready
 *  words, rounded up to a multiple of PL__RING_PAGE. */
static inline uint64_t pl__ring_header_bytes(uint32_t n_slots)
{
    uint64_t b = offsetof(pl__ring_hdr, ready) + (uint64_t)n_slots * sizeof(uint32_t);
    return (b + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE;
}

#endif
