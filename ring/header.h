/* A ring segment's header read from outside the ring's handle: its names,
 * the validation of a complete header (sizes against the segment, name,
 * recorded database), a read-only look at it, and the counters it shows
 * (pl_ring_stats_get(), pl_ring_list() for `pertload top`). */
#ifndef PL_RING_HEADER_H
#define PL_RING_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "ring_layout.h"

/* The validated sizes of a header. */
typedef struct pl__ring_layout {
    uint32_t n_slots;
    uint64_t slot_bytes, stride, header_bytes, total_bytes;
    int32_t producer_pid;
    uint64_t producer_start;
    pl_ring_source source;
} pl__ring_layout;

/** The shm_open() name and the path of ring NAME (segment pertload-NAME),
 *  each in `cap` bytes. */
void pl__ring_names(const char *name, char *shm, char *path, size_t cap);

/** Validate a complete header (`init` already seen as 1 with acquire) against
 *  the file size and the expected name (NULL: any); each field is read once
 *  into `out`. @return 0, or -1 with the reason in `why` (`cap` bytes). */
int pl__ring_check_header(const pl__ring_hdr *h, uint64_t file_bytes, const char *name,
                          pl__ring_layout *out, char *why, size_t cap);

/** Map the first page of an open segment read-only; NULL on failure. */
const pl__ring_hdr *pl__ring_map_header_ro(int fd);

/** The counters of header `h` with the validated sizes `l`. */
void pl__ring_fill_stats(const pl__ring_hdr *h, const pl__ring_layout *l, pl_ring_stats *st);

#endif
