/* The CUDA upload backend: page-locked host buffers (cudaHostAlloc), one
 * non-blocking stream per loader for the copies (cudaMemcpyAsync) and the
 * expansion kernel, cudaEvents for the completions.
 *
 * The kernel expands every list of a batch in one launch: one block per tile
 * of the job's flat grid (expand.h), each block filling its tile with ones,
 * then, after a barrier, clearing the tile's removed positions. The job is a
 * __grid_constant__ parameter (under 4 KiB), read in place by every block.
 *
 * The CUDA runtime keeps the current device per thread and the loader calls
 * in from several threads, so each operation selects the backend's device. */
#include <cuda_runtime.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "loader/upload.h"

extern "C" {
#include "src/core/error.h"
}

#define THREADS 256

struct pl__upload {
    int device;
    cudaStream_t stream;
};

struct pl__upload_event {
    cudaEvent_t ev;
};

static_assert(sizeof(pl__expand_job) <= 4000, "the job fits a kernel's parameters");

__global__ void __launch_bounds__(THREADS)
    expand_kernel(const __grid_constant__ pl__expand_job job, const unsigned char *slot,
                  unsigned char *masks)
{
    uint64_t t = (uint64_t)blockIdx.y * gridDim.x + blockIdx.x;
    if (t >= pl__expand_grid(&job))
        return; /* whole blocks: the barrier below is uniform */
    pl__expand_tile w = pl__expand_locate(&job, t, slot, masks);
    pl__expand_fill(&job, &w, threadIdx.x, blockDim.x);
    __syncthreads();
    pl__expand_scatter(&job, &w, threadIdx.x, blockDim.x);
}

static int fail(pl_err *err, cudaError_t e, const char *what)
{
    return pl__err(err, e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO, "CUDA %s: %s (%s)",
                   what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CU_TRY(call, what)                                                     \
    do {                                                                       \
        cudaError_t pl__e = (call);                                            \
        if (pl__e != cudaSuccess)                                              \
            return fail(err, pl__e, what);                                     \
    } while (0)

/* The backend's device made current for one operation and the caller's
 * current device restored after it: the loader is called on the user's
 * threads, whose current device is theirs. */
struct device_scope {
    int prev = -1;
    cudaError_t e;
    explicit device_scope(int device)
    {
        int cur = -1;
        e = cudaGetDevice(&cur);
        if (e == cudaSuccess && cur != device) {
            e = cudaSetDevice(device);
            if (e == cudaSuccess)
                prev = cur;
        }
    }
    ~device_scope()
    {
        if (prev >= 0)
            cudaSetDevice(prev);
    }
    device_scope(const device_scope &) = delete;
    device_scope &operator=(const device_scope &) = delete;
};

/* The backend's device for the rest of the enclosing block. */
#define CU_DEVICE(u)                                                           \
    device_scope pl__scope((u)->device);                                       \
    CU_TRY(pl__scope.e, "cudaSetDevice")

static int cu_devices(char *why, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        const char *what = e == cudaErrorInsufficientDriver
                               ? "no CUDA driver, or one older than this runtime"
                           : e == cudaErrorNoDevice ? "no CUDA-capable device"
                                                    : "the CUDA runtime failed";
        if (why)
            snprintf(why, cap, "%s (cudaGetDeviceCount: %s)", what, cudaGetErrorString(e));
        return 0;
    }
    if (n == 0 && why)
        snprintf(why, cap, "cudaGetDeviceCount found no device");
    return n;
}

static void cu_close(pl__upload *u)
{
    if (!u)
        return;
    device_scope on(u->device);
    if (u->stream)
        cudaStreamDestroy(u->stream);
    free(u);
}

static int cu_open(int device, pl__upload **out, pl_err *err)
{
    *out = NULL;
    pl__upload *u = (pl__upload *)calloc(1, sizeof *u);
    PL_FAIL_IF(!u, err, -ENOMEM, "out of memory");
    u->device = device;
    device_scope on(device);
    cudaError_t e = on.e;
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&u->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(u);
        return fail(err, e, "opening the device");
    }
    *out = u;
    return 0;
}

static int cu_host_alloc(pl__upload *u, size_t bytes, void **p, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaHostAlloc(p, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    return 0;
}

static void cu_host_free(pl__upload *u, void *p)
{
    (void)u;
    cudaFreeHost(p);
}

static int cu_dev_alloc(pl__upload *u, size_t bytes, void **p, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaMalloc(p, bytes), "cudaMalloc");
    return 0;
}

static void cu_dev_free(pl__upload *u, void *p)
{
    device_scope on(u->device);
    cudaFree(p);
}

