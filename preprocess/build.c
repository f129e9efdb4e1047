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
#include <fcntl.h>
#include <math.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ontology/store.h"
#include "ruleset.h"
#include "src/core/checksum.h"
#include "src/core/dbformat.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/npy.h"
#include "src/core/progress.h"
#include "src/core/sstore.h"
#include "src/core/strtab.h"
#include "src/core/vec.h"
#include "text.h"
#include "tmpdir.h"

#define MAX_FIELDS 256

typedef struct csr {
    uint64_t *off; /* [n_genes + 1] */
    uint32_t *val;
} csr;

typedef struct builder {
    const pl_build_opts *o;
    pl_build_stats st;
    pl_err *err;
    pl__tmpdir tmp;
    pl_strtab genes, reactions, metabolites;
    uint64_t n_genes;
    int32_t *src[PL_MAX_TYPES], *dst[PL_MAX_TYPES];
    uint64_t n_edges[PL_MAX_TYPES];
    int32_t *gpr_gene, *gpr_rxn, *rmr_rxn, *rmr_met;
    float *rmr_stoich;
    uint64_t n_gpr, n_rmr, cap_gpr, cap_rmr;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi[PL_DBI_COUNT];
    pl__sstore_writer sw;
    uint64_t *dropped_rows, n_dropped, cap_dropped, n_rows_in;
    char **label_names;
    uint32_t n_labels;
    char *ser;
    uint64_t ser_cap;
    struct pl__meta meta;
    pl__ruleset rules;
    pl_onto onto;
} builder;

#define NOMEM(b) pl__err((b)->err, -ENOMEM, "out of memory")

/* ------------------------------------------------------------------ inputs */

static int read_names(builder *b, const char *path, pl_strtab *t, const char *what)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[2];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        int nf = pl__text_fields(&tx, f, 2);
        if (nf != 1) {
            rc = pl__text_fail(&tx, nf > 1 ? f[1].col : 1, b->err,
                               "expected one %s name per line, found %d fields", what, nf);
            break;
        }
        int added;
        int64_t i = pl__strtab_intern(t, f[0].s, f[0].len, &added);
        if (i < 0) {
            rc = NOMEM(b);
            break;
        }
        if (!added) {
            rc = pl__text_fail(&tx, f[0].col, b->err, "duplicate %s name '%.*s'", what,
                               (int)f[0].len, f[0].s);
            break;
        }
        rc = 0;
    }
    if (rc == 0 && t->n == 0)
        rc = pl__err(b->err, PL_EPARSE, "%s:1:1: no %s names in the file", path, what);
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

/* Gene index of a field; -1 after counting a drop, or an error. */
static int64_t gene_of(builder *b, const pl__text *tx, const pl__field *f, uint64_t *dropped,
                       int *rc)
{
    int64_t g = pl__strtab_find(&b->genes, f->s, f->len);
    if (g >= 0)
        return g;
    if (b->o->drop_unknown_genes) {
        (*dropped)++;
        return -1;
    }
    *rc = pl__text_fail(tx, f->col, b->err, "unknown gene '%.*s'", (int)f->len, f->s);
    return -1;
}

/* Append edge (s, d) to type t. */
static int push_edge(builder *b, uint32_t t, uint64_t *cap, int64_t s, int64_t d)
{
    uint64_t n = b->n_edges[t], c = *cap;
    if (pl__grow(&b->src[t], &c, n + 1, 4) < 0 || pl__grow(&b->dst[t], cap, n + 1, 4) < 0)
        return NOMEM(b);
    b->src[t][n] = (int32_t)s;
    b->dst[t][n] = (int32_t)d;
    b->n_edges[t] = n + 1;
    return 0;
}

static int read_edges_tsv(builder *b, uint32_t t, const char *path, double min_score)
{
    pl__text tx;
    uint64_t cap = 0;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[4];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 4);
        if (nf < 2 || nf > 3) {
            rc = pl__text_fail(&tx, nf > 3 ? f[3].col : 1, b->err,
                               "expected 2 or 3 columns (src dst [score]), found %d", nf);
            break;
        }
        double score = INFINITY;
        if (nf == 3 && pl__parse_double(&f[2], &score) < 0) {
            rc = pl__text_fail(&tx, f[2].col, b->err, "bad score '%.*s'", (int)f[2].len,
                               f[2].s);
            break;
        }
        if (nf == 2 && !isnan(min_score)) {
            rc = pl__text_fail(&tx, f[1].col + f[1].len, b->err,
                               "no score column, but a minimum score is set for type '%s'",
                               b->o->type_names[t]);
            break;
        }
        int64_t s = gene_of(b, &tx, &f[0], &b->st.dropped_edges, &rc);
        if (rc < 0)
            break;
        int64_t d = s < 0 ? 0 : gene_of(b, &tx, &f[1], &b->st.dropped_edges, &rc);
        if (rc < 0)
            break;
        if (s < 0 || d < 0)
            continue;
        if (!isnan(min_score) && score < min_score) {
            b->st.filtered_edges++;
            continue;
        }
        if ((rc = push_edge(b, t, &cap, s, d)) < 0)
            break;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

