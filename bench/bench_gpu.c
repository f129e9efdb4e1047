/* The GPU path: what a batch costs to put in device memory.
 *
 * Always, through the in-process loader on its host backend: the bytes each
 * batch uploads (its sparse slot, payload included) and the loader's
 * samples/s with the masks expanded on the CPU by the kernel's algorithm.
 * With a CUDA device, also: per batch, the host-to-device copy of the slot
 * from page-locked memory and the one-launch expansion of its masks (bits,
 * bool), timed with CUDA events on the upload stream; then the loader on the
 * CUDA backend end to end (each batch waited for), in samples/s. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "opts.h"
#include "rate.h"
#include "collate/slot.h"
#include "loader/expand.h"
#include "loader/loader.h"
#include "loader/upload.h"
#include "pl_config.h"
#include "src/core/error.h"
#include "src/core/progress.h"

typedef struct opts {
    const char *db;
    uint32_t batch, threads, depth;
    uint64_t batches;
    pl_bench_json *json; /* figures for the report driver */
} opts;

typedef struct pass {
    uint64_t batches, samples, bytes, most, least;
    double secs; /* from the first batch on: the loading is not counted */
    unsigned char **slots; /* copies of the first slots, when asked (host backend) */
    uint64_t n_slots;
    pl__loader_stats st;
} pass;

static const char *const mode_names[3] = {"none", "bits", "bool"};

/* Take up to o->batches batches from a loader, waiting for each. */
static int run_pass(const opts *o, int backend, uint32_t dense, uint64_t keep, pass *p,
                    pl_err *err)
{
    memset(p, 0, sizeof *p);
    p->least = UINT64_MAX;
    pl_loader_opts lo = {0};
    lo.db = o->db;
    lo.plan.batch_size = o->batch;
    lo.plan.world_size = 1;
    lo.plan.shuffle = 1;
    lo.plan.seed = 1;
    lo.dense = dense;
    lo.threads = o->threads;
    lo.depth = o->depth;
    lo.backend = backend;
    pl_loader *l;
    PL_TRY(pl_loader_open(&lo, &l, err));
    if (keep) {
        p->slots = calloc(keep, sizeof *p->slots);
        if (!p->slots) {
            pl_loader_close(l);
            return pl__err(err, -ENOMEM, "out of memory");
        }
    }
    double t0 = 0;
    int rc = 0;
    while (p->batches < o->batches) {
        pl_device_batch b;
        rc = pl_loader_next(l, &b, err);
        if (rc)
            break;
        rc = pl__loader_sync(l, &b, err);
        if (rc < 0)
            break;
        if (p->batches == 0) {
            t0 = pl__now(); /* the first batch waited for the loading */
        } else {
            p->samples += b.n_samples;
        }
        p->bytes += b.bytes;
        p->most = b.bytes > p->most ? b.bytes : p->most;
        p->least = b.bytes < p->least ? b.bytes : p->least;
        if (p->n_slots < keep) {
            unsigned char *c = malloc(b.bytes);
            if (!c) {
                rc = pl__err(err, -ENOMEM, "out of memory");
                break;
            }
            memcpy(c, b.slot, b.bytes); /* host backend: the "device" is host memory */
            p->slots[p->n_slots++] = c;
        }
        p->batches++;
        pl_loader_release(l, &b);
    }
    pl__loader_stats_get(l, &p->st);
    p->secs = p->batches > 1 ? pl__now() - t0 : 0;
    pl_loader_close(l);
    return rc < 0 ? rc : 0;
}

static void pass_free(pass *p)
{
    for (uint64_t i = 0; i < p->n_slots; i++)
        free(p->slots[i]);
    free(p->slots);
}

static double rate(const pass *p)
{
    return p->secs > 0 ? (double)p->samples / p->secs : 0;
}

