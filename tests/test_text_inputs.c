/* The text inputs of pl_build() as editors and other tools write them: a
 * UTF-8 byte order mark builds the same database as without one, in every
 * kind of text input; CRLF line endings too; CR-only line endings and header
 * names holding characters that cannot be seen are refused with
 * "file:line:col: reason"; files that report no size (/proc) are read to
 * their end; gzip and zstd files (by their first bytes), FIFOs and standard
 * input build the database of the plain files; a device is refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "importutil.h"
#include "testutil.h"

#define BOM "\xEF\xBB\xBF"

/* The six text inputs, each a list of lines without line endings. */
enum { GENES, EDGES, REACTIONS, GPR, RMR, SAMPLES, N_KINDS };
static const char *const kind_file[N_KINDS] = {"genes.txt", "phys.tsv", "reactions.txt",
                                               "gpr.tsv", "rmr.tsv", "samples.tsv"};
static const char *const lines[N_KINDS][6] = {
    {"g1", "g2", "g3", "g4", NULL},
    {"g1\tg2\t0.9", "g2\tg3\t0.4", "g4\tg1\t1", NULL},
    {"r1", "r2", NULL},
    {"g1\tr1", "g3\tr2", "g4\tr2", NULL},
    {"r1\tm1\t-1", "r2\tm2\t2", "r2\tm1\t0.5", NULL},
    /* "id" first: a byte order mark would otherwise turn it into a label. */
    {"id\tgenes\tfitness\tgrowth", "10\tg1\t0.5\t1", "11\tg2;g3\tNA\t2", "12\tg4\t-3\t0",
     NULL},
};

TestSuite(text_inputs, .init = pl_test_dir_init, .fini = pl_test_dir_fini);

/* The inputs in sub-directory `sub` of the test directory: `bom` (a kind, or
 * -1) starts with a byte order mark, every line ends with `eol`. */
typedef struct inputs {
    char *paths[N_KINDS];
    const char *names[1], *files[1];
    pl_build_opts o;
} inputs;

static void inputs_write(inputs *in, const char *sub, int bom, const char *eol)
{
    memset(in, 0, sizeof *in);
    char *d = pl_test_path(dir, sub);
    cr_assert_eq(mkdir(d, 0755), 0, "%s: %s", d, strerror(errno));
    for (int k = 0; k < N_KINDS; k++) {
        pl_test_text t = {0};
        pl_test_tprintf(&t, "%s", k == bom ? BOM : "");
        for (int i = 0; lines[k][i]; i++)
            pl_test_tprintf(&t, "%s%s", lines[k][i], eol);
        in->paths[k] = pl_test_put_text(d, kind_file[k], &t);
    }
    free(d);
    in->names[0] = "phys";
    in->files[0] = in->paths[EDGES];
    in->o.genes = in->paths[GENES];
    in->o.n_types = 1;
    in->o.type_names = in->names;
    in->o.type_files = in->files;
    in->o.reactions = in->paths[REACTIONS];
    in->o.gpr = in->paths[GPR];
    in->o.rmr = in->paths[RMR];
    in->o.samples = in->paths[SAMPLES];
}

static void inputs_free(inputs *in)
{
    for (int k = 0; k < N_KINDS; k++)
        free(in->paths[k]);
}

/* Build `in` into dir/name and open it. */
static pl_db *build_open(inputs *in, const char *name)
{
    char *out = pl_test_path(dir, name);
    in->o.out = out;
    pl_err err = {0};
    int rc = pl_build(&in->o, NULL, &err);
    cr_assert_eq(rc, 0, "build %s: %s", name, err.msg);
    pl_db *db;
    rc = pl_db_open(out, &db, &err);
    cr_assert_eq(rc, 0, "open %s: %s", name, err.msg);
    free(out);
    return db;
}