static int read_edges_npy(builder *b, uint32_t t, const char *path)
{
    pl__npy n;
    int rc = pl__npy_open(&n, path, b->err);
    if (rc == 0 && (strcmp(n.descr, "<i4") != 0 && strcmp(n.descr, "<i8") != 0))
        rc = pl__err(b->err, PL_EPARSE, "%s: edge_index dtype must be int32 or int64, "
                     "found '%s'", path, n.descr);
    if (rc == 0 && (n.ndim != 2 || n.shape[0] != 2))
        rc = pl__err(b->err, PL_EPARSE, "%s: edge_index must have shape [2, E]", path);
    if (rc == 0 && !isnan(b->o->min_score ? b->o->min_score[t] : NAN))
        rc = pl__err(b->err, PL_EPARSE, "%s: a .npy edge_index has no scores; --min-score "
                     "cannot apply to type '%s'", path, b->o->type_names[t]);
    if (rc == 0)
        rc = pl__npy_map(&n, b->err);
    uint64_t E = rc == 0 ? n.shape[1] : 0, cap = 0;
    if (rc == 0 && E > UINT32_MAX - 1)
        rc = pl__err(b->err, PL_EPARSE, "%s: too many edges", path);
    const unsigned char *data = rc == 0 ? (const unsigned char *)n.map + n.offset : NULL;
    for (uint64_t e = 0; rc == 0 && e < E; e++) {
        int64_t v[2] = {0, 0};
        for (int r = 0; r < 2; r++) {
            uint64_t i = (uint64_t)r * E + e;
            if (n.itemsize == 4) {
                int32_t x;
                memcpy(&x, data + 4 * i, 4);
                v[r] = x;
            } else {
                memcpy(&v[r], data + 8 * i, 8);
            }
            if (v[r] < 0 || (uint64_t)v[r] >= b->n_genes) {
                rc = pl__err(b->err, PL_EPARSE, "%s: edge_index[%d][%llu] = %lld is %s", path,
                             r, (unsigned long long)e, (long long)v[r],
                             v[r] < 0 ? "negative" : "not a gene index (out of range)");
                break;
            }
        }
        if (rc == 0)
            rc = push_edge(b, t, &cap, v[0], v[1]);
    }
    pl__npy_close(&n);
    return rc;
}

static int is_npy(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && !strcmp(path + n - 4, ".npy");
}

static int64_t reaction_of(builder *b, const pl__text *tx, const pl__field *f, int *rc)
{
    if (f->len == 0) {
        *rc = pl__text_fail(tx, f->col, b->err, "empty reaction name");
        return -1;
    }
    if (b->o->reactions) {
        int64_t r = pl__strtab_find(&b->reactions, f->s, f->len);
        if (r < 0)
            *rc = pl__text_fail(tx, f->col, b->err, "reaction '%.*s' is not in the reaction "
                                "list %s", (int)f->len, f->s, b->o->reactions);
        return r;
    }
    int64_t r = pl__strtab_intern(&b->reactions, f->s, f->len, NULL);
    if (r < 0)
        *rc = NOMEM(b);
    return r;
}

/* The first line of a GPR table is a header when its first field names no
 * gene and says "gene", and its second says "reaction" or "rxn" (any case). */
static int gpr_header(const builder *b, const pl__field *f)
{
    return pl__text_contains_ci(f[0].s, f[0].len, "gene") &&
           pl__strtab_find(&b->genes, f[0].s, f[0].len) < 0 &&
           (pl__text_contains_ci(f[1].s, f[1].len, "reaction") ||
            pl__text_contains_ci(f[1].s, f[1].len, "rxn"));
}

static int read_gpr(builder *b, const char *path)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    int first = 1;
    pl__field f[3];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 3);
        if (nf != 2) {
            rc = pl__text_fail(&tx, nf > 2 ? f[2].col : 1, b->err,
                               "expected 2 columns (gene reaction), found %d", nf);
            break;
        }
        if (first && gpr_header(b, f)) {
            first = 0;
            continue;
        }
        first = 0;
        int64_t g = gene_of(b, &tx, &f[0], &b->st.dropped_gpr, &rc);
        if (rc < 0)
            break;
        int64_t r = reaction_of(b, &tx, &f[1], &rc);
        if (rc < 0)
            break;
        if (g < 0)
            continue;
        uint64_t c = b->cap_gpr;
        if (pl__grow(&b->gpr_gene, &c, b->n_gpr + 1, 4) < 0 ||
            pl__grow(&b->gpr_rxn, &b->cap_gpr, b->n_gpr + 1, 4) < 0) {
            rc = NOMEM(b);
            break;
        }
        b->gpr_gene[b->n_gpr] = (int32_t)g;
        b->gpr_rxn[b->n_gpr++] = (int32_t)r;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

