/* `pertload synth --preset human` (DESIGN section 23) at a reduced sample count, through
 * the command line: the shape of its files (20,000 genes, the nine types at 12M edges
 * with hubs of thousands of partners, self-loops and duplicates, the metabolic layer
 * scaled alike, 1-3 genes a sample, a float16 cell-set payload), then `pertload build`
 * of its build-args.txt, and the masks of the stored samples and of hub-heavy deletion
 * sets against a brute-force O(E) scan of the input files (DESIGN section 2; reactions
 * by evaluating rules.tsv's rules). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "masks/masks.h"
#include "pertload.h"
#include "preprocess/synth_preset.h"
#include "src/core/strtab.h"
#include "testutil.h"

#define SAMPLES 2000u
#define CHECK_ROWS 120u /* stored samples checked: every single and triple, then doubles */
#define N_LISTS (PL_SYNTH_TYPES + 3)

/* The input files read back, indexed as the database indexes them. */
static struct {
    char *dir, *in, *db;
    pl_strtab genes, reactions;
    uint32_t n_genes;
    uint64_t n_edges[PL_SYNTH_TYPES];
    int32_t *src[PL_SYNTH_TYPES], *dst[PL_SYNTH_TYPES];
    uint64_t n_gpr, n_rmr;
    int32_t *gpr_gene, *rmr_rxn;
    char **rule; /* [n_reactions], "" without genes */
    uint32_t n_reactions;
    pl_db *d;
    pl_graph *g;
    pl_masks *m;
} H;

static void fx_init(void) { memset(&H, 0, sizeof H); }

static void fx_fini(void)
{
    pl_masks_free(H.m);
    pl_graph_free(H.g);
    pl_db_close(H.d);
    for (uint32_t t = 0; t < PL_SYNTH_TYPES; t++) {
        free(H.src[t]);
        free(H.dst[t]);
    }
    for (uint32_t r = 0; H.rule && r < H.n_reactions; r++)
        free(H.rule[r]);
    free(H.rule);
    free(H.gpr_gene);
    free(H.rmr_rxn);
    pl__strtab_free(&H.genes);
    pl__strtab_free(&H.reactions);
    if (H.dir)
        pl_test_rmtree(H.dir);
    free(H.dir);
    free(H.in);
    free(H.db);
}

TestSuite(synth_human, .init = fx_init, .fini = fx_fini, .timeout = 600);

