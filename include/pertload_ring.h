/**
 * @file pertload_ring.h
 * @brief pertload's shared-memory ring between `pertload serve` and a
 * consumer process. Part of pertload.h, which includes it (include
 * pertload.h, not this file); the conventions of pertload.h hold.
 */
#ifndef PERTLOAD_RING_H
#define PERTLOAD_RING_H

#ifndef PERTLOAD_H
#error "include pertload.h, which includes pertload_ring.h"
#endif

/* -------------------------------------------------------------------- ring */

/** A shared-memory ring of batch slots between one producer process (the
 *  `serve` command, any number of worker threads) and one consumer process.
 *  The segment is /dev/shm/pertload-NAME, mode 0600. Batch i lives in slot
 *  i % n_slots; the producer fills and publishes batches (in any order), the
 *  consumer takes them in order and releases each when done with it. Waiting
 *  uses futexes with short timeouts to watch the peer: a dead producer is
 *  reported to the consumer within a second, a dead consumer makes the
 *  producer's calls fail with PL_EPEER (the producer then removes the
 *  segment). */
typedef struct pl_ring pl_ring;

/** Longest ring name; names hold only [A-Za-z0-9_.-]. */
#define PL_RING_NAME_MAX 64

/** Counters shared in the ring header (monotonic; times in nanoseconds). */
typedef struct pl_ring_stats {
    uint64_t batches_produced, samples_produced;
    uint64_t batches_consumed, samples_consumed;
    uint64_t producer_wait_ns;  /**< time any producer thread waited for a slot */
    uint64_t consumer_wait_ns;  /**< consumer waiting for data */
    uint64_t n_batches;         /**< batches in this epoch (0 = not known yet); in a
                                     ring of several epochs (pl_ring_next_epoch) the
                                     batches up to this epoch's end, as the other
                                     counters count every epoch */
    uint64_t created_ns;        /**< CLOCK_REALTIME at creation */
    uint64_t slot_bytes, total_bytes;
    uint32_t n_slots;
    int32_t producer_pid, consumer_pid;
    uint32_t state;             /**< PL_RING_RUNNING, PL_RING_DONE or PL_RING_FAILED */
    char name[PL_RING_NAME_MAX + 1];
} pl_ring_stats;

enum { PL_RING_RUNNING = 0, PL_RING_DONE = 1, PL_RING_FAILED = 2 };

/** Producer: create the ring (removing a stale segment whose producer is dead;
 *  PL_EBUSY when its producer lives). Refuses sizes over
 *  min(PL_RING_MAX_BYTES, half the free space of /dev/shm).
 *  The segment takes 4096 bytes of header (more for thousands of slots) plus
 *  n_slots times slot_bytes rounded up to 4096; pl_ring_stats_get() gives the
 *  size in total_bytes. Its pages are reserved at creation.
 *  The segment is created with mode 0600; an existing one under the name that
 *  is not this user's regular file closed to group and others is neither
 *  used nor removed.
 *  @param name 1..PL_RING_NAME_MAX characters of [A-Za-z0-9_.-], without "..".
 *  @param n_slots 1..65536.
 *  @param consumer_pid the process that will drain it (watched for death), or
 *  0 when not known yet (pl_ring_attach() registers the consumer).
 *  @return 0, PL_EUSAGE (bad name or sizes, or over PL_RING_MAX_BYTES),
 *  -ENOSPC (over half the free space), PL_EBUSY, -EPERM (the name is held by
 *  another user's segment, a non-regular file or one open to others),
 *  -errno. */
PL_API int pl_ring_create(const char *name, uint32_t n_slots, uint64_t slot_bytes,
                          int32_t consumer_pid, pl_ring **out, pl_err *err);

/** The database a ring's producer serves, as recorded in the ring's header:
 *  its pl_db_info fingerprints. */
typedef struct pl_ring_source {
    uint32_t known;           /**< 1 when the producer recorded its database */
    uint32_t n_types;         /**< edge fingerprints recorded, 0..PL_MAX_TYPES */
    uint64_t gene_fingerprint;                /**< pl_db_info.gene_fingerprint */
    uint64_t edge_fingerprint[PL_MAX_TYPES];  /**< [n_types] pl_db_info.edge_fingerprint */
    uint64_t db_fingerprint;                  /**< pl_db_info.db_fingerprint */
} pl_ring_source;

