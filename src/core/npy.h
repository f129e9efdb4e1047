/* NumPy .npy files (format 1.0-3.0, C order, little-endian): reading edge
 * index exports and payloads, writing headers. */
#ifndef PL_CORE_NPY_H
#define PL_CORE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "pertload.h"

typedef struct pl__npy {
    const char *path;
    int fd;
    char descr[8];       /* normalised: "<i4" "<i8" "<f4" "<f2" "|u1" ... */
    uint32_t itemsize;
    uint32_t ndim;
    uint64_t shape[8];
    uint64_t count;      /* product of shape */
    uint64_t offset;     /* of the data */
    uint64_t file_size;  /* as found at open */
    const void *map;     /* whole file mapped (pl__npy_map), or NULL */
    size_t map_size;
} pl__npy;

/** Open `path` and parse its header: rejects bad magic, Fortran order,
 *  big-endian or object dtypes, more than 8 dimensions, and a file size that
 *  does not match the shape. Errors name the file and the reason. */
int pl__npy_open(pl__npy *n, const char *path, pl_err *err);

/** pl__npy_open() of the file already open as `fd` (read-only, regular),
 *  which `n` then owns: pl__npy_close() closes it, on failure too. */
int pl__npy_open_fd(pl__npy *n, int fd, const char *path, pl_err *err);

/** Map the data; `n->map + n->offset` is then the first element. */
int pl__npy_map(pl__npy *n, pl_err *err);

/** Close (safe on a zeroed struct with fd = -1). */
void pl__npy_close(pl__npy *n);

/** Write a version 1.0 header for `descr` and `shape[0..ndim)`, padded with
 *  spaces so that the data starts at a multiple of `align` (64 or more).
 *  @return the header length (the data offset), or 0 when `cap` is too small. */
size_t pl__npy_header(char *buf, size_t cap, const char *descr, const uint64_t *shape,
                      uint32_t ndim, size_t align);

#endif
