/* pertload inspect / verify: database summary and full checksum check. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void list_names(const char *what, const char *const *names, uint64_t n, uint64_t show)
{
    printf("%s:", what);
    for (uint64_t i = 0; i < n && i < show; i++) {
        printf(" ");
        pl_cli_put_name(stdout, names[i], strlen(names[i]), 0);
    }
    if (n > show)
        printf(" ... (%llu in all)", (unsigned long long)n);
    printf("\n");
}

/* Each line of `text` after `what`. */
static void print_lines(const char *what, const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        printf("%s: ", what);
        pl_cli_put_name(stdout, p, len, 1);
        printf("\n");
        p += len + (nl != NULL);
    }
}

/* The one argument of "pertload CMD DB": -1 to go on with argv[1], else the
 * exit status (help printed, or a usage error). */
static int db_argument(const char *cmd, int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: pertload %s %sDB\n", cmd, strcmp(cmd, "inspect") ? "" : "[--recipe] ");
        return 0;
    }
    if (argc != 2)
        return pl_cli_usage(cmd, "DB", "expected one database path");
    return -1;
}

/* inspect --recipe DB: the stored recipe file, byte for byte. */
static int print_recipe(const char *path)
{
    pl_db *db;
    pl_err err = {0};
    int rc = pl_db_open(path, &db, &err);
    if (rc < 0)
        return pl_cli_fail("inspect", rc, &err);
    const char *r = pl_db_info_get(db)->recipe;
    int status = 0;
    if (!r[0]) {
        fprintf(stderr, "pertload inspect: %s was not built from a recipe\n", path);
        status = 1;
    } else {
        fputs(r, stdout);
    }
    pl_db_close(db);
    return status;
}

/* Size, depth and strata of the ontology layers. */
static int print_ontology(pl_db *db)
{
    pl_ontology *o;
    pl_err err = {0};
    int rc = pl_ontology_load(db, &o, &err);
    if (rc < 0)
        return pl_cli_fail("inspect", rc, &err), -1;
    uint64_t links = o->child_ptr[o->n_terms], direct = o->gene_ptr[o->n_terms];
    printf("ontology: %u terms, %llu child links, %llu direct (term, gene) pairs, %llu "
           "annotations; depth %u (strata), %u groups\n", o->n_terms, (unsigned long long)links,
           (unsigned long long)direct, (unsigned long long)o->n_annotations, o->n_strata,
           o->n_groups);
    printf("  strata (terms/groups):");
    for (uint32_t s = 0; s < o->n_strata; s++)
        printf(" %u:%u/%u", s, o->group_ptr[o->stratum_ptr[s + 1]] - o->group_ptr[o->stratum_ptr[s]],
               o->stratum_ptr[s + 1] - o->stratum_ptr[s]);
    printf("\n");
    pl_ontology_free(o);
    return 0;
}

/* The stored node feature matrices: type, shape, dtype ("none" without). */
static int print_features(pl_db *db)
{
    static const char *const types[PL_N_NODE_TYPES] = PL_NODE_TYPES;
    int any = 0;
    for (int t = 0; t < PL_N_NODE_TYPES; t++) {
        uint64_t rows, cols;
        char dtype[4];
        const void *data;
        pl_err err = {0};
        int rc = pl_db_features(db, types[t], &rows, &cols, dtype, &data, &err);
        if (rc == -ENOENT)
            continue;
        if (rc < 0)
            return pl_cli_fail("inspect", rc, &err), -1;
        printf("node features: %s [%llu, %llu] %s (%s)\n", types[t], (unsigned long long)rows,
               (unsigned long long)cols, dtype[2] == '4' ? "float32" : "float16", dtype);
        any = 1;
    }
    if (!any)
        printf("node features: none\n");
    return 0;
}

