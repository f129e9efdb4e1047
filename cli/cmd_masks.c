/* pertload masks: the removed positions of one deletion set, for inspection
 * and scripting. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "masks/khop.h"
#include "masks/masks.h"
#include "src/core/error.h"
#include "src/core/progress.h"

static const char *const usage_text =
    "DB (--genes G1,G2,... | --row I | --all) [--json]\n"
    "                      [--khop K [--types T1,T2,...] [--khop-max-genes N]]";

static const char *const help_text =
    "Print the masks of one deletion set: the sorted perturbation indices and,\n"
    "per list kind (every edge type, then gpr, reaction and rmr when the\n"
    "database has metabolism), the removed positions; with an ontology, the\n"
    "affected terms and the removed annotation positions.\n\n"
    "  --genes G1,G2,...  deleted genes by name (an empty list is the empty set)\n"
    "  --row I            the deleted genes of sample row I (input order), with\n"
    "                     the sample's id and labels\n"
    "  --all              compute the masks of every sample of the store on one\n"
    "                     core and print the throughput\n"
    "  --json             one JSON object on one line: {\"perturbation_indices\":\n"
    "                     [...], \"edges\": {\"<type>\": [...], ...}, \"gpr\": [...],\n"
    "                     \"reaction\": [...], \"rmr\": [...], \"reaction_rule\":\n"
    "                     \"gpr\" or \"any\", \"ontology/term\": [...],\n"
    "                     \"ontology/annotation\": [...]}, plus \"row\", \"id\"\n"
    "                     and \"labels\" (by label name, NaN as null) with --row;\n"
    "                     without it, a summary of counts per list\n"
    "  --khop K           also the perturbation neighbourhood: the genes within K\n"
    "                     hops of the deleted genes (edges walked both ways) and,\n"
    "                     per walked type, the edges with both ends among them;\n"
    "                     JSON key \"khop\": {\"k\", \"capped\", \"genes\", \"edges\":\n"
    "                     {\"<type>\": [...]}}; with --all, its throughput\n"
    "  --types T1,T2,...  edge types to walk (default: every type)\n"
    "  --khop-max-genes N the cap on the neighbourhood's genes (default 1024): a\n"
    "                     hop that would pass it is dropped whole and the sample\n"
    "                     is flagged capped\n";

/* A perturbation neighbourhood of the masks command. */
typedef struct khop_run {
    pl__khop *kh;
    pl__khop_ctx *x;
    int32_t *genes, *edges;
    uint32_t n_genes;
    int capped;
    uint64_t n_edges[PL_MAX_TYPES];
    uint64_t edges_off[PL_MAX_TYPES + 1];
    uint64_t cap_edges;
} khop_run;

static void khop_free(khop_run *k)
{
    pl__khop_ctx_free(k->x);
    pl__khop_free(k->kh);
    free(k->genes);
    free(k->edges);
}

/* The neighbourhood of the sorted, unique set pert[0..n). */
static int khop_compute(khop_run *k, const int32_t *pert, uint32_t n, pl_err *err)
{
    uint32_t nt = pl__khop_n_types(k->kh);
    free(k->genes);
    k->genes = malloc((pl__khop_genes_bound(k->kh, n) + 1) * sizeof *k->genes);
    PL_FAIL_IF(!k->genes, err, -ENOMEM, "out of memory");
    k->n_genes = pl__khop_genes(k->x, pert, n, k->genes, &k->capped);
    uint64_t total = 0;
    for (uint32_t j = 0; j < nt; j++) {
        k->edges_off[j] = total;
        total += pl__khop_owned(k->kh, j, k->genes, k->n_genes);
    }
    k->edges_off[nt] = total;
    if (total + 1 > k->cap_edges) {
        free(k->edges);
        k->cap_edges = total + 1;
        k->edges = malloc(k->cap_edges * sizeof *k->edges);
        PL_FAIL_IF(!k->edges, err, -ENOMEM, "out of memory");
    }
    for (uint32_t j = 0; j < nt; j++) {
        int64_t c = pl__khop_edges(k->x, j, k->genes, k->n_genes, k->edges + k->edges_off[j]);
        PL_FAIL_IF(c < 0, err, (int)c, "out of memory");
        k->n_edges[j] = (uint64_t)c;
    }
    return 0;
}

