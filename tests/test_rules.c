/* Gene-reaction rules (reaction rule gpr, DESIGN section 2) against
 * brute-force oracles.
 *
 * Random rules (nested and/or in any case, redundant parentheses, repeated
 * genes, single-gene rules, empty rules, reactions with no rule line) go
 * through the real pipeline: a rules file on disk, pl_build(), pl_db_open(),
 * pl_graph_load(); the removed GPR edges, reactions and RMR edges of every
 * single deletion and of random deletion sets (0..20 genes, duplicates
 * included) from pl_masks_compute() and from pl__masks_union() (the
 * collation's call) are compared with an evaluation of the test's own rule
 * trees. The same files built with rule any remove every reaction that has a
 * deleted gene. The real yeast-GEM rules are checked the same way against
 * the text evaluator of testutil (every single deletion, 3,000 random double
 * and triple deletions). The compiler keeps any rule's stack within the
 * bound (deep nesting, wide rules), and stored programs that are malformed
 * are refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "masks/masks.h"
#include "pertload.h"
#include "preprocess/rules.h"
#include "src/core/rule.h"
#include "testutil.h"

#define N_GRAPHS 16
#define MAX_SET 20

/* A rule tree: op 0 gene, 1 and, 2 or. */
typedef struct rnode {
    int op, gene;
    int first, n; /* children kids[first .. first + n) */
} rnode;

static struct {
    char *dir;
    pl_db *db, *db_any;
    pl_graph *g, *g_any;
    pl_masks *m, *m_any;
    rnode *nodes;
    int *kids;
    int n_nodes, n_kids;
    int *root;           /* [n_ids]: root node, -1 no rule line, -2 empty rule */
    int32_t *gpr_gene, *gpr_id; /* expected GPR edges (reaction ids) */
    int n_gpr;
    int32_t *rmr_id;     /* reaction id of each RMR row */
    int n_rmr;
} T;

static void fx_init(void) { memset(&T, 0, sizeof T); }

static void release(void)
{
    pl_masks_free(T.m);
    pl_masks_free(T.m_any);
    pl_graph_free(T.g);
    pl_graph_free(T.g_any);
    pl_db_close(T.db);
    pl_db_close(T.db_any);
    free(T.nodes);
    free(T.kids);
    free(T.root);
    free(T.gpr_gene);
    free(T.gpr_id);
    free(T.rmr_id);
    char *dir = T.dir;
    memset(&T, 0, sizeof T);
    T.dir = dir;
}

static void fx_fini(void)
{
    release();
    if (T.dir) {
        pl_test_rmtree(T.dir);
        free(T.dir);
    }
    memset(&T, 0, sizeof T);
}

TestSuite(rules, .init = fx_init, .fini = fx_fini, .timeout = 600);

/* ------------------------------------------------------- random rules */

static uint64_t below(uint64_t *r, uint64_t n) { return pl_test_below(r, n); }

static int new_node(int op, int gene)
{
    cr_assert_lt(T.n_nodes, 1 << 20);
    T.nodes[T.n_nodes] = (rnode){op, gene, 0, 0};
    return T.n_nodes++;
}

/* A tree over the genes pool[0..np): leaves repeat genes of the pool. */
static int gen_tree(uint64_t *r, const int *pool, int np, int depth)
{
    if (depth == 0 || below(r, 100) < 40)
        return new_node(0, pool[below(r, (uint64_t)np)]);
    int op = 1 + (int)below(r, 2), n = 2 + (int)below(r, 3), kid[4];
    for (int i = 0; i < n; i++)
        kid[i] = gen_tree(r, pool, np, depth - 1);
    int id = new_node(op, 0);
    T.nodes[id].first = T.n_kids;
    T.nodes[id].n = n;
    for (int i = 0; i < n; i++)
        T.kids[T.n_kids++] = kid[i];
    return id;
}