int pl_cmd_inspect(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--recipe"))
        return print_recipe(argv[2]);
    int status = db_argument("inspect", argc, argv);
    if (status >= 0)
        return status;
    pl_db *db;
    pl_err err = {0};
    int rc = pl_db_open(argv[1], &db, &err);
    if (rc < 0)
        return pl_cli_fail("inspect", rc, &err);
    const pl_db_info *i = pl_db_info_get(db);
    uint64_t total = 0;
    printf("database: %s\nformat version: %u\ngenes: %llu\nedge types: %u\n", argv[1],
           i->format_version, (unsigned long long)i->n_genes, i->n_types);
    for (uint32_t t = 0; t < i->n_types; t++) {
        printf("  %-28s %llu edges, fingerprint %016llx\n", i->type_names[t],
               (unsigned long long)i->n_edges[t], (unsigned long long)i->edge_fingerprint[t]);
        total += i->n_edges[t];
    }
    printf("edges: %llu\n", (unsigned long long)total);
    if (i->has_metabolism)
        printf("metabolism: %llu reactions, %llu metabolites, %llu GPR edges, %llu RMR "
               "edges\n", (unsigned long long)i->n_reactions,
               (unsigned long long)i->n_metabolites, (unsigned long long)i->n_gpr,
               (unsigned long long)i->n_rmr);
    if (i->has_metabolism)
        printf("reaction rule: %s (%llu reactions with a gene-reaction rule)\n",
               i->reaction_rule == PL_REACTION_GPR ? "gpr: a reaction is removed when its "
                                                     "rule is false"
                                                   : "any: a reaction is removed when any "
                                                     "of its GPR genes is deleted",
               (unsigned long long)i->n_rules);
    else
        printf("metabolism: none\n");
    if (i->n_terms && print_ontology(db) < 0) {
        pl_db_close(db);
        return 1;
    }
    printf("samples: %llu in %llu blocks of %u\n", (unsigned long long)i->n_samples,
           (unsigned long long)i->n_blocks, i->block_rows);
    list_names("labels", i->label_names, i->n_labels, 16);
    printf("category columns: %u (kept apart from the labels)\n", i->n_categories);
    print_lines("category", i->categories); /* column<TAB>level 0<TAB>level 1... */
    list_names("genes", i->gene_names, i->n_genes, 8);
    if (i->payload_dtype[0]) {
        printf("payload: dtype %s, row shape (", i->payload_dtype);
        for (uint32_t d = 0; d < i->payload_ndim; d++)
            printf("%llu%s", (unsigned long long)i->payload_shape[d],
                   d + 1 < i->payload_ndim ? ", " : i->payload_ndim == 1 ? "," : "");
        printf("), %llu bytes per row\n", (unsigned long long)i->payload_row_bytes);
    } else {
        printf("payload: none\n");
    }
    if (print_features(db) < 0) {
        pl_db_close(db);
        return 1;
    }
    printf("sizes: graph (data.mdb) %llu bytes, samples %llu bytes, payload %llu bytes\n",
           (unsigned long long)i->graph_bytes, (unsigned long long)i->samples_bytes,
           (unsigned long long)i->payload_bytes);
    printf("build parameters: %s\n", i->params);
    printf("gene fingerprint: %016llx\n", (unsigned long long)i->gene_fingerprint);
    printf("database fingerprint: %016llx\n", (unsigned long long)i->db_fingerprint);
    if (i->recipe_sources[0])
        print_lines("recipe source", i->recipe_sources);
    if (i->recipe_inputs[0])
        print_lines("recipe input", i->recipe_inputs);
    if (i->recipe[0])
        printf("recipe: stored, %zu bytes (pertload inspect --recipe DB prints it)\n",
               strlen(i->recipe));
    pl_db_close(db);
    return 0;
}

int pl_cmd_verify(int argc, char **argv)
{
    int status = db_argument("verify", argc, argv);
    if (status >= 0)
        return status;
    pl_db *db;
    pl_err err = {0};
    int rc = pl_db_open(argv[1], &db, &err);
    if (rc == 0)
        rc = pl_db_verify(db, &err);
    pl_db_close(db);
    if (rc < 0)
        return pl_cli_fail("verify", rc, &err);
    printf("%s: ok (every checksum verified)\n", argv[1]);
    return 0;
}