static void expect_names_eq(const char *what, const char *const *a, const char *const *b,
                            uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        cr_expect_str_eq(a[i], b[i], "%s %llu: '%s', expected '%s'", what,
                         (unsigned long long)i, a[i], b[i]);
}

static void expect_array_eq(pl_db *a, pl_db *b, int which, size_t bytes)
{
    char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    pl_err err;
    cr_assert_eq(pl_db_graph_array(a, which, x, bytes, &err), (int64_t)bytes, "%s", err.msg);
    cr_assert_eq(pl_db_graph_array(b, which, y, bytes, &err), (int64_t)bytes, "%s", err.msg);
    cr_expect(memcmp(x, y, bytes) == 0, "graph array %d differs", which);
    free(x);
    free(y);
}

/* Same names, counts, graph arrays and samples (ids, genes, labels). */
static void expect_same_db(pl_db *got, pl_db *want)
{
    const pl_db_info *g = pl_db_info_get(got), *w = pl_db_info_get(want);
    cr_assert_eq(g->n_genes, w->n_genes);
    cr_assert_eq(g->n_labels, w->n_labels, "%u labels, expected %u (first: '%s')",
                 g->n_labels, w->n_labels, g->n_labels ? g->label_names[0] : "");
    cr_assert_eq(g->n_samples, w->n_samples);
    cr_assert_eq(g->n_reactions, w->n_reactions);
    cr_assert_eq(g->n_metabolites, w->n_metabolites);
    cr_assert_eq(g->n_gpr, w->n_gpr);
    cr_assert_eq(g->n_rmr, w->n_rmr);
    cr_assert_eq(g->n_edges[0], w->n_edges[0]);
    expect_names_eq("gene", g->gene_names, w->gene_names, g->n_genes);
    expect_names_eq("label", g->label_names, w->label_names, g->n_labels);
    expect_names_eq("reaction", g->reaction_names, w->reaction_names, g->n_reactions);
    expect_names_eq("metabolite", g->metabolite_names, w->metabolite_names, g->n_metabolites);
    expect_array_eq(got, want, 0, 8 * g->n_edges[0]);
    expect_array_eq(got, want, PL_ARRAY_GPR, 8 * g->n_gpr);
    expect_array_eq(got, want, PL_ARRAY_RMR, 8 * g->n_rmr);
    expect_array_eq(got, want, PL_ARRAY_RMR_STOICH, 4 * g->n_rmr);
    for (uint64_t r = 0; r < g->n_samples; r++) {
        pl_sample s, t;
        pl_err err;
        cr_assert_eq(pl_db_sample(got, r, &s, &err), 0, "%s", err.msg);
        uint64_t id = s.id;
        uint32_t ng = s.n_genes;
        int32_t genes[8];
        float labels[8];
        cr_assert_leq(ng, 8);
        memcpy(genes, s.genes, ng * sizeof *genes);
        memcpy(labels, s.labels, g->n_labels * sizeof *labels);
        cr_assert_eq(pl_db_sample(want, r, &t, &err), 0, "%s", err.msg);
        cr_expect_eq(id, t.id, "row %llu: id %llu, expected %llu", (unsigned long long)r,
                     (unsigned long long)id, (unsigned long long)t.id);
        cr_expect_eq(ng, t.n_genes, "row %llu: genes", (unsigned long long)r);
        cr_expect(ng != t.n_genes || !memcmp(genes, t.genes, ng * sizeof *genes),
                  "row %llu: genes differ", (unsigned long long)r);
        for (uint32_t l = 0; l < g->n_labels; l++)
            cr_expect((isnan(labels[l]) && isnan(t.labels[l])) || labels[l] == t.labels[l],
                      "row %llu label %u: %g, expected %g", (unsigned long long)r, l,
                      (double)labels[l], (double)t.labels[l]);
    }
}

/* The reference database is checked against the inputs themselves once, so
 * that "the same as the reference" means the right thing. */
