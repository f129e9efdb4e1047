/* GPU check (built with the CUDA path): on the first visible CUDA device,
 *  - the expansion kernel on hand-made lists of awkward lengths against the
 *    expected masks and against the CPU run of the same algorithm;
 *  - the loader's round trip: every batch of an epoch of a small synthetic
 *    database is copied back from the device and compared with the slot
 *    collated directly, its dense masks with a brute-force oracle; the copy
 *    back runs on a stream of this program that the loader is told about at
 *    release, so the reuse of a device buffer must wait for it;
 * and prints the bytes uploaded per batch and the kernel's time.
 * Exits 77 (skipped) when no CUDA device is visible. `--backend host` runs
 * the same checks through the host backend. */
#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/expand.h"
#include "loader/loader.h"
#include "loader/upload.h"
#include "pl_config.h"
#include "testdb.h"

#define EXIT_SKIP 77

static int failures;
static int use_cuda;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpu_check: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failures++;
}

static void cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu_check: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static void *host_buffer(size_t bytes)
{
    void *p = NULL;
    if (use_cuda)
        cuda_ok(cudaMallocHost(&p, bytes ? bytes : 1), "cudaMallocHost");
    else
        p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "gpu_check: out of memory\n");
        exit(1);
    }
    return p;
}

static void host_buffer_free(void *p)
{
    if (use_cuda)
        cudaFreeHost(p);
    else
        free(p);
}

/* ------------------------------------------------------------- kernel */

static void check_kernel(const pl__upload_ops *ops)
{
    pl__upload *u;
    pl_err err = {0};
    if (ops->open(0, &u, &err) != 0) {
        fail("open: %s", err.msg);
        return;
    }
    for (uint32_t dense = PL_MASK_BITS; dense <= PL_MASK_BOOL; dense++) {
        pl_test_expand_case c;
        pl_test_expand_case_make(&c, dense, 5 + dense);
        unsigned char *cpu = malloc(c.mask_bytes + 1), *got = malloc(c.mask_bytes + 1);
        void *dslot, *dmask;
        pl__upload_event *e0, *e1;
        if (!cpu || !got || ops->dev_alloc(u, c.slot_bytes, &dslot, &err) ||
            ops->dev_alloc(u, c.mask_bytes + 256, &dmask, &err) ||
            ops->event_new(u, 1, &e0, &err) || ops->event_new(u, 1, &e1, &err)) {
            fail("setup: %s", err.msg);
            exit(1);
        }
        memset(cpu, 0x5A, c.mask_bytes + 1);
        pl__expand_run(&c.job, c.slot, cpu);
        /* junk in the mask region first: every byte must be written */
        memset(got, 0xA5, c.mask_bytes + 1);
        int rc = ops->copy(u, dmask, got, c.mask_bytes + 1, &err);
        rc = rc ? rc : ops->copy(u, dslot, c.slot, c.slot_bytes, &err);
        rc = rc ? rc : ops->record(u, e0, &err);
        rc = rc ? rc : ops->expand(u, &c.job, dslot, dmask, &err);
        rc = rc ? rc : ops->record(u, e1, &err);
        rc = rc ? rc : ops->sync(u, e1, &err);
        memset(got, 0, c.mask_bytes + 1);
        rc = rc ? rc : ops->download(u, got, dmask, c.mask_bytes + 1, &err);
        if (rc)
            fail("dense %u: %s", dense, err.msg);
        else if (memcmp(got, c.want, c.mask_bytes))
            fail("dense %u: %s expansion differs from the expected masks", dense, ops->name);
        else if (memcmp(got, cpu, c.mask_bytes))
            fail("dense %u: %s expansion differs from the CPU run", dense, ops->name);
        else if (got[c.mask_bytes] != 0xA5)
            fail("dense %u: written past the masks", dense);
        else
            printf("gpu_check: kernel %s: %llu tiles, %llu mask bytes, %.3f ms: OK\n",
                   dense == PL_MASK_BITS ? "bits" : "bool",
                   (unsigned long long)pl__expand_grid(&c.job),
                   (unsigned long long)c.mask_bytes, ops->elapsed(u, e0, e1));
        ops->event_free(u, e0);
        ops->event_free(u, e1);
        ops->dev_free(u, dslot);
        ops->dev_free(u, dmask);
        free(cpu);
        free(got);
        pl_test_expand_case_free(&c);
    }
    ops->drain(u, NULL);
    ops->close(u);
}

/* ------------------------------------------------------------- loader */

/* Wait for a batch and start copying `bytes` at `dev` back into `host`, on
 * the consumer's stream. */
static void fetch(const pl_device_batch *b, cudaStream_t cs, void *host, const void *dev,
                  size_t bytes)
{
    if (!use_cuda) {
        memcpy(host, dev, bytes);
        return;
    }
    cuda_ok(cudaStreamWaitEvent(cs, (cudaEvent_t)b->event, 0), "cudaStreamWaitEvent");
    cuda_ok(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, cs), "cudaMemcpyAsync");
}

