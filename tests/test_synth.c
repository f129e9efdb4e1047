/* pertload synth: determinism, the shape of what it writes, that its
 * output builds into a database that verifies, its output directories and a
 * file system that fills while it writes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preprocess/synth.h"
#include "src/core/strtab.h"
#include "testutil.h"

static const struct {
    const char *name;
    uint64_t edges;
} yeast[9] = {
    {"physical", 144211},
    {"regulatory", 44310},
    {"tflink", 207250},
    {"string12_0_neighborhood", 153320},
    {"string12_0_fusion", 18394},
    {"string12_0_cooccurence", 17692},
    {"string12_0_coexpression", 1002806},
    {"string12_0_experimental", 828701},
    {"string12_0_database", 79224},
};

#define SCALE 0.05
#define SAMPLES 5000u

static int synth(const char *out, uint64_t seed)
{
    pl_synth_opts o = {out, 400, SAMPLES, seed, SCALE, 4, 0, NULL, 0, 0};
    pl_err err = {0};
    int rc = pl__synth(&o, &err);
    cr_assert_eq(rc, 0, "pl__synth(%s): %s", out, err.msg);
    return rc;
}

static int same_file(const char *a_dir, const char *b_dir, const char *name)
{
    char *a = pl_test_path(a_dir, name), *b = pl_test_path(b_dir, name);
    size_t la, lb;
    char *x = pl_test_read_file(a, &la), *y = pl_test_read_file(b, &lb);
    int same = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    free(a);
    free(b);
    return same;
}

Test(synth, same_options_same_bytes_and_parents_are_created)
{
    char *dir = pl_test_tmpdir();
    char *a = pl_test_path(dir, "a/nested/out"), *b = pl_test_path(dir, "b"),
         *c = pl_test_path(dir, "c");
    synth(a, 11);
    synth(b, 11);
    synth(c, 12);
    static const char *const files[] = {"genes.txt", "reactions.txt", "gpr.tsv", "rmr.tsv",
                                        "rules.tsv", "samples.tsv", "payload.npy",
                                        "edges/physical.tsv",
                                        "edges/string12_0_coexpression.tsv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        cr_expect(same_file(a, b, files[i]), "%s differs between two runs", files[i]);
    cr_expect(!same_file(a, c, "edges/physical.tsv"), "another seed gave the same edges");
    free(a);
    free(b);
    free(c);
    pl_test_rmtree(dir);
    free(dir);
}

/* --preset: yeast is the default (the same bytes); human changes the counts, here at a
 * small scale. Cell-set payloads: [S, C, D] in float32 or float16, the dtype named in the
 * header. */