static void expect_reference(pl_db *db)
{
    const pl_db_info *i = pl_db_info_get(db);
    cr_assert_eq(i->n_labels, 2);
    cr_expect_str_eq(i->label_names[0], "fitness");
    cr_expect_str_eq(i->label_names[1], "growth");
    cr_assert_eq(i->n_samples, 3);
    cr_expect_str_eq(i->gene_names[0], "g1");
    cr_expect_str_eq(i->reaction_names[0], "r1");
    cr_expect_str_eq(i->metabolite_names[0], "m1");
    pl_sample s;
    pl_err err;
    for (uint64_t r = 0; r < 3; r++) {
        cr_assert_eq(pl_db_sample(db, r, &s, &err), 0, "%s", err.msg);
        cr_expect_eq(s.id, 10 + r);
    }
}

static void bom_case(int kind)
{
    inputs ref, bom;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&bom, "bom", kind, "\n");
    pl_db *want = build_open(&ref, "ref.db");
    expect_reference(want);
    pl_db *got = build_open(&bom, "bom.db");
    expect_same_db(got, want);
    pl_db_close(got);
    pl_db_close(want);
    inputs_free(&ref);
    inputs_free(&bom);
}

Test(text_inputs, bom_genes) { bom_case(GENES); }
Test(text_inputs, bom_edges) { bom_case(EDGES); }
Test(text_inputs, bom_reactions) { bom_case(REACTIONS); }
Test(text_inputs, bom_gpr) { bom_case(GPR); }
Test(text_inputs, bom_rmr) { bom_case(RMR); }
Test(text_inputs, bom_samples) { bom_case(SAMPLES); }

/* CRLF line endings read as LF ones, with a byte order mark too. */
static void crlf_case(int bom)
{
    inputs ref, crlf;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&crlf, "crlf", bom, "\r\n");
    pl_db *want = build_open(&ref, "ref.db");
    pl_db *got = build_open(&crlf, "crlf.db");
    expect_same_db(got, want);
    pl_db_close(got);
    pl_db_close(want);
    inputs_free(&ref);
    inputs_free(&crlf);
}

Test(text_inputs, crlf_everywhere) { crlf_case(-1); }
Test(text_inputs, crlf_with_bom) { crlf_case(SAMPLES); }

/* Build `in`, expect PL_EPARSE naming path:line:col and `reason`, and no
 * database left. */
static void expect_parse_error(inputs *in, const char *path, int line, int col,
                               const char *reason)
{
    char *out = pl_test_path(dir, "bad.db");
    in->o.out = out;
    pl_err err = {0};
    int rc = pl_build(&in->o, NULL, &err);
    cr_assert_eq(rc, PL_EPARSE, "rc %d (%s): %s", rc, pl_errname(rc), err.msg);
    char want[4400];
    snprintf(want, sizeof want, "%s:%d:%d: %s", path, line, col, reason);
    cr_expect_str_eq(err.msg, want);
    struct stat st;
    cr_expect(lstat(out, &st) < 0 && errno == ENOENT, "%s left behind", out);
    free(out);
}

#define CR_ONLY "carriage return without line feed (CR-only line endings?)"

Test(text_inputs, cr_only_samples_refused)
{
    inputs in;
    inputs_write(&in, "in", -1, "\r");
    /* The genes file is read first: it names the first CR of its first line. */
    expect_parse_error(&in, in.paths[GENES], 1, 3, CR_ONLY);
    pl_test_write_bytes(in.paths[GENES], "g1\ng2\ng3\ng4\n", 12);
    pl_test_write_bytes(in.paths[EDGES], "g1\tg2\n", 6);
    pl_test_write_bytes(in.paths[REACTIONS], "r1\nr2\n", 6);
    pl_test_write_bytes(in.paths[GPR], "g1\tr1\n", 6);
    pl_test_write_bytes(in.paths[RMR], "r1\tm1\t1\n", 8);
    expect_parse_error(&in, in.paths[SAMPLES], 1, (int)strlen(lines[SAMPLES][0]) + 1,
                       CR_ONLY);
    inputs_free(&in);
}