static int64_t rule_reaction(void *ctx, const pl__text *tx, const pl__field *f, int *rc)
{
    return reaction_of(ctx, tx, f, rc);
}

/* Gene-reaction rules: compiled, and their genes as the GPR edges. */
static int read_rules(builder *b, const char *path)
{
    const pl__gpr_out gpr = {&b->gpr_gene, &b->gpr_rxn, &b->n_gpr, &b->cap_gpr,
                             &b->st.dropped_gpr};
    return pl__ruleset_read(&b->rules, path, &b->genes, b->o->drop_unknown_genes,
                            rule_reaction, b, &gpr, b->err);
}

static int read_rmr(builder *b, const char *path)
{
    pl__text tx;
    int rc = pl__text_open(&tx, path, b->err);
    pl__field f[4];
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        int nf = pl__text_fields(&tx, f, 4);
        if (nf != 3) {
            rc = pl__text_fail(&tx, nf > 3 ? f[3].col : 1, b->err,
                               "expected 3 columns (reaction metabolite stoichiometry), "
                               "found %d", nf);
            break;
        }
        float st;
        int pr = pl__parse_float(&f[2], &st);
        if (pr < 0 || isinf(st)) {
            rc = pl__text_fail(&tx, f[2].col, b->err,
                               pr == PL_ERANGE ? "stoichiometry '%.*s' is out of the float32 "
                                                 "range (magnitude above 3.4028235e+38)"
                                               : "bad stoichiometry '%.*s'",
                               (int)f[2].len, f[2].s);
            break;
        }
        int64_t r = reaction_of(b, &tx, &f[0], &rc);
        if (rc < 0)
            break;
        if (f[1].len == 0) {
            rc = pl__text_fail(&tx, f[1].col, b->err, "empty metabolite name");
            break;
        }
        int64_t m = pl__strtab_intern(&b->metabolites, f[1].s, f[1].len, NULL);
        uint64_t c1 = b->cap_rmr, c2 = b->cap_rmr;
        if (m < 0 || pl__grow(&b->rmr_rxn, &c1, b->n_rmr + 1, 4) < 0 ||
            pl__grow(&b->rmr_met, &c2, b->n_rmr + 1, 4) < 0 ||
            pl__grow(&b->rmr_stoich, &b->cap_rmr, b->n_rmr + 1, 4) < 0) {
            rc = NOMEM(b);
            break;
        }
        b->rmr_rxn[b->n_rmr] = (int32_t)r;
        b->rmr_met[b->n_rmr] = (int32_t)m;
        b->rmr_stoich[b->n_rmr++] = st;
    }
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

/* ----------------------------------------------------------------- samples */

static int is_missing(const pl__field *f)
{
    static const char *const na[] = {"NA", "NaN", "nan"};
    if (f->len == 0)
        return 1;
    for (int i = 0; i < 3; i++)
        if (f->len == strlen(na[i]) && !memcmp(f->s, na[i], f->len))
            return 1;
    return 0;
}

typedef struct sample_cols {
    int n, genes, id;
    int label_col[MAX_FIELDS]; /* field index of label i */
} sample_cols;

static int read_samples_header(builder *b, pl__text *tx, sample_cols *c)
{
    pl__field f[MAX_FIELDS + 1]; /* one more, to point at the first one too many */
    int rc = pl__text_next(tx, b->err);
    if (rc < 0)
        return rc;
    PL_FAIL_IF(rc == 0, b->err, PL_EPARSE, "%s:1:1: no header row (expected a 'genes' "
               "column)", tx->path);
    c->n = pl__text_fields(tx, f, MAX_FIELDS + 1);
    if (c->n > MAX_FIELDS)
        return pl__text_fail(tx, f[MAX_FIELDS].col, b->err, "more than %d columns",
                             MAX_FIELDS);
    c->genes = c->id = -1;
    b->label_names = calloc((size_t)c->n, sizeof(char *));
    if (!b->label_names)
        return NOMEM(b);
    for (int i = 0; i < c->n; i++) {
        if (f[i].len == 0)
            return pl__text_fail(tx, f[i].col, b->err, "empty column name in the header");
        PL_TRY(pl__text_check_name(tx, &f[i], "column name", b->err));
        for (int j = 0; j < i; j++)
            if (f[j].len == f[i].len && !memcmp(f[j].s, f[i].s, f[i].len))
                return pl__text_fail(tx, f[i].col, b->err, "duplicate column '%.*s' in the "
                                     "header", (int)f[i].len, f[i].s);
        if (f[i].len == 5 && !memcmp(f[i].s, "genes", 5)) {
            c->genes = i;
        } else if (f[i].len == 2 && !memcmp(f[i].s, "id", 2)) {
            c->id = i;
        } else {
            b->label_names[b->n_labels] = strndup(f[i].s, f[i].len);
            if (!b->label_names[b->n_labels])
                return NOMEM(b);
            c->label_col[b->n_labels++] = i;
        }
    }
    if (c->genes < 0)
        return pl__text_fail(tx, 1, b->err, "the header has no 'genes' column");
    return 0;
}

