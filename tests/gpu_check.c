/* GPU check (built with the CUDA path): on the first visible CUDA device,
 *  - the expansion kernel on hand-made lists of awkward lengths against the
 *    expected masks and against the CPU run of the same algorithm;
 *  - the loader's round trip: every batch of an epoch of a small synthetic
 *    database is copied back from the device and compared with the slot
 *    collated directly, its dense masks with a brute-force oracle; the copy
 *    back runs on a stream of this program that the loader is told about at
 *    release (with bits masks the legacy default stream, told as NULL), so
 *    the reuse of a device buffer must wait for it;
 *  - split batches (a host buffer budget that a batch does not fit): every
 *    part's slot and masks, byte for byte, against a host-backend loader
 *    run in lock step over the same plan;
 *  - the kernel over a grid of two rows (over 65,535 tiles);
 * and prints the bytes uploaded per batch, the kernel's time and whether the
 * payload was read with O_DIRECT (rows of whole pages, e.g.
 * --payload-dim 1024: the reads land in page-locked cudaHostAlloc buffers).
 * Exits 77 (skipped) when no CUDA device is visible. `--backend host` runs
 * the same checks through the host backend. --genes, --samples, --scale and
 * --payload-dim size the synthetic database (pertload synth's options);
 * --types T gives it T edge types (up to PL_MAX_TYPES: with metabolism the
 * most lists a batch holds). */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collate/slot.h"
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
    for (uint32_t run = 0; run < 4; run++) {
        uint32_t dense = run % 2 ? PL_MASK_BOOL : PL_MASK_BITS;
        int wide = run >= 2;
        pl_test_expand_case c;
        if (wide)
            pl_test_expand_case_make_wide(&c, dense, 11 + dense);
        else
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
        else {
            uint32_t gx = 0, gy = 0;
            pl__expand_shape(pl__expand_grid(&c.job), &gx, &gy);
            printf("gpu_check: kernel %s%s: %llu tiles on a %u x %u grid, %llu mask bytes, "
                   "%.3f ms: OK\n",
                   dense == PL_MASK_BITS ? "bits" : "bool", wide ? " (wide)" : "",
                   (unsigned long long)pl__expand_grid(&c.job), gx, gy,
                   (unsigned long long)c.mask_bytes, ops->elapsed(u, e0, e1));
        }
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

/* What a batch fetches: its slot, every list's mask, the genes' mask. */
enum { MAX_FETCH = 1 + sizeof(((pl_device_batch *)0)->mask) / sizeof(void *) + 1 };

/* Copy a batch's slot and, with dense, every mask back into fresh host
 * buffers (host[0] the slot, host[nd - 1] the genes' mask); returns nd. */
static uint32_t fetch_all(const pl_device_batch *b, cudaStream_t cs, void *host[MAX_FETCH],
                          uint64_t lens[MAX_FETCH])
{
    const void *devs[MAX_FETCH];
    uint32_t nd = 1;
    devs[0] = b->slot;
    lens[0] = b->bytes;
    if (b->dense) {
        if (b->n_lists + 2 > MAX_FETCH) {
            fprintf(stderr, "gpu_check: a batch of %u lists\n", b->n_lists);
            exit(1);
        }
        for (uint32_t k = 0; k < b->n_lists; k++) {
            devs[nd] = b->mask[k];
            lens[nd++] = pl__expand_row_bytes(b->dense, b->mask_len[k]) * b->n_samples;
        }
        devs[nd] = b->gene_mask;
        lens[nd++] = pl__expand_row_bytes(b->dense, b->gene_len) * b->n_samples;
    }
    for (uint32_t i = 0; i < nd; i++) {
        host[i] = host_buffer(lens[i]);
        fetch(b, cs, host[i], devs[i], lens[i]);
    }
    return nd;
}

/* Whether this process holds the database's payload file open with
 * O_DIRECT (read from /proc/self/fdinfo). */
static int payload_direct(const pl_test_db *t)
{
    char want[4608], link[4608], p[320];
    snprintf(want, sizeof want, "%s/payload.npy", t->path);
    char *real = realpath(want, NULL);
    DIR *dir = opendir("/proc/self/fd");
    int found = 0;
    for (struct dirent *e; dir && real && (e = readdir(dir));) {
        snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n <= 0)
            continue;
        link[n] = 0;
        if (strcmp(link, real))
            continue;
        snprintf(p, sizeof p, "/proc/self/fdinfo/%s", e->d_name);
        FILE *f = fopen(p, "r");
        unsigned flags = 0;
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "flags: %o", &flags) == 1 && (flags & O_DIRECT))
                found = 1;
        if (f)
            fclose(f);
    }
    if (dir)
        closedir(dir);
    free(real);
    return found;
}

