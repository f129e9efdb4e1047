/* The read side of the public database API (pl_db_*) on the calls a
 * program can get wrong and on what it copies out:
 *  - opening a file or a missing path is refused with the path and reason;
 *  - a sample row past the last is PL_ERANGE naming the row and the count;
 *    every sample's deleted genes are the ones the samples file lists
 *    (tests/testdb.h: pl_test_db_pert, from the input text);
 *  - each graph array refuses a buffer one byte short and an unknown array
 *    with PL_ERANGE; with room, each edge type's bytes hash to the
 *    fingerprint the build recorded, and the gene-reaction rule programs
 *    (PL_ARRAY_RULES) evaluate, for the deleted sets of the samples and
 *    random ones, as the rule texts of the input do under a
 *    recursive-descent evaluator of the test's own (pl_test_rule_holds);
 *  - a plan budgeted in payload bytes needs a payload. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/checksum.h"
#include "testdb.h"
#include "testutil.h"

#define N_SAMPLES 300

static pl_test_db S;

static void setup(void) { pl_test_db_make(&S, 200, N_SAMPLES, 0.004, 0, 17); }

static void teardown(void) { pl_test_db_free(&S); }

TestSuite(db_api, .init = setup, .fini = teardown, .timeout = 300);

Test(db_api, open_refuses_what_is_not_a_database)
{
    pl_db *db = (pl_db *)&db;
    pl_err err = {0};
    char *f = pl_test_write(S.dir, "plain.txt", "not a database\n");
    cr_assert_eq(pl_db_open(f, &db, &err), -ENOTDIR);
    cr_assert_null(db);
    char want[4200];
    snprintf(want, sizeof want, "%s: not a pertload database directory", f);
    cr_assert_str_eq(err.msg, want);
    char *none = pl_test_path(S.dir, "none");
    db = (pl_db *)&db;
    cr_assert_eq(pl_db_open(none, &db, &err), -ENOENT);
    cr_assert_null(db);
    cr_assert(strstr(err.msg, none), "%s", err.msg);
    free(f);
    free(none);
}

Test(db_api, samples_and_their_range)
{
    pl_sample s;
    pl_err err = {0};
    cr_assert_eq(pl_db_sample(S.db, N_SAMPLES, &s, &err), PL_ERANGE);
    cr_assert_str_eq(err.msg, "row 300 out of range (the database has 300 samples)");
    cr_assert_eq(pl_db_sample(S.db, UINT64_MAX, &s, &err), PL_ERANGE);
    unsigned char *P = calloc(S.n_genes, 1), *Q = calloc(S.n_genes, 1);
    /* backwards, so that most reads load another block than the last */
    for (uint64_t r = N_SAMPLES; r-- > 0;) {
        cr_assert_eq(pl_db_sample(S.db, r, &s, &err), 0, "%s", err.msg);
        memset(Q, 0, S.n_genes);
        for (uint32_t i = 0; i < s.n_genes; i++) {
            cr_assert(s.genes[i] >= 0 && (uint64_t)s.genes[i] < S.n_genes);
            Q[s.genes[i]] = 1;
        }
        pl_test_db_pert(&S, r, P);
        cr_assert_arr_eq(P, Q, S.n_genes, "row %llu", (unsigned long long)r);
    }
    free(P);
    free(Q);
}

Test(db_api, graph_arrays_refuse_short_buffers_and_unknown_arrays)
{
    const pl_db_info *info = pl_db_info_get(S.db);
    pl_err err = {0};
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    for (uint32_t t = 0; t < info->n_types; t++) {
        size_t len = 8 * info->n_edges[t];
        cr_assert_leq(len, cap);
        cr_assert_eq(pl_db_graph_array(S.db, (int)t, buf, len - 1, &err), PL_ERANGE);
        char want[128];
        snprintf(want, sizeof want, "graph array %u needs %zu bytes, %zu given", t, len,
                 len - 1);
        cr_assert_str_eq(err.msg, want);
        cr_assert_eq(pl_db_graph_array(S.db, (int)t, buf, len, &err), (int64_t)len, "%s",
                     err.msg);
        cr_assert_eq(pl__xxh64(buf, len, 0), info->edge_fingerprint[t], "type %u", t);
    }
    cr_assert(info->has_metabolism);
    static const struct {
        int which;
        size_t per;
    } arrays[] = {{PL_ARRAY_GPR, 8}, {PL_ARRAY_RMR, 8}, {PL_ARRAY_RMR_STOICH, 4}};
    for (size_t i = 0; i < 3; i++) {
        uint64_t n = arrays[i].which == PL_ARRAY_GPR ? info->n_gpr : info->n_rmr;
        size_t len = arrays[i].per * n;
        cr_assert_eq(pl_db_graph_array(S.db, arrays[i].which, buf, len - 1, &err), PL_ERANGE);
        cr_assert(strstr(err.msg, "needs"), "%s", err.msg);
        cr_assert_eq(pl_db_graph_array(S.db, arrays[i].which, buf, len, &err), (int64_t)len,
                     "%s", err.msg);
    }
    static const int unknown[] = {-5, -100};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(pl_db_graph_array(S.db, unknown[i], buf, cap, &err), PL_ERANGE);
        char want[64];
        snprintf(want, sizeof want, "no graph array %d in this database", unknown[i]);
        cr_assert_str_eq(err.msg, want);
    }
    cr_assert_eq(pl_db_graph_array(S.db, (int)info->n_types, buf, cap, &err), PL_ERANGE);
    free(buf);
}