static int push_dropped(builder *b, uint64_t row)
{
    if (pl__grow(&b->dropped_rows, &b->cap_dropped, b->n_dropped + 1, 8) < 0)
        return NOMEM(b);
    b->dropped_rows[b->n_dropped++] = row;
    return 0;
}

static int read_samples(builder *b, const char *path)
{
    pl__text tx;
    sample_cols c = {0};
    pl__progress pg;
    int32_t *genes = NULL;
    uint64_t cap_genes = 0;
    float labels[MAX_FIELDS];
    pl__field f[MAX_FIELDS + 1]; /* a row of c.n <= MAX_FIELDS columns, and one more */
    char sp[4096];
    int rc = pl__text_open(&tx, path, b->err);
    if (rc == 0)
        rc = read_samples_header(b, &tx, &c);
    if (rc == 0)
        rc = pl__sstore_create(&b->sw,
                               pl__path_join(sp, sizeof sp, b->tmp.path, PL_FILE_SAMPLES),
                               b->n_labels, b->err);
    pl__progress_start(&pg, b->o->progress, "samples", 0);
    while (rc == 0 && (rc = pl__text_next(&tx, b->err)) == 1) {
        rc = 0;
        uint64_t row = b->n_rows_in++;
        if ((row & 4095) == 0)
            pl__progress_update(&pg, row, pl__text_frac(&tx));
        int nf = pl__text_fields(&tx, f, MAX_FIELDS + 1);
        if (nf != c.n) {
            rc = pl__text_fail(&tx, nf > c.n ? f[c.n].col : (uint32_t)tx.cur_len + 1, b->err,
                               "expected %d columns as in the header, found %d", c.n, nf);
            break;
        }
        const pl__field *gf = &f[c.genes];
        uint32_t ng = 0, unknown = 0;
        for (uint32_t i = 0, start = 0; i <= gf->len; i++) {
            if (i < gf->len && gf->s[i] != ';')
                continue;
            pl__field g = {gf->s + start, i - start, gf->col + start};
            while (g.len && g.s[0] == ' ')
                g.s++, g.len--, g.col++;
            while (g.len && g.s[g.len - 1] == ' ')
                g.len--;
            start = i + 1;
            if (g.len == 0) {
                if (gf->len == 0)
                    rc = pl__text_fail(&tx, gf->col, b->err, "sample has no genes");
                else
                    rc = pl__text_fail(&tx, g.col, b->err, "empty gene name in '%.*s'",
                                       (int)gf->len, gf->s);
                break;
            }
            int64_t gi = pl__strtab_find(&b->genes, g.s, g.len);
            if (gi < 0) {
                if (!b->o->drop_unknown_genes) {
                    rc = pl__text_fail(&tx, g.col, b->err, "unknown gene '%.*s'", (int)g.len,
                                       g.s);
                    break;
                }
                unknown++;
                continue;
            }
            if (pl__grow(&genes, &cap_genes, ng + 1, 4) < 0) {
                rc = NOMEM(b);
                break;
            }
            genes[ng++] = (int32_t)gi;
        }
        if (rc < 0)
            break;
        uint64_t id = row;
        if (c.id >= 0 && pl__parse_u64(&f[c.id], &id) < 0) {
            rc = pl__text_fail(&tx, f[c.id].col, b->err, "bad id '%.*s' (expected an "
                               "unsigned 64-bit integer)", (int)f[c.id].len, f[c.id].s);
            break;
        }
        for (uint32_t l = 0; l < b->n_labels; l++) {
            const pl__field *lf = &f[c.label_col[l]];
            int pr = 0;
            if (is_missing(lf)) {
                labels[l] = NAN;
            } else if ((pr = pl__parse_float(lf, &labels[l])) < 0) {
                rc = pl__text_fail(&tx, lf->col, b->err,
                                   pr == PL_ERANGE ? "label '%.*s' in column '%s' is out of the "
                                                     "float32 range (magnitude above "
                                                     "3.4028235e+38)"
                                                   : "bad number '%.*s' in column '%s'",
                                   (int)lf->len, lf->s, b->label_names[l]);
                break;
            }
        }
        if (rc < 0)
            break;
        if (unknown) {
            b->st.dropped_samples++;
            rc = push_dropped(b, row);
            continue;
        }
        rc = pl__sstore_add(&b->sw, id, genes, ng, labels, b->err);
    }
    pl__progress_end(&pg, b->n_rows_in);
    if (rc == 0)
        rc = pl__sstore_finish(&b->sw, b->err);
    free(genes);
    pl__text_close(&tx);
    return rc < 0 ? rc : 0;
}

