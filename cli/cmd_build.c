/* pertload build: input files -> database. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preprocess/import/recipe/recipe_build.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"

static const char usage[] =
    "-o DB --genes F [--edges NAME=FILE...] [--min-score NAME=X]... [--reactions F]\n"
    "       [--gpr F | --rules F] [--reaction-rule any|gpr] [--rmr F] --samples F\n"
    "       [--categories COL,...] [--payload F.npy] [--node-features TYPE=F.npy]...\n"
    "       [--drop-unknown-genes] [--quiet]\n"
    "       [--ontology F.obo --annotations F.gaf [--go-namespace NS,...]\n"
    "        [--go-relations is_a,part_of,...] [--evidence C,... | --exclude-evidence C,...]\n"
    "        | --ontology-dcell F] [--min-term-genes N]\n"
    "   or: pertload build --recipe FILE [--root DIR] [--strict] [--unresolved FILE]\n"
    "       [--max-line N] [--max-text N] [--reaction-rule any|gpr] -o DB [--quiet]";

/* Parse the arguments into `o`, `min_score` and `quiet`: -1 to go on, else
 * the exit status. The edge type names are strndup'ed into `names`, o->n_types
 * of them, which the caller frees whatever the outcome. */
/* Node features of --node-features TYPE=FILE: the type names are strndup'ed
 * (freed by the caller), the files point into argv. */
typedef struct feature_args {
    const char *types[PL_N_NODE_TYPES], *files[PL_N_NODE_TYPES];
    size_t n;
} feature_args;