/* A lone CR inside a CRLF file, and one in a file with a byte order mark
 * (the column counts from after the mark). */
Test(text_inputs, stray_cr_refused)
{
    inputs in;
    inputs_write(&in, "in", -1, "\n");
    const char *edges = "g1\tg2\r\ng2\tg3\r0.4\r\n";
    pl_test_write_bytes(in.paths[EDGES], edges, strlen(edges));
    expect_parse_error(&in, in.paths[EDGES], 2, 6, CR_ONLY);
    const char *genes = BOM "g1\rg2\ng3\ng4\n";
    pl_test_write_bytes(in.paths[GENES], genes, strlen(genes));
    expect_parse_error(&in, in.paths[GENES], 1, 3, CR_ONLY);
    inputs_free(&in);
}

/* Header names that print like others. */
static void invisible_case(const char *header, int col, const char *what)
{
    static int calls;
    char sub[32];
    snprintf(sub, sizeof sub, "in%d", calls++);
    inputs in;
    inputs_write(&in, sub, -1, "\n");
    pl_test_text t = {0};
    pl_test_tprintf(&t, "%s\n10\tg1\t0.5\t1\n", header);
    cr_assert_eq(t.len, strlen(header) + 13);
    pl_test_write_bytes(in.paths[SAMPLES], t.s, t.len);
    free(t.s);
    expect_parse_error(&in, in.paths[SAMPLES], 1, col, what);
    inputs_free(&in);
}

Test(text_inputs, header_zero_width_space_refused)
{
    invisible_case("id\tgenes\tfitness\xE2\x80\x8B\tgrowth", 17,
                   "column name contains U+200B, an invisible format character");
}

Test(text_inputs, header_bom_inside_refused)
{
    /* A byte order mark that is not the first bytes of the file. */
    invisible_case("id\tgenes\t" BOM "fitness\tgrowth", 10,
                   "column name contains U+FEFF, an invisible format character");
}

Test(text_inputs, header_second_bom_refused)
{
    /* Only one mark is skipped: a second one stays in the first name. */
    invisible_case(BOM BOM "id\tgenes\tfitness\tgrowth", 1,
                   "column name contains U+FEFF, an invisible format character");
}

Test(text_inputs, header_word_joiner_refused)
{
    invisible_case("id\tgenes\tfit\xE2\x81\xA0ness\tgrowth", 13,
                   "column name contains U+2060, an invisible format character");
}

Test(text_inputs, header_nbsp_refused)
{
    invisible_case("id\tgenes\tfitness\tgrowth\xC2\xA0", 24,
                   "column name contains U+00A0, a space other than U+0020");
}

Test(text_inputs, header_control_refused)
{
    invisible_case("id\tgenes\tfit\x01ness\tgrowth", 13,
                   "column name contains U+0001, a control character");
    invisible_case("id\tgenes\tfitness\tgrowth\x7F", 24,
                   "column name contains U+007F, a control character");
    invisible_case("id\tgenes\tfitness\t\xC2\x85growth", 18,
                   "column name contains U+0085, a control character");
}

/* Visible non-ASCII names stay accepted. */
Test(text_inputs, header_unicode_names_accepted)
{
    inputs in;
    inputs_write(&in, "in", -1, "\n");
    const char *s = "id\tgenes\tfitness \xC2\xB5M\tgr\xC3\xB6\xC3\x9F" "e\n10\tg1\t0.5\t1\n";
    pl_test_write_bytes(in.paths[SAMPLES], s, strlen(s));
    pl_db *db = build_open(&in, "ok.db");
    const pl_db_info *i = pl_db_info_get(db);
    cr_assert_eq(i->n_labels, 2);
    cr_expect_str_eq(i->label_names[0], "fitness \xC2\xB5M");
    cr_expect_str_eq(i->label_names[1], "gr\xC3\xB6\xC3\x9F" "e");
    pl_db_close(db);
    inputs_free(&in);
}