/* ----------------------------------------------------------------- payload */

/* Payload data goes out in PL_PAYLOAD_CHUNK pieces, each checksummed. */
typedef struct chunker {
    int fd;
    const char *path;
    char *buf;
    uint64_t fill, written;
    uint64_t *sums, n_sums, cap;
} chunker;

static int chunk_flush(builder *b, chunker *c)
{
    if (c->fill == 0)
        return 0;
    if (pl__grow(&c->sums, &c->cap, c->n_sums + 1, 8) < 0)
        return NOMEM(b);
    c->sums[c->n_sums++] = pl__xxh64(c->buf, c->fill, 0);
    PL_TRY(pl__write_all(c->fd, c->buf, c->fill, c->written, c->path, b->err));
    c->written += c->fill;
    c->fill = 0;
    return 0;
}

static int chunk_put(builder *b, chunker *c, const char *p, uint64_t n)
{
    while (n > 0) {
        uint64_t take = PL_PAYLOAD_CHUNK - c->fill < n ? PL_PAYLOAD_CHUNK - c->fill : n;
        memcpy(c->buf + c->fill, p, take);
        c->fill += take;
        p += take;
        n -= take;
        if (c->fill == PL_PAYLOAD_CHUNK)
            PL_TRY(chunk_flush(b, c));
    }
    return 0;
}

static int check_payload(builder *b, const pl__npy *n, uint64_t *row_bytes)
{
    static const char *const ok[] = {"<f4", "<f2", "|u1", "<i4"};
    int good = 0;
    for (int i = 0; i < 4; i++)
        good |= !strcmp(n->descr, ok[i]);
    PL_FAIL_IF(!good, b->err, PL_EPARSE, "%s: payload dtype '%s' not supported (float32, "
               "float16, uint8 or int32)", n->path, n->descr);
    PL_FAIL_IF(n->ndim < 1 || n->shape[0] != b->n_rows_in, b->err, PL_EPARSE,
               "%s: payload has %llu rows, the samples file %llu", n->path,
               n->ndim ? (unsigned long long)n->shape[0] : 0ULL,
               (unsigned long long)b->n_rows_in);
    *row_bytes = n->itemsize; /* no overflow: pl__npy_open checked the whole size */
    for (uint32_t i = 1; i < n->ndim; i++)
        *row_bytes *= n->shape[i];
    PL_FAIL_IF(*row_bytes == 0, b->err, PL_EPARSE, "%s: payload rows are empty", n->path);
    return 0;
}

static int copy_payload(builder *b, const char *path, chunker *c)
{
    pl__npy n;
    char out[4096], hdr[PL_PAYLOAD_ALIGN], *row = NULL;
    uint64_t row_bytes = 0, shape[8];
    int rc = pl__npy_open(&n, path, b->err);
    if (rc == 0)
        rc = check_payload(b, &n, &row_bytes);
    memcpy(shape, n.shape, sizeof shape);
    shape[0] = b->n_rows_in - b->n_dropped;
    size_t hlen = pl__npy_header(hdr, sizeof hdr, n.descr, shape, n.ndim, PL_PAYLOAD_ALIGN);
    c->path = pl__path_join(out, sizeof out, b->tmp.path, PL_FILE_PAYLOAD);
    if (rc == 0) {
        c->fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (c->fd < 0)
            rc = pl__err(b->err, -errno, "%s: %s", out, strerror(errno));
    }
    if (rc == 0)
        rc = pl__write_all(c->fd, hdr, hlen, 0, out, b->err);
    c->written = hlen;
    c->buf = malloc(PL_PAYLOAD_CHUNK);
    row = malloc(PL_PAYLOAD_CHUNK);
    if (rc == 0 && (!c->buf || !row))
        rc = NOMEM(b);
    /* Copy the runs of kept rows between dropped ones with large reads. */
    for (uint64_t r = 0, d = 0; rc == 0 && r < b->n_rows_in; d++) {
        uint64_t end = d < b->n_dropped ? b->dropped_rows[d] : b->n_rows_in;
        for (uint64_t off = r * row_bytes; rc == 0 && off < end * row_bytes;) {
            uint64_t take = end * row_bytes - off;
            if (take > PL_PAYLOAD_CHUNK)
                take = PL_PAYLOAD_CHUNK;
            rc = pl__read_all(n.fd, row, take, n.offset + off, path, b->err);
            if (rc == 0)
                rc = chunk_put(b, c, row, take);
            off += take;
        }
        r = end + 1;
    }
    if (rc == 0)
        rc = chunk_flush(b, c);
    if (rc == 0 && fsync(c->fd) < 0)
        rc = pl__err(b->err, -errno, "%s: fsync: %s", out, strerror(errno));
    if (rc == 0) {
        struct pl__meta *m = &b->meta;
        memcpy(m->payload_dtype, n.descr, sizeof m->payload_dtype);
        m->payload_ndim = n.ndim - 1;
        for (uint32_t i = 1; i < n.ndim; i++)
            m->payload_shape[i - 1] = n.shape[i];
        m->payload_row_bytes = row_bytes;
        m->payload_offset = hlen;
        m->payload_bytes = b->st.payload_bytes = c->written;
    }
    free(row);
    pl__npy_close(&n);
    return rc;
}

