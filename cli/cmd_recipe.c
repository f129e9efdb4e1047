/* pertload recipe check: read every source of a dataset recipe and report
 * what a build would take from it, without building. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "preprocess/import/recipe/recipe.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"

static const char *usage_text =
    "check [--root DIR] [--strict] [--unresolved FILE] [--max-line N] [--max-text N] RECIPE";

static void help(void)
{
    printf("usage: pertload recipe %s\n\n"
           "Reads the gene list, alias tables and every edge source of RECIPE (YAML) and\n"
           "prints per source: rows read, rows dropped by the format's filters, rows with\n"
           "an unresolved gene name, duplicates removed by the pair policy, edges kept;\n"
           "for the metabolism: reactions, metabolites, stoichiometry entries, rules, GPR\n"
           "pairs, unresolved gene names; for the ontology: terms, annotations, strata,\n"
           "annotation rows, unresolved gene names; per sample table: rows, samples\n"
           "kept, rows dropped for an unresolved gene, labels and categories.\n"
           "An edge source a build would refuse (it keeps no edge, or resolves under its\n"
           "min_resolved share of rows) is reported as the build reports it, and the\n"
           "exit status is 1.\n\n"
           "  --root DIR         base folder of the recipe's relative paths\n"
           "  --strict           an unresolved gene name is an error (file:line:col)\n"
           "  --unresolved FILE  write every unresolved name: source, name, count, first\n"
           "                     file:line (tab-separated, one header line)\n"
           "  --max-line N       the longest line of an input, in bytes (k, M, G: powers\n"
           "                     of 1024; default 1M; the recipe key max_line)\n"
           "  --max-text N       the largest model text held in memory and zstd window\n"
           "                     (default 256M, windows up to 2G; the recipe key max_text)\n",
           usage_text);
}

static int write_names(FILE *f, const char *source, const char *file, const pl_unres *u)
{
    for (uint32_t i = 0; f && i < pl__unres_distinct(u); i++) {
        uint64_t count, line;
        const char *name = pl__unres_name(u, i, &count, &line);
        if (fprintf(f, "%s\t", source) < 0 || pl_cli_put_name(f, name, strlen(name), 0) < 0 ||
            fprintf(f, "\t%llu\t%s:%llu\n", (unsigned long long)count, file,
                    (unsigned long long)line) < 0)
            return -1;
    }
    return 0;
}

int pl_cli_write_unresolved(FILE *f, const pl_imp_source *s, const pl_unres *u)
{
    return write_names(f, s->name, s->file, u);
}

int pl_cli_recipe_more(const pl_recipe *r, const pl_names *nm, int strict, FILE *out,
                       FILE *uf, const char *unres_path, uint64_t *unresolved, pl_err *err)
{
    int rc = 0;
    if (r->metabolism.model != PL_METAB_NONE) {
        pl_metab m;
        rc = pl__recipe_metab(r, nm, strict, &m, err);
        if (rc == 0 && out)
            fprintf(out, "metabolism format=%s reactions=%u metabolites=%u rmr=%llu rules=%llu "
                    "gpr=%llu model_genes=%llu unresolved=%llu unresolved_names=%u file=%s\n",
                   r->metabolism.format, m.reactions.n,
                   m.metabolites.n, (unsigned long long)m.n_rmr, (unsigned long long)m.n_rules,
                   (unsigned long long)m.n_gpr, (unsigned long long)m.n_model_genes,
                   (unsigned long long)m.unresolved, pl__unres_distinct(&m.names),
                   r->metabolism.file);
        if (rc == 0) {
            *unresolved += m.unresolved;
            if (write_names(uf, "metabolism", r->metabolism.file, &m.names) < 0)
                rc = pl__err(err, -EIO, "%s: write failed", unres_path);
        }
        pl__metab_free(&m);
        if (rc < 0)
            return rc;
    }
    if (r->ontology.format) {
        const pl_recipe_ontology *o = &r->ontology;
        pl_onto on = {0};
        pl_onto_stats st = {0};
        rc = pl__recipe_ontology(r, nm, strict, &on, &st, err);
        const char *names = o->annotations ? o->annotations : o->file;
        if (rc == 0 && out)
            fprintf(out, "ontology format=%s terms=%u annotations=%llu strata=%u rows=%llu "
                    "unresolved=%llu unresolved_names=%u file=%s%s%s\n", o->format, on.n_terms,
                    (unsigned long long)on.n_ann, on.n_strata, (unsigned long long)st.rows,
                    (unsigned long long)st.unknown_genes.total,
                    pl__unres_distinct(&st.unknown_genes), o->file,
                    o->annotations ? " annotation_file=" : "",
                    o->annotations ? o->annotations : "");
        if (rc == 0) {
            *unresolved += st.unknown_genes.total;
            if (write_names(uf, "ontology", names, &st.unknown_genes) < 0)
                rc = pl__err(err, -EIO, "%s: write failed", unres_path);
        }
        pl__onto_stats_free(&st);
        pl__onto_free(&on);
        if (rc < 0)
            return rc;
    }
    /* the tables append into one result, as a build reads them */
    pl_smp_result res = {0};
    uint32_t seen = 0;
    for (uint32_t i = 0; rc == 0 && i < r->n_tables; i++) {
        const pl_smp_spec *s = &r->tables[i];
        uint64_t rows = res.rows, kept = res.kept, dropped = res.dropped;
        rc = pl__smp_read(s, nm, strict, NULL, NULL, &res, err);
        if (rc < 0)
            break;
        if (out)
            fprintf(out, "samples format=%s rows=%llu kept=%llu dropped_unresolved=%llu "
                    "unresolved_names=%u labels=%u categories=%u file=%s\n",
               s->format == PL_SMP_SGA ? "sga" : "table", (unsigned long long)(res.rows - rows),
               (unsigned long long)(res.kept - kept), (unsigned long long)(res.dropped - dropped),
               pl__unres_distinct(&res.names) - seen, res.n_labels, res.n_categories, s->file);
        *unresolved += res.dropped - dropped;
        rc = pl__smp_check_resolved(s, res.rows - rows, res.kept - kept, &res.names, err);
        for (uint32_t k = seen; uf && k < pl__unres_distinct(&res.names); k++) {
            uint64_t count, line;
            const char *name = pl__unres_name(&res.names, k, &count, &line);
            if (fprintf(uf, "samples\t%s\t%llu\t%s:%llu\n", name, (unsigned long long)count,
                        s->file, (unsigned long long)line) < 0)
                rc = pl__err(err, -EIO, "%s: write failed", unres_path);
        }
        seen = pl__unres_distinct(&res.names);
    }
    pl__smp_result_free(&res);
    if (rc < 0)
        return rc;
    return 0;
}

