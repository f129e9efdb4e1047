/* The in-process loader (public interface: pl_loader_* in pertload.h):
 * introspection for tests and benchmarks. */
#ifndef PL_LOADER_LOADER_H
#define PL_LOADER_LOADER_H

#include <stdint.h>

#include "pertload.h"

/** Counters of a loader (monotonic). */
typedef struct pl__loader_stats {
    uint64_t uploads;     /**< batches whose copy was queued */
    uint64_t copy_waits;  /**< a worker took a host buffer whose copy was
                               queued and synchronised on the copy's event */
    uint64_t slot_bytes;  /**< size of a host buffer (0 until loaded) */
    uint64_t mask_bytes;  /**< dense mask bytes of a device buffer */
    uint32_t host_buffers, device_buffers;
} pl__loader_stats;

void pl__loader_stats_get(pl_loader *l, pl__loader_stats *st);

/** Batches uploaded so far into the device buffer that holds `b`: it does not
 *  change while the consumer holds `b`. */
uint64_t pl__loader_buffer_uploads(pl_loader *l, const pl_device_batch *b);

/** Block until the copy and the expansion of `b` completed (what a CUDA
 *  consumer does with b->event; at once on the host backend). */
int pl__loader_sync(pl_loader *l, const pl_device_batch *b, pl_err *err);

#endif