/* --------------------------------------------------------------- incidence */

/* CSR over `keys` rows of n items: row a[i] (and b[i] when b and b[i] != a[i])
 * receives vals[i] (or i). Rows come out in item order. */
static int csr_build(builder *b, uint64_t keys, const int32_t *a, const int32_t *bb,
                     const int32_t *vals, uint64_t n, csr *out)
{
    out->off = calloc(keys + 1, sizeof *out->off);
    if (!out->off)
        return NOMEM(b);
    for (uint64_t i = 0; i < n; i++) {
        out->off[a[i] + 1]++;
        if (bb && bb[i] != a[i])
            out->off[bb[i] + 1]++;
    }
    for (uint64_t k = 0; k < keys; k++)
        out->off[k + 1] += out->off[k];
    out->val = malloc((out->off[keys] ? out->off[keys] : 1) * sizeof *out->val);
    uint64_t *pos = malloc((keys ? keys : 1) * sizeof *pos);
    if (!out->val || !pos) {
        free(pos);
        return NOMEM(b);
    }
    memcpy(pos, out->off, keys * sizeof *pos);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v = vals ? (uint32_t)vals[i] : (uint32_t)i;
        out->val[pos[a[i]]++] = v;
        if (bb && bb[i] != a[i])
            out->val[pos[bb[i]]++] = v;
    }
    free(pos);
    return 0;
}

static void csr_free(csr *c)
{
    free(c->off);
    free(c->val);
    c->off = NULL;
    c->val = NULL;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* Sort each row and drop repeated values, compacting in place. */
static void csr_sort_unique(csr *c, uint64_t keys)
{
    uint64_t w = 0;
    for (uint64_t k = 0; k < keys; k++) {
        uint64_t s = c->off[k], e = c->off[k + 1];
        if (e > s)
            qsort(c->val + s, e - s, sizeof *c->val, cmp_u32);
        c->off[k] = w;
        for (uint64_t i = s; i < e; i++)
            if (i == s || c->val[i] != c->val[i - 1])
                c->val[w++] = c->val[i];
    }
    c->off[keys] = w;
}

/* Store row g of `c` as the roaring bitmap inc/<kind>/<g>, for every gene. */
static int put_incidence(builder *b, uint32_t kind, const csr *c)
{
    for (uint64_t g = 0; g < b->n_genes; g++) {
        uint64_t n = c->off[g + 1] - c->off[g];
        if (n == 0)
            continue;
        roaring_bitmap_t *r = roaring_bitmap_of_ptr(n, c->val + c->off[g]);
        if (!r)
            return NOMEM(b);
        roaring_bitmap_run_optimize(r);
        size_t sz = roaring_bitmap_portable_size_in_bytes(r);
        if (pl__grow(&b->ser, &b->ser_cap, sz, 1) < 0) {
            roaring_bitmap_free(r);
            return NOMEM(b);
        }
        roaring_bitmap_portable_serialize(r, b->ser);
        roaring_bitmap_free(r);
        unsigned char key[6];
        pl__inc_key(key, kind, (uint32_t)g);
        PL_TRY(pl__db_put(b->txn, b->dbi[PL_DBI_INC], PL_DBI_INC, key, 6, b->ser, sz,
                          MDB_APPEND, b->err));
    }
    return 0;
}

/* GPR positions and reactions of every gene. RMR positions are not stored per
 * gene: a reaction shared by many genes would repeat them in each gene's
 * bitmap; the masks engine takes them from the RMR edge array by reaction. */
static int put_metabolic_incidence(builder *b)
{
    uint32_t T = b->meta.n_types;
    csr gpr = {0}, rxn = {0};
    int rc = csr_build(b, b->n_genes, b->gpr_gene, NULL, NULL, b->n_gpr, &gpr);
    if (rc == 0)
        rc = put_incidence(b, T + PL_LIST_GPR, &gpr);
    if (rc == 0)
        rc = csr_build(b, b->n_genes, b->gpr_gene, NULL, b->gpr_rxn, b->n_gpr, &rxn);
    if (rc == 0) {
        csr_sort_unique(&rxn, b->n_genes);
        rc = put_incidence(b, T + PL_LIST_REACTION, &rxn);
    }
    csr_free(&gpr);
    csr_free(&rxn);
    return rc;
}

/* ------------------------------------------------------------------- LMDB */

static int put_names(builder *b, const char *key, char *const *names, uint64_t n)
{
    size_t len = 0;
    for (uint64_t i = 0; i < n; i++)
        len += strlen(names[i]) + 1;
    char *blob = malloc(len ? len : 1), *p = blob;
    if (!blob)
        return NOMEM(b);
    for (uint64_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]) + 1;
        memcpy(p, names[i], l);
        p += l;
    }
    int rc = pl__db_put(b->txn, b->dbi[PL_DBI_NAMES], PL_DBI_NAMES, key, strlen(key), blob,
                        len, 0, b->err);
    free(blob);
    return rc;
}

