/* pl_build: input files -> database directory (DESIGN sections 3 and 4).
 *
 * Everything is written into a temporary directory beside the output,
 * "<out>.tmp-<16 random hex digits>", made with mkdir (never a path that
 * exists already), and renamed into place at the end. It holds a marker file,
 * ".pertload-build", created with O_CREAT | O_EXCL and flock()ed for the
 * build's whole life. A failed build removes its own directory; a later build
 * of the same output removes the directories of builds that were killed, and
 * only those it can prove abandoned: its own user's directory and marker, the
 * marker's text in place, the lock free (a live build holds it, whatever pid
 * namespace it runs in), nothing but its own regular files inside. Every
 * removal goes through descriptors and never follows a symbolic link
 * (preprocess/tmpdir.h, pl__rmtree_at). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder.h"
#include "import/names/names.h"
#include "import/samples/provider.h"
#include "src/core/fileio.h"
#include "src/core/progress.h"

/* ------------------------------------------------------------------- build */

/* `in_ontology`: an ontology given in memory (a recipe's) counts as one
 * named by the options. */
static int check_type_names(const pl_build_opts *o, int in_ontology, pl_err *err)
{
    int metabolism = o->gpr || o->rmr || o->reactions || o->rules;
    int ontology = o->ontology || o->ontology_dcell || in_ontology;
    PL_FAIL_IF((o->n_types < 1 && !metabolism && !ontology) || o->n_types > PL_MAX_TYPES, err,
               PL_EUSAGE,
               "%zu edge types given; between 1 and %d are supported (0 with metabolism or an "
               "ontology)", o->n_types, PL_MAX_TYPES);
    for (size_t t = 0; t < o->n_types; t++) {
        const char *n = o->type_names[t];
        size_t len = strlen(n);
        PL_FAIL_IF(len == 0 || len > 100, err, PL_EUSAGE,
                   "--edges NAME=FILE: edge type %zu has an empty or overlong name", t + 1);
        for (size_t i = 0; i < len; i++)
            PL_FAIL_IF(!(n[i] == '_' || n[i] == '-' || n[i] == '.' ||
                         (n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'z') ||
                         (n[i] >= 'A' && n[i] <= 'Z')),
                       err, PL_EUSAGE, "--edges: edge type name '%s' may only hold letters, "
                       "digits, '_', '-' and '.'", n);
        for (size_t u = 0; u < t; u++)
            PL_FAIL_IF(!strcmp(n, o->type_names[u]), err, PL_EUSAGE,
                       "--edges: edge type '%s' given twice", n);
    }
    return 0;
}

static int no_rows(void *ctx, pl__sample_row *row, pl_err *err)
{
    (void)ctx, (void)row, (void)err;
    return 0;
}

/* The genes, edges and metabolism, from memory or from the files. */
static int read_graph(builder *b)
{
    const pl_build_opts *o = b->o;
    const pl__build_input *in = b->in;
    if (in && in->genes) {
        PL_TRY(pl__build_take_genes(b, in->genes, in->n_genes));
    } else {
        PL_TRY(pl__build_read_names(b, o->genes, &b->genes, "gene"));
        PL_FAIL_IF(b->genes.n > INT32_MAX, b->err, PL_EPARSE, "%s: too many genes", o->genes);
    }
    b->n_genes = b->genes.n;
    b->on = &b->onto;
    if (in && in->ontology) {
        PL_FAIL_IF(in->ontology->n_genes != b->n_genes, b->err, PL_EPARSE,
                   "ontology: built over %u genes, the gene list has %llu",
                   in->ontology->n_genes, (unsigned long long)b->n_genes);
        b->on = in->ontology;
        b->st.unknown_term_genes = in->ontology_unknown;
    } else {
        PL_TRY(pl__onto_from_build(o, &b->genes, o->progress == 0, &b->onto,
                                   &b->st.unknown_term_genes, b->err));
    }
    for (uint32_t t = 0; t < o->n_types; t++) {
        if (in && in->edges) {
            PL_TRY(pl__build_take_edges(b, t, &in->edges[t]));
            continue;
        }
        double ms = o->min_score ? o->min_score[t] : NAN;
        PL_TRY(pl__build_read_edges(b, t, o->type_files[t], ms));
        PL_FAIL_IF(b->n_edges[t] >= UINT32_MAX, b->err, PL_EPARSE, "%s: too many edges",
                   o->type_files[t]);
    }
    if (in && in->metabolism) {
        PL_TRY(pl__build_take_metabolism(b, in->metabolism));
    } else {
        if (o->reactions)
            PL_TRY(pl__build_read_names(b, o->reactions, &b->reactions, "reaction"));
        if (o->gpr)
            PL_TRY(pl__build_read_gpr(b, o->gpr));
        if (o->rules)
            PL_TRY(pl__build_read_rules(b, o->rules));
    }
    PL_TRY(pl__ruleset_meta(b->rs, o, &b->meta, b->err));
    if (o->rmr && !(in && in->metabolism))
        PL_TRY(pl__build_read_rmr(b, o->rmr));
    return 0;
}