#if PL_HAVE_CUDA
/* Copy and expansion of the kept slots on the device, timed with events. */
static int device_times(const opts *o, const pass *host, pl_err *err)
{
    pl_db *db;
    PL_TRY(pl_db_open(o->db, &db, err));
    const pl_db_info *info = pl_db_info_get(db);
    uint32_t n_lists = info->n_types + (info->has_metabolism ? 3 : 0);
    uint64_t lens[PL__EXPAND_MAX], out[2][PL__EXPAND_MAX], mask_bytes[2] = {0, 0};
    for (uint32_t k = 0; k < info->n_types; k++)
        lens[k] = info->n_edges[k];
    if (info->has_metabolism) {
        lens[info->n_types + PL_LIST_GPR] = info->n_gpr;
        lens[info->n_types + PL_LIST_REACTION] = info->n_reactions;
        lens[info->n_types + PL_LIST_RMR] = info->n_rmr;
    }
    lens[n_lists] = info->n_genes;
    for (int m = 0; m < 2; m++)
        for (uint32_t k = 0; k <= n_lists; k++) {
            out[m][k] = mask_bytes[m];
            mask_bytes[m] += (pl__expand_row_bytes(m ? PL_MASK_BOOL : PL_MASK_BITS, lens[k]) *
                                  o->batch + 255) & ~(uint64_t)255;
        }
    const pl__upload_ops *ops = &pl__upload_cuda;
    pl__upload *u = NULL;
    void *pinned = NULL, *dslot = NULL, *dmask = NULL;
    pl__upload_event *ev[4] = {0};
    int rc = ops->open(0, &u, err);
    uint64_t cap = host->most;
    if (rc == 0)
        rc = ops->host_alloc(u, cap, &pinned, err);
    if (rc == 0)
        rc = ops->dev_alloc(u, cap, &dslot, err);
    if (rc == 0)
        rc = ops->dev_alloc(u, mask_bytes[1], &dmask, err);
    for (int i = 0; rc == 0 && i < 4; i++)
        rc = ops->event_new(u, 1, &ev[i], err);
    double copy_ms = 0, bits_ms = 0, bool_ms = 0;
    uint64_t bytes = 0, samples = 0;
    for (uint64_t s = 0; rc == 0 && s < host->n_slots; s++) {
        const struct pl_slot_header *h = (const void *)host->slots[s];
        memcpy(pinned, host->slots[s], h->used);
        pl__expand_job job[2];
        for (int m = 0; rc == 0 && m < 2; m++)
            rc = pl__expand_job_init(&job[m], pinned, m ? PL_MASK_BOOL : PL_MASK_BITS,
                                     info->n_types, info->type_names, n_lists, lens, out[m],
                                     err);
        rc = rc ? rc : ops->record(u, ev[0], err);
        rc = rc ? rc : ops->copy(u, dslot, pinned, h->used, err);
        rc = rc ? rc : ops->record(u, ev[1], err);
        rc = rc ? rc : ops->expand(u, &job[0], dslot, dmask, err);
        rc = rc ? rc : ops->record(u, ev[2], err);
        rc = rc ? rc : ops->expand(u, &job[1], dslot, dmask, err);
        rc = rc ? rc : ops->record(u, ev[3], err);
        rc = rc ? rc : ops->sync(u, ev[3], err);
        if (rc == 0 && s > 0) { /* the first one warms the device up */
            copy_ms += ops->elapsed(u, ev[0], ev[1]);
            bits_ms += ops->elapsed(u, ev[1], ev[2]);
            bool_ms += ops->elapsed(u, ev[2], ev[3]);
            bytes += h->used;
            samples += h->n_samples;
        }
    }
    uint64_t n = host->n_slots > 1 ? host->n_slots - 1 : 0;
    if (rc == 0 && n) {
        printf("\ndevice, per batch of %u (mean of %llu batches; CUDA events on the upload "
               "stream):\n", o->batch, (unsigned long long)n);
        double per[2] = {(double)mask_bytes[0], (double)mask_bytes[1]};
        double copy_per_s = pl_bench_per_s((double)bytes / (double)n, n, copy_ms);
        double bits_per_s = pl_bench_per_s(per[0], n, bits_ms);
        double bool_per_s = pl_bench_per_s(per[1], n, bool_ms);
        printf("  host-to-device copy  %10.0f bytes  %8.3f ms  %6.2f GB/s (page-locked)\n",
               (double)bytes / (double)n, copy_ms / (double)n, copy_per_s / 1e9);
        printf("  expansion, bits      %10.0f bytes  %8.3f ms  %6.2f GB/s written, one launch\n",
               per[0], bits_ms / (double)n, bits_per_s / 1e9);
        printf("  expansion, bool      %10.0f bytes  %8.3f ms  %6.2f GB/s written, one launch\n",
               per[1], bool_ms / (double)n, bool_per_s / 1e9);
        printf("  copy + bits: %.0f samples/s of device time\n",
               pl_bench_per_s((double)samples / (double)n, n, copy_ms + bits_ms));
        pl_bench_json_num(o->json, "device_copy_ms_per_batch", copy_ms / (double)n);
        pl_bench_json_num(o->json, "device_copy_bytes_per_s", copy_per_s);
        pl_bench_json_num(o->json, "device_bits_bytes", per[0]);
        pl_bench_json_num(o->json, "device_bits_bytes_per_s", bits_per_s);
        pl_bench_json_num(o->json, "device_bool_bytes", per[1]);
        pl_bench_json_num(o->json, "device_bool_bytes_per_s", bool_per_s);
        pl_bench_json_num(o->json, "device_bits_ms_per_batch", bits_ms / (double)n);
        pl_bench_json_num(o->json, "device_bool_ms_per_batch", bool_ms / (double)n);
    }
    if (u)
        ops->drain(u, NULL);
    for (int i = 0; i < 4; i++)
        if (ev[i])
            ops->event_free(u, ev[i]);
    if (pinned)
        ops->host_free(u, pinned);
    if (dslot)
        ops->dev_free(u, dslot);
    if (dmask)
        ops->dev_free(u, dmask);
    if (u)
        ops->close(u);
    pl_db_close(db);
    return rc;
}
#endif

