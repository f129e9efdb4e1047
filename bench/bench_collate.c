/* Collation throughput on one core: sparse, dense bits and dense bool, each
 * beside the memset roofline of the bytes it writes, measured in the same run.
 *
 * Batches of a shuffled plan are collated into slot-sized buffers used in
 * turn, as a worker fills the slots of a ring (SLOTS of them, so that dense
 * batches do not stay in the caches between uses, as in `serve`); after each,
 * the roofline writes the same number of bytes with memset into the same
 * buffer. With an ontology in the database, batches carry its lists, as
 * served ones do, unless --no-ontology. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "opts.h"
#include "collate/collate.h"
#include "loader/io.h"
#include "loader/plan.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "src/core/error.h"
#include "src/core/progress.h"

#define SLOTS 4

typedef struct run {
    double secs, memset_secs, cpu_secs;
    uint64_t samples, bytes;
} run;

static int collate_run(pl_db *db, pl_graph *g, const pl__table *t, pl_plan *plan,
                       const pl_ontology *onto, uint32_t dense, uint64_t max_batches, run *out,
                       pl_err *err)
{
    uint32_t B = plan->o.batch_size;
    pl__collate_cfg cfg;
    pl__collate_cfg_init(&cfg, db, g, B, dense);
    cfg.payload_row_bytes = 0; /* payload reads are the loader's, not collation's */
    cfg.onto = onto;
    uint64_t most = 0; /* the largest sample's ontology lists */
    for (uint64_t r = 0; onto && r < t->n; r++) {
        uint64_t b = pl__collate_onto_bound(&cfg, t->genes + t->gptr[r],
                                            (uint32_t)(t->gptr[r + 1] - t->gptr[r]));
        most = b > most ? b : most;
    }
    uint64_t cap = pl__collate_slot_bytes(&cfg, B, (uint64_t)B * t->max_genes,
                                          (uint64_t)B * (t->max_bound + most));
    uint64_t stride = (cap + 4095) & ~(uint64_t)4095;
    unsigned char *slots = aligned_alloc(4096, SLOTS * stride);
    uint64_t scratch_len = t->max_kind_bound + PL__MASKS_PAD;
    int32_t *scratch = malloc(scratch_len * 4);
    uint64_t *rows = malloc(B * 8), *ids = malloc(B * 8);
    uint32_t *ng = malloc(B * 4);
    const int32_t **genes = malloc(B * sizeof *genes);
    const float **labels = malloc(B * sizeof *labels);
    int rc = slots && scratch && rows && ids && ng && genes && labels
                 ? 0
                 : pl__err(err, -ENOMEM, "out of memory for a %llu-byte slot",
                           (unsigned long long)cap);
    memset(out, 0, sizeof *out);
    if (rc == 0)
        memset(slots, 0, SLOTS * stride); /* fault the pages in before timing */
    uint64_t nb = pl_plan_n_batches(plan);
    if (nb > max_batches)
        nb = max_batches;
    /* Each batch's collation is followed by the roofline's memset of the same
     * bytes, so both see the same machine state on a noisy host. */
    for (uint64_t b = 0; rc == 0 && b < nb; b++) {
        unsigned char *slot = slots + (b % SLOTS) * stride;
        uint32_t n = pl_plan_batch(plan, b, rows);
        for (uint32_t i = 0; i < n; i++) {
            ids[i] = t->ids[rows[i]];
            genes[i] = t->genes + t->gptr[rows[i]];
            ng[i] = (uint32_t)(t->gptr[rows[i] + 1] - t->gptr[rows[i]]);
            labels[i] = t->labels + rows[i] * t->n_labels;
        }
        pl__batch_src src = {.n = n, .ids = ids, .rows = rows, .genes = genes, .n_genes = ng,
                             .labels = labels};
        double c0 = pl__cpu_now(), t0 = pl__now();
        rc = pl__collate(&cfg, &src, slot, cap, b, 0, scratch, scratch_len, err);
        double t1 = pl__now();
        out->cpu_secs += pl__cpu_now() - c0;
        uint64_t used = ((const struct pl_slot_header *)slot)->used;
        memset(slot, (int)(b & 0x7F), used);
        double t2 = pl__now();
        if (slot[used - 1] != (unsigned char)(b & 0x7F))
            rc = pl__err(err, PL_ERANGE, "memset check failed");
        out->secs += t1 - t0;
        out->memset_secs += t2 - t1;
        out->samples += n;
        out->bytes += used;
    }
    free(slots);
    free(scratch);
    free(rows);
    free(ids);
    free(ng);
    free(genes);
    free(labels);
    return rc;
}

/* The outputs measured, in the order of want[] below. */
static const char *const names[3] = {"sparse", "bits", "bool"};

/* --outputs: which of sparse, bits and bool (comma-separated) are measured,
 * into want[3]; refused when none is. */
static int parse_outputs(const char *o, void *dst)
{
    int *want = dst;
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(o, names[k]);
        size_t len = strlen(names[k]);
        want[k] = at && (at == o || at[-1] == ',') && (at[len] == ',' || !at[len]);
    }
    return want[0] || want[1] || want[2] ? 0 : -1;
}