static int check(const char *path, const char *root, int strict, const char *unres_path,
                 const uint64_t limit[2])
{
    pl_err err = {0};
    pl_recipe *r;
    pl__src_set_limits(limit[0], limit[1]);
    int rc = pl__recipe_load(path, root, &r, &err);
    if (rc < 0)
        return pl_cli_fail("recipe", rc, &err);
    pl__recipe_limits(r, limit[0], limit[1]);
    pl_alias_stats ast[PL_RECIPE_MAX_ALIASES];
    pl_names *nm = NULL;
    FILE *uf = NULL;
    int status = 0;
    rc = pl__recipe_names(r, &nm, ast, &err);
    if (rc < 0)
        goto fail;
    printf("recipe %s\n", path);
    printf("genes %u file=%s\n", pl__names_count(nm), r->genes);
    for (uint32_t i = 0; i < r->n_aliases; i++)
        printf("aliases file=%s rows=%llu added=%llu gene_not_listed=%llu ambiguous=%llu\n",
               r->aliases[i].path, (unsigned long long)ast[i].rows,
               (unsigned long long)ast[i].added, (unsigned long long)ast[i].no_gene,
               (unsigned long long)ast[i].ambiguous);
    if (unres_path) {
        uf = fopen(unres_path, "w");
        if (!uf) {
            rc = pl__err(&err, -errno, "%s: cannot create: %s", unres_path, strerror(errno));
            goto fail;
        }
        fprintf(uf, "source\tname\tcount\tfirst_seen\n");
    }
    uint64_t kept = 0, unresolved = 0;
    int refused = 0; /* the first source a build would refuse */
    /* The sources of one file split by mode (pl_imp_source.shared) are read
     * together, in one pass, as the build reads them; each is then reported
     * with the time of that pass. */
    pl_imp_result group[PL_MAX_TYPES];
    uint32_t first = 0, k = 0; /* group[j] is the result of source first + j */
    double secs = 0;
    for (uint32_t i = 0; i < r->n_sources; i++) {
        const pl_imp_source *s = &r->sources[i];
        if (i >= first + k) {
            struct timespec t0, t1;
            first = i, k = s->shared > 1 ? s->shared : 1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            rc = k > 1 ? pl__imp_run_shared(nm, s, k, strict, NULL, NULL, group, &err)
                       : pl__imp_run(nm, s, strict, NULL, NULL, group, &err);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (rc < 0) {
                for (uint32_t j = 0; j < k; j++)
                    pl__unres_free(&group[j].names);
                goto fail;
            }
            secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        }
        pl_imp_result res = group[i - first];
        printf("source %s format=%s rows=%llu filtered=%llu unresolved=%llu "
               "unresolved_names=%u duplicates=%llu kept=%llu pairs=%s file=%s "
               "(%.1f MB in %.2f s)\n",
               s->name, s->fmt->name, (unsigned long long)res.read.rows,
               (unsigned long long)res.read.filtered, (unsigned long long)res.unresolved,
               pl__unres_distinct(&res.names), (unsigned long long)res.duplicates,
               (unsigned long long)res.kept, s->undirected ? "unordered" : "as_listed", s->file,
               (double)res.read.bytes / 1e6, secs);
        kept += res.kept;
        unresolved += res.unresolved;
        /* The build's resolution check, reported here for every source. */
        pl_err cerr = {0};
        int crc = pl__imp_check_resolved(s, &res, &cerr);
        if (crc < 0) {
            pl_cli_fail("recipe", crc, &cerr);
            refused = crc;
        }
        int bad = pl_cli_write_unresolved(uf, s, &res.names) < 0;
        pl__unres_free(&group[i - first].names);
        if (bad) {
            for (uint32_t j = i - first + 1; j < k; j++)
                pl__unres_free(&group[j].names);
            rc = pl__err(&err, -EIO, "%s: write failed", unres_path);
            goto fail;
        }
    }
    rc = pl_cli_recipe_more(r, nm, strict, stdout, uf, unres_path, &unresolved, &err);
    if (rc < 0)
        goto fail;
    printf("total sources=%u kept=%llu unresolved=%llu\n", r->n_sources,
           (unsigned long long)kept, (unsigned long long)unresolved);
    const pl_recipe_metabolism *m = &r->metabolism;
    if (m->format && m->model == PL_METAB_NONE)
        printf("metabolism format=%s reactions=%s gpr=%s rules=%s rmr=%s (read by build)\n",
               m->format, m->reactions ? m->reactions : "-", m->gpr ? m->gpr : "-",
               m->rules ? m->rules : "-", m->rmr ? m->rmr : "-");
    if (r->samples.format)
        printf("samples format=%s file=%s payload=%s (read by build)\n", r->samples.format,
               r->samples.file, r->samples.payload ? r->samples.payload : "-");
    for (uint32_t i = 0; i < r->n_features; i++)
        printf("features %s file=%s (read by build)\n", r->feature_types[i],
               r->feature_files[i]);
    if (uf && fclose(uf) != 0) {
        uf = NULL;
        rc = pl__err(&err, -EIO, "%s: write failed", unres_path);
        goto fail;
    }
    uf = NULL;
    status = refused < 0; /* the messages are out already */
    goto done;
fail:
    status = pl_cli_fail("recipe", rc, &err);
    if (uf) {
        fclose(uf);
        remove(unres_path); /* no half-written list */
    }
done:
    pl__names_free(nm);
    pl__recipe_free(r);
    fflush(stdout);
    return status;
}