/* A file of /proc reports a size of 0: its contents are read all the same.
 * /proc/thread-self/comm holds this thread's name and a newline: a genes
 * file of one gene. */
Test(text_inputs, proc_file_read_to_end)
{
    cr_assert_eq(prctl(PR_SET_NAME, "gP", 0, 0, 0), 0);
    struct stat st;
    cr_assert_eq(stat("/proc/thread-self/comm", &st), 0, "%s", strerror(errno));
    cr_assert_eq(st.st_size, 0, "the premise: /proc reports no size");
    inputs in;
    inputs_write(&in, "in", -1, "\n");
    pl_test_write_bytes(in.paths[EDGES], "gP\tgP\n", 6);
    pl_test_write_bytes(in.paths[SAMPLES], "genes\ngP\n", 9);
    in.o.reactions = in.o.gpr = in.o.rmr = NULL;
    in.o.genes = "/proc/thread-self/comm";
    pl_db *db = build_open(&in, "proc.db");
    const pl_db_info *i = pl_db_info_get(db);
    cr_assert_eq(i->n_genes, 1);
    cr_expect_str_eq(i->gene_names[0], "gP");
    cr_expect_eq(i->n_edges[0], 1);
    cr_expect_eq(i->n_samples, 1);
    pl_db_close(db);
    inputs_free(&in);
}

/* ------------------------------------------ compressed, FIFOs and stdin */

/* Replace the file of `kind` by its gzip or zstd image under the same name:
 * the first bytes decide, never the name. */
static void compress_in_place(const char *path, int codec)
{
    size_t len, zlen;
    char *text = pl_test_read_file(path, &len);
    void *z = pl_test_compress(text, len, codec, &zlen);
    pl_test_write_bytes(path, z, zlen);
    free(z);
    free(text);
}

static void codec_case(int kind, int codec)
{
    inputs ref, zin;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&zin, "z", -1, "\n");
    compress_in_place(zin.paths[kind], codec);
    pl_db *want = build_open(&ref, "ref.db");
    expect_reference(want);
    pl_db *got = build_open(&zin, "z.db");
    expect_same_db(got, want);
    pl_db_close(got);
    pl_db_close(want);
    inputs_free(&ref);
    inputs_free(&zin);
}

Test(text_inputs, gzip_genes) { codec_case(GENES, PL_TEST_GZIP); }
Test(text_inputs, gzip_edges) { codec_case(EDGES, PL_TEST_GZIP); }
Test(text_inputs, gzip_reactions) { codec_case(REACTIONS, PL_TEST_GZIP); }
Test(text_inputs, gzip_gpr) { codec_case(GPR, PL_TEST_GZIP); }
Test(text_inputs, gzip_rmr) { codec_case(RMR, PL_TEST_GZIP); }
Test(text_inputs, gzip_samples) { codec_case(SAMPLES, PL_TEST_GZIP); }
Test(text_inputs, zstd_genes) { codec_case(GENES, PL_TEST_ZSTD); }
Test(text_inputs, zstd_edges) { codec_case(EDGES, PL_TEST_ZSTD); }
Test(text_inputs, zstd_reactions) { codec_case(REACTIONS, PL_TEST_ZSTD); }
Test(text_inputs, zstd_gpr) { codec_case(GPR, PL_TEST_ZSTD); }
Test(text_inputs, zstd_rmr) { codec_case(RMR, PL_TEST_ZSTD); }
Test(text_inputs, zstd_samples) { codec_case(SAMPLES, PL_TEST_ZSTD); }