int pl_bench_gpu(int argc, char **argv)
{
    const char *usage = "usage: pertload bench gpu DB [--batch-size B] [--batches N] "
                        "[--threads T] [--depth D] [--json FILE]\n";
    pl_bench_json j;
    const char *json = NULL;
    unsigned long long batch = 64, batches = 200, threads = 2, depth = 2;
    opts o = {NULL, 64, 2, 2, 200, &j};
    const pl_bench_opt table[] = {
        {"--batch-size", PL_BENCH_OPT_U64, &batch, NULL},
        {"--batches", PL_BENCH_OPT_U64, &batches, NULL},
        {"--threads", PL_BENCH_OPT_U64, &threads, NULL},
        {"--depth", PL_BENCH_OPT_U64, &depth, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
    };
    if (pl_bench_opts("bench gpu", usage, argc, argv, table, sizeof table / sizeof *table, &o.db))
        return 2;
    o.batch = (uint32_t)(batch > (1u << 20) ? 0 : batch);
    o.batches = batches;
    o.threads = (uint32_t)(threads > 256 ? 0 : threads);
    o.depth = (uint32_t)(depth > 64 ? 0 : depth);
    int st = pl_bench_begin(usage, o.db && o.batch && o.batches >= 2 && o.threads && o.depth >= 2,
                            &j, json);
    if (st)
        return st;
    pl_err err = {0};
    int devices = pl_loader_devices(&err);
    pl_bench_json_num(&j, "devices", devices);
    if (devices == 0)
        printf("%s; measuring through the host backend what would be uploaded.\n", err.msg);
    else
        printf("%d CUDA device%s visible; device 0 is measured.\n", devices,
               devices == 1 ? "" : "s");

    /* What a batch uploads: its sparse slot, the same on either backend. */
    pass p[3];
    memset(p, 0, sizeof p);
    int rc = 0;
    for (uint32_t m = 0; rc == 0 && m < 3; m++) {
        uint64_t keep = devices && m == 0 ? 32 : 0;
        opts om = o;
        if (m == PL_MASK_BOOL && om.batches > 20)
            om.batches = 20; /* 2.5 MB a sample at yeast scale: a few are enough */
        rc = run_pass(&om, PL_BACKEND_HOST, m, keep, &p[m], &err);
    }
    if (rc < 0) {
        fprintf(stderr, "pertload bench gpu: %s\n", err.msg);
        for (int m = 0; m < 3; m++)
            pass_free(&p[m]);
        pl_bench_json_close(&j);
        return 1;
    }
    pl_bench_json_num(&j, "batch_size", o.batch);
    pl_bench_json_num(&j, "batches", (double)p[0].batches);
    pl_bench_json_num(&j, "h2d_bytes_per_batch", (double)p[0].bytes / (double)p[0].batches);
    pl_bench_json_num(&j, "h2d_bytes_least", (double)p[0].least);
    pl_bench_json_num(&j, "h2d_bytes_most", (double)p[0].most);
    printf("\nhost-to-device bytes per batch of %u (the sparse slot, payload included; %llu "
           "batches of a shuffled epoch):\n", o.batch, (unsigned long long)p[0].batches);
    printf("  mean %.0f bytes (%.3f MB), least %llu, most %llu; target <= 1 MB a batch of 64: "
           "%s\n", (double)p[0].bytes / (double)p[0].batches,
           (double)p[0].bytes / (double)p[0].batches / 1e6, (unsigned long long)p[0].least,
           (unsigned long long)p[0].most,
           o.batch != 64 ? "(not a batch of 64)"
           : (double)p[0].bytes / (double)p[0].batches <= 1e6 ? "met" : "NOT met");
    printf("  buffers: %u host x %.2f MB (sized for the largest possible batch), %u device x "
           "%.2f MB (+ %.2f MB of bits or %.2f MB of bool masks)\n", p[0].st.host_buffers,
           (double)p[0].st.slot_bytes / 1e6, p[0].st.device_buffers,
           (double)p[0].st.slot_bytes / 1e6, (double)p[1].st.mask_bytes / 1e6,
           (double)p[2].st.mask_bytes / 1e6);
    printf("\nhost backend (copy thread, masks expanded on the CPU), %u worker thread%s, "
           "depth %u:\n", o.threads, o.threads == 1 ? "" : "s", o.depth);
    printf("  %-6s %10s %14s\n", "masks", "batches", "samples/s");
    for (int m = 0; m < 3; m++) {
        printf("  %-6s %10llu %14.0f\n", mode_names[m], (unsigned long long)p[m].batches,
               rate(&p[m]));
        char key[64];
        snprintf(key, sizeof key, "host_backend_%s_samples_per_s", mode_names[m]);
        pl_bench_json_num(&j, key, rate(&p[m]));
    }
#if PL_HAVE_CUDA
    if (devices > 0) {
        rc = device_times(&o, &p[0], &err);
        printf("\nCUDA backend end to end (each batch's event waited for), %u worker thread%s, "
               "depth %u:\n", o.threads, o.threads == 1 ? "" : "s", o.depth);
        printf("  %-6s %10s %14s\n", "masks", "batches", "samples/s");
        for (uint32_t m = 0; rc == 0 && m < 3; m++) {
            pass c;
            rc = run_pass(&o, PL_BACKEND_CUDA, m, 0, &c, &err);
            if (rc == 0) {
                printf("  %-6s %10llu %14.0f\n", mode_names[m], (unsigned long long)c.batches,
                       rate(&c));
                char key[64];
                snprintf(key, sizeof key, "cuda_%s_samples_per_s", mode_names[m]);
                pl_bench_json_num(&j, key, rate(&c));
            }
            pass_free(&c);
        }
        if (rc < 0)
            fprintf(stderr, "pertload bench gpu: %s\n", err.msg);
    }
#endif
    for (int m = 0; m < 3; m++)
        pass_free(&p[m]);
    if (pl_bench_json_close(&j) < 0)
        rc = -1;
    return rc < 0 ? 1 : 0;
}