int pl_bench_collate(int argc, char **argv)
{
    const char *usage = "usage: pertload bench collate DB [--batch-size B] [--samples N] "
                        "[--outputs sparse,bits,bool] [--no-ontology] [--json FILE]\n";
    const char *path = NULL, *json = NULL;
    unsigned long long B = 64, n_samples = 200000;
    int want[3] = {1, 1, 1}, no_onto = 0;
    const pl_bench_opt opts[] = {
        {"--no-ontology", PL_BENCH_OPT_FLAG, &no_onto, NULL},
        {"--batch-size", PL_BENCH_OPT_U64, &B, NULL},
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
        {"--outputs", PL_BENCH_OPT_FN, want, parse_outputs},
        {"--samples", PL_BENCH_OPT_U64, &n_samples, NULL},
    };
    if (pl_bench_opts("bench collate", usage, argc, argv, opts, sizeof opts / sizeof *opts,
                      &path))
        return 2;
    pl_bench_json j;
    int st = pl_bench_begin(usage, path && B, &j, json);
    if (st)
        return st;
    pl_err err = {0};
    pl_db *db = NULL;
    pl_graph *g = NULL;
    pl_plan *plan = NULL;
    pl__table t = {0};
    pl_ontology *onto = NULL;
    int rc = pl_db_open(path, &db, &err);
    if (rc == 0)
        rc = pl_graph_load(db, &g, &err);
    if (rc == 0)
        rc = pl__table_load(db, g, PL_IO_AUTO, &t, &err);
    if (rc == 0 && !no_onto && pl_db_info_get(db)->n_terms)
        rc = pl_ontology_load(db, &onto, &err);
    pl_plan_opts po = {.n_samples = t.n, .seed = 1, .world_size = 1,
                       .batch_size = (uint32_t)B, .shuffle = 1};
    if (rc == 0)
        rc = pl_plan_new(&po, &plan, &err);
    if (rc < 0) {
        fprintf(stderr, "pertload bench collate: %s\n", err.msg);
        goto out;
    }
    printf("collation on one core, batches of %llu from a shuffled plan, into one slot "
           "buffer; roofline = memset of the same bytes per batch%s\n", B,
           onto ? "; with the ontology lists" : "");
    printf("  %-7s %9s %14s %12s %14s %16s %9s\n", "output", "samples", "samples/s",
           "MB/batch", "GB/s written", "memset samples/s", "of memset");
    for (uint32_t dense = 0; rc == 0 && dense < 3; dense++) {
        if (!want[dense])
            continue;
        run r;
        /* Dense bool writes ~2.5 MB a sample: fewer samples keep it short. */
        uint64_t want = dense == PL_DENSE_BOOL ? n_samples / 20 : dense ? n_samples / 4
                                                                        : n_samples;
        uint64_t batches = (want + B - 1) / B;
        rc = collate_run(db, g, &t, plan, onto, dense, batches ? batches : 1, &r, &err);
        if (rc < 0)
            break;
        double rate = r.secs > 0 ? (double)r.samples / r.secs : 0;
        double roof = r.memset_secs > 0 ? (double)r.samples / r.memset_secs : 0;
        printf("  %-7s %9llu %14.0f %12.3f %14.2f %16.0f %8.0f%%\n", names[dense],
               (unsigned long long)r.samples, rate,
               (double)r.bytes / (double)(r.samples / B ? r.samples / B : 1) / 1e6,
               r.secs > 0 ? (double)r.bytes / r.secs / 1e9 : 0, roof,
               roof > 0 ? 100.0 * rate / roof : 0);
        char key[64];
        snprintf(key, sizeof key, "%s_samples_per_s", names[dense]);
        pl_bench_json_num(&j, key, rate);
        pl_bench_json_num(&j, "batch_size", (double)B);
        snprintf(key, sizeof key, "%s_cpu_samples_per_s", names[dense]);
        pl_bench_json_num(&j, key, r.cpu_secs > 0 ? (double)r.samples / r.cpu_secs : 0);
        snprintf(key, sizeof key, "%s_memset_samples_per_s", names[dense]);
        pl_bench_json_num(&j, key, roof);
        snprintf(key, sizeof key, "%s_bytes_per_sample", names[dense]);
        pl_bench_json_num(&j, key, r.samples ? (double)r.bytes / (double)r.samples : 0);
        snprintf(key, sizeof key, "%s_samples", names[dense]);
        pl_bench_json_num(&j, key, (double)r.samples);
    }
    if (rc < 0)
        fprintf(stderr, "pertload bench collate: %s\n", err.msg);
out:
    pl_plan_free(plan);
    pl__table_free(&t);
    pl_ontology_free(onto);
    pl_graph_free(g);
    pl_db_close(db);
    if (pl_bench_json_close(&j) < 0)
        rc = -1;
    return rc < 0 ? 1 : 0;
}