/* A gene-reaction rules file (--rules) compressed builds the same rules. */
static void rules_codec_case(int codec)
{
    inputs ref, zin;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&zin, "z", -1, "\n");
    const char *rules = "r1\tg1 and g2\nr2\tg3 or g4\n";
    char *d = pl_test_path(dir, "ref");
    char *rp = pl_test_write(d, "rules.tsv", rules);
    free(d);
    d = pl_test_path(dir, "z");
    char *zp = pl_test_write(d, "rules.tsv", rules);
    free(d);
    compress_in_place(zp, codec);
    ref.o.gpr = zin.o.gpr = NULL;
    ref.o.rules = rp;
    zin.o.rules = zp;
    pl_db *want = build_open(&ref, "ref.db");
    const pl_db_info *wi = pl_db_info_get(want);
    cr_assert_eq(wi->n_rules, 2);
    cr_assert_eq(wi->n_gpr, 4, "the genes of the two rules");
    pl_db *got = build_open(&zin, "z.db");
    cr_expect_eq(pl_db_info_get(got)->n_rules, 2);
    expect_same_db(got, want);
    size_t words = wi->n_reactions + 1 + wi->n_rule_words;
    uint32_t *a = calloc(words, 4), *b = calloc(words, 4);
    pl_err err;
    int64_t na = pl_db_graph_array(want, PL_ARRAY_RULES, a, 4 * words, &err);
    cr_assert_eq(na, (int64_t)(4 * words), "%s", err.msg);
    cr_assert_eq(pl_db_graph_array(got, PL_ARRAY_RULES, b, 4 * words, &err), na);
    cr_expect(memcmp(a, b, (size_t)na) == 0, "the compiled rules differ");
    free(a), free(b);
    pl_db_close(got);
    pl_db_close(want);
    free(rp), free(zp);
    inputs_free(&ref);
    inputs_free(&zin);
}

Test(text_inputs, gzip_rules) { rules_codec_case(PL_TEST_GZIP); }
Test(text_inputs, zstd_rules) { rules_codec_case(PL_TEST_ZSTD); }

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "pl_build never finished reading a FIFO\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* A child that writes `len` bytes of `data` to `path` (a FIFO) and exits. */
static pid_t feed_fifo(const char *path, const char *data, size_t len)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY);
        if (fd < 0)
            _exit(2);
        while (len > 0) {
            ssize_t w = write(fd, data, len);
            if (w <= 0)
                _exit(3);
            data += w, len -= (size_t)w;
        }
        _exit(close(fd) == 0 ? 0 : 4);
    }
    return pid;
}

/* A FIFO (gzip'd data written into it by another process) and standard
 * input ("-") read as the files they carry. */
static void stream_case(int kind, int use_stdin)
{
    inputs ref, in;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&in, "in", -1, "\n");
    size_t len, zlen;
    char *text = pl_test_read_file(in.paths[kind], &len);
    char *z = pl_test_compress(text, len, PL_TEST_GZIP, &zlen);
    cr_assert_eq(unlink(in.paths[kind]), 0);
    pid_t pid;
    if (use_stdin) {
        int p[2];
        cr_assert_eq(pipe(p), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            close(p[0]);
            _exit(write(p[1], z, zlen) == (ssize_t)zlen ? 0 : 3);
        }
        close(p[1]);
        cr_assert_eq(dup2(p[0], 0), 0);
        close(p[0]);
        strcpy(in.paths[kind], "-");
    } else {
        cr_assert_eq(mkfifo(in.paths[kind], 0644), 0, "%s", strerror(errno));
        pid = feed_fifo(in.paths[kind], z, zlen);
    }
    in.o.genes = in.paths[GENES], in.o.samples = in.paths[SAMPLES];
    in.files[0] = in.paths[EDGES];
    signal(SIGALRM, on_alarm);
    alarm(20);
    pl_db *want = build_open(&ref, "ref.db");
    pl_db *got = build_open(&in, "stream.db");
    alarm(0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer failed: %d", status);
    expect_same_db(got, want);
    pl_db_close(got);
    pl_db_close(want);
    free(text), free(z);
    inputs_free(&ref);
    inputs_free(&in);
}