/* A JSON string: quotes, backslashes and control bytes escaped; other bytes,
 * UTF-8 included, as they are. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_ints(FILE *f, const int32_t *v, uint32_t n)
{
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, i ? ",%d" : "%d", (int)v[i]);
    fputc(']', f);
}

/* A float32 label: shortest text that reads back to the same float; NaN (a
 * missing label) as null and infinities as out-of-range numbers, which JSON
 * readers such as Python's take for infinity. */
static void json_float(FILE *f, float x)
{
    if (isnan(x))
        fputs("null", f);
    else if (isinf(x))
        fputs(x > 0 ? "1e999" : "-1e999", f);
    else
        fprintf(f, "%.9g", (double)x);
}

/* Resolve comma-separated gene names. @return the count, or -1 (printed). */
static int64_t parse_genes(const pl_db *db, const char *list, int32_t **out)
{
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    char *copy = strdup(list);
    int32_t *genes = malloc(n * sizeof *genes);
    if (!copy || !genes) {
        free(copy);
        free(genes);
        fprintf(stderr, "pertload masks: out of memory\n");
        return -1;
    }
    int64_t k = 0;
    if (*list) {
        char *save = copy;
        for (char *name = copy; name; name = save) {
            save = strchr(name, ',');
            if (save)
                *save++ = '\0';
            int64_t g = *name ? pl_db_gene_index(db, name) : -1;
            if (g < 0) {
                if (*name)
                    fprintf(stderr, "pertload masks: unknown gene '%s'\n", name);
                else
                    fprintf(stderr, "pertload masks: --genes: empty gene name in '%s'\n",
                            list);
                free(copy);
                free(genes);
                return -1;
            }
            genes[k++] = (int32_t)g;
        }
    }
    free(copy);
    *out = genes;
    return k;
}

/* The ontology lists of a sample (DESIGN section 10), when the database has
 * an ontology: affected terms and removed annotation positions. */
typedef struct onto_lists {
    uint32_t *terms, *ann;
    uint32_t n_terms;
    uint64_t n_ann;
} onto_lists;

static int onto_compute(pl_db *db, const int32_t *genes, uint32_t n, onto_lists *ol, pl_err *err)
{
    if (pl_db_info_get(db)->n_terms == 0)
        return 0;
    pl_ontology *o;
    int rc = pl_ontology_load(db, &o, err);
    if (rc < 0)
        return rc;
    ol->terms = malloc((o->n_terms + 1) * sizeof *ol->terms);
    ol->ann = malloc((o->n_annotations + 1) * sizeof *ol->ann);
    rc = ol->terms && ol->ann ? pl_ontology_removed(o, genes, n, ol->terms, &ol->n_terms,
                                                        ol->ann, &ol->n_ann)
                                  : -ENOMEM;
    pl_ontology_free(o);
    return rc;
}

static void json_u32s(FILE *f, const char *key, const uint32_t *v, uint64_t n)
{
    fprintf(f, ",\"%s\":[", key);
    for (uint64_t i = 0; i < n; i++)
        fprintf(f, i ? ",%u" : "%u", v[i]);
    fputc(']', f);
}