static int eval_tree(int id, const unsigned char *P)
{
    const rnode *v = &T.nodes[id];
    if (v->op == 0)
        return !P[v->gene];
    int acc = v->op == 1;
    for (int i = 0; i < v->n; i++) {
        int x = eval_tree(T.kids[v->first + i], P);
        acc = v->op == 1 ? acc && x : acc || x;
    }
    return acc;
}

/* Print the tree: parentheses where `and` holds an `or`, and now and then
 * where they are redundant; operators in any case. Records the rule's
 * distinct genes in order of appearance as expected GPR edges of `id`. */
static void print_tree(pl_test_text *t, uint64_t *r, int node, int parent_op, int rx)
{
    static const char *const ops[3][3] = {{"", "", ""}, {"and", "AND", "And"},
                                          {"or", "OR", "oR"}};
    const rnode *v = &T.nodes[node];
    if (v->op == 0) {
        pl_test_tprintf(t, "g%d", v->gene);
        int seen = 0;
        for (int i = T.n_gpr - 1; i >= 0 && T.gpr_id[i] == rx; i--)
            seen |= T.gpr_gene[i] == v->gene;
        if (!seen) {
            T.gpr_gene[T.n_gpr] = v->gene;
            T.gpr_id[T.n_gpr++] = rx;
        }
        return;
    }
    int paren = (parent_op == 1 && v->op == 2) || below(r, 4) == 0;
    if (paren)
        pl_test_tprintf(t, below(r, 2) ? "(" : "( ");
    for (int i = 0; i < v->n; i++) {
        if (i)
            pl_test_tprintf(t, below(r, 3) ? " %s " : "  %s ", ops[v->op][below(r, 3)]);
        print_tree(t, r, T.kids[v->first + i], v->op, rx);
    }
    if (paren)
        pl_test_tprintf(t, below(r, 2) ? ")" : " )");
}

/* Reaction ids 0..n_ids-1 named r<id>: a rule line for most (some empty),
 * in random order; RMR rows on random reactions; a reaction list (shuffled)
 * on odd graphs. Builds with the default rule (gpr) and with rule any. */