/* Concatenate `k` int32/float arrays of n elements into one zstd value. */
static int put_arrays(builder *b, const void *key, size_t klen, const void *const *arrs,
                      int k, uint64_t n)
{
    char *buf = malloc(4 * n * (uint64_t)k + 1);
    if (!buf)
        return NOMEM(b);
    for (int i = 0; i < k && n > 0; i++)
        memcpy(buf + 4 * n * (uint64_t)i, arrs[i], 4 * n);
    int rc = pl__db_put_zstd(b->txn, b->dbi[PL_DBI_EDGES], PL_DBI_EDGES, key, klen, buf,
                             4 * n * (uint64_t)k, b->err);
    free(buf);
    return rc;
}

static int write_lmdb(builder *b, const chunker *payload)
{
    char p[4096];
    int rc = mdb_env_create(&b->env);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    mdb_env_set_maxdbs(b->env, PL_DBI_COUNT);
    mdb_env_set_mapsize(b->env, PL_DB_MAPSIZE);
    rc = mdb_env_open(b->env, b->tmp.path, MDB_NOSYNC, 0644);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s",
               pl__path_join(p, sizeof p, b->tmp.path, PL_FILE_LMDB), mdb_strerror(rc));
    rc = mdb_txn_begin(b->env, NULL, 0, &b->txn);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    for (int i = 0; i < PL_DBI_COUNT; i++) {
        rc = mdb_dbi_open(b->txn, pl__dbi_names[i], MDB_CREATE, &b->dbi[i]);
        PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: %s", b->tmp.path, mdb_strerror(rc));
    }
    struct pl__meta *m = &b->meta;
    PL_TRY(put_names(b, "genes", b->genes.names, b->n_genes));
    PL_TRY(put_names(b, "types", (char *const *)b->o->type_names, m->n_types));
    PL_TRY(put_names(b, "labels", b->label_names, b->n_labels));
    if (m->has_metabolism) {
        PL_TRY(put_names(b, "reactions", b->reactions.names, b->reactions.n));
        PL_TRY(put_names(b, "metabolites", b->metabolites.names, b->metabolites.n));
    }
    for (uint32_t t = 0; t < m->n_types; t++) {
        unsigned char key[2];
        pl__edges_key(key, t);
        const void *arrs[2] = {b->src[t], b->dst[t]};
        PL_TRY(put_arrays(b, key, 2, arrs, 2, b->n_edges[t]));
    }
    if (m->has_metabolism) {
        const void *gpr[2] = {b->gpr_gene, b->gpr_rxn};
        const void *rmr[3] = {b->rmr_rxn, b->rmr_met, b->rmr_stoich};
        PL_TRY(put_arrays(b, "gpr", 3, gpr, 2, b->n_gpr));
        PL_TRY(put_arrays(b, "rmr", 3, rmr, 3, b->n_rmr));
        PL_TRY(pl__ruleset_put(&b->rules, b->txn, b->dbi[PL_DBI_EDGES], m, b->err));
    }
    for (uint32_t t = 0; t < m->n_types; t++) {
        csr c;
        rc = csr_build(b, b->n_genes, b->src[t], b->dst[t], NULL, b->n_edges[t], &c);
        if (rc == 0)
            rc = put_incidence(b, t, &c);
        csr_free(&c);
        PL_TRY(rc);
    }
    if (m->has_metabolism)
        PL_TRY(put_metabolic_incidence(b));
    PL_TRY(pl__onto_put(b->txn, b->dbi[PL_DBI_ONTO], &b->onto, m, b->err));
    MDB_dbi meta = b->dbi[PL_DBI_META];
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "blocks", 6, b->sw.index,
                      b->sw.n_blocks * sizeof *b->sw.index, 0, b->err));
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "meta", 4, m, sizeof *m, 0, b->err));
    const char *params = b->o->params ? b->o->params : "";
    PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "params", 6, params, strlen(params) + 1, 0,
                      b->err));
    if (m->payload_dtype[0])
        PL_TRY(pl__db_put(b->txn, meta, PL_DBI_META, "payload", 7, payload->sums,
                          payload->n_sums * 8, 0, b->err));
    /* The pages reach data.mdb here: a full file system or the file size
     * limit shows as EIO from LMDB (a short write), said plainly. */
    char why[256];
    rc = mdb_txn_commit(b->txn);
    b->txn = NULL;
    pl__path_join(p, sizeof p, b->tmp.path, PL_FILE_LMDB);
    if (rc > 0 && rc < 4096)
        return pl__err(b->err, pl__write_error(p, rc, why, sizeof why), "%s: commit: %s", p,
                       why);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: commit: %s", p, mdb_strerror(rc));
    rc = mdb_env_sync(b->env, 1);
    if (rc > 0 && rc < 4096)
        return pl__err(b->err, pl__write_error(p, rc, why, sizeof why), "%s: sync: %s", p,
                       why);
    PL_FAIL_IF(rc, b->err, pl__lmdb_code(rc), "%s: sync: %s", p, mdb_strerror(rc));
    mdb_env_close(b->env);
    b->env = NULL;
    unlink(pl__path_join(p, sizeof p, b->tmp.path, "lock.mdb"));
    return 0;
}