int pl_cmd_recipe(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        help();
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "check"))
        return pl_cli_usage("recipe", usage_text, "expected the subcommand 'check'");
    const char *root = NULL, *unres = NULL, *path = NULL;
    uint64_t limit[2] = {0, 0};
    int strict = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        } else if (!strcmp(argv[i], "--strict")) {
            strict = 1;
        } else if (!strcmp(argv[i], "--root") || !strcmp(argv[i], "--unresolved")) {
            if (i + 1 >= argc)
                return pl_cli_usage("recipe", usage_text, "%s needs a value", argv[i]);
            *(argv[i][2] == 'r' ? &root : &unres) = argv[i + 1];
            i++;
        } else if (!strcmp(argv[i], "--max-line") || !strcmp(argv[i], "--max-text")) {
            if (i + 1 >= argc || pl__src_parse_limit(argv[i + 1], &limit[argv[i][6] == 't']) < 0)
                return pl_cli_usage("recipe", usage_text, "%s wants a number of bytes (4M, 1G)",
                                    argv[i]);
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return pl_cli_usage("recipe", usage_text, "unknown option '%s'", argv[i]);
        } else if (path) {
            return pl_cli_usage("recipe", usage_text, "more than one recipe");
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return pl_cli_usage("recipe", usage_text, "no recipe given");
    return check(path, root, strict, unres, limit);
}