/** Producer: pl_ring_create() that also records, in the header before the
 *  ring is ready, the fingerprints of the database `db` it serves (NULL
 *  records none), for consumers to compare with their own
 *  (pl_ring_source_get()). `pertload serve` records the database it opened.
 *  @return as pl_ring_create(). */
PL_API int pl_ring_create_for(const char *name, uint32_t n_slots, uint64_t slot_bytes,
                              int32_t consumer_pid, const pl_db_info *db, pl_ring **out,
                              pl_err *err);

/** Largest ring pl_ring_create() accepts. */
#define PL_RING_MAX_BYTES ((uint64_t)16 << 30)

/** Size of the segment pl_ring_create() makes for `n_slots` slots of
 *  `slot_bytes` bytes, header included (its total_bytes); UINT64_MAX for more
 *  than 65536 slots or slots over PL_RING_MAX_BYTES. */
PL_API uint64_t pl_ring_bytes(uint32_t n_slots, uint64_t slot_bytes);

/** Producer: the slot of batch `batch` (slot_bytes bytes, 4096-aligned). */
PL_API void *pl_ring_slot(pl_ring *r, uint64_t batch);

/** Producer: wait until the slot of `batch` is free (batch < consumed +
 *  n_slots). Threads of the producer process may wait for different batches
 *  at once. @return 0, or PL_EPEER when the consumer died or detached. */
PL_API int pl_ring_acquire(pl_ring *r, uint64_t batch, pl_err *err);

/** Producer: publish a filled batch of `n_samples` samples (after
 *  pl_ring_acquire() for it); the consumer sees every byte written to the slot
 *  before this call. */
PL_API void pl_ring_publish(pl_ring *r, uint64_t batch, uint32_t n_samples);

/** Producer: set the number of batches of the epoch (shown by `top`). */
PL_API void pl_ring_set_total(pl_ring *r, uint64_t n_batches);

/** Producer: no more batches after `n_batches`; `msg` non-NULL marks a failure
 *  that the consumer reports. Only the first call counts. Batches published
 *  before a failure are still delivered; any other batch then fails with
 *  PL_EPEER and the message. */
PL_API void pl_ring_finish(pl_ring *r, uint64_t n_batches, const char *msg);

/** Producer: run another epoch in the same ring after pl_ring_finish() of
 *  the last one (no failure) and after the consumer released every batch of
 *  it. Batch numbers go on from the last epoch's end, so every slot and
 *  counter stays monotonic; `n_batches` is the new end (the batches of every
 *  epoch so far), the state goes DONE -> RUNNING. The consumer must not ask
 *  for a batch of the new epoch before this call: it learns of the epoch out
 *  of band (`pertload serve --more-epochs` prints a ready line after it).
 *  @return 0, or PL_EUSAGE when the ring is not DONE or `n_batches` is below
 *  the last end. */
PL_API int pl_ring_next_epoch(pl_ring *r, uint64_t n_batches, pl_err *err);

/** Producer: unmap and remove the segment; NULL accepted. Without a prior
 *  pl_ring_finish() the consumer's waits fail ("closed the ring"). The
 *  consumer's mapping stays valid until it detaches. */
PL_API void pl_ring_destroy(pl_ring *r);

/** Consumer: open an existing ring and register as its consumer. The header
 *  is validated (magic, version, sizes against the segment's size).
 *  @param timeout_ms how long to wait for the segment to appear (0: look
 *  once; negative: no limit).
 *  Only a regular file of this user, closed to group and others, is used.
 *  @return 0, PL_ETIMEDOUT, PL_ECORRUPT (malformed header), PL_EBUSY (another
 *  live consumer), PL_EUSAGE (bad name), -EPERM (another user's segment, not
 *  a regular file, or open to group or others), -errno. */
PL_API int pl_ring_attach(const char *name, int timeout_ms, pl_ring **out, pl_err *err);

/** Consumer: wait for batch `batch` (batches are taken in order; several may
 *  be held at once, up to n_slots from the oldest unreleased one).
 *  @param slot set to the slot's address in this process, valid until the
 *  batch is released; NULL when no batch is returned.
 *  @return 0 with a batch, 1 at the end of the epoch, PL_EPEER when the
 *  producer died (noticed within about 0.1 s) or reported a failure (its
 *  message in err), PL_EUSAGE for a batch already released or n_slots or more
 *  ahead, PL_ECORRUPT for a malformed header, -EINTR when a signal handler
 *  ran while it waited, SA_RESTART or not (nothing was taken; call again to
 *  go on waiting). */