/* Returns the most bytes a batch uploaded (without dense masks). */
static uint64_t check_loader(pl_test_db *t, int backend)
{
    uint64_t largest = 0;
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
            return largest;
        }
        pl_plan_opts po = o.plan;
        po.n_samples = t->n_samples;
        pl_plan *plan;
        pl_plan_new(&po, &plan, &err);
        uint64_t rows[64], n_batches = 0, bytes = 0, most = 0, mask_bytes = 0;
        pl_device_batch b;
        int rc;
        int direct = -1;
        while ((rc = pl_loader_next(l, &b, &err)) == 0) {
            if (direct < 0)
                direct = payload_direct(t);
            /* the slot and, with dense, every mask, copied back */
            void *host[MAX_FETCH];
            uint64_t lens[MAX_FETCH];
            /* dense bits: the consumer reads on the legacy default stream and
             * releases with a NULL consumer_stream (pertload.h) */
            cudaStream_t use = m == 1 ? NULL : cs;
            uint32_t nd = fetch_all(&b, use, host, lens);
            for (uint32_t i = 1; i < nd; i++)
                mask_bytes += lens[i];
            pl_device_batch kept = b;
            b.consumer_stream = use_cuda ? (void *)use : NULL;
            pl_loader_release(l, &b); /* before the copies back completed */
            if (use_cuda)
                cuda_ok(cudaStreamSynchronize(use), "cudaStreamSynchronize");
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
                   "per batch (most %llu), %.0f mask bytes expanded per batch%s: OK\n",
                   pl_loader_backend(l), m == 0 ? "none" : m == 1 ? "bits" : "bool",
                   (unsigned long long)n_batches, B, (double)bytes / (double)n_batches,
                   (unsigned long long)most, (double)mask_bytes / (double)n_batches,
                   m == 1 ? " (read on the default stream)" : "");
        if (m == 0)
            largest = most;
        if (m == 0 && t->payload_row_bytes)
            printf("gpu_check: payload rows of %llu bytes read %s\n",
                   (unsigned long long)t->payload_row_bytes,
                   direct > 0 ? "with O_DIRECT" : "through the page cache");
        pl_plan_free(plan);
        pl_loader_close(l);
    }
    if (cs)
        cudaStreamDestroy(cs);
    return largest;
}

/* Two slots of `bytes` alike: header, descriptors and every array's bytes
 * (the padding between arrays is not written by the collation). 0 when so. */
static int slot_differs(const unsigned char *a, const unsigned char *b, uint64_t bytes)
{
    const struct pl_slot_header *h = (const void *)a;
    uint64_t table = sizeof *h + (uint64_t)h->n_arrays * sizeof(struct pl_slot_array);
    if (bytes < sizeof *h || table > bytes || memcmp(a, b, table))
        return 1;
    for (uint32_t i = 0; i < h->n_arrays; i++) {
        const struct pl_slot_array *d =
            (const void *)(a + sizeof *h + i * sizeof(struct pl_slot_array));
        if (d->offset > bytes || d->nbytes > bytes - d->offset ||
            memcmp(a + d->offset, b + d->offset, d->nbytes))
            return 1;
    }
    return 0;
}

/* A budget of host buffers half the largest batch (`largest` bytes; 4
 * buffers: 2 threads, depth 2): every part of every batch of `be` against the same part from a
 * host-backend loader over the same plan, slot and masks byte for byte. */