static void print_json(const pl_db_info *info, const pl_graph *g, const pl_masks_result *r,
                       const pl_sample *s, uint64_t row, const onto_lists *ol,
                       const khop_run *kr)
{
    FILE *f = stdout;
    fputc('{', f);
    if (s) {
        fprintf(f, "\"row\":%llu,\"id\":%llu,\"labels\":{", (unsigned long long)row,
                (unsigned long long)s->id);
        for (uint32_t l = 0; l < info->n_labels; l++) {
            if (l)
                fputc(',', f);
            json_string(f, info->label_names[l]);
            fputc(':', f);
            json_float(f, s->labels[l]);
        }
        fputs("},", f);
    }
    fputs("\"perturbation_indices\":", f);
    json_ints(f, r->pert.v, r->pert.n);
    fputs(",\"edges\":{", f);
    for (uint32_t k = 0; k < info->n_types; k++) {
        if (k)
            fputc(',', f);
        json_string(f, pl_graph_list_name(g, k));
        fputc(':', f);
        json_ints(f, r->removed[k].v, r->removed[k].n);
    }
    fputc('}', f);
    for (uint32_t k = info->n_types; k < r->n_lists; k++) {
        fputc(',', f);
        json_string(f, pl_graph_list_name(g, k));
        fputc(':', f);
        json_ints(f, r->removed[k].v, r->removed[k].n);
    }
    if (info->has_metabolism)
        fprintf(f, ",\"reaction_rule\":\"%s\"",
                info->reaction_rule == PL_REACTION_GPR ? "gpr" : "any");
    if (info->n_terms) {
        json_u32s(f, "ontology/term", ol->terms, ol->n_terms);
        json_u32s(f, "ontology/annotation", ol->ann, ol->n_ann);
    }
    if (kr->kh) {
        fprintf(f, ",\"khop\":{\"k\":%u,\"capped\":%d,\"genes\":", pl__khop_k(kr->kh),
                kr->capped);
        json_ints(f, kr->genes, kr->n_genes);
        fputs(",\"edges\":{", f);
        for (uint32_t j = 0; j < pl__khop_n_types(kr->kh); j++) {
            if (j)
                fputc(',', f);
            json_string(f, info->type_names[pl__khop_type(kr->kh, j)]);
            fputc(':', f);
            json_ints(f, kr->edges + kr->edges_off[j], (uint32_t)kr->n_edges[j]);
        }
        fputs("}}", f);
    }
    fputs("}\n", f);
}

static void print_summary(const pl_db_info *info, const pl_graph *g, const pl_masks_result *r,
                          const pl_sample *s, uint64_t row, const onto_lists *ol,
                          const khop_run *kr)
{
    if (s) {
        printf("row %llu: id %llu\nlabels:", (unsigned long long)row,
               (unsigned long long)s->id);
        for (uint32_t l = 0; l < info->n_labels; l++) {
            if (isnan(s->labels[l]))
                printf(" %s=NaN", info->label_names[l]);
            else
                printf(" %s=%.9g", info->label_names[l], (double)s->labels[l]);
        }
        printf("\n");
    }
    printf("deleted genes: %u", r->pert.n);
    for (uint32_t i = 0; i < r->pert.n; i++)
        printf("%s%s (%d)", i ? ", " : " - ", info->gene_names[r->pert.v[i]],
               (int)r->pert.v[i]);
    printf("\nremoved positions:\n");
    uint64_t removed = 0, total = 0;
    for (uint32_t k = 0; k < r->n_lists; k++) {
        uint64_t of = k < info->n_types                           ? info->n_edges[k]
                      : k - info->n_types == PL_LIST_GPR        ? info->n_gpr
                      : k - info->n_types == PL_LIST_REACTION   ? info->n_reactions
                                                                : info->n_rmr;
        printf("  %-28s %10u of %llu\n", pl_graph_list_name(g, k), r->removed[k].n,
               (unsigned long long)of);
        if (k < info->n_types) {
            removed += r->removed[k].n;
            total += of;
        }
    }
    printf("  %-28s %10llu of %llu\n", "(all edge types)", (unsigned long long)removed,
           (unsigned long long)total);
    if (info->n_terms)
        printf("  %-28s %10u of %llu\n  %-28s %10llu of %llu\n", "ontology/term", ol->n_terms,
               (unsigned long long)info->n_terms, "ontology/annotation",
               (unsigned long long)ol->n_ann, (unsigned long long)info->n_term_annotations);
    if (!kr->kh)
        return;
    printf("%u-hop neighbourhood: %u genes%s\nedges with both ends in it:\n",
           pl__khop_k(kr->kh), kr->n_genes, kr->capped ? " (capped)" : "");
    for (uint32_t j = 0; j < pl__khop_n_types(kr->kh); j++)
        printf("  %-28s %10llu\n", info->type_names[pl__khop_type(kr->kh, j)],
               (unsigned long long)kr->n_edges[j]);
}