static uint32_t make_graph(uint64_t seed, uint32_t *n_ids_out)
{
    uint64_t r = seed * 7919 + 1;
    uint32_t n_genes = 2 + (uint32_t)below(&r, 300), n_ids = 1 + (uint32_t)below(&r, 150);
    uint32_t hubs = 1 + (uint32_t)below(&r, 4);
    T.nodes = malloc((1 << 20) * sizeof *T.nodes);
    T.kids = malloc((1 << 20) * sizeof *T.kids);
    T.root = malloc(n_ids * sizeof *T.root);
    T.gpr_gene = malloc(n_ids * 256 * sizeof(int32_t));
    T.gpr_id = malloc(n_ids * 256 * sizeof(int32_t));
    cr_assert(T.nodes && T.kids && T.root && T.gpr_gene && T.gpr_id);
    pl_test_inputs in = {.dir = T.dir};
    pl_test_text t = {0};
    for (uint32_t gi = 0; gi < n_genes; gi++)
        pl_test_tprintf(&t, "g%u\n", gi);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "g0\tg%u\n", n_genes - 1);
    pl_test_inputs_edges(&in, "phys", pl_test_inputs_text(&in, "phys.tsv", &t));
    /* rule lines, in a random order of the ids */
    uint32_t *order = malloc(n_ids * sizeof *order);
    cr_assert_not_null(order);
    for (uint32_t i = 0; i < n_ids; i++)
        order[i] = i;
    for (uint32_t i = n_ids; i > 1; i--) {
        uint32_t j = (uint32_t)below(&r, i), x = order[i - 1];
        order[i - 1] = order[j];
        order[j] = x;
    }
    int header = (int)below(&r, 3);
    if (header == 1)
        pl_test_tprintf(&t, "reaction\trule\n");
    else if (header == 2)
        pl_test_tprintf(&t, "# a comment\nrxn_id\tgene_reaction_rule\n");
    for (uint32_t i = 0; i < n_ids; i++) {
        uint32_t id = order[i];
        uint64_t roll = below(&r, 100);
        if (roll < 8) {
            T.root[id] = -1; /* no line */
            continue;
        }
        pl_test_tprintf(&t, "r%u\t", id);
        if (roll < 18) {
            T.root[id] = -2; /* empty rule */
            pl_test_tprintf(&t, "\n");
            continue;
        }
        int pool[6], np = 1 + (int)below(&r, 6);
        for (int k = 0; k < np; k++)
            pool[k] = below(&r, 3) == 0 ? (int)below(&r, hubs) % (int)n_genes
                                        : (int)below(&r, n_genes);
        T.root[id] = gen_tree(&r, pool, np, roll < 40 ? 0 : (int)below(&r, 5));
        print_tree(&t, &r, T.root[id], 0, (int)id);
        pl_test_tprintf(&t, "\n");
    }
    in.o.rules = pl_test_inputs_text(&in, "rules.tsv", &t);
    /* RMR rows on random reactions (those without a rule line included) */
    T.n_rmr = (int)below(&r, 4 * n_ids);
    T.rmr_id = malloc(((size_t)T.n_rmr + 1) * sizeof *T.rmr_id);
    cr_assert_not_null(T.rmr_id);
    for (int i = 0; i < T.n_rmr; i++) {
        T.rmr_id[i] = (int32_t)below(&r, n_ids);
        pl_test_tprintf(&t, "r%d\tm%d\t-1\n", T.rmr_id[i], (int)below(&r, 40));
    }
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);
    if (seed & 1) {
        for (uint32_t i = n_ids; i > 0; i--)
            pl_test_tprintf(&t, "r%u\n", order[i - 1]);
        in.o.reactions = pl_test_inputs_text(&in, "reactions.txt", &t);
    }
    pl_test_tprintf(&t, "genes\tfitness\ng0\t1\n");
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    free(order);
    char *out = pl_test_path(T.dir, "db"), *out_any = pl_test_path(T.dir, "db-any");
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "graph %llu: %s",
                 (unsigned long long)seed, err.msg);
    cr_assert_eq(st.n_gpr, (uint64_t)T.n_gpr);
    in.o.reaction_rule = PL_REACTION_ANY;
    cr_assert_eq(pl_test_inputs_build(&in, out_any, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_open(out, &T.db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_open(out_any, &T.db_any, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_load(T.db, &T.g, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_load(T.db_any, &T.g_any, &err), 0, "%s", err.msg);
    T.m = pl_masks_new(T.g);
    T.m_any = pl_masks_new(T.g_any);
    cr_assert(T.m && T.m_any);
    cr_expect_eq(pl_db_info_get(T.db)->reaction_rule, PL_REACTION_GPR);
    cr_expect_eq(pl_db_info_get(T.db_any)->reaction_rule, PL_REACTION_ANY);
    cr_expect_eq(pl_db_verify(T.db, &err), 0, "%s", err.msg);
    pl_test_inputs_free(&in);
    free(out);
    free(out_any);
    *n_ids_out = n_ids;
    return n_genes;
}

static int id_of(const pl_db_info *info, uint64_t r) { return atoi(info->reaction_names[r] + 1); }

/* Compare the engine's lists for the deletion set genes[0..n) with the
 * oracle, in both databases. */
static void check_set(const int32_t *genes, uint32_t n, uint32_t n_genes, uint64_t seed)
{
    const pl_db_info *info = pl_db_info_get(T.db);
    const uint32_t kg = 1 + PL_LIST_GPR, kr = 1 + PL_LIST_REACTION, km = 1 + PL_LIST_RMR;
    unsigned char *P = calloc(n_genes, 1), *gone = calloc(info->n_reactions + 1, 1),
                  *any = calloc(info->n_reactions + 1, 1);
    cr_assert(P && gone && any);
    for (uint32_t i = 0; i < n; i++)
        P[genes[i]] = 1;
    pl_masks_result res, res_any;
    cr_assert_eq(pl_masks_compute(T.m, genes, n, &res), 0);
    cr_assert_eq(pl_masks_compute(T.m_any, genes, n, &res_any), 0);
    /* GPR: the database's edges are the expected ones; removed by gene. */
    int32_t *gpr = malloc((2 * (size_t)T.n_gpr + 1) * 4);
    cr_assert_not_null(gpr);
    pl_err err;
    cr_assert_eq(pl_db_graph_array(T.db, PL_ARRAY_GPR, gpr, (2 * (size_t)T.n_gpr + 1) * 4,
                                   &err), 8 * (int64_t)T.n_gpr);
    uint32_t k = 0;
    for (int i = 0; i < T.n_gpr; i++) {
        cr_assert_eq(gpr[i], T.gpr_gene[i], "graph %llu: GPR edge %d", (unsigned long long)seed, i);
        cr_assert_eq(id_of(info, (uint64_t)gpr[T.n_gpr + i]), T.gpr_id[i]);
        any[gpr[T.n_gpr + i]] |= P[gpr[i]];
        if (P[gpr[i]]) {
            cr_assert_lt(k, res.removed[kg].n);
            cr_assert_eq(res.removed[kg].v[k++], i);
        }
    }
    cr_assert_eq(k, res.removed[kg].n);
    /* reactions: rule false (gpr), any gene deleted (any) */
    uint32_t kk = 0, ka = 0;
    for (uint64_t r = 0; r < info->n_reactions; r++) {
        int root = T.root[id_of(info, r)];
        gone[r] = root >= 0 && !eval_tree(root, P);
        if (gone[r]) {
            cr_assert_lt(kk, res.removed[kr].n, "graph %llu: reaction r%d should be removed",
                         (unsigned long long)seed, id_of(info, r));
            cr_assert_eq(res.removed[kr].v[kk++], (int32_t)r);
        }
        if (any[r]) {
            cr_assert_lt(ka, res_any.removed[kr].n);
            cr_assert_eq(res_any.removed[kr].v[ka++], (int32_t)r);
        }
    }
    cr_assert_eq(kk, res.removed[kr].n, "graph %llu: %u reactions removed, the oracle says %u",
                 (unsigned long long)seed, res.removed[kr].n, kk);
    cr_assert_eq(ka, res_any.removed[kr].n);
    /* RMR: rows of removed reactions */
    int32_t *rmr = malloc((3 * (size_t)T.n_rmr + 1) * 4);
    cr_assert_not_null(rmr);
    cr_assert_eq(pl_db_graph_array(T.db, PL_ARRAY_RMR, rmr, (3 * (size_t)T.n_rmr + 1) * 4, &err),
                 8 * (int64_t)T.n_rmr);
    k = 0;
    for (int i = 0; i < T.n_rmr; i++) {
        cr_assert_eq(id_of(info, (uint64_t)rmr[i]), T.rmr_id[i]);
        if (gone[rmr[i]]) {
            cr_assert_lt(k, res.removed[km].n);
            cr_assert_eq(res.removed[km].v[k++], i);
        }
    }
    cr_assert_eq(k, res.removed[km].n);
    /* The collation's call: pl__masks_union of the sorted set, exact room. */
    int32_t *sorted = malloc((n + 1) * sizeof *sorted);
    uint32_t bad;
    int64_t np = pl__masks_genes(n_genes, genes, n, sorted, &bad);
    cr_assert_geq(np, 0);
    uint64_t room = pl__masks_bound(T.g, kr, sorted, (uint32_t)np) + PL__MASKS_PAD;
    int32_t *out = malloc(room * 4), *scratch = malloc(room * 4);
    cr_assert(sorted && out && scratch);
    uint64_t len = pl__masks_union(T.g, kr, sorted, (uint32_t)np, out, scratch);
    cr_assert_eq(len, res.removed[kr].n);
    cr_assert_arr_eq(out, res.removed[kr].v, len * 4);
    for (uint32_t p = 0; p < PL__MASKS_PAD; p++)
        cr_assert_eq(out[len + p], -1, "the sentinels follow the filtered list");
    free(sorted);
    free(out);
    free(scratch);
    free(rmr);
    free(gpr);
    free(P);
    free(gone);
    free(any);
}

Test(rules, random_rules_against_their_trees)
{
    T.dir = pl_test_tmpdir();
    for (uint64_t s = 1; s <= N_GRAPHS; s++) {
        uint32_t n_ids;
        uint32_t n_genes = make_graph(s, &n_ids);
        for (uint32_t g = 0; g < n_genes; g++) {
            int32_t one = (int32_t)g;
            check_set(&one, 1, n_genes, s);
        }
        uint64_t r = s * 31 + 5;
        for (int i = 0; i < 150; i++) {
            int32_t set[MAX_SET];
            uint32_t n = (uint32_t)below(&r, MAX_SET + 1);
            for (uint32_t j = 0; j < n; j++)
                set[j] = j && below(&r, 6) == 0 ? set[j - 1] : (int32_t)below(&r, n_genes);
            check_set(set, n, n_genes, s);
        }
        release();
        char *db = pl_test_path(T.dir, "db"), *dba = pl_test_path(T.dir, "db-any");
        pl_test_rmtree(db);
        pl_test_rmtree(dba);
        free(db);
        free(dba);
    }
}

/* ------------------------------------------------------- real yeast-GEM */

static char *real_file(const char *name)
{
    const char *root = getenv("PERTLOAD_REAL_DATA");
    char p[4096];
    if (root && *root)
        snprintf(p, sizeof p, "%s/real/yeast-gem/%s", root, name);
    else
        snprintf(p, sizeof p, "%s/tests/data/real/yeast-gem/%s", PL_SOURCE_ROOT, name);
    return strdup(p);
}

/* The gunzipped text of a real file. */
static char *gunzip(const char *name)
{
    char *src = real_file(name), *dst = pl_test_path(T.dir, name), cmd[9000];
    dst[strlen(dst) - 3] = 0; /* drop ".gz" */
    snprintf(cmd, sizeof cmd, "gzip -dc '%s' > '%s'", src, dst);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    size_t len;
    char *text = pl_test_read_file(dst, &len);
    free(src);
    free(dst);
    return text;
}

/* Column `col` (0-based) of a tab-separated line, copied into `out`. */
static void column(const char *line, int col, char *out, size_t cap)
{
    for (int c = 0; c < col && line; c++) {
        line = strchr(line, '\t');
        line = line ? line + 1 : NULL;
    }
    cr_assert_not_null(line);
    size_t n = strcspn(line, "\t\n");
    cr_assert_lt(n, cap);
    memcpy(out, line, n);
    out[n] = 0;
}

Test(rules, yeast_gem_rules_against_a_text_evaluator)
{
    T.dir = pl_test_tmpdir();
    char *reactions = gunzip("reactions.tsv.gz"), *genes = gunzip("genes.tsv.gz");
    char *stoich = gunzip("rxn_met_stoich.tsv.gz");
    /* rules.tsv: rxn_id and gene_reaction_rule, the header kept; genes.txt:
     * the gene ids; rmr.tsv: the stoichiometry without its header. */
    pl_test_inputs in = {.dir = T.dir};
    pl_test_text t = {0};
    char **rule = calloc(8192, sizeof *rule), **rname = calloc(8192, sizeof *rname);
    cr_assert(rule && rname);
    int n_rx = -1;
    char *sv = NULL;
    for (char *ln = strtok_r(reactions, "\n", &sv); ln; ln = strtok_r(NULL, "\n", &sv)) {
        char id[64], rl[4096];
        column(ln, 0, id, sizeof id);
        column(ln, 5, rl, sizeof rl);
        pl_test_tprintf(&t, "%s\t%s\n", id, rl);
        if (n_rx >= 0) {
            cr_assert_lt(n_rx, 8192);
            rname[n_rx] = strdup(id);
            rule[n_rx] = strdup(rl);
        }
        n_rx++;
    }
    cr_assert_eq(n_rx, 4131);
    in.o.rules = pl_test_inputs_text(&in, "rules.tsv", &t);
    sv = NULL;
    for (char *ln = strtok_r(genes, "\n", &sv), *first = ln; ln; ln = strtok_r(NULL, "\n", &sv)) {
        char id[64];
        column(ln, 0, id, sizeof id);
        if (ln != first)
            pl_test_tprintf(&t, "%s\n", id);
    }
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    char *nl = strchr(stoich, '\n');
    cr_assert_not_null(nl);
    pl_test_tprintf(&t, "%s", nl + 1);
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);
    pl_test_tprintf(&t, "YDL174C\tYEL039C\n");
    pl_test_inputs_edges(&in, "phys", pl_test_inputs_text(&in, "phys.tsv", &t));
    pl_test_tprintf(&t, "genes\tfitness\nYDL174C\t1\n");
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    char *out = pl_test_path(T.dir, "db");
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "%s", err.msg);
    cr_expect_eq(st.n_genes, 1161);
    cr_expect_eq(st.n_reactions, 4131);
    cr_expect_eq(st.n_rules, 4131 - 1422);
    cr_expect_eq(st.n_gpr, 4095);
    cr_assert_eq(pl_db_open(out, &T.db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_load(T.db, &T.g, &err), 0, "%s", err.msg);
    T.m = pl_masks_new(T.g);
    cr_assert_not_null(T.m);
    const pl_db_info *info = pl_db_info_get(T.db);
    for (int r = 0; r < n_rx; r++)
        cr_assert_str_eq(info->reaction_names[r], rname[r]);
    unsigned char *P = calloc(info->n_genes, 1);
    cr_assert_not_null(P);
    pl_test_deleted c = {T.db, P};
    const uint32_t kr = 1 + PL_LIST_REACTION;
    uint64_t kept_pairs = 0, sets = 0;
    uint64_t r64 = 42;
    for (uint64_t i = 0; i < info->n_genes + 3000; i++) {
        int32_t set[3];
        uint32_t n = 1;
        if (i < info->n_genes) {
            set[0] = (int32_t)i;
        } else {
            n = 2 + (uint32_t)below(&r64, 2);
            for (uint32_t j = 0; j < n; j++)
                set[j] = (int32_t)below(&r64, info->n_genes);
        }
        for (uint32_t j = 0; j < n; j++)
            P[set[j]] = 1;
        pl_masks_result res;
        cr_assert_eq(pl_masks_compute(T.m, set, n, &res), 0);
        uint32_t k = 0;
        for (int r = 0; r < n_rx; r++) {
            int holds = pl_test_rule_holds(rule[r], pl_test_db_deleted, &c);
            cr_assert_geq(holds, 0, "rule of %s", rname[r]);
            if (!holds) {
                cr_assert_lt(k, res.removed[kr].n, "%s should be removed", rname[r]);
                cr_assert_eq(res.removed[kr].v[k++], r);
            }
        }
        cr_assert_eq(k, res.removed[kr].n);
        if (n == 1) {
            /* (gene, reaction) pairs whose reaction survives the gene's loss */
            const pl_list *gp = &res.removed[1 + PL_LIST_GPR];
            kept_pairs += gp->n - k;
        }
        for (uint32_t j = 0; j < n; j++)
            P[set[j]] = 0;
        sets++;
    }
    /* yeast-GEM's rules keep the reaction in 1,630 of its 4,095 single
     * (gene, reaction) deletions, e.g. r_0001 without YDL174C. */
    cr_expect_eq(kept_pairs, 1630);
    int32_t ydl = (int32_t)pl_db_gene_index(T.db, "YDL174C");
    pl_masks_result res;
    cr_assert_eq(pl_masks_compute(T.m, &ydl, 1, &res), 0);
    cr_expect_eq(res.removed[kr].n, 0, "r_0001 survives the loss of YDL174C");
    cr_expect_eq(sets, info->n_genes + 3000);
    for (int r = 0; r < n_rx; r++) {
        free(rule[r]);
        free(rname[r]);
    }
    free(rule);
    free(rname);
    free(P);
    free(out);
    free(reactions);
    free(genes);
    free(stoich);
    pl_test_inputs_free(&in);
}

/* ------------------------------------------------------- the compiler */

static int64_t gene_number(void *ctx, const char *name, size_t len)
{
    (void)ctx;
    if (len < 2 || name[0] != 'g')
        return -1;
    return strtol(name + 1, NULL, 10);
}

static int deleted_number(void *ctx, const char *name, size_t len)
{
    (void)len;
    return ((const unsigned char *)ctx)[strtol(name + 1, NULL, 10)];
}

/* Compile `text`, then evaluate program and text for random deletion sets. */
static void compile_and_compare(const char *text, uint32_t n_genes, uint32_t max_depth)
{
    pl__rule rule = {0};
    uint32_t col, depth, at;
    char why[256];
    int rc = pl__rule_compile(text, strlen(text), 1, gene_number, NULL, &rule, &col, why,
                              sizeof why);
    cr_assert_eq(rc, 0, "%s at %u", why, col);
    cr_assert_eq(pl__rule_check(rule.code, rule.n, n_genes, &depth, &at), 0, "word %u", at);
    cr_assert_leq(depth, max_depth, "stack of %u", depth);
    unsigned char *P = calloc(n_genes, 1);
    int32_t set[MAX_SET];
    uint64_t r = 99;
    for (int i = 0; i < 400; i++) {
        uint32_t n = (uint32_t)below(&r, MAX_SET), m = 0;
        for (uint32_t j = 0; j < n; j++) {
            int32_t g = (int32_t)below(&r, n_genes);
            if (!P[g])
                set[m++] = g;
            P[g] = 1;
        }
        int32_t sorted[MAX_SET];
        uint32_t bad;
        int64_t k = pl__masks_genes(n_genes, set, m, sorted, &bad);
        int want = pl_test_rule_holds(text, deleted_number, P);
        cr_assert_geq(want, 0);
        cr_assert_eq(pl__rule_eval(rule.code, rule.n, sorted, (uint32_t)k), want,
                     "set %d of %u genes", i, m);
        for (uint32_t j = 0; j < m; j++)
            P[set[j]] = 0;
    }
    free(P);
    pl__rule_free(&rule);
}

Test(rules, deep_and_wide_rules_keep_the_stack_small)
{
    pl_test_text t = {0};
    /* 600 levels, alternating: g0 and (g1 or (g2 and (g3 or ...))) */
    for (int i = 0; i < 600; i++)
        pl_test_tprintf(&t, "g%d %s (", i, i % 2 ? "or" : "and");
    pl_test_tprintf(&t, "g600");
    for (int i = 0; i < 600; i++)
        pl_test_tprintf(&t, ")");
    compile_and_compare(t.s, 601, 2);
    free(t.s);
    memset(&t, 0, sizeof t);
    /* the other way round: (((g0 or g1) and g2) or g3) ... */
    for (int i = 0; i < 600; i++)
        pl_test_tprintf(&t, "(");
    pl_test_tprintf(&t, "g0");
    for (int i = 1; i <= 600; i++)
        pl_test_tprintf(&t, " %s g%d)", i % 2 ? "or" : "and", i);
    compile_and_compare(t.s, 601, 2);
    free(t.s);
    memset(&t, 0, sizeof t);
    /* a balanced tree of 4,096 genes: depth log2(4096) + 1 at most */
    int n = 4096;
    char **part = calloc((size_t)n, sizeof *part);
    for (int i = 0; i < n; i++) {
        char b[32];
        snprintf(b, sizeof b, "g%d", i);
        part[i] = strdup(b);
    }
    for (int level = 0; n > 1; level++, n /= 2)
        for (int i = 0; i < n / 2; i++) {
            size_t len = strlen(part[2 * i]) + strlen(part[2 * i + 1]) + 16;
            char *s = malloc(len);
            snprintf(s, len, "(%s %s %s)", part[2 * i], level % 2 ? "or" : "and",
                     part[2 * i + 1]);
            free(part[2 * i]);
            free(part[2 * i + 1]);
            part[i] = s;
        }
    compile_and_compare(part[0], 4096, 13);
    free(part[0]);
    free(part);
    /* repeated genes, one gene, and the empty rule */
    compile_and_compare("(g1 and g2) or (g1 and g3) or g1", 4, 3);
    compile_and_compare("g3", 4, 1);
    pl__rule rule = {0};
    uint32_t col;
    char why[256];
    cr_assert_eq(pl__rule_compile("  ", 2, 1, gene_number, NULL, &rule, &col, why, sizeof why),
                 0);
    cr_expect_eq(rule.n, 0);
    /* nesting past the limit is refused, where it goes past */
    for (int i = 0; i <= PL__RULE_MAX_NEST; i++)
        pl_test_tprintf(&t, "(");
    pl_test_tprintf(&t, "g0");
    cr_assert_eq(pl__rule_compile(t.s, t.len, 1, gene_number, NULL, &rule, &col, why,
                                  sizeof why), PL_EPARSE);
    cr_expect_eq(col, PL__RULE_MAX_NEST);
    cr_expect_str_eq(why, "parentheses nest deeper than 1000 levels");
    free(t.s);
    pl__rule_free(&rule);
}

/* ------------------------------------------------------- stored programs */

Test(rules, malformed_stored_programs_are_refused)
{
    /* 3 reactions over 4 genes: r0 "g1 and g2", r1 none, r2 "g3" */
    uint32_t v[4 + 4] = {0, 3, 3, 4, 1, 2, PL__RULE_AND, 3};
    const uint32_t *off, *code;
    uint32_t depth;
    pl_err err;
    cr_assert_eq(pl__rules_decode(v, sizeof v, 3, 4, 2, 4, &off, &code, &depth, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(depth, 2);
    const int32_t none[1] = {0}, g1[1] = {1};
    cr_expect_eq(pl__rule_eval(code + off[0], off[1] - off[0], none, 0), 1);
    cr_expect_eq(pl__rule_eval(code + off[0], off[1] - off[0], g1, 1), 0);
    struct {
        int at;
        uint32_t word;
        const char *why;
    } bad[] = {
        {4, PL__RULE_AND, "the rule of reaction 0 is malformed at word 0"}, /* underflow */
        {5, 4, "the rule of reaction 0 is malformed at word 1"},            /* gene 4 of 4 */
        {6, PL__RULE_TRUE, "the rule of reaction 0 is malformed at word 3"}, /* two left */
        {1, 5, "offset of reaction 0 out of order"},
        {3, 3, "offsets do not span the programs"},
        {2, 2, "offset of reaction 1 out of order"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint32_t w[8];
        memcpy(w, v, sizeof w);
        w[bad[i].at] = bad[i].word;
        cr_assert_eq(pl__rules_decode(w, sizeof w, 3, 4, 2, 4, &off, &code, &depth, &err),
                     PL_ECORRUPT, "case %zu", i);
        cr_expect(strstr(err.msg, bad[i].why), "case %zu: %s", i, err.msg);
    }
    cr_assert_eq(pl__rules_decode(v, sizeof v, 3, 4, 3, 4, &off, &code, &depth, &err),
                 PL_ECORRUPT);
    cr_expect(strstr(err.msg, "2 reactions have rules, the metadata says 3"), "%s", err.msg);
    cr_assert_eq(pl__rules_decode(v, sizeof v - 4, 3, 4, 2, 4, &off, &code, &depth, &err),
                 PL_ECORRUPT);
    /* a stack deeper than the bit stack holds */
    uint32_t deep[2 + 65 + 64];
    deep[0] = 0;
    deep[1] = 65 + 64;
    for (int i = 0; i < 65; i++)
        deep[2 + i] = 0;
    for (int i = 0; i < 64; i++)
        deep[2 + 65 + i] = PL__RULE_OR;
    cr_assert_eq(pl__rules_decode(deep, sizeof deep, 1, 129, 1, 1, &off, &code, &depth, &err),
                 PL_ECORRUPT);
    cr_expect(strstr(err.msg, "malformed at word 64"), "%s", err.msg);
}