/* The samples file, read by the recipe's sample table reader (samples.h)
 * with fixed settings: a header, `genes` split at ';', an optional `id`,
 * every other column a label, gene names exactly as in the gene list. It is
 * pertload's samples TSV (spec `tsv`: the build's text rules and messages);
 * with category columns `o->categories`, a tab-separated table with '#'
 * comment lines, its category columns kept as categories. */
typedef struct samples_table {
    pl_smp_spec spec;
    char *list;          /* o->categories, split at ',' in place */
    pl_names *nm;
    pl_smp_provider p;
} samples_table;

static int samples_open(builder *b, samples_table *t, pl__build_samples *out)
{
    const pl_build_opts *o = b->o;
    pl_smp_spec *s = &t->spec;
    *s = (pl_smp_spec){.format = PL_SMP_TABLE, .file = o->samples, .header = 1,
                       .comment = o->categories ? "#" : NULL, .id = "id", .id_optional = 1,
                       .tsv = !o->categories};
    t->list = o->categories ? strdup(o->categories) : NULL;
    PL_FAIL_IF(o->categories && !t->list, b->err, -ENOMEM, "out of memory");
    for (char *c = t->list, *end; c; c = end) {
        end = strchr(c, ',');
        if (end)
            *end++ = '\0';
        PL_FAIL_IF(!*c, b->err, PL_EUSAGE, "--categories '%s': an empty column name",
                   o->categories);
        PL_FAIL_IF(s->n_categories == PL_IMP_MAX_LIST, b->err, PL_EUSAGE,
                   "--categories: more than %d columns", PL_IMP_MAX_LIST);
        s->categories[s->n_categories++] = c;
    }
    PL_TRY(pl__names_new(&t->nm, b->err));
    PL_TRY(pl__names_exact_list(t->nm, b->genes.names, b->n_genes, b->err));
    int rc = pl__smp_check(s, b->err);
    if (rc < 0)
        return pl__err_prefix(b->err, "%s: --categories", o->samples);
    return pl__smp_provider_open(&t->p, s, 1, t->nm, !o->drop_unknown_genes, out, b->err);
}

static void samples_close(samples_table *t)
{
    pl__smp_provider_close(&t->p);
    pl__names_free(t->nm);
    free(t->list);
}

/* The samples from the provider or the samples file (none at all when an
 * in-memory build names neither), then the payload. */
static int read_samples(builder *b, chunker *payload)
{
    const pl_build_opts *o = b->o;
    samples_table st = {0};
    pl__build_samples none = {0, NULL, no_rows, NULL, NULL, NULL, 0, NULL}, file;
    const pl__build_samples *s = b->in && b->in->samples ? b->in->samples : &none;
    int rc = 0;
    if (s == &none && o->samples) {
        rc = samples_open(b, &st, &file);
        s = &file;
    }
    if (rc == 0)
        rc = pl__build_store_samples(b, s);
    samples_close(&st);
    PL_TRY(rc);
    return o->payload ? pl__build_copy_payload(b, o->payload, payload) : 0;
}

static int run(builder *b)
{
    const pl_build_opts *o = b->o;
    const pl__build_input *in = b->in;
    struct pl__meta *m = &b->meta;
    PL_FAIL_IF(!o->out || (!o->genes && !(in && in->genes)) || (!o->samples && !in) ||
               (o->n_types && (!o->type_names || (!o->type_files && !(in && in->edges)))),
               b->err, PL_EUSAGE, "pl_build: out, genes, edge types and samples are required");
    PL_TRY(check_type_names(o, in && in->ontology, b->err));
    PL_TRY(pl__ruleset_check_opts(o, b->err));
    size_t olen = strlen(o->out);
    PL_FAIL_IF(olen == 0 || o->out[olen - 1] == '/', b->err, PL_EUSAGE,
               "output path '%s': give a directory name without a trailing '/'", o->out);
    struct stat st;
    PL_FAIL_IF(lstat(o->out, &st) == 0, b->err, PL_EEXIST,
               "%s: already exists (remove it or choose another output)", o->out);
    PL_TRY(pl__tmpdir_create(&b->tmp, o->out, b->err));

    if (pl__strtab_init(&b->genes) < 0 || pl__strtab_init(&b->reactions) < 0 ||
        pl__strtab_init(&b->metabolites) < 0)
        return NOMEM(b);
    PL_TRY(read_graph(b));
    PL_TRY(pl__build_open_features(b));
    chunker payload = {.fd = -1};
    int rc = read_samples(b, &payload);
    if (payload.fd >= 0)
        close(payload.fd);
    free(payload.buf);
    if (rc == 0) {
        memcpy(m->magic, PL_META_MAGIC, 8);
        m->format_version = PL_FORMAT_VERSION;
        m->n_types = (uint32_t)o->n_types;
        m->n_genes = b->n_genes;
        m->has_metabolism = o->gpr || o->rmr || o->reactions || o->rules;
        m->n_reactions = m->has_metabolism ? b->reactions.n : 0;
        m->n_metabolites = m->has_metabolism ? b->metabolites.n : 0;
        m->n_gpr = b->n_gpr;
        m->n_rmr = b->n_rmr;
        m->n_samples = b->sw.n_samples;
        m->n_labels = b->n_labels;
        m->block_rows = PL_BLOCK_ROWS;
        m->n_blocks = b->sw.n_blocks;
        m->samples_bytes = b->sw.offset;
        memcpy(m->n_edges, b->n_edges, sizeof m->n_edges);
        rc = pl__build_write_lmdb(b, &payload);
    }
    free(payload.sums);
    PL_TRY(rc);
    /* data.mdb is final: its size and checksum go into the store's header. */
    char lmdb[4096];
    pl__path_join(lmdb, sizeof lmdb, b->tmp.path, PL_FILE_LMDB);
    PL_TRY(pl__sstore_seal(b->sw.path, lmdb, b->err));
    return pl__tmpdir_commit(&b->tmp, o->out, b->err);
}