static int parse(int argc, char **argv, pl_build_opts *o, const char **names,
                 const char **files, double *min_score, int *quiet, feature_args *fa)
{
    const char *cmd = "build";
    const char *score_spec[PL_MAX_TYPES];
    size_t n_scores = 0;
    o->progress = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **target = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: pertload build %s\n", usage);
            return 0;
        } else if (!strcmp(a, "--drop-unknown-genes")) {
            o->drop_unknown_genes = 1;
            continue;
        } else if (!strcmp(a, "--quiet")) {
            *quiet = 1;
            o->progress = 0;
            continue;
        }
        if (i + 1 >= argc)
            return pl_cli_usage(cmd, usage, "%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "-o") || !strcmp(a, "--out"))
            target = &o->out;
        else if (!strcmp(a, "--genes"))
            target = &o->genes;
        else if (!strcmp(a, "--reactions"))
            target = &o->reactions;
        else if (!strcmp(a, "--gpr"))
            target = &o->gpr;
        else if (!strcmp(a, "--rmr"))
            target = &o->rmr;
        else if (!strcmp(a, "--rules"))
            target = &o->rules;
        else if (!strcmp(a, "--samples"))
            target = &o->samples;
        else if (!strcmp(a, "--categories"))
            target = &o->categories;
        else if (!strcmp(a, "--payload"))
            target = &o->payload;
        else if (!strcmp(a, "--ontology"))
            target = &o->ontology;
        else if (!strcmp(a, "--annotations"))
            target = &o->annotations;
        else if (!strcmp(a, "--ontology-dcell"))
            target = &o->ontology_dcell;
        else if (!strcmp(a, "--go-namespace"))
            target = &o->go_namespaces;
        else if (!strcmp(a, "--go-relations"))
            target = &o->go_relations;
        else if (!strcmp(a, "--evidence"))
            target = &o->evidence;
        else if (!strcmp(a, "--exclude-evidence"))
            target = &o->exclude_evidence;
        if (target) {
            *target = v;
            continue;
        }
        if (!strcmp(a, "--min-term-genes")) {
            unsigned long long n;
            if (pl_cli_u64(cmd, a, v, &n) < 0)
                return 2;
            if (n > UINT32_MAX)
                return pl_cli_usage(cmd, usage, "--min-term-genes %s is too large", v);
            o->min_term_genes = (uint32_t)n;
            continue;
        }
        if (!strcmp(a, "--reaction-rule")) {
            if (strcmp(v, "any") && strcmp(v, "gpr"))
                return pl_cli_usage(cmd, usage, "--reaction-rule wants any or gpr, got '%s'",
                                    v);
            o->reaction_rule = !strcmp(v, "gpr") ? PL_REACTION_GPR : PL_REACTION_ANY;
            continue;
        }
        const char *eq = strchr(v, '=');
        if (!strcmp(a, "--edges")) {
            if (!eq || eq == v || !eq[1])
                return pl_cli_usage(cmd, usage, "--edges wants NAME=FILE, got '%s'", v);
            if (o->n_types == PL_MAX_TYPES)
                return pl_cli_usage(cmd, usage, "at most %d edge types", PL_MAX_TYPES);
            if (!(names[o->n_types] = strndup(v, (size_t)(eq - v))))
                return pl_cli_fail(cmd, -ENOMEM, NULL);
            files[o->n_types++] = eq + 1;
        } else if (!strcmp(a, "--node-features")) {
            if (!eq || eq == v || !eq[1])
                return pl_cli_usage(cmd, usage, "--node-features wants TYPE=FILE.npy, got '%s'",
                                    v);
            if (fa->n == PL_N_NODE_TYPES)
                return pl_cli_usage(cmd, usage, "--node-features: at most %d (one per node "
                                    "type)", PL_N_NODE_TYPES);
            if (!(fa->types[fa->n] = strndup(v, (size_t)(eq - v))))
                return pl_cli_fail(cmd, -ENOMEM, NULL);
            fa->files[fa->n++] = eq + 1;
        } else if (!strcmp(a, "--min-score")) {
            if (!eq || eq == v || !eq[1] || n_scores == PL_MAX_TYPES)
                return pl_cli_usage(cmd, usage, "--min-score wants NAME=X, got '%s'", v);
            score_spec[n_scores++] = v;
        } else {
            return pl_cli_usage(cmd, usage, "unknown option '%s'", a);
        }
    }
    if (!o->out || !o->genes || !o->samples ||
        (o->n_types == 0 && !o->gpr && !o->rules && !o->rmr && !o->reactions && !o->ontology &&
         !o->ontology_dcell))
        return pl_cli_usage(cmd, usage, "-o, --genes and --samples are required, and --edges "
                            "unless the database has metabolism (--gpr, --rules, --rmr) or an "
                            "ontology (--ontology, --ontology-dcell)");
    for (size_t t = 0; t < o->n_types; t++)
        min_score[t] = NAN;
    for (size_t s = 0; s < n_scores; s++) {
        const char *eq = strchr(score_spec[s], '=');
        size_t t = 0;
        while (t < o->n_types && (strlen(names[t]) != (size_t)(eq - score_spec[s]) ||
                                  strncmp(names[t], score_spec[s], (size_t)(eq - score_spec[s]))))
            t++;
        if (t == o->n_types)
            return pl_cli_usage(cmd, usage, "--min-score %s: no such edge type", score_spec[s]);
        if (pl_cli_f64(eq + 1, &min_score[t]) < 0)
            return pl_cli_usage(cmd, usage, "--min-score %s: '%s' is not a number",
                                score_spec[s], eq + 1);
    }
    o->type_names = names;
    o->type_files = files;
    o->min_score = min_score;
    o->n_node_features = fa->n;
    o->feature_types = fa->types;
    o->feature_files = fa->files;
    return -1;
}

/* The command line as one text (the stored build parameters); NULL when
 * out of memory. */
static char *join_args(int argc, char **argv)
{
    size_t plen = 1;
    for (int i = 1; i < argc; i++)
        plen += strlen(argv[i]) + 1;
    char *params = calloc(plen, 1);
    for (int i = 1; params && i < argc; i++) {
        strcat(params, argv[i]);
        if (i + 1 < argc)
            strcat(params, " ");
    }
    return params;
}

/* What a finished build says: dropped records, counts and sizes. */
static void report(const char *out, const pl_build_stats *st, int quiet)
{
    if (st->dropped_edges || st->dropped_gpr || st->dropped_samples)
        fprintf(stderr, "pertload build: dropped records naming unknown genes: %llu edges, "
                "%llu GPR, %llu samples\n", (unsigned long long)st->dropped_edges,
                (unsigned long long)st->dropped_gpr, (unsigned long long)st->dropped_samples);
    if (quiet)
        return;
    char g[32], s[32], p[32];
    pl_cli_bytes(g, sizeof g, st->graph_bytes);
    pl_cli_bytes(s, sizeof s, st->sample_bytes);
    pl_cli_bytes(p, sizeof p, st->payload_bytes);
    printf("built %s in %.2f s: %llu genes, %llu edges (%llu under min score), "
           "%llu reactions (%llu with rules), %llu metabolites, %llu GPR, %llu RMR, "
           "%llu samples, %llu labels\n", out, st->seconds, (unsigned long long)st->n_genes,
           (unsigned long long)st->n_edges, (unsigned long long)st->filtered_edges,
           (unsigned long long)st->n_reactions, (unsigned long long)st->n_rules,
           (unsigned long long)st->n_metabolites,
           (unsigned long long)st->n_gpr, (unsigned long long)st->n_rmr,
           (unsigned long long)st->n_samples, (unsigned long long)st->n_labels);
    if (st->n_terms)
        printf("ontology: %llu terms, %llu annotations, %u strata (%llu annotation rows "
               "of unknown genes)\n", (unsigned long long)st->n_terms,
               (unsigned long long)st->n_term_annotations, st->n_strata,
               (unsigned long long)st->unknown_term_genes);
    printf("sizes: graph (LMDB) %s, samples %s, payload %s\n", g, s, p);
}

/* Build with the parsed options; the exit status. */
static int build(pl_build_opts *o, int argc, char **argv, int quiet)
{
    const char *cmd = "build";
    char *params = join_args(argc, argv);
    o->params = params;
    pl_err err = {0};
    pl_build_stats st;
    int rc = pl_build(o, &st, &err);
    free(params);
    if (rc < 0)
        return pl_cli_fail(cmd, rc, &err);
    report(o->out, &st, quiet);
    return 0;
}

/* The options of build --recipe. */
typedef struct recipe_args {
    const char *recipe, *root, *out, *unresolved;
    uint64_t limit[2]; /* --max-line, --max-text (0: not given) */
    int strict, quiet;
    int reaction_rule; /* --reaction-rule: PL_REACTION_* (DEFAULT: the recipe's) */
} recipe_args;

/* Every source's counts, and the unresolved names to `f` (a->unresolved). */
static int recipe_report(const recipe_args *a, const pl_recipe *r, const pl_imp_result *res,
                         FILE *f, pl_err *err)
{
    for (uint32_t i = 0; !a->quiet && i < r->n_sources; i++)
        printf("source %s rows=%llu filtered=%llu unresolved=%llu duplicates=%llu kept=%llu\n",
               r->sources[i].name, (unsigned long long)res[i].read.rows,
               (unsigned long long)res[i].read.filtered, (unsigned long long)res[i].unresolved,
               (unsigned long long)res[i].duplicates, (unsigned long long)res[i].kept);
    if (!f)
        return 0;
    int bad = fprintf(f, "source\tname\tcount\tfirst_seen\n") < 0;
    for (uint32_t i = 0; !bad && i < r->n_sources; i++)
        bad = pl_cli_write_unresolved(f, &r->sources[i], &res[i].names) < 0;
    PL_FAIL_IF(bad, err, -EIO, "%s: write failed", a->unresolved);
    /* The names the metabolism, the ontology and the sample tables left
     * unresolved: read again as `recipe check` reads them (only for this
     * list). */
    if (r->metabolism.model != PL_METAB_NONE || r->ontology.format || r->n_tables) {
        pl_alias_stats ast[PL_RECIPE_MAX_ALIASES];
        pl_names *nm = NULL;
        uint64_t unresolved = 0;
        int rc = pl__recipe_names(r, &nm, ast, err);
        if (rc == 0)
            rc = pl_cli_recipe_more(r, nm, a->strict, NULL, f, a->unresolved, &unresolved, err);
        pl__names_free(nm);
        PL_TRY(rc);
    }
    PL_FAIL_IF(fflush(f) != 0, err, -EIO, "%s: write failed", a->unresolved);
    return 0;
}