static int cu_event_new(pl__upload *u, int timing, pl__upload_event **ev, pl_err *err)
{
    *ev = (pl__upload_event *)calloc(1, sizeof **ev);
    PL_FAIL_IF(!*ev, err, -ENOMEM, "out of memory");
    /* Blocking sync: a thread that waits for the event sleeps instead of
     * spinning on a core that the workers need. */
    device_scope on(u->device);
    cudaError_t e = on.e;
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&(*ev)->ev, cudaEventBlockingSync |
                                                     (timing ? 0 : cudaEventDisableTiming));
    if (e != cudaSuccess) {
        free(*ev);
        *ev = NULL;
        return fail(err, e, "cudaEventCreate");
    }
    return 0;
}

static void cu_event_free(pl__upload *u, pl__upload_event *ev)
{
    device_scope on(u->device);
    cudaEventDestroy(ev->ev);
    free(ev);
}

static int cu_copy(pl__upload *u, void *dev, const void *host, size_t bytes, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, u->stream),
           "cudaMemcpyAsync");
    return 0;
}

static int cu_expand(pl__upload *u, const pl__expand_job *job, const void *dev_slot,
                     void *dev_masks, pl_err *err)
{
    uint64_t grid = pl__expand_grid(job);
    if (grid == 0)
        return 0;
    uint32_t gx, gy;
    PL_FAIL_IF(!pl__expand_shape(grid, &gx, &gy), err, PL_ERANGE, "expansion of %llu tiles",
               (unsigned long long)grid);
    CU_DEVICE(u);
    /* cudaLaunchKernel returns this launch's own error; cudaGetLastError
     * after a <<<>>> launch could return an earlier call's. A fault while
     * the kernel runs shows at a later synchronisation (a worker's wait, or
     * the consumer's own CUDA calls), not here. */
    const unsigned char *slot = (const unsigned char *)dev_slot;
    unsigned char *masks = (unsigned char *)dev_masks;
    void *args[] = {const_cast<pl__expand_job *>(job), (void *)&slot, (void *)&masks};
    cudaError_t e = cudaLaunchKernel((const void *)expand_kernel, dim3(gx, gy), dim3(THREADS),
                                     args, 0, u->stream);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* this launch's error, reported here: not left behind */
        return fail(err, e, "launching the mask expansion");
    }
    return 0;
}

static int cu_record(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaEventRecord(ev->ev, u->stream), "cudaEventRecord");
    return 0;
}

static int cu_record_on(pl__upload *u, pl__upload_event *ev, void *stream, pl_err *err)
{
    CU_DEVICE(u);
    /* NULL: the legacy default stream, even in a per-thread build */
    cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamLegacy;
    CU_TRY(cudaEventRecord(ev->ev, s), "cudaEventRecord (consumer stream)");
    return 0;
}

static int cu_wait_event(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaStreamWaitEvent(u->stream, ev->ev, 0), "cudaStreamWaitEvent");
    return 0;
}

static int cu_sync(pl__upload *u, pl__upload_event *ev, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaEventSynchronize(ev->ev), "cudaEventSynchronize");
    return 0;
}

static int cu_drain(pl__upload *u, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaStreamSynchronize(u->stream), "cudaStreamSynchronize");
    return 0;
}

static int cu_download(pl__upload *u, void *host, const void *dev, size_t bytes, pl_err *err)
{
    CU_DEVICE(u);
    CU_TRY(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, u->stream),
           "cudaMemcpyAsync (device to host)");
    CU_TRY(cudaStreamSynchronize(u->stream), "cudaStreamSynchronize");
    return 0;
}

static double cu_elapsed(pl__upload *u, pl__upload_event *a, pl__upload_event *b)
{
    float ms = 0;
    device_scope on(u->device);
    if (cudaEventElapsedTime(&ms, a->ev, b->ev) != cudaSuccess)
        return 0;
    return ms;
}

static void *cu_stream(pl__upload *u) { return (void *)u->stream; }

static void *cu_event_handle(pl__upload_event *ev) { return (void *)ev->ev; }

extern "C" const pl__upload_ops pl__upload_cuda = {
    "cuda",
    1,
    cu_devices,
    cu_open,
    cu_close,
    cu_host_alloc,
    cu_host_free,
    cu_dev_alloc,
    cu_dev_free,
    cu_event_new,
    cu_event_free,
    cu_copy,
    cu_expand,
    cu_record,
    cu_record_on,
    cu_wait_event,
    cu_sync,
    cu_drain,
    cu_download,
    cu_elapsed,
    cu_stream,
    cu_event_handle,
};