static void check_loader(pl_test_db *t, int backend)
{
    static const uint32_t modes[] = {PL_MASK_NONE, PL_MASK_BITS, PL_MASK_BOOL};
    const uint32_t B = 64;
    cudaStream_t cs = NULL;
    if (use_cuda)
        cuda_ok(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int m = 0; m < 3; m++) {
        pl_loader_opts o = {0};
        o.db = t->path;
        o.plan.batch_size = B;
        o.plan.world_size = 1;
        o.plan.shuffle = 1;
        o.plan.seed = 3;
        o.dense = modes[m];
        o.threads = 2;
        o.depth = 2;
        o.backend = backend;
        pl_loader *l;
        pl_err err = {0};
        if (pl_loader_open(&o, &l, &err) != 0) {
            fail("pl_loader_open: %s", err.msg);
            return;
        }
        pl_plan_opts po = o.plan;
        po.n_samples = t->n_samples;
        pl_plan *plan;
        pl_plan_new(&po, &plan, &err);
        uint64_t rows[64], n_batches = 0, bytes = 0, most = 0, mask_bytes = 0;
        pl_device_batch b;
        int rc;
        while ((rc = pl_loader_next(l, &b, &err)) == 0) {
            /* the slot and, with dense, every mask, copied back */
            const void *devs[PL_MAX_TYPES + 4];
            uint64_t lens[PL_MAX_TYPES + 4];
            uint32_t nd = 1;
            devs[0] = b.slot;
            lens[0] = b.bytes;
            if (b.dense) {
                for (uint32_t k = 0; k < b.n_lists; k++) {
                    devs[nd] = b.mask[k];
                    lens[nd++] = pl__expand_row_bytes(b.dense, b.mask_len[k]) * b.n_samples;
                }
                devs[nd] = b.gene_mask;
                lens[nd++] = pl__expand_row_bytes(b.dense, b.gene_len) * b.n_samples;
            }
            void *host[PL_MAX_TYPES + 4];
            for (uint32_t i = 0; i < nd; i++) {
                host[i] = host_buffer(lens[i]);
                fetch(&b, cs, host[i], devs[i], lens[i]);
                if (i)
                    mask_bytes += lens[i];
            }
            pl_device_batch kept = b;
            b.consumer_stream = use_cuda ? (void *)cs : NULL;
            pl_loader_release(l, &b); /* before the copies back completed */
            if (use_cuda)
                cuda_ok(cudaStreamSynchronize(cs), "cudaStreamSynchronize");
            uint32_t n = pl_test_collate(t, plan, B, n_batches, 0, rows);
            char why[512];
            if (kept.index != n_batches || kept.n_samples != n)
                fail("batch %llu came as %llu with %u samples", (unsigned long long)n_batches,
                     (unsigned long long)kept.index, kept.n_samples);
            else if (pl_test_slot_diff(t, host[0], kept.bytes, why, sizeof why))
                fail("%s, batch %llu: %s", pl_loader_backend(l), (unsigned long long)n_batches,
                     why);
            else if (kept.dense && pl_test_masks_diff(t, kept.dense, n, rows, host[nd - 1],
                                                      (const void *const *)host + 1, why,
                                                      sizeof why))
                fail("%s, batch %llu: %s", pl_loader_backend(l), (unsigned long long)n_batches,
                     why);
            for (uint32_t i = 0; i < nd; i++)
                host_buffer_free(host[i]);
            bytes += kept.bytes;
            most = kept.bytes > most ? kept.bytes : most;
            n_batches++;
        }
        if (rc != 1)
            fail("pl_loader_next: %d %s", rc, err.msg);
        else if (n_batches != pl_plan_n_batches(plan))
            fail("%llu batches, the plan has %llu", (unsigned long long)n_batches,
                 (unsigned long long)pl_plan_n_batches(plan));
        else
            printf("gpu_check: loader %s, dense %s: %llu batches of %u, %.0f bytes uploaded "
                   "per batch (most %llu), %.0f mask bytes expanded per batch: OK\n",
                   pl_loader_backend(l), m == 0 ? "none" : m == 1 ? "bits" : "bool",
                   (unsigned long long)n_batches, B, (double)bytes / (double)n_batches,
                   (unsigned long long)most, (double)mask_bytes / (double)n_batches);
        pl_plan_free(plan);
        pl_loader_close(l);
    }
    if (cs)
        cudaStreamDestroy(cs);
}

int main(int argc, char **argv)
{
    const char *backend = argc >= 3 && !strcmp(argv[1], "--backend") ? argv[2] : "cuda";
    const pl__upload_ops *ops = &pl__upload_host;
    int be = PL_BACKEND_HOST;
    if (!strcmp(backend, "cuda")) {
#if PL_HAVE_CUDA
        char why[256] = "";
        if (pl__upload_cuda.devices(why, sizeof why) <= 0) {
            printf("SKIP: no CUDA device (%s)\n", why);
            return EXIT_SKIP;
        }
        ops = &pl__upload_cuda;
        be = PL_BACKEND_CUDA;
        use_cuda = 1;
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            printf("gpu_check: device 0: %s\n", prop.name);
#else
        printf("SKIP: built without the CUDA path\n");
        return EXIT_SKIP;
#endif
    } else if (strcmp(backend, "host")) {
        fprintf(stderr, "usage: gpu_check [--backend cuda|host]\n");
        return 2;
    }
    check_kernel(ops);
    pl_test_db t;
    pl_test_db_make(&t, 400, 3000, 0.004, 3, 7);
    pl_test_db_load(&t);
    check_loader(&t, be);
    pl_test_db_free(&t);
    if (failures) {
        fprintf(stderr, "gpu_check: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("gpu_check: all checks passed on the %s backend\n", ops->name);
    return 0;
}