static void check_split(pl_test_db *t, int be, uint64_t largest)
{
    pl_loader_opts o = {0};
    o.db = t->path;
    o.plan.batch_size = 64;
    o.plan.world_size = 1;
    o.plan.shuffle = 1;
    o.plan.seed = 5;
    o.dense = PL_MASK_BITS;
    o.threads = 2;
    o.depth = 2;
    o.max_buffer_bytes = 4 * (largest / 2 > 20480 ? largest / 2 : 20480);
    pl_loader *l[2];
    pl_err err = {0};
    o.backend = be;
    if (pl_loader_open(&o, &l[0], &err) != 0) {
        fail("split: pl_loader_open: %s", err.msg);
        return;
    }
    o.backend = PL_BACKEND_HOST;
    if (pl_loader_open(&o, &l[1], &err) != 0) {
        fail("split: pl_loader_open (host): %s", err.msg);
        pl_loader_close(l[0]);
        return;
    }
    cudaStream_t cs = NULL;
    if (use_cuda)
        cuda_ok(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), "cudaStreamCreate");
    uint64_t parts = 0, split = 0;
    int rc[2];
    pl_device_batch b[2];
    for (;;) {
        rc[0] = pl_loader_next(l[0], &b[0], &err);
        pl_err err1 = {0};
        rc[1] = pl_loader_next(l[1], &b[1], &err1);
        if (rc[0] || rc[1])
            break;
        void *host[2][MAX_FETCH];
        uint64_t lens[2][MAX_FETCH];
        uint32_t nd = fetch_all(&b[0], cs, host[0], lens[0]);
        int saved = use_cuda;
        use_cuda = 0; /* the host loader's buffers are host memory */
        uint32_t nh = fetch_all(&b[1], NULL, host[1], lens[1]);
        use_cuda = saved;
        b[0].consumer_stream = use_cuda ? (void *)cs : NULL;
        pl_loader_release(l[0], &b[0]);
        if (use_cuda)
            cuda_ok(cudaStreamSynchronize(cs), "cudaStreamSynchronize");
        pl_device_batch h = b[1];
        pl_loader_release(l[1], &b[1]);
        parts++;
        split += h.n_parts > 1;
        if (nd != nh)
            fail("split: %u arrays, the host backend's %u", nd, nh);
        for (uint32_t i = 0; i < nd && i < nh; i++)
            if (lens[0][i] != lens[1][i] ||
                (i ? memcmp(host[0][i], host[1][i], lens[0][i])
                   : slot_differs(host[0][0], host[1][0], lens[0][0]))) {
                fail("split: batch %llu part %u/%u: %s %u differs from the host backend's",
                     (unsigned long long)h.index, h.part, h.n_parts,
                     i == 0 ? "the slot" : "mask", i);
                break;
            }
        for (uint32_t i = 0; i < nd; i++)
            host_buffer_free(host[0][i]);
        for (uint32_t i = 0; i < nh; i++)
            free(host[1][i]);
    }
    if (rc[0] != 1 || rc[1] != 1)
        fail("split: pl_loader_next: %d and %d (%s)", rc[0], rc[1], err.msg);
    else if (!split)
        fail("split: no batch came in parts (the budget is too large)");
    else
        printf("gpu_check: split batches, %s: %llu deliveries, %llu of them parts: OK\n",
               pl_loader_backend(l[0]), (unsigned long long)parts, (unsigned long long)split);
    if (cs)
        cudaStreamDestroy(cs);
    pl_loader_close(l[0]);
    pl_loader_close(l[1]);
}

static int usage(void)
{
    fprintf(stderr, "usage: gpu_check [--backend cuda|host] [--genes N] [--samples N] "
                    "[--scale F] [--payload-dim D] [--types T] | --probe\n");
    return 2;
}

/* --probe: the devices that pertload's CUDA runtime sees, with the runtime
 * and driver versions; 0 with one at least, else 77. */
static int probe(void)
{
#if PL_HAVE_CUDA
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("gpu_check: CUDA runtime %d.%d, driver supports %d.%d\n", rt / 1000, rt % 1000 / 10,
           drv / 1000, drv % 1000 / 10);
    char why[256] = "";
    int n = pl__upload_cuda.devices(why, sizeof why);
    if (n <= 0) {
        printf("SKIP: no CUDA device (%s)\n", why);
        return EXIT_SKIP;
    }
    for (int d = 0; d < n; d++) {
        struct cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, d) == cudaSuccess)
            printf("gpu_check: device %d: %s, compute capability %d.%d, %.1f GiB, %d SMs\n", d,
                   prop.name, prop.major, prop.minor, (double)prop.totalGlobalMem / 1073741824.0,
                   prop.multiProcessorCount);
    }
    return 0;
#else
    printf("SKIP: built without the CUDA path\n");
    return EXIT_SKIP;
#endif
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    uint64_t genes = 400, samples = 3000, dim = 3;
    double scale = 0.004;
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress shows in a log as it comes */
    if (argc == 2 && !strcmp(argv[1], "--probe"))
        return probe();
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc)
            return usage();
        char *end;
        if (!strcmp(argv[i], "--backend"))
            backend = argv[i + 1];
        else if (!strcmp(argv[i], "--scale"))
            scale = strtod(argv[i + 1], &end);
        else if (!strcmp(argv[i], "--genes"))
            genes = strtoull(argv[i + 1], &end, 10);
        else if (!strcmp(argv[i], "--samples"))
            samples = strtoull(argv[i + 1], &end, 10);
        else if (!strcmp(argv[i], "--payload-dim"))
            dim = strtoull(argv[i + 1], &end, 10);
        else if (!strcmp(argv[i], "--types"))
            pl_test_db_types = (uint32_t)strtoul(argv[i + 1], &end, 10);
        else
            return usage();
        if (strcmp(argv[i], "--backend") && (*end || end == argv[i + 1]))
            return usage();
    }
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
        return usage();
    }
    check_kernel(ops);
    pl_test_db t;
    pl_test_db_make(&t, genes, samples, scale, (uint32_t)dim, 7);
    pl_test_db_load(&t);
    printf("gpu_check: database of %llu genes, %llu samples, %u edge types, payload rows of "
           "%llu bytes\n", (unsigned long long)t.n_genes, (unsigned long long)t.n_samples,
           t.n_types, (unsigned long long)t.payload_row_bytes);
    uint64_t largest = check_loader(&t, be);
    if (largest)
        check_split(&t, be, largest);
    pl_test_db_free(&t);
    if (failures) {
        fprintf(stderr, "gpu_check: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("gpu_check: all checks passed on the %s backend\n", ops->name);
    return 0;
}