/* ------------------------------------------------------------------- build */

static int check_type_names(const pl_build_opts *o, pl_err *err)
{
    int metabolism = o->gpr || o->rmr || o->reactions || o->rules;
    PL_FAIL_IF((o->n_types < 1 && !metabolism) || o->n_types > PL_MAX_TYPES, err, PL_EUSAGE,
               "%zu edge types given; between 1 and %d are supported (0 with metabolism)",
               o->n_types, PL_MAX_TYPES);
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

static int run(builder *b)
{
    const pl_build_opts *o = b->o;
    struct pl__meta *m = &b->meta;
    PL_FAIL_IF(!o->out || !o->genes || !o->samples ||
                   (o->n_types && (!o->type_names || !o->type_files)),
               b->err, PL_EUSAGE, "pl_build: out, genes, edge types and samples are required");
    PL_TRY(check_type_names(o, b->err));
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
    PL_TRY(read_names(b, o->genes, &b->genes, "gene"));
    b->n_genes = b->genes.n;
    PL_FAIL_IF(b->n_genes > INT32_MAX, b->err, PL_EPARSE, "%s: too many genes", o->genes);
    PL_TRY(pl__onto_from_build(o, &b->genes, o->progress == 0, &b->onto,
                               &b->st.unknown_term_genes, b->err));
    for (uint32_t t = 0; t < o->n_types; t++) {
        double ms = o->min_score ? o->min_score[t] : NAN;
        PL_TRY(is_npy(o->type_files[t]) ? read_edges_npy(b, t, o->type_files[t])
                                        : read_edges_tsv(b, t, o->type_files[t], ms));
        PL_FAIL_IF(b->n_edges[t] >= UINT32_MAX, b->err, PL_EPARSE, "%s: too many edges",
                   o->type_files[t]);
    }
    if (o->reactions)
        PL_TRY(read_names(b, o->reactions, &b->reactions, "reaction"));
    if (o->gpr)
        PL_TRY(read_gpr(b, o->gpr));
    if (o->rules)
        PL_TRY(read_rules(b, o->rules));
    PL_TRY(pl__ruleset_meta(&b->rules, o, m, b->err));
    if (o->rmr)
        PL_TRY(read_rmr(b, o->rmr));
    PL_TRY(read_samples(b, o->samples));
    chunker payload = {.fd = -1};
    int rc = o->payload ? copy_payload(b, o->payload, &payload) : 0;
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
        rc = write_lmdb(b, &payload);
    }
    free(payload.sums);
    PL_TRY(rc);
    /* data.mdb is final: its size and checksum go into the store's header. */
    char lmdb[4096];
    pl__path_join(lmdb, sizeof lmdb, b->tmp.path, PL_FILE_LMDB);
    PL_TRY(pl__sstore_seal(b->sw.path, lmdb, b->err));
    return pl__tmpdir_commit(&b->tmp, o->out, b->err);
}

PL_API int pl_build(const pl_build_opts *opts, pl_build_stats *stats, pl_err *err)
{
    builder *b = calloc(1, sizeof *b);
    if (!b)
        return pl__err(err, -ENOMEM, "out of memory");
    b->o = opts;
    b->err = err;
    b->sw.fd = -1;
    double t0 = pl__now();
    int rc = run(b);
    if (b->txn)
        mdb_txn_abort(b->txn);
    if (b->env)
        mdb_env_close(b->env);
    pl__sstore_writer_free(&b->sw);
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
    free(b->ser);
    free(b);
    return rc;
}