/* The options as the build sees them: the parts given in memory replace the
 * corresponding files (their names stand in the messages). */
static void effective_opts(const pl_build_opts *o, const pl__build_input *in,
                           pl_build_opts *eo, const char **names)
{
    *eo = *o;
    if (!in)
        return;
    if (in->edges) {
        for (uint32_t t = 0; t < in->n_types && t < PL_MAX_TYPES; t++)
            names[t] = in->edges[t].name;
        eo->n_types = in->n_types;
        eo->type_names = names;
        eo->type_files = NULL;
        eo->min_score = NULL;
    }
    if (in->metabolism) {
        const pl__build_metabolism *mb = in->metabolism;
        eo->reactions = "reactions";
        eo->gpr = NULL;
        eo->rmr = mb->n_rmr ? "stoichiometry" : NULL;
        eo->rules = mb->rules ? "gene-reaction rules" : NULL;
        eo->gpr = mb->rules ? NULL : "gpr";
    }
    if (in->samples)
        eo->samples = NULL;
}

PL_API int pl_build(const pl_build_opts *opts, pl_build_stats *stats, pl_err *err)
{
    return pl__build_run(opts, NULL, stats, err);
}

int pl__build_run(const pl_build_opts *opts, const pl__build_input *in, pl_build_stats *stats,
                  pl_err *err)
{
    builder *b = calloc(1, sizeof *b);
    if (!b)
        return pl__err(err, -ENOMEM, "out of memory");
    pl_build_opts eo;
    const char *names[PL_MAX_TYPES];
    effective_opts(opts, in, &eo, names);
    b->o = &eo;
    b->in = in;
    b->rs = &b->rules;
    b->err = err;
    b->sw.fd = -1;
    for (int t = 0; t < PL_N_NODE_TYPES; t++)
        b->feat[t].fd = -1;
    double t0 = pl__now();
    int rc = run(b);
    if (b->txn)
        mdb_txn_abort(b->txn);
    if (b->env)
        mdb_env_close(b->env);
    pl__sstore_writer_free(&b->sw);
    pl__build_close_features(b);
    pl__tmpdir_discard(&b->tmp);
    if (rc == 0 && stats) {
        char p[4096];
        *stats = b->st;
        const struct pl__meta *m = &b->meta;
        stats->n_genes = m->n_genes;
        for (uint32_t t = 0; t < m->n_types; t++)
            stats->n_edges += m->n_edges[t];
        stats->n_reactions = m->n_reactions;
        stats->n_metabolites = m->n_metabolites;
        stats->n_gpr = m->n_gpr;
        stats->n_rmr = m->n_rmr;
        stats->n_rules = m->n_rules;
        stats->n_samples = m->n_samples;
        stats->n_labels = m->n_labels;
        stats->n_terms = m->n_terms;
        stats->n_term_annotations = m->n_term_ann;
        stats->n_strata = m->n_strata;
        stats->graph_bytes = pl__file_size(pl__path_join(p, sizeof p, opts->out, PL_FILE_LMDB));
        stats->sample_bytes = m->samples_bytes;
        stats->seconds = pl__now() - t0;
    }
    pl__strtab_free(&b->genes);
    pl__strtab_free(&b->reactions);
    pl__strtab_free(&b->metabolites);
    for (uint32_t t = 0; t < PL_MAX_TYPES; t++) {
        free(b->src[t]);
        free(b->dst[t]);
    }
    free(b->gpr_gene);
    free(b->gpr_rxn);
    free(b->rmr_rxn);
    free(b->rmr_met);
    free(b->rmr_stoich);
    pl__ruleset_free(&b->rules);
    pl__onto_free(&b->onto);
    free(b->dropped_rows);
    for (uint32_t i = 0; b->label_names && i < b->n_labels; i++)
        free(b->label_names[i]);
    free(b->label_names);
    pl__build_cats_free(b);
    free(b->ser);
    free(b);
    return rc;
}