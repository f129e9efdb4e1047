/* k-hop neighbourhoods on one core: `pertload bench khop DB`.
 *
 * For each k of --k (default 1,2) the engine computes, for the first
 * --samples stored samples (default 100,000, in input order), the set S and
 * every walked type's edges among S (masks/khop.h), three rounds, the median
 * reported as samples/s with the mean set and edge counts and the number of
 * capped samples. The rows are read and sorted before the clock starts.
 * --dump F writes, for the Python peers (bench/khop_peers.py), the rows
 * measured and, per k, every sample's set and edges: one JSON line per k. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "opts.h"
#include "masks/khop.h"
#include "masks/masks.h"
#include "cli/cli.h"
#include "src/core/progress.h"
#include "src/core/vec.h"

typedef struct run {
    double rate;
    uint64_t genes, edges, capped;
} run;

/* One pass over the samples (ptr/genes), optionally dumping to `dump`. */
static int pass(pl__khop_ctx *x, const pl__khop *kh, const uint64_t *ptr, const int32_t *genes,
                uint64_t n, int32_t *set, int32_t **edges, uint64_t *cap, FILE *dump, run *r)
{
    uint32_t nt = pl__khop_n_types(kh);
    memset(r, 0, sizeof *r);
    double t0 = pl__now();
    for (uint64_t i = 0; i < n; i++) {
        int capped;
        uint32_t m = pl__khop_genes(x, genes + ptr[i], (uint32_t)(ptr[i + 1] - ptr[i]), set,
                                    &capped);
        r->genes += m;
        r->capped += (uint64_t)capped;
        if (dump) {
            fprintf(dump, "%s[%d,[", i ? "," : "", capped);
            for (uint32_t a = 0; a < m; a++)
                fprintf(dump, a ? ",%d" : "%d", set[a]);
            fputc(']', dump);
        }
        for (uint32_t j = 0; j < nt; j++) {
            uint64_t own = pl__khop_owned(kh, j, set, m);
            if (pl__grow(&edges[j], &cap[j], own + 1, sizeof *edges[j]) < 0)
                return -ENOMEM;
            int64_t c = pl__khop_edges(x, j, set, m, edges[j]);
            if (c < 0)
                return (int)c;
            r->edges += (uint64_t)c;
            if (dump) {
                fputs(",[", dump);
                for (int64_t a = 0; a < c; a++)
                    fprintf(dump, a ? ",%d" : "%d", edges[j][a]);
                fputc(']', dump);
            }
        }
        if (dump)
            fputc(']', dump);
    }
    double dt = pl__now() - t0;
    r->rate = dt > 0 ? (double)n / dt : 0;
    return 0;
}

static int cmp_run(const void *a, const void *b)
{
    double x = ((const run *)a)->rate, y = ((const run *)b)->rate;
    return (x > y) - (x < y);
}

