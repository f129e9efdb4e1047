/* The batch layouts on a CUDA device: one launch per operation, each thread
 * computing the elements of layout_ops.h that the host twin computes in a
 * loop (layout.c), so the two agree byte for byte.
 *
 * Flat operations (union, rows) run a grid-stride loop over their elements;
 * per-sample ones (tile, nodes) take the sample from the grid's y and stride
 * over the sample's elements in x, so no thread divides by the per-sample
 * count. The first threads also write out_ptr. Nothing is read back: the
 * caller sized every output from counts it has. */
#include <cuda_runtime.h>

#include <errno.h>

extern "C" {
#include "collate/layout_ops.h"
#include "src/core/error.h"
}

#define THREADS 256

__global__ void __launch_bounds__(THREADS) layout_flat(const pl__layout_args a, uint64_t size)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (uint64_t k = t; k < size; k += stride) {
        if (a.op == PL__LAYOUT_UNION)
            pl__layout_union_at(&a, k);
        else
            pl__layout_rows_at(&a, k);
    }
    if (a.out_ptr)
        for (uint64_t b = t; b <= a.l.n; b += stride)
            pl__layout_ptr_at(&a, (uint32_t)b);
}

__global__ void __launch_bounds__(THREADS) layout_per_sample(const pl__layout_args a)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (uint32_t b = blockIdx.y; b < a.l.n; b += gridDim.y)
        for (uint64_t v = t; v < a.per; v += stride) {
            if (a.op == PL__LAYOUT_TILE)
                pl__layout_tile_at(&a, b, v);
            else
                pl__layout_nodes_at(&a, b, v);
        }
    if (a.out_ptr && blockIdx.y == 0)
        for (uint64_t b = t; b <= a.l.n; b += stride)
            pl__layout_ptr_at(&a, (uint32_t)b);
}

static int fail(pl_err *err, cudaError_t e, const char *what)
{
    (void)cudaGetLastError(); /* reported here: not left behind for a later call */
    return pl__err(err, e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO, "CUDA %s: %s (%s)",
                   what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Blocks for `work` elements: enough to fill the device, at most 2^20. */
static unsigned blocks_for(uint64_t work)
{
    uint64_t b = (work + THREADS - 1) / THREADS;
    return (unsigned)(b == 0 ? 1 : b > (1u << 20) ? (1u << 20) : b);
}

extern "C" int pl__layout_cuda(const pl__layout_args *a, int device, void *stream, pl_err *err)
{
    int prev = -1;
    cudaError_t e = cudaGetDevice(&prev);
    if (e != cudaSuccess)
        return fail(err, e, "cudaGetDevice");
    if (prev != device && (e = cudaSetDevice(device)) != cudaSuccess)
        return fail(err, e, "cudaSetDevice");
    cudaStream_t s = stream ? (cudaStream_t)stream : cudaStreamLegacy;
    uint64_t size = pl__layout_size(a);
    void *args[2] = {const_cast<pl__layout_args *>(a), &size};
    /* cudaLaunchKernel returns this launch's own error (upload_cuda.cu) */
    if (a->op == PL__LAYOUT_UNION || a->op == PL__LAYOUT_ROWS) {
        uint64_t work = size > a->l.n + 1ull ? size : a->l.n + 1ull;
        e = cudaLaunchKernel((const void *)layout_flat, dim3(blocks_for(work)), dim3(THREADS),
                             args, 0, s);
    } else {
        unsigned gy = a->l.n == 0 ? 1 : a->l.n > 65535 ? 65535 : a->l.n;
        uint64_t work = a->per > a->l.n + 1ull ? a->per : a->l.n + 1ull;
        unsigned gx = blocks_for(work);
        if (gx > (1u << 20) / gy)
            gx = (1u << 20) / gy ? (1u << 20) / gy : 1;
        e = cudaLaunchKernel((const void *)layout_per_sample, dim3(gx, gy), dim3(THREADS),
                             args, 0, s);
    }
    if (prev != device)
        cudaSetDevice(prev);
    if (e != cudaSuccess)
        return fail(err, e, "launching a batch layout");
    return 0;
}