PL_API int pl_ring_next(pl_ring *r, uint64_t batch, const void **slot, pl_err *err);

/** Consumer: pl_ring_next, waiting at most about `max_ns` nanoseconds (at
 *  least one wait of the ring's 0.1 s slice at most).
 *  @return as pl_ring_next, or 2 when the batch did not come in that time
 *  (nothing taken; call again to go on). A caller whose signal handlers run
 *  only between its calls (an interpreter) uses it: a signal delivered to
 *  another of its threads does not interrupt this one's wait. */
PL_API int pl_ring_next_within(pl_ring *r, uint64_t batch, int64_t max_ns, const void **slot,
                               pl_err *err);

/** Consumer: check a batch slot (collate/slot.h layout) before trusting any
 *  of its descriptors: the magic and layout version, the dense format, `used`
 *  within `slot_bytes`, the descriptor table within `used`, and for every
 *  array a NUL-terminated non-empty name used once, a known numpy dtype
 *  ("<u8" "<i8" "<i4" "<f4" "<f2" "|u1" "|b1"), 1..10 dimensions (unused ones
 *  0), nbytes equal to the product of the shape times the item size (no
 *  overflow), a 64-aligned offset past the descriptor table, the bytes
 *  [offset, offset + nbytes) within `used`, and no byte shared with another
 *  array. Reads only the header and the descriptor table, never array data;
 *  the arrays' contents (ptr arrays, positions) are for the consumer to check.
 *  @param slot the slot's first byte (`slot_bytes` readable bytes).
 *  @return 0, or PL_EPARSE with the reason (and the array's name) in err. */
PL_API int pl_slot_check(const void *slot, uint64_t slot_bytes, pl_err *err);

/** One edge type of the PyG batch layout (DESIGN section 13): the disjoint
 *  union of the batch's samples' copies of the edges (src[e], dst[e]),
 *  e < n_edges, each without the edges its removed list names. Sample i's
 *  removed positions are removed[ptr[i] .. ptr[i+1]), strictly increasing
 *  and below n_edges (the lists of a slot); its kept edges are written in
 *  edge order, their ends shifted by i * shift_src and i * shift_dst, after
 *  those of the samples before it. `removed` holds ptr[n_samples] positions.
 *  The lists are checked first: lists that break the rules are refused
 *  before anything is written, so the output is written only when it gets
 *  exactly n_samples * n_edges - ptr[n_samples] edges, the size it must
 *  have.
 *  @param out_src, out_dst the kept edges' ends.
 *  @param out_ptr [n_samples + 1]: each sample's first output edge, then the
 *  total.
 *  @return 0, or PL_EPARSE naming the sample and position (nothing
 *  written). */
PL_API int pl_pyg_edges(const int64_t *src, const int64_t *dst, uint64_t n_edges,
                        const int64_t *removed, const int64_t *ptr, uint32_t n_samples,
                        int64_t shift_src, int64_t shift_dst, int64_t *out_src,
                        int64_t *out_dst, int64_t *out_ptr, pl_err *err);

/* ------------------------------------------------------------------ layouts */

/* The batch layouts of DESIGN section 21, built where the model runs: each
 * call is one pass over its output (one kernel launch on a device), sized by
 * the caller from counts it has, with no scan and nothing read back.
 * `device` < 0: on the host, in this thread (the kernels' twin; the pointers
 * are host memory); >= 0: on that CUDA device, queued on `stream` (a
 * cudaStream_t of that device, NULL: the legacy default stream), the pointers
 * device memory; the call returns once the kernel is queued and reports only
 * the launch's own errors. Sample b's removed positions are pos[ptr[b] ..
 * ptr[b+1]), sorted and unique, n_pos = ptr[n]; the caller checks the lists
 * (indices are clamped to their arrays, so lists that break the rules give a
 * wrong layout, never an access outside the arrays). Outputs passed as NULL
 * are not written. Return 0, PL_EUSAGE (arguments; a device in a build
 * without CUDA) or a negative errno of a failed launch. */