/* Masks of every stored sample, single-threaded: the throughput figure. */
static int run_all(pl_db *db, pl_graph *g, pl_masks *m, khop_run *kr, pl_err *err)
{
    const pl_db_info *info = pl_db_info_get(db);
    uint64_t removed = 0, digest = 0, khop_genes = 0, khop_edges = 0, khop_capped = 0;
    int rc = 0;
    pl_ontology *o = NULL;
    uint32_t *ot = NULL, *oa = NULL;
    if (info->n_terms) {
        int rc = pl_ontology_load(db, &o, err);
        if (rc < 0)
            return rc;
        ot = malloc((o->n_terms + 1) * sizeof *ot);
        oa = malloc((o->n_annotations + 1) * sizeof *oa);
        if (!ot || !oa) {
            free(ot);
            free(oa);
            pl_ontology_free(o);
            return pl__err(err, -ENOMEM, "out of memory");
        }
    }
    pl__progress pg;
    pl__progress_start(&pg, -1, "masks", info->n_samples);
    double t0 = pl__now();
    for (uint64_t row = 0; row < info->n_samples; row++) {
        pl_sample s;
        pl_masks_result r;
        rc = pl_db_sample(db, row, &s, err);
        if (rc == 0)
            rc = pl_masks_compute(m, s.genes, s.n_genes, &r);
        uint32_t nt = 0;
        uint64_t na = 0;
        if (rc == 0 && o)
            rc = pl_ontology_removed(o, s.genes, s.n_genes, ot, &nt, oa, &na);
        if (rc == 0 && kr->kh) {
            rc = khop_compute(kr, r.pert.v, r.pert.n, err);
            khop_genes += kr->n_genes;
            khop_capped += (uint64_t)kr->capped;
            for (uint32_t j = 0; j < pl__khop_n_types(kr->kh); j++)
                khop_edges += kr->n_edges[j];
        }
        if (rc < 0)
            break;
        removed += nt + na;
        if (nt)
            digest = digest * 31 + ot[nt - 1];
        if (na)
            digest = digest * 31 + oa[na - 1];
        for (uint32_t k = 0; k < r.n_lists; k++) {
            removed += r.removed[k].n;
            if (r.removed[k].n)
                digest = digest * 31 + (uint64_t)r.removed[k].v[r.removed[k].n - 1];
        }
        if ((row & 8191) == 0)
            pl__progress_update(&pg, row, -1);
    }
    double dt = pl__now() - t0;
    free(ot);
    free(oa);
    pl_ontology_free(o);
    if (rc < 0)
        return rc;
    pl__progress_end(&pg, info->n_samples);
    printf("masks of %llu samples (%u lists each%s) in %.2f s on one core: %.0f samples/s, "
           "%.0f removed positions per sample (digest %016llx)\n",
           (unsigned long long)info->n_samples, pl_graph_n_lists(g),
           info->n_terms ? ", + 2 ontology lists" : "", dt,
           dt > 0 ? (double)info->n_samples / dt : 0,
           info->n_samples ? (double)removed / (double)info->n_samples : 0,
           (unsigned long long)digest);
    if (kr->kh)
        printf("with the %u-hop neighbourhoods: %.0f genes and %.0f edges per sample, %llu "
               "capped\n", pl__khop_k(kr->kh),
               info->n_samples ? (double)khop_genes / (double)info->n_samples : 0,
               info->n_samples ? (double)khop_edges / (double)info->n_samples : 0,
               (unsigned long long)khop_capped);
    return 0;
}