static int32_t gene_of(const char *s, size_t n, const char *file)
{
    int64_t g = pl__strtab_find(&H.genes, s, n);
    CHECK(g >= 0, "%s: unknown gene '%.*s'", file, (int)n, s);
    return (int32_t)g;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* edges/<type>.tsv: counts, hubs, self-loops and duplicate pairs. */
static void read_edges(uint32_t t, const pl_synth_preset *ps)
{
    char name[96];
    size_t len;
    snprintf(name, sizeof name, "edges/%s.tsv", pl__synth_type_name(t));
    char *p = pl_test_path(H.in, name), *text = pl_test_read_file(p, &len);
    uint64_t cap = ps->edges[t] + 1, n = 0, loops = 0;
    H.src[t] = malloc(cap * 4);
    H.dst[t] = malloc(cap * 4);
    uint64_t *key = malloc(cap * 8), *deg = calloc(H.n_genes, 8);
    cr_assert(H.src[t] && H.dst[t] && key && deg);
    for (char *ln = text, *end; ln < text + len; ln = end + 1) {
        end = memchr(ln, '\n', (size_t)(text + len - ln));
        cr_assert_not_null(end, "%s: last line unterminated", name);
        char *tab = memchr(ln, '\t', (size_t)(end - ln));
        cr_assert_not_null(tab, "%s: line %llu", name, (unsigned long long)n + 1);
        char *b = tab + 1, *tab2 = memchr(b, '\t', (size_t)(end - b));
        cr_assert_lt(n, cap, "%s: more lines than the preset's count", name);
        int32_t s = gene_of(ln, (size_t)(tab - ln), name);
        int32_t d = gene_of(b, (size_t)((tab2 ? tab2 : end) - b), name);
        H.src[t][n] = s;
        H.dst[t][n] = d;
        key[n++] = (uint64_t)s << 32 | (uint32_t)d;
        loops += s == d;
        deg[s]++;
        deg[d] += s != d;
    }
    H.n_edges[t] = n;
    cr_expect_eq(n, ps->edges[t], "%s: %llu edges, the preset %llu", name,
                 (unsigned long long)n, (unsigned long long)ps->edges[t]);
    uint64_t max = 0, isolated = 0, dups = 0;
    for (uint32_t g = 0; g < H.n_genes; g++) {
        max = deg[g] > max ? deg[g] : max;
        isolated += deg[g] == 0;
    }
    qsort(key, n, 8, cmp_u64);
    for (uint64_t i = 1; i < n; i++)
        dups += key[i] == key[i - 1];
    /* The yeast shapes: heavy tails (yeast's hubs reach a tenth of a percent of their
     * type's edges or more), half the genes isolated in the small types, ~0.1%
     * self-loops and ~0.5% duplicates. */
    cr_expect_geq(max * 1000, n, "%s: biggest hub %llu of %llu edges", name,
                  (unsigned long long)max, (unsigned long long)n);
    if (n >= 1000000)
        cr_expect_geq(max, 5000, "%s: biggest hub %llu", name, (unsigned long long)max);
    if (pl__synth_type_half(t))
        cr_expect_geq(isolated, H.n_genes / 2, "%s: %llu isolated genes", name,
                      (unsigned long long)isolated);
    cr_expect(loops * 2000 > n && loops * 500 < n, "%s: %llu self-loops", name,
              (unsigned long long)loops);
    cr_expect(dups * 400 > n && dups * 100 < n, "%s: %llu repeated pairs", name,
              (unsigned long long)dups);
    free(key);
    free(deg);
    free(text);
    free(p);
}

/* Split `text` into lines (in place); calls f(fields, n_fields) per line. */
static void each_line(char *text, size_t len, void (*f)(char **, int, uint64_t))
{
    uint64_t i = 0;
    for (char *ln = text, *end; ln < text + len; ln = end + 1, i++) {
        end = memchr(ln, '\n', (size_t)(text + len - ln));
        cr_assert_not_null(end);
        *end = 0;
        char *fld[4];
        int nf = 0;
        for (char *s = ln; nf < 4;) {
            fld[nf++] = s;
            char *tab = strchr(s, '\t');
            if (!tab)
                break;
            *tab = 0;
            s = tab + 1;
        }
        f(fld, nf, i);
    }
}

static void on_reaction(char **f, int nf, uint64_t i)
{
    (void)nf;
    cr_assert_eq(pl__strtab_intern(&H.reactions, f[0], strlen(f[0]), NULL), (int64_t)i,
                 "reactions.txt: %s twice", f[0]);
}

static void on_gpr(char **f, int nf, uint64_t i)
{
    cr_assert_eq(nf, 2);
    H.gpr_gene[i] = gene_of(f[0], strlen(f[0]), "gpr.tsv");
}

static void on_rmr(char **f, int nf, uint64_t i)
{
    cr_assert_eq(nf, 3);
    int64_t r = pl__strtab_find(&H.reactions, f[0], strlen(f[0]));
    cr_assert_geq(r, 0, "rmr.tsv: reaction %s", f[0]);
    H.rmr_rxn[i] = (int32_t)r;
}

static void on_rule(char **f, int nf, uint64_t i)
{
    if (i == 0)
        return; /* the header */
    int64_t r = pl__strtab_find(&H.reactions, f[0], strlen(f[0]));
    cr_assert_geq(r, 0, "rules.tsv: reaction %s", f[0]);
    H.rule[r] = strdup(nf > 1 ? f[1] : "");
}

static uint64_t count_lines(const char *text, size_t len)
{
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n;
}

/* reactions.txt, gpr.tsv, rmr.tsv, rules.tsv. */
static void read_metabolism(const pl_synth_preset *ps)
{
    static const char *const files[] = {"reactions.txt", "gpr.tsv", "rmr.tsv", "rules.tsv"};
    void (*const fn[])(char **, int, uint64_t) = {on_reaction, on_gpr, on_rmr, on_rule};
    for (int k = 0; k < 4; k++) {
        size_t len;
        char *p = pl_test_path(H.in, files[k]), *text = pl_test_read_file(p, &len);
        uint64_t n = count_lines(text, len);
        if (k == 0) {
            H.n_reactions = (uint32_t)n;
            H.rule = calloc(n, sizeof *H.rule);
            cr_assert_not_null(H.rule);
        } else if (k == 1) {
            H.n_gpr = n;
            H.gpr_gene = malloc(n * 4 + 4);
        } else if (k == 2) {
            H.n_rmr = n;
            H.rmr_rxn = malloc(n * 4 + 4);
        }
        cr_assert(H.gpr_gene || k < 1);
        cr_assert(H.rmr_rxn || k < 2);
        each_line(text, len, fn[k]);
        free(text);
        free(p);
    }
    cr_expect_eq(H.n_reactions, (uint32_t)(ps->reactions + 0.5), "%u reactions",
                 H.n_reactions);
    /* Genes with reactions: the preset's share of the genes, as yeast-GEM's. */
    unsigned char *used = calloc(H.n_genes, 1);
    uint32_t n_used = 0;
    for (uint64_t i = 0; i < H.n_gpr; i++) {
        n_used += !used[H.gpr_gene[i]];
        used[H.gpr_gene[i]] = 1;
    }
    free(used);
    cr_expect(n_used <= ps->metabolic_genes && n_used * 10 >= ps->metabolic_genes * 8,
              "%u genes with reactions, the preset %.0f", n_used, ps->metabolic_genes);
}

/* ------------------------------------------------------------ the oracle */

typedef struct oracle {
    int32_t *list[N_LISTS];
    uint32_t len[N_LISTS];
} oracle;

static void oracle_compute(const int32_t *genes, uint32_t n, oracle *o, unsigned char *in)
{
    memset(o, 0, sizeof *o);
    memset(in, 0, H.n_genes);
    for (uint32_t i = 0; i < n; i++)
        in[genes[i]] = 1;
    for (uint32_t t = 0; t < PL_SYNTH_TYPES; t++) {
        o->list[t] = malloc(H.n_edges[t] * 4 + 4);
        cr_assert_not_null(o->list[t]);
        for (uint64_t e = 0; e < H.n_edges[t]; e++)
            if (in[H.src[t][e]] | in[H.dst[t][e]])
                o->list[t][o->len[t]++] = (int32_t)e;
    }
    const uint32_t kg = PL_SYNTH_TYPES + PL_LIST_GPR, kr = PL_SYNTH_TYPES + PL_LIST_REACTION,
                   km = PL_SYNTH_TYPES + PL_LIST_RMR;
    o->list[kg] = malloc(H.n_gpr * 4 + 4);
    o->list[kr] = malloc(H.n_reactions * 4 + 4);
    o->list[km] = malloc(H.n_rmr * 4 + 4);
    unsigned char *removed = calloc(H.n_reactions, 1);
    cr_assert(o->list[kg] && o->list[kr] && o->list[km] && removed);
    for (uint64_t i = 0; i < H.n_gpr; i++)
        if (in[H.gpr_gene[i]])
            o->list[kg][o->len[kg]++] = (int32_t)i;
    pl_test_deleted del = {H.d, in};
    for (uint32_t r = 0; r < H.n_reactions; r++) {
        int holds = pl_test_rule_holds(H.rule[r] ? H.rule[r] : "", pl_test_db_deleted, &del);
        CHECK(holds >= 0, "rules.tsv: the rule of reaction %u does not parse", r);
        if (!holds) {
            removed[r] = 1;
            o->list[kr][o->len[kr]++] = (int32_t)r;
        }
    }
    for (uint64_t i = 0; i < H.n_rmr; i++)
        if (removed[H.rmr_rxn[i]])
            o->list[km][o->len[km]++] = (int32_t)i;
    free(removed);
}

static void oracle_free(oracle *o)
{
    for (uint32_t k = 0; k < N_LISTS; k++)
        free(o->list[k]);
}

/* pl_masks_compute() of genes[0..n) against the oracle. */
static uint64_t check_set(const char *what, uint64_t which, const int32_t *genes, uint32_t n,
                          unsigned char *in)
{
    oracle o;
    oracle_compute(genes, n, &o, in);
    pl_masks_result res;
    cr_assert_eq(pl_masks_compute(H.m, genes, n, &res), 0, "%s %llu", what,
                 (unsigned long long)which);
    cr_assert_eq(res.n_lists, N_LISTS);
    uint64_t removed = 0;
    for (uint32_t k = 0; k < N_LISTS; k++) {
        const char *list = pl_graph_list_name(H.g, k);
        cr_assert_eq(res.removed[k].n, o.len[k], "%s %llu, %s: %u positions, oracle %u",
                     what, (unsigned long long)which, list, res.removed[k].n, o.len[k]);
        for (uint32_t i = 0; i < o.len[k]; i++)
            CHECK(res.removed[k].v[i] == o.list[k][i], "%s %llu, %s: entry %u is %d, oracle %d",
                  what, (unsigned long long)which, list, i, res.removed[k].v[i], o.list[k][i]);
        removed += o.len[k];
    }
    oracle_free(&o);
    return removed;
}

Test(synth_human, preset_files_build_and_masks_equal_the_oracle)
{
    const pl_synth_preset *ps = pl__synth_preset("human");
    cr_assert_not_null(ps);
    cr_assert_eq(pl__synth_preset(NULL), pl__synth_preset("yeast"), "yeast is the default");
    cr_assert_null(pl__synth_preset("mouse"));
    H.dir = pl_test_tmpdir();
    H.in = pl_test_path(H.dir, "in");
    H.db = pl_test_path(H.dir, "db");
    char samples[32], msg[4096];
    snprintf(samples, sizeof samples, "%u", SAMPLES);
    char *synth[] = {"pertload", "synth", H.in, "--preset", "human", "--samples", samples,
                     "--payload-dim", "8", "--payload-cells", "4", "--payload-dtype",
                     "float16", "--quiet", NULL};
    cr_assert_eq(pl_test_run_cli(synth, msg, sizeof msg), 0, "pertload synth: %s", msg);

    /* genes.txt: the preset's genes, in the database's order (checked below). */
    size_t len;
    char *p = pl_test_path(H.in, "genes.txt"), *text = pl_test_read_file(p, &len);
    cr_assert_eq(pl__strtab_init(&H.genes), 0);
    cr_assert_eq(pl__strtab_init(&H.reactions), 0);
    for (char *sv = NULL, *tok = strtok_r(text, "\n", &sv); tok;
         tok = strtok_r(NULL, "\n", &sv)) {
        int added = 0;
        cr_assert_geq(pl__strtab_intern(&H.genes, tok, strlen(tok), &added), 0);
        cr_assert(added, "genes.txt: %s twice", tok);
    }
    free(text);
    free(p);
    H.n_genes = (uint32_t)H.genes.n;
    cr_assert_eq(H.n_genes, ps->n_genes);
    uint64_t total = 0;
    for (uint32_t t = 0; t < PL_SYNTH_TYPES; t++) {
        read_edges(t, ps);
        total += H.n_edges[t];
    }
    cr_expect(total >= 11900000 && total <= 12100000, "%llu edges", (unsigned long long)total);
    read_metabolism(ps);

    /* build-args.txt builds, as the command line takes it. */
    p = pl_test_path(H.in, "build-args.txt");
    text = pl_test_read_file(p, &len);
    char *build[64] = {"pertload", "build", "-o", H.db, "--quiet"};
    int na = 5;
    for (char *sv = NULL, *a = strtok_r(text, "\n", &sv); a && na < 63;
         a = strtok_r(NULL, "\n", &sv))
        build[na++] = a;
    build[na] = NULL;
    cr_assert_eq(pl_test_run_cli(build, msg, sizeof msg), 0, "pertload build: %s", msg);
    free(text);
    free(p);
    pl_err err = {0};
    cr_assert_eq(pl_db_open(H.db, &H.d, &err), 0, "%s", err.msg);
    const pl_db_info *info = pl_db_info_get(H.d);
    cr_assert_eq(info->n_genes, H.n_genes);
    cr_assert_eq(info->n_samples, SAMPLES);
    cr_assert_eq(info->n_reactions, H.n_reactions);
    cr_assert_eq(info->n_gpr, H.n_gpr);
    cr_assert_eq(info->n_rmr, H.n_rmr);
    for (uint32_t t = 0; t < PL_SYNTH_TYPES; t++)
        cr_assert_eq(info->n_edges[t], H.n_edges[t], "type %u", t);
    for (uint32_t r = 0; r < H.n_reactions; r++)
        cr_assert_eq(pl__strtab_find(&H.reactions, info->reaction_names[r],
                                     strlen(info->reaction_names[r])),
                     (int64_t)r, "reaction %u", r);
    for (uint32_t g = 0; g < H.n_genes; g += 97)
        cr_assert_eq(pl_db_gene_index(H.d, H.genes.names[g]), (int64_t)g);
    /* The cell-set payload: float16 [S, 4, 8]. */
    cr_expect_str_eq(info->payload_dtype, "<f2");
    cr_expect_eq(info->payload_ndim, 2);
    cr_expect(info->payload_shape[0] == 4 && info->payload_shape[1] == 8);
    cr_assert_eq(pl_graph_load(H.d, &H.g, &err), 0, "%s", err.msg);
    H.m = pl_masks_new(H.g);
    cr_assert_not_null(H.m);

    /* Stored samples: 1-3 genes; every single and triple and the first doubles. */
    unsigned char *in = malloc(H.n_genes);
    cr_assert_not_null(in);
    uint64_t by_k[4] = {0}, checked = 0, removed = 0;
    for (uint64_t row = 0; row < SAMPLES; row++) {
        pl_sample smp;
        cr_assert_eq(pl_db_sample(H.d, row, &smp, &err), 0, "row %llu: %s",
                     (unsigned long long)row, err.msg);
        cr_assert(smp.n_genes >= 1 && smp.n_genes <= 3, "row %llu: %u genes",
                  (unsigned long long)row, smp.n_genes);
        by_k[smp.n_genes]++;
        if (smp.n_genes == 2 && by_k[2] > CHECK_ROWS)
            continue;
        int32_t genes[3];
        memcpy(genes, smp.genes, smp.n_genes * sizeof *genes);
        removed += check_set("row", row, genes, smp.n_genes, in);
        checked++;
    }
    cr_expect_gt(by_k[2], SAMPLES * 9 / 10);
    cr_expect_gt(by_k[3], 0);
    cr_assert_geq(checked, CHECK_ROWS);
    cr_expect_gt(removed / checked, 1000, "%llu removed positions a sample",
                 (unsigned long long)(removed / checked));
    /* Hub sets: the biggest hub of each type, alone and all nine together. */
    int32_t hubs[PL_SYNTH_TYPES];
    for (uint32_t t = 0; t < PL_SYNTH_TYPES; t++) {
        uint32_t *deg = calloc(H.n_genes, 4);
        cr_assert_not_null(deg);
        for (uint64_t e = 0; e < H.n_edges[t]; e++) {
            deg[H.src[t][e]]++;
            deg[H.dst[t][e]]++;
        }
        hubs[t] = 0;
        for (uint32_t g = 1; g < H.n_genes; g++)
            hubs[t] = deg[g] > deg[hubs[t]] ? (int32_t)g : hubs[t];
        free(deg);
        check_set("hub of type", t, &hubs[t], 1, in);
    }
    check_set("hubs of the nine types", 0, hubs, PL_SYNTH_TYPES, in);
    free(in);
}
