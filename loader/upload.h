/* Upload backends behind one small interface: CUDA (upload_cuda.cu, built
 * with the toolkit) and host (upload_host.c, always built). Each backend file
 * fills one table of operations; the in-process loader (loader.c) holds the
 * buffer logic and drives either through the table alone.
 *
 * The model is CUDA's: a backend instance owns one stream, an ordered queue
 * of work (copies, expansions, event records) that runs asynchronously to the
 * calling threads; an event marks a point of the queue and completes once the
 * work queued before it has. On the host backend the "device" is host memory,
 * a copy thread drains the queue in order, and an event is a completion count.
 *
 * Every operation may be called from any thread; those that queue work
 * (copy, expand, record, wait_event) from one thread at a time. */
#ifndef PL_LOADER_UPLOAD_H
#define PL_LOADER_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "loader/expand.h"
#include "pertload.h"
#include "pl_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl__upload pl__upload;
typedef struct pl__upload_event pl__upload_event;

typedef struct pl__upload_ops {
    const char *name; /**< "cuda" or "host" */
    /** 1: the consumer waits for a batch's event itself (on the device); 0:
     *  the loader completes the event before handing the batch out. */
    int consumer_waits;
    /** Devices usable by this backend; 0 with `why` (when non-NULL) saying
     *  why none is. */
    int (*devices)(char *why, size_t cap);
    int (*open)(int device, pl__upload **out, pl_err *err);
    /** Release; all queued work must be complete (drain()). NULL accepted. */
    void (*close)(pl__upload *u);
    /** Host memory the device copies from (page-locked with CUDA). */
    int (*host_alloc)(pl__upload *u, size_t bytes, void **p, pl_err *err);
    void (*host_free)(pl__upload *u, void *p);
    int (*dev_alloc)(pl__upload *u, size_t bytes, void **p, pl_err *err);
    void (*dev_free)(pl__upload *u, void *p);
    /** @param timing 1 when elapsed() will be asked about it */
    int (*event_new)(pl__upload *u, int timing, pl__upload_event **ev, pl_err *err);
    void (*event_free)(pl__upload *u, pl__upload_event *ev);
    /** Queue a host-to-device copy. */
    int (*copy)(pl__upload *u, void *dev, const void *host, size_t bytes, pl_err *err);
    /** Queue the expansion of `job` (expand.h): one kernel launch. */
    int (*expand)(pl__upload *u, const pl__expand_job *job, const void *dev_slot,
                  void *dev_masks, pl_err *err);
    /** Mark the current end of the queue with `ev`. */
    int (*record)(pl__upload *u, pl__upload_event *ev, pl_err *err);
    /** Record `ev` on a stream of the caller's (a cudaStream_t; host: NULL). */
    int (*record_on)(pl__upload *u, pl__upload_event *ev, void *stream, pl_err *err);
    /** Work queued from now on waits until `ev` completed. */
    int (*wait_event)(pl__upload *u, pl__upload_event *ev, pl_err *err);
    /** Block the calling thread until `ev` completed (at once when `ev` was
     *  never recorded). */
    int (*sync)(pl__upload *u, pl__upload_event *ev, pl_err *err);
    /** Block until all queued work completed. */
    int (*drain)(pl__upload *u, pl_err *err);
    /** Copy device memory back, synchronously (checks and tests). */
    int (*download)(pl__upload *u, void *host, const void *dev, size_t bytes, pl_err *err);
    /** Milliseconds between two completed timing events (0 on the host). */
    double (*elapsed)(pl__upload *u, pl__upload_event *a, pl__upload_event *b);
    /** The backend's stream and an event's handle (cudaStream_t, cudaEvent_t;
     *  NULL on the host). */
    void *(*stream)(pl__upload *u);
    void *(*event_handle)(pl__upload_event *ev);
} pl__upload_ops;

extern const pl__upload_ops pl__upload_host;

#if PL_HAVE_CUDA
extern const pl__upload_ops pl__upload_cuda;
#endif

#ifndef __cplusplus
/** Host backend, for tests: each queued copy first sleeps this many
 *  microseconds (a slow bus), so that buffer reuse races would show. */
extern _Atomic unsigned pl__upload_host_copy_delay_us;
#endif

#ifdef __cplusplus
}
#endif

#endif