Test(synth, presets_and_cell_payloads)
{
    char *dir = pl_test_tmpdir();
    char *a = pl_test_path(dir, "a"), *b = pl_test_path(dir, "b"), *h = pl_test_path(dir, "h");
    pl_synth_opts o = {a, 300, 50, 3, 0.01, 4, 0, NULL, 3, 0};
    pl_err err = {0};
    cr_assert_eq(pl__synth(&o, &err), 0, "%s", err.msg);
    o.out = b;
    o.preset = "yeast";
    cr_assert_eq(pl__synth(&o, &err), 0, "%s", err.msg);
    static const char *const files[] = {"genes.txt", "rules.tsv", "rmr.tsv", "samples.tsv",
                                        "payload.npy", "edges/string12_0_coexpression.tsv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        cr_expect(same_file(a, b, files[i]), "%s: --preset yeast is not the default", files[i]);
    o.out = h;
    o.preset = "human";
    o.payload_f16 = 1;
    cr_assert_eq(pl__synth(&o, &err), 0, "%s", err.msg);
    size_t len;
    char *p = pl_test_path(h, "edges/string12_0_coexpression.tsv"),
         *text = pl_test_read_file(p, &len);
    uint64_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    cr_expect_eq(lines, 48214, "human coexpression at scale 0.01: %llu edges",
                 (unsigned long long)lines);
    free(text);
    free(p);
    p = pl_test_path(h, "reactions.txt");
    text = pl_test_read_file(p, &len);
    lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    cr_expect_eq(lines, 125, "human reactions at scale 0.01: %llu", (unsigned long long)lines);
    free(text);
    free(p);
    static const struct {
        const char *dir, *descr;
        size_t width;
    } pay[] = {{"a", "'<f4'", 4}, {"h", "'<f2'", 2}};
    for (int i = 0; i < 2; i++) {
        char *d = pl_test_path(dir, pay[i].dir);
        p = pl_test_path(d, "payload.npy");
        text = pl_test_read_file(p, &len);
        cr_assert_geq(len, 128);
        cr_expect(memmem(text, 128, pay[i].descr, 5) != NULL, "%s: dtype %s", p, pay[i].descr);
        cr_expect(memmem(text, 128, "(50, 3, 4)", 10) != NULL, "%s: shape (50, 3, 4)", p);
        cr_expect_eq(len, 128 + 50 * 3 * 4 * pay[i].width, "%s: %zu bytes", p, len);
        free(text);
        free(p);
        free(d);
    }
    o.preset = "mouse";
    cr_expect_eq(pl__synth(&o, &err), PL_EUSAGE);
    cr_expect(strstr(err.msg, "no preset 'mouse'") != NULL, "%s", err.msg);
    free(a);
    free(b);
    free(h);
    pl_test_rmtree(dir);
    free(dir);
}

/* The rules: a header, one line per reaction, every shape of rule present,
 * their genes in order those of gpr.tsv, which are the database's GPR edges;
 * the database removes reactions by rule gpr. */
static void check_rules(const char *in, pl_db *d, const pl_build_stats *st)
{
    const pl_db_info *info = pl_db_info_get(d);
    cr_expect_eq(info->reaction_rule, PL_REACTION_GPR);
    size_t len, glen;
    char *rp = pl_test_path(in, "rules.tsv"), *gp = pl_test_path(in, "gpr.tsv");
    char *rules = pl_test_read_file(rp, &len), *gpr = pl_test_read_file(gp, &glen);
    cr_assert(!strncmp(rules, "reaction\trule\n", 14), "rules.tsv starts with its header");
    int shapes[4] = {0};
    uint64_t with_rule = 0;
    /* Genes of the rules in order of first appearance, as "gene\treaction\n". */
    pl_test_text edges = {0};
    char *sv = NULL;
    for (char *ln = strtok_r(rules + 14, "\n", &sv); ln; ln = strtok_r(NULL, "\n", &sv)) {
        char *tab = strchr(ln, '\t');
        cr_assert_not_null(tab, "%s", ln);
        *tab = 0;
        const char *rule = tab + 1;
        with_rule += *rule != 0;
        shapes[0] += strstr(rule, " or ") && !strstr(rule, " and ");
        shapes[1] += strstr(rule, " and ") && !strstr(rule, " or ");
        shapes[2] += strstr(rule, ") or (") != NULL;
        shapes[3] += strstr(rule, ") and (") != NULL;
        char seen[64][32];
        int n_seen = 0;
        for (const char *p = rule; *p;) {
            while (*p == ' ' || *p == '(' || *p == ')')
                p++;
            size_t n = strcspn(p, " ()");
            if (n == 0)
                break;
            if (!(n == 3 && !strncmp(p, "and", 3)) && !(n == 2 && !strncmp(p, "or", 2))) {
                int k = 0;
                while (k < n_seen && (strlen(seen[k]) != n || strncmp(seen[k], p, n)))
                    k++;
                if (k == n_seen && n < 32 && n_seen < 64) {
                    snprintf(seen[n_seen++], 32, "%.*s", (int)n, p);
                    pl_test_tprintf(&edges, "%.*s\t%s\n", (int)n, p, ln);
                }
            }
            p += n;
        }
    }
    for (int k = 0; k < 4; k++)
        cr_expect_gt(shapes[k], 0, "rule shape %d missing", k);
    cr_expect_eq(info->n_rules, with_rule);
    cr_expect_eq(st->n_rules, with_rule);
    cr_expect_str_eq(edges.s ? edges.s : "", gpr, "the rules' genes are gpr.tsv's rows");
    cr_expect_eq(info->n_gpr, st->n_gpr);
    free(edges.s);
    free(rules);
    free(gpr);
    free(rp);
    free(gp);
}

Test(synth, counts_mix_and_a_database_that_verifies)
{
    char *dir = pl_test_tmpdir();
    char *in = pl_test_path(dir, "in");
    synth(in, 5);
    /* Edge files: the yeast counts times the scale, self-loops and repeats. */
    pl_strtab genes;
    cr_assert_eq(pl__strtab_init(&genes), 0);
    size_t len;
    char *gpath = pl_test_path(in, "genes.txt"), *text = pl_test_read_file(gpath, &len);
    for (char *save = NULL, *tok = strtok_r(text, "\n", &save); tok;
         tok = strtok_r(NULL, "\n", &save))
        cr_assert_geq(pl__strtab_intern(&genes, tok, strlen(tok), NULL), 0);
    cr_expect_eq(genes.n, 400);
    free(text);
    free(gpath);
    uint64_t total = 0;
    for (int t = 0; t < 9; t++) {
        char name[96];
        snprintf(name, sizeof name, "edges/%s.tsv", yeast[t].name);
        char *p = pl_test_path(in, name);
        text = pl_test_read_file(p, &len);
        uint64_t lines = 0, loops = 0;
        for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln;
             ln = strtok_r(NULL, "\n", &save), lines++) {
            char s[64], d[64];
            cr_assert_geq(sscanf(ln, "%63s %63s", s, d), 2, "%s: '%s'", name, ln);
            cr_assert_geq(pl__strtab_find(&genes, s, strlen(s)), 0, "%s: gene %s", name, s);
            loops += !strcmp(s, d);
        }
        cr_expect_eq(lines, (uint64_t)llround((double)yeast[t].edges * SCALE), "%s: %llu edges",
                     name, (unsigned long long)lines);
        if (yeast[t].edges * SCALE > 10000)
            cr_expect_gt(loops, 0, "%s has no self-loop", name);
        total += lines;
        free(text);
        free(p);
    }
    pl__strtab_free(&genes);
    /* Samples: header, SAMPLES rows, mostly double deletions, 1-3 genes. */
    char *sp = pl_test_path(in, "samples.tsv");
    text = pl_test_read_file(sp, &len);
    uint64_t rows = 0, by_size[4] = {0};
    char *save = NULL, *ln = strtok_r(text, "\n", &save);
    cr_expect_str_eq(ln, "id\tgenes\tfitness\tgene_interaction");
    while ((ln = strtok_r(NULL, "\n", &save))) {
        char *g = strchr(ln, '\t');
        cr_assert_not_null(g);
        uint32_t k = 1;
        for (char *q = g + 1; *q && *q != '\t'; q++)
            k += *q == ';';
        cr_assert(k >= 1 && k <= 3, "row %llu has %u genes", (unsigned long long)rows, k);
        by_size[k]++;
        rows++;
    }
    free(text);
    free(sp);
    cr_expect_eq(rows, SAMPLES);
    cr_expect_gt(by_size[2], SAMPLES * 9 / 10, "%llu double deletions",
                 (unsigned long long)by_size[2]);
    cr_expect_gt(by_size[3], 0);
    /* build-args.txt builds, and the database verifies. */
    char *ap = pl_test_path(in, "build-args.txt");
    text = pl_test_read_file(ap, &len);
    const char *args[64];
    int n = 0;
    for (char *sv = NULL, *a = strtok_r(text, "\n", &sv); a && n < 64;
         a = strtok_r(NULL, "\n", &sv))
        args[n++] = a;
    pl_build_opts o = {0};
    const char *names[9], *files[9];
    for (int i = 0; i + 1 < n; i += 2) {
        const char *opt = args[i], *v = args[i + 1];
        if (!strcmp(opt, "--genes"))
            o.genes = v;
        else if (!strcmp(opt, "--reactions"))
            o.reactions = v;
        else if (!strcmp(opt, "--rules"))
            o.rules = v;
        else if (!strcmp(opt, "--rmr"))
            o.rmr = v;
        else if (!strcmp(opt, "--samples"))
            o.samples = v;
        else if (!strcmp(opt, "--payload"))
            o.payload = v;
        else if (!strcmp(opt, "--edges")) {
            cr_assert_lt(o.n_types, 9);
            const char *eq = strchr(v, '=');
            cr_assert_not_null(eq);
            names[o.n_types] = strndup(v, (size_t)(eq - v));
            files[o.n_types++] = eq + 1;
        } else {
            cr_assert_fail("unexpected build argument %s", opt);
        }
    }
    cr_assert_eq(o.n_types, 9);
    o.type_names = names;
    o.type_files = files;
    char *db = pl_test_path(dir, "db");
    o.out = db;
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_build(&o, &st, &err), 0, "%s", err.msg);
    cr_expect_eq(st.n_edges, total);
    cr_expect_eq(st.n_samples, SAMPLES);
    cr_expect_gt(st.n_reactions, 0);
    cr_expect_gt(st.n_rmr, 0);
    cr_assert_not_null(o.rules, "the build arguments give the gene-reaction rules");
    pl_db *d;
    cr_assert_eq(pl_db_open(db, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(pl_db_verify(d, &err), 0, "%s", err.msg);
    check_rules(in, d, &st);
    cr_expect_str_eq(pl_db_info_get(d)->payload_dtype, "<f4");
    pl_db_close(d);
    for (size_t i = 0; i < o.n_types; i++)
        free((char *)names[i]);
    free(text);
    free(ap);
    free(db);
    free(in);
    pl_test_rmtree(dir);
    free(dir);
}

/* The output directory: under a regular file it cannot be made (ENOTDIR,
 * named); an existing one is written into; missing parents and trailing
 * slashes are taken as mkdir -p takes them. */
Test(synth, output_directories)
{
    char *dir = pl_test_tmpdir();
    char *file = pl_test_write(dir, "plain", "x\n");
    char *under = pl_test_path(dir, "plain/out"), *deep = pl_test_path(dir, "p/q//"),
         *genes = pl_test_path(dir, "p/q/genes.txt");
    pl_synth_opts o = {under, 50, 10, 1, 0.01, 0, 0, NULL, 0, 0};
    pl_err err = {0};
    cr_assert_eq(pl__synth(&o, &err), -ENOTDIR, "%s", err.msg);
    char want[4300];
    snprintf(want, sizeof want, "%s: cannot create directory: %s", under, strerror(ENOTDIR));
    cr_assert_str_eq(err.msg, want);
    o.out = deep;
    cr_assert_eq(pl__synth(&o, &err), 0, "%s", err.msg);
    size_t n;
    free(pl_test_read_file(genes, &n));
    cr_assert_gt(n, 0);
    cr_assert_eq(pl__synth(&o, &err), 0, "an existing directory: %s", err.msg);
    free(file);
    free(under);
    free(deep);
    free(genes);
    pl_test_rmtree(dir);
    free(dir);
}

typedef struct full_result {
    int setup_errno, rc;
    char what[64], msg[1024], leftover[256];
} full_result;

/* Names in `dir` that end in ".tmp" (files half-written), "" when none. */
static void tmp_files(const char *dir, char *buf, size_t cap)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.tmp' 2>/dev/null | head -3", dir);
    FILE *f = popen(cmd, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        pclose(f);
}

/* A file system that fills while synth writes (a tmpfs of `size` in a
 * private mount namespace): ENOSPC naming a file of the output, and no
 * file left half-written. Sizes chosen so that different files fill it. */
Test(synth, full_file_system, .timeout = 120)
{
    static const char *sizes[] = {"8k", "64k", "256k", "1m"};
    char failed[4][64];
    char *dir = pl_test_tmpdir();
    char *mnt = pl_test_path(dir, "fs"), *out = pl_test_path(dir, "fs/out");
    cr_assert_eq(mkdir(mnt, 0755), 0);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int fd;
        pid_t pid = pl_test_fork_piped(&fd);
        if (pid == 0) {
            full_result r;
            memset(&r, 0, sizeof r);
            const char *what;
            r.setup_errno = pl_test_small_fs(mnt, sizes[i], &what);
            snprintf(r.what, sizeof r.what, "%s", what);
            if (!r.setup_errno) {
                pl_synth_opts o = {out, 2000, 20000, 3, 0.05, 4, 0, NULL, 0, 0};
                pl_err err = {0};
                r.rc = pl__synth(&o, &err);
                snprintf(r.msg, sizeof r.msg, "%.1000s", err.msg);
                tmp_files(mnt, r.leftover, sizeof r.leftover);
            }
            pl_test_send(fd, &r, sizeof r);
            _exit(0);
        }
        full_result r;
        cr_assert_eq(pl_test_recv(fd, &r, sizeof r), sizeof r);
        close(fd);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert_eq(r.setup_errno, 0, "%s: %s", r.what, strerror(r.setup_errno));
        cr_assert_eq(r.rc, -ENOSPC, "size %s: rc %d: %s", sizes[i], r.rc, r.msg);
        char why[128];
        snprintf(why, sizeof why, ": write failed: %s", strerror(ENOSPC));
        cr_assert(!strncmp(r.msg, out, strlen(out)) && strstr(r.msg, why), "size %s: %s",
                  sizes[i], r.msg);
        cr_assert_str_eq(r.leftover, "", "size %s: left half-written: %s", sizes[i], r.leftover);
        const char *name = r.msg + strlen(out) + 1;
        snprintf(failed[i], sizeof failed[i], "%.*s", (int)strcspn(name, ":"), name);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(failed[i], failed[j], "sizes %s and %s fill the same file %s",
                              sizes[j], sizes[i], failed[i]);
    }
    free(mnt);
    free(out);
    pl_test_rmtree(dir);
    free(dir);
}