/** 1 when libpertload was built with the CUDA toolkit (the device layouts). */
PL_API int pl_layout_cuda_built(void);

/** The checks a batch's lists pass before a layout reads them (on the
 *  host, in the slot, before the copy): ptr [n + 1] from 0 to n_pos and
 *  never decreasing, every position (int32 or int64: pos_bytes 4 or 8) in
 *  0 .. limit - 1, and with `sets` each sample's positions strictly
 *  increasing. Return 0, or PL_EPARSE with the first rule broken. */
PL_API int pl_layout_check(const void *pos, int pos_bytes, const int64_t *ptr, uint32_t n,
                           uint64_t n_pos, uint64_t limit, int sets, pl_err *err);

/** Layout "pyg" of one edge type: what pl_pyg_edges() writes (kept edges,
 *  shifted, sample-major; out_ptr [n + 1]), n * n_edges - n_pos edges, and
 *  with `attr` the kept edges' attribute in out_attr. */
PL_API int pl_layout_union(int device, void *stream, const int64_t *src, const int64_t *dst,
                           const float *attr, uint64_t n_edges, const int64_t *pos,
                           const int64_t *ptr, uint32_t n, uint64_t n_pos, int64_t shift_src,
                           int64_t shift_dst, int64_t *out_src, int64_t *out_dst,
                           float *out_attr, int64_t *out_ptr, pl_err *err);

/** Layout "lazy" of one edge type: element b * n_edges + e of each output is
 *  edge e of sample b: its ends shifted by b * shift (src NULL: not
 *  written), attr[e], and out_kept 1 unless e is in b's list. */
PL_API int pl_layout_tile(int device, void *stream, const int64_t *src, const int64_t *dst,
                          const float *attr, uint64_t n_edges, const int64_t *pos,
                          const int64_t *ptr, uint32_t n, uint64_t n_pos, int64_t shift_src,
                          int64_t shift_dst, int64_t *out_src, int64_t *out_dst,
                          float *out_attr, uint8_t *out_kept, pl_err *err);

/** A node type's copies: element b * n_nodes + v is node v of sample b:
 *  out_batch b, out_id v, out_kept 1 unless v is in b's list (the lists may
 *  be empty: n_pos 0), out_removed its negation; out_ptr [n + 1] = b *
 *  n_nodes. Dense masks are out_kept alone. */
PL_API int pl_layout_nodes(int device, void *stream, uint64_t n_nodes, const int64_t *pos,
                           const int64_t *ptr, uint32_t n, uint64_t n_pos, int64_t *out_batch,
                           int64_t *out_id, uint8_t *out_kept, uint8_t *out_removed,
                           int64_t *out_ptr, pl_err *err);

/** Entry j < n_pos of a list: out_rows[j] its sample b, out_shifted[j] =
 *  pos[j] + b * shift (the entry among the batch's copies). */
PL_API int pl_layout_rows(int device, void *stream, const int64_t *pos, const int64_t *ptr,
                          uint32_t n, uint64_t n_pos, int64_t shift, int64_t *out_rows,
                          int64_t *out_shifted, pl_err *err);

/** Consumer: done with batch `batch` of `n_samples` samples; its slot (and
 *  those of all earlier batches) may be reused. */
PL_API void pl_ring_release(pl_ring *r, uint64_t batch, uint32_t n_samples);

/** Consumer: unmap; NULL accepted. A producer waiting for a free slot then
 *  gets PL_EPEER. */
PL_API void pl_ring_detach(pl_ring *r);

/** Either side: the database the producer recorded (pl_ring_create_for()),
 *  as copied and checked when the ring was created or attached; known is 0
 *  when it recorded none. */
PL_API void pl_ring_source_get(const pl_ring *r, pl_ring_source *out);

/** Either side: a snapshot of the shared counters. */
PL_API void pl_ring_stats_get(const pl_ring *r, pl_ring_stats *st);

/** Read the counters of every ring of this user (for `pertload top`):
 *  segments of other users, open to group or others, or with a malformed
 *  header are skipped; those of dead producers are included.
 *  @return the number found (at most `cap` stored), or a negative code. */
PL_API int pl_ring_list(pl_ring_stats *out, int cap);

#endif /* PERTLOAD_RING_H */