/* Run reaction r's postfix program (pertload.h, PL_ARRAY_RULES). */
static int program_holds(const uint32_t *a, uint64_t n_rx, uint64_t r, const unsigned char *P)
{
    const uint32_t *w = a + n_rx + 1;
    int stack[256], top = 0;
    for (uint32_t i = a[r]; i < a[r + 1]; i++) {
        uint32_t x = w[i];
        if (x == 0xFFFFFFFFu || x == 0xFFFFFFFEu) {
            cr_assert_geq(top, 2);
            int b = stack[--top], c = stack[--top];
            stack[top++] = x == 0xFFFFFFFFu ? (b && c) : (b || c);
        } else {
            cr_assert_lt(top, 256);
            stack[top++] = x == 0xFFFFFFFDu ? 1 : !P[x];
        }
    }
    cr_assert_eq(top, 1, "reaction %llu: a program leaves one value", (unsigned long long)r);
    return stack[0];
}

Test(db_api, rule_programs_agree_with_the_rule_texts)
{
    const pl_db_info *info = pl_db_info_get(S.db);
    cr_assert_eq(info->reaction_rule, PL_REACTION_GPR, "the test database has rules");
    cr_assert_gt(info->n_rules, 0);
    cr_assert(S.rule);
    size_t len = 4 * (info->n_reactions + 1 + info->n_rule_words);
    uint32_t *a = malloc(len);
    pl_err err = {0};
    cr_assert_eq(pl_db_graph_array(S.db, PL_ARRAY_RULES, a, len - 4, &err), PL_ERANGE);
    cr_assert_eq(pl_db_graph_array(S.db, PL_ARRAY_RULES, a, len, &err), (int64_t)len, "%s",
                 err.msg);
    unsigned char *P = calloc(S.n_genes, 1);
    pl_test_deleted d = {S.db, P};
    uint64_t checked = 0, broken = 0, rng = 5;
    /* the deleted sets of some samples, then random sets of a third of the
     * genes, then every gene */
    for (uint64_t set = 0; set < N_SAMPLES / 7 + 21; set++) {
        if (set < N_SAMPLES / 7)
            pl_test_db_pert(&S, set * 7, P);
        else
            for (uint64_t g = 0; g < S.n_genes; g++)
                P[g] = set + 1 == N_SAMPLES / 7 + 21 || pl_test_below(&rng, 3) == 0;
        for (uint64_t r = 0; r < info->n_reactions; r++) {
            if (!S.rule[r] || !*S.rule[r]) {
                cr_assert_eq(a[r], a[r + 1], "reaction %llu has no rule",
                             (unsigned long long)r);
                continue;
            }
            int want = pl_test_rule_holds(S.rule[r], pl_test_db_deleted, &d);
            cr_assert_geq(want, 0, "rule %s", S.rule[r]);
            cr_assert_eq(program_holds(a, info->n_reactions, r, P), want,
                         "set %llu reaction %llu: %s", (unsigned long long)set,
                         (unsigned long long)r, S.rule[r]);
            checked++;
            broken += !want;
        }
    }
    cr_assert_gt(checked, 100);
    cr_assert_gt(broken, 0, "some deleted set breaks some rule");
    free(P);
    free(a);
}

Test(db_api, payload_budget_needs_a_payload)
{
    cr_assert_eq(pl_db_info_get(S.db)->payload_dtype[0], '\0', "built without a payload");
    pl_plan_opts o = {.world_size = 1, .batch_size = 16, .budget = 1000};
    pl_plan *p = (pl_plan *)&p;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new_db(S.db, &o, 1, &p, &err), PL_EUSAGE);
    cr_assert_null(p);
    cr_assert_str_eq(err.msg, "the database has no payload to budget");
}