Test(text_inputs, fifo_samples_read, .timeout = 60) { stream_case(SAMPLES, 0); }
Test(text_inputs, fifo_edges_read, .timeout = 60) { stream_case(EDGES, 0); }
Test(text_inputs, stdin_genes_read, .timeout = 60) { stream_case(GENES, 1); }

/* A device is no text input: refused at once. */
Test(text_inputs, device_refused)
{
    inputs in;
    inputs_write(&in, "in", -1, "\n");
    in.o.samples = "/dev/zero";
    char *out = pl_test_path(dir, "dev.db");
    in.o.out = out;
    pl_err err = {0};
    int rc = pl_build(&in.o, NULL, &err);
    cr_assert_eq(rc, -EINVAL, "rc %d (%s): %s", rc, pl_errname(rc), err.msg);
    cr_expect_str_eq(err.msg, "/dev/zero: cannot read: not a regular file");
    free(out);
    inputs_free(&in);
}

/* A GPR table's header line (`gene<TAB>reaction`, any case) is not data:
 * with a reaction list, and without one while unknown genes are dropped (the
 * header then read as a dropped edge and a reaction named "reaction"). */
static void gpr_header_case(const char *header, int reaction_list)
{
    inputs ref, hdr;
    inputs_write(&ref, "ref", -1, "\n");
    inputs_write(&hdr, "hdr", -1, "\n");
    pl_test_text t = {0};
    pl_test_tprintf(&t, "%s\n", header);
    for (int i = 0; lines[GPR][i]; i++)
        pl_test_tprintf(&t, "%s\n", lines[GPR][i]);
    char *d = pl_test_path(dir, "hdr");
    free(hdr.paths[GPR]);
    hdr.paths[GPR] = pl_test_put_text(d, "gpr-header.tsv", &t);
    free(d);
    hdr.o.gpr = hdr.paths[GPR];
    if (!reaction_list) {
        ref.o.reactions = hdr.o.reactions = NULL;
        ref.o.drop_unknown_genes = hdr.o.drop_unknown_genes = 1;
    }
    pl_db *want = build_open(&ref, "ref.db");
    pl_db *got = build_open(&hdr, "hdr.db");
    expect_same_db(got, want);
    pl_db_close(got);
    pl_db_close(want);
    inputs_free(&ref);
    inputs_free(&hdr);
}

Test(text_inputs, gpr_header_with_reaction_list) { gpr_header_case("gene\treaction", 1); }
Test(text_inputs, gpr_header_dropping_unknown) { gpr_header_case("Gene_ID\tRxn_ID", 0); }

/* A first line naming a known gene is data even when it looks like a header. */
Test(text_inputs, gpr_first_line_of_genes_is_data)
{
    inputs in;
    inputs_write(&in, "data", -1, "\n");
    pl_test_text t = {0};
    pl_test_tprintf(&t, "gene1\treaction1\ng1\tr1\n");
    char *d = pl_test_path(dir, "data");
    pl_test_text gt = {0};
    pl_test_tprintf(&gt, "gene1\ng1\ng2\ng3\ng4\n");
    free(in.paths[GENES]);
    in.paths[GENES] = pl_test_put_text(d, "genes-named.txt", &gt);
    in.o.genes = in.paths[GENES];
    pl_test_text rt = {0};
    pl_test_tprintf(&rt, "reaction1\nr1\nr2\n");
    free(in.paths[REACTIONS]);
    in.paths[REACTIONS] = pl_test_put_text(d, "reactions-named.txt", &rt);
    in.o.reactions = in.paths[REACTIONS];
    free(in.paths[GPR]);
    in.paths[GPR] = pl_test_put_text(d, "gpr-named.tsv", &t);
    in.o.gpr = in.paths[GPR];
    free(d);
    pl_db *db = build_open(&in, "named.db");
    cr_expect_eq(pl_db_info_get(db)->n_gpr, 2, "the first line is an edge");
    pl_db_close(db);
    inputs_free(&in);
}