static int build_recipe(const recipe_args *a, int argc, char **argv)
{
    pl_err err = {0};
    pl_recipe *r;
    pl__src_set_limits(a->limit[0], a->limit[1]);
    int rc = pl__recipe_load(a->recipe, a->root, &r, &err);
    if (rc < 0)
        return pl_cli_fail("build", rc, &err);
    pl__recipe_limits(r, a->limit[0], a->limit[1]);
    /* The list is created first: a build does not end with a list that
     * cannot be written. */
    FILE *uf = a->unresolved ? fopen(a->unresolved, "w") : NULL;
    if (a->unresolved && !uf) {
        rc = pl__err(&err, -errno, "%s: cannot create: %s", a->unresolved, strerror(errno));
        pl__recipe_free(r);
        return pl_cli_fail("build", rc, &err);
    }
    pl_imp_result *res = calloc(r->n_sources, sizeof *res);
    char *params = join_args(argc, argv);
    pl_build_opts o = {.out = a->out, .progress = a->quiet ? 0 : -1, .params = params,
                       .reaction_rule = a->reaction_rule};
    pl_build_stats st;
    rc = res && params ? pl__recipe_build(r, &o, a->strict, res, &st, &err)
                       : pl__err(&err, -ENOMEM, "out of memory");
    if (rc == 0)
        rc = recipe_report(a, r, res, uf, &err);
    if (uf && fclose(uf) != 0 && rc == 0)
        rc = pl__err(&err, -EIO, "%s: write failed", a->unresolved);
    if (uf && rc < 0)
        remove(a->unresolved); /* no half-written list */
    if (rc == 0)
        report(a->out, &st, a->quiet);
    for (uint32_t i = 0; res && i < r->n_sources; i++)
        pl__unres_free(&res[i].names);
    free(res);
    free(params);
    pl__recipe_free(r);
    return rc < 0 ? pl_cli_fail("build", rc, &err) : 0;
}

/* build --recipe: -1 when argv has no --recipe, else the exit status. */
static int maybe_recipe(int argc, char **argv)
{
    int has = 0;
    for (int i = 1; i < argc; i++)
        has |= !strcmp(argv[i], "--recipe");
    if (!has)
        return -1;
    recipe_args a = {0};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **target = !strcmp(o, "--recipe")                     ? &a.recipe
                              : !strcmp(o, "--root")                     ? &a.root
                              : !strcmp(o, "-o") || !strcmp(o, "--out") ? &a.out
                              : !strcmp(o, "--unresolved")               ? &a.unresolved
                                                                         : NULL;
        if (target) {
            if (i + 1 >= argc)
                return pl_cli_usage("build", usage, "%s needs a value", o);
            *target = argv[++i];
        } else if (!strcmp(o, "--max-line") || !strcmp(o, "--max-text")) {
            if (i + 1 >= argc || pl__src_parse_limit(argv[i + 1], &a.limit[o[6] == 't']) < 0)
                return pl_cli_usage("build", usage, "%s wants a number of bytes (4M, 1G)", o);
            i++;
        } else if (!strcmp(o, "--reaction-rule")) {
            if (i + 1 >= argc || (strcmp(argv[i + 1], "any") && strcmp(argv[i + 1], "gpr")))
                return pl_cli_usage("build", usage, "--reaction-rule wants any or gpr, got '%s'",
                                    i + 1 < argc ? argv[i + 1] : "");
            a.reaction_rule = !strcmp(argv[++i], "gpr") ? PL_REACTION_GPR : PL_REACTION_ANY;
        } else if (!strcmp(o, "--strict")) {
            a.strict = 1;
        } else if (!strcmp(o, "--quiet")) {
            a.quiet = 1;
        } else {
            return pl_cli_usage("build", usage, "'%s' does not go with --recipe (the recipe "
                                "names the inputs)", o);
        }
    }
    if (!a.out)
        return pl_cli_usage("build", usage, "--recipe needs -o DB");
    return build_recipe(&a, argc, argv);
}

int pl_cmd_build(int argc, char **argv)
{
    pl_build_opts o = {0};
    const char *names[PL_MAX_TYPES], *files[PL_MAX_TYPES];
    double min_score[PL_MAX_TYPES];
    feature_args fa = {.n = 0};
    int quiet = 0;
    int status = maybe_recipe(argc, argv);
    if (status >= 0)
        return status;
    status = parse(argc, argv, &o, names, files, min_score, &quiet, &fa);
    if (status < 0)
        status = build(&o, argc, argv, quiet);
    for (size_t t = 0; t < o.n_types; t++)
        free((char *)names[t]);
    for (size_t f = 0; f < fa.n; f++)
        free((char *)fa.types[f]);
    return status;
}