int pl_cmd_masks(int argc, char **argv)
{
    const char *path = NULL, *genes_arg = NULL, *row_arg = NULL, *khop_arg = NULL,
               *types_arg = NULL, *max_arg = NULL;
    int json = 0, all = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: pertload masks %s\n\n%s", usage_text, help_text);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "--genes") || !strcmp(argv[i], "--row")) {
            if (i + 1 >= argc)
                return pl_cli_usage("masks", usage_text, "%s needs a value", argv[i]);
            if (argv[i][2] == 'g')
                genes_arg = argv[++i];
            else
                row_arg = argv[++i];
        } else if (!strcmp(argv[i], "--khop") || !strcmp(argv[i], "--types") ||
                   !strcmp(argv[i], "--khop-max-genes")) {
            if (i + 1 >= argc)
                return pl_cli_usage("masks", usage_text, "%s needs a value", argv[i]);
            const char **dst = argv[i][2] == 't' ? &types_arg
                               : argv[i][6]      ? &max_arg
                                                 : &khop_arg;
            *dst = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return pl_cli_usage("masks", usage_text, "unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return pl_cli_usage("masks", usage_text, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!path)
        return pl_cli_usage("masks", usage_text, "expected a database path");
    if (!!genes_arg + !!row_arg + all != 1)
        return pl_cli_usage("masks", usage_text, "give exactly one of --genes, --row and --all");
    unsigned long long row = 0, khop_k = 0, khop_max = PL_KHOP_MAX_GENES;
    if (row_arg && pl_cli_u64("masks", "--row", row_arg, &row) < 0)
        return 2;
    if ((types_arg || max_arg) && !khop_arg)
        return pl_cli_usage("masks", usage_text, "--types and --khop-max-genes need --khop");
    if (khop_arg && (pl_cli_u64("masks", "--khop", khop_arg, &khop_k) < 0 ||
                     (max_arg && pl_cli_u64("masks", "--khop-max-genes", max_arg, &khop_max) < 0)))
        return 2;
    if (khop_k > PL_KHOP_MAX_K)
        return pl_cli_usage("masks", usage_text, "--khop %llu is out of range (0 to %u)",
                            khop_k, PL_KHOP_MAX_K);
    if (khop_arg && (khop_max < 1 || khop_max > UINT32_MAX))
        return pl_cli_usage("masks", usage_text,
                            "--khop-max-genes %llu is out of range (1 to %u)", khop_max,
                            UINT32_MAX);

    pl_db *db = NULL;
    pl_graph *g = NULL;
    pl_masks *m = NULL;
    int32_t *genes = NULL;
    pl_err err = {0};
    pl_sample s;
    pl_masks_result r;
    onto_lists ol = {0};
    khop_run kr = {0};
    int64_t n = 0;
    int status = 1;
    int rc = pl_db_open(path, &db, &err);
    if (rc == 0 && khop_arg) {
        uint32_t types[PL_MAX_TYPES], nt = pl_db_info_get(db)->n_types;
        for (uint32_t t = 0; t < nt; t++)
            types[t] = t;
        int c = types_arg ? pl__khop_parse_types(db, types_arg, types, &err) : (int)nt;
        if (c < 0) {
            fprintf(stderr, "pertload masks: %s\n", err.msg);
            status = 2;
            goto out;
        }
        rc = pl__khop_new(db, types, (uint32_t)c, (uint32_t)khop_k, (uint32_t)khop_max, &kr.kh,
                          &err);
        if (rc == 0 && !(kr.x = pl__khop_ctx_new(kr.kh)))
            rc = -ENOMEM;
    }
    if (rc == 0 && row_arg) {
        rc = pl_db_sample(db, row, &s, &err);
        n = rc == 0 ? s.n_genes : 0;
        genes = rc == 0 ? malloc((size_t)(n ? n : 1) * sizeof *genes) : NULL;
        if (rc == 0 && !genes)
            rc = -ENOMEM;
        if (rc == 0)
            memcpy(genes, s.genes, (size_t)n * sizeof *genes);
    } else if (rc == 0 && genes_arg) {
        n = parse_genes(db, genes_arg, &genes);
        if (n < 0)
            goto out;
    }
    if (rc == 0)
        rc = pl_graph_load(db, &g, &err);
    if (rc == 0 && !(m = pl_masks_new(g)))
        rc = -ENOMEM;
    if (rc == 0 && all) {
        rc = run_all(db, g, m, &kr, &err);
        if (rc == 0)
            status = 0;
        else
            status = pl_cli_fail("masks", rc, &err);
        goto out;
    }
    if (rc == 0)
        rc = pl_masks_compute(m, genes, (uint32_t)n, &r);
    if (rc == 0)
        rc = onto_compute(db, genes, (uint32_t)n, &ol, &err);
    if (rc == 0 && kr.kh)
        rc = khop_compute(&kr, r.pert.v, r.pert.n, &err);
    if (rc < 0) {
        status = pl_cli_fail("masks", rc, &err);
        goto out;
    }
    if (json)
        print_json(pl_db_info_get(db), g, &r, row_arg ? &s : NULL, row, &ol, &kr);
    else
        print_summary(pl_db_info_get(db), g, &r, row_arg ? &s : NULL, row, &ol, &kr);
    status = fflush(stdout) == 0 ? 0 : 1;
    if (status)
        fprintf(stderr, "pertload masks: writing the output: %s\n", strerror(errno));
out:
    khop_free(&kr);
    free(ol.terms);
    free(ol.ann);
    free(genes);
    pl_masks_free(m);
    pl_graph_free(g);
    pl_db_close(db);
    return status;
}