int pl_bench_khop(int argc, char **argv)
{
    const char *usage = "usage: pertload bench khop DB [--k K1,K2,...] [--types T1,T2,...] "
                        "[--samples N] [--khop-max-genes M] [--dump F] [--json F]\n";
    const char *path = NULL, *json = NULL, *dump_path = NULL, *ks = "1,2",
               *types_arg = "physical,regulatory";
    unsigned long long n_samples = 100000, max_genes = PL_KHOP_MAX_GENES;
    const pl_bench_opt opts[] = {
        {"--json", PL_BENCH_OPT_STR, &json, NULL},
        {"--dump", PL_BENCH_OPT_STR, &dump_path, NULL},
        {"--k", PL_BENCH_OPT_STR, &ks, NULL},
        {"--types", PL_BENCH_OPT_STR, &types_arg, NULL},
        {"--samples", PL_BENCH_OPT_U64, &n_samples, NULL},
        {"--khop-max-genes", PL_BENCH_OPT_U64, &max_genes, NULL},
    };
    if (pl_bench_opts("bench khop", usage, argc, argv, opts, sizeof opts / sizeof *opts, &path))
        return 2;
    if (pl_bench_begin(usage, path && max_genes >= 1 && max_genes <= UINT32_MAX, NULL, NULL))
        return 2;
    pl_err err = {0};
    pl_db *db = NULL;
    pl__khop *kh = NULL;
    pl__khop_ctx *x = NULL;
    uint64_t *ptr = NULL, gcap = 0, ecap[PL_MAX_TYPES] = {0};
    int32_t *genes = NULL, *set = NULL, *edges[PL_MAX_TYPES] = {0};
    FILE *dump = NULL;
    pl_bench_json j = {0};
    int status = 1, rc = pl_db_open(path, &db, &err);
    uint32_t types[PL_MAX_TYPES];
    int nt = rc == 0 ? pl__khop_parse_types(db, types_arg, types, &err) : rc;
    if (nt < 0) {
        status = pl_cli_fail("bench khop", nt, &err);
        goto out;
    }
    const pl_db_info *info = pl_db_info_get(db);
    uint64_t n = n_samples < info->n_samples ? n_samples : info->n_samples;
    ptr = calloc(n + 1, sizeof *ptr);
    if (!ptr)
        goto oom;
    for (uint64_t i = 0; i < n; i++) {
        pl_sample s;
        uint32_t bad;
        if ((rc = pl_db_sample(db, i, &s, &err)) < 0) {
            status = pl_cli_fail("bench khop", rc, &err);
            goto out;
        }
        if (pl__grow(&genes, &gcap, ptr[i] + s.n_genes + 1, sizeof *genes) < 0)
            goto oom;
        int64_t m = pl__masks_genes((uint32_t)info->n_genes, s.genes, s.n_genes,
                                    genes + ptr[i], &bad);
        ptr[i + 1] = ptr[i] + (uint64_t)(m < 0 ? 0 : m);
    }
    set = malloc(((size_t)info->n_genes + 1) * sizeof *set);
    if (!set)
        goto oom;
    if (dump_path && !(dump = fopen(dump_path, "w"))) {
        fprintf(stderr, "pertload bench khop: %s: %s\n", dump_path, strerror(errno));
        goto out;
    }
    if (pl_bench_json_open(&j, json) < 0)
        goto out;
    pl_bench_json_num(&j, "khop_samples", (double)n);
    pl_bench_json_num(&j, "khop_max_genes", (double)max_genes);
    pl_bench_json_str(&j, "khop_types", types_arg);
    printf("k-hop over %s on one core, %llu samples, cap %llu genes:\n", types_arg,
           (unsigned long long)n, max_genes);
    for (const char *p = ks; *p;) {
        char *end;
        unsigned long k = strtoul(p, &end, 10);
        if (end == p || k > PL_KHOP_MAX_K) {
            fputs(usage, stderr);
            status = 2;
            goto out;
        }
        p = *end == ',' ? end + 1 : end;
        pl__khop_ctx_free(x);
        pl__khop_free(kh);
        x = NULL;
        if ((rc = pl__khop_new(db, types, (uint32_t)nt, (uint32_t)k, (uint32_t)max_genes, &kh,
                               &err)) < 0) {
            status = pl_cli_fail("bench khop", rc, &err);
            goto out;
        }
        if (!(x = pl__khop_ctx_new(kh)))
            goto oom;
        run r[3];
        for (int round = 0; round < 3; round++)
            if ((rc = pass(x, kh, ptr, genes, n, set, edges, ecap, NULL, &r[round])) < 0)
                goto oom;
        qsort(r, 3, sizeof r[0], cmp_run);
        double gs = (double)r[1].genes / (double)(n ? n : 1),
               es = (double)r[1].edges / (double)(n ? n : 1);
        printf("  k = %lu: %.0f samples/s (%.2f us a sample; rounds %.0f - %.0f), %.1f genes and "
               "%.1f edges a sample, %llu capped\n",
               k, r[1].rate, r[1].rate > 0 ? 1e6 / r[1].rate : 0, r[0].rate, r[2].rate, gs, es,
               (unsigned long long)r[1].capped);
        char key[64];
        snprintf(key, sizeof key, "khop_k%lu_samples_per_s", k);
        pl_bench_json_num(&j, key, r[1].rate);
        snprintf(key, sizeof key, "khop_k%lu_genes", k);
        pl_bench_json_num(&j, key, gs);
        snprintf(key, sizeof key, "khop_k%lu_edges", k);
        pl_bench_json_num(&j, key, es);
        snprintf(key, sizeof key, "khop_k%lu_capped", k);
        pl_bench_json_num(&j, key, (double)r[1].capped);
        if (dump) {
            fprintf(dump, "{\"k\":%lu,\"types\":\"%s\",\"samples\":[", k, types_arg);
            run d;
            if ((rc = pass(x, kh, ptr, genes, n, set, edges, ecap, dump, &d)) < 0)
                goto oom;
            fputs("]}\n", dump);
        }
    }
    status = pl_bench_json_close(&j) < 0 ? 1 : 0;
    j.f = NULL;
    if (dump && fclose(dump) != 0) {
        fprintf(stderr, "pertload bench khop: %s: %s\n", dump_path, strerror(errno));
        status = 1;
    }
    dump = NULL;
    goto out;
oom:
    fprintf(stderr, "pertload bench khop: out of memory\n");
    status = 1;
out:
    if (j.f)
        pl_bench_json_close(&j);
    if (dump)
        fclose(dump);
    pl__khop_ctx_free(x);
    pl__khop_free(kh);
    for (int t = 0; t < PL_MAX_TYPES; t++)
        free(edges[t]);
    free(set);
    free(genes);
    free(ptr);
    pl_db_close(db);
    return status;
}
