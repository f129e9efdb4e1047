/* Corruption sweep: flip bytes of every file of a small database in turn
 * (data.mdb, samples.pls, payload.npy) and check that each flip is either a
 * clear error (PL_ECORRUPT or PL_EFORMAT with a message, from pl_db_open,
 * pl_db_verify, pl_graph_load or a read) or harmless: everything read back
 * (counts, names, graph arrays, the masks of every gene and of every sample,
 * the samples, the payload rows) equals what the pristine database gives.
 * Never a crash, a hang or a silently different result.
 *
 * Each flip (XOR 0xFF) is checked in a forked child under an alarm, so that
 * a crash or a hang is reported with the file and offset. Files up to
 * FULL_BYTES are swept whole; larger ones at SAMPLED seeded random offsets.
 * Environment:
 *   PERTLOAD_SWEEP=all         sweep every byte of every file
 *   PERTLOAD_SWEEP=sample      sample every file larger than SAMPLED bytes
 *                              (the sanitizer builds, where a flip costs more)
 *   PERTLOAD_SWEEP_SEED=N      the seed of the sampled offsets (printed)
 *   PERTLOAD_SWEEP_RESEAL=1    record data.mdb's checksum again after each
 *                              flip, so that LMDB parses the damaged pages
 *                              (shows what the whole-file check prevents:
 *                              LMDB does not validate its page structure) */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/sstore.h"
#include "testutil.h"

#define N_GENES 12
#define N_SAMPLES 40
#define PAYLOAD_COLS 6
#define FULL_BYTES (64u << 10)
#define SAMPLED 4096u
#define CHILD_SECONDS 10

/* Outcomes of one flip, the child's exit status. */
enum { HARMLESS = 0, DIFFERS = 2, UNCLEAR = 3, ERR_OPEN = 10, ERR_VERIFY, ERR_GRAPH, ERR_READ };
static const char *const outcome_names[] = {
    [HARMLESS] = "harmless", [ERR_OPEN] = "open error", [ERR_VERIFY] = "verify error",
    [ERR_GRAPH] = "graph error", [ERR_READ] = "read error"};

typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static void put(bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            pl_test_die("out of memory");
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void put_str(bytes *b, const char *s) { put(b, s, strlen(s) + 1); }

static struct {
    char *dir;
    char good[4096], bad[4096];
    bytes want; /* the pristine read-back */
} S;

/* 12 genes, two edge types (TSV with a self-loop and duplicates, .npy),
 * metabolism, 40 samples with two labels, a float32 payload [40, 6]. */
static void build(void)
{
    uint64_t s = 11;
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = S.dir};
    for (int g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "g%d\n", g);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "g0\tg0\ng1\tg2\ng1\tg2\n");
    for (int e = 0; e < 20; e++)
        pl_test_tprintf(&t, "g%d\tg%d\n", (int)pl_test_below(&s, N_GENES),
                        (int)pl_test_below(&s, N_GENES));
    pl_test_inputs_edges(&in, "physical", pl_test_inputs_text(&in, "physical.tsv", &t));
    int64_t reg[2][15];
    for (int e = 0; e < 15; e++) {
        reg[0][e] = (int64_t)pl_test_below(&s, N_GENES);
        reg[1][e] = (int64_t)pl_test_below(&s, N_GENES);
    }
    pl_test_inputs_edges(&in, "regulatory",
                         pl_test_inputs_npy(&in, "regulatory.npy", "<i8", "(2, 15)", reg,
                                            sizeof reg));
    for (int i = 0; i < 8; i++)
        pl_test_tprintf(&t, "g%d\tr%d\n", (int)pl_test_below(&s, N_GENES),
                        (int)pl_test_below(&s, 4));
    in.o.gpr = pl_test_inputs_text(&in, "gpr.tsv", &t);
    for (int i = 0; i < 8; i++)
        pl_test_tprintf(&t, "r%d\tm%d\t%d\n", (int)pl_test_below(&s, 5),
                        (int)pl_test_below(&s, 6), (int)pl_test_below(&s, 5) - 2);
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);
    pl_test_tprintf(&t, "genes\tfitness\tgrowth\n");
    for (int r = 0; r < N_SAMPLES; r++) {
        int k = 1 + (int)pl_test_below(&s, 3);
        for (int i = 0; i < k; i++)
            pl_test_tprintf(&t, "%sg%d", i ? ";" : "", (int)pl_test_below(&s, N_GENES));
        pl_test_tprintf(&t, "\t%.3f\t%s\n", (double)pl_test_below(&s, 1000) / 1000,
                        r % 5 ? "0.5" : "NA");
    }
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    float pay[N_SAMPLES][PAYLOAD_COLS];
    for (int r = 0; r < N_SAMPLES; r++)
        for (int c = 0; c < PAYLOAD_COLS; c++)
            pay[r][c] = (float)pl_test_below(&s, 1u << 16) / 64.0f;
    char shape[32];
    snprintf(shape, sizeof shape, "(%d, %d)", N_SAMPLES, PAYLOAD_COLS);
    in.o.payload = pl_test_inputs_npy(&in, "payload.npy", "<f4", shape, pay, sizeof pay);
    in.o.params = "sweep";
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_test_inputs_build(&in, S.good, &st, &err), 0, "build: %s", err.msg);
    pl_test_inputs_free(&in);
}

/* Read back everything a user of the database can see, into `out`.
 * @return 0, or an outcome ERR_* with the error in `err`. */
static int read_back(const char *path, bytes *out, pl_err *err)
{
    pl_db *db = NULL;
    pl_graph *g = NULL;
    pl_masks *m = NULL;
    void *arr = NULL;
    int stage = ERR_OPEN, rc = pl_db_open(path, &db, err);
    if (rc == 0) {
        stage = ERR_VERIFY;
        rc = pl_db_verify(db, err);
    }
    if (rc == 0) {
        stage = ERR_GRAPH;
        rc = pl_graph_load(db, &g, err);
    }
    if (rc == 0) {
        stage = ERR_READ;
        const pl_db_info *i = pl_db_info_get(db);
        put(out, i, offsetof(pl_db_info, type_names));
        uint64_t more[8] = {i->block_rows, i->n_blocks, i->payload_ndim,
                            i->payload_row_bytes, i->graph_bytes, i->samples_bytes,
                            i->payload_bytes, 0};
        put(out, more, sizeof more);
        const char *const *names[5] = {i->gene_names, i->type_names, i->label_names,
                                       i->reaction_names, i->metabolite_names};
        uint64_t counts[5] = {i->n_genes, i->n_types, i->n_labels, i->n_reactions,
                              i->n_metabolites};
        for (int k = 0; k < 5; k++)
            for (uint64_t n = 0; n < counts[k]; n++)
                put_str(out, names[k][n]);
        put_str(out, i->params);
        put(out, i->payload_dtype, sizeof i->payload_dtype);
        put(out, i->payload_shape, sizeof i->payload_shape);
        size_t cap = 1 << 20;
        arr = malloc(cap);
        cr_assert_not_null(arr);
        int which[PL_MAX_TYPES + 3], nw = 0;
        for (uint32_t t = 0; t < i->n_types; t++)
            which[nw++] = (int)t;
        which[nw++] = PL_ARRAY_GPR;
        which[nw++] = PL_ARRAY_RMR;
        which[nw++] = PL_ARRAY_RMR_STOICH;
        for (int w = 0; w < nw && rc == 0; w++) {
            int64_t n = pl_db_graph_array(db, which[w], arr, cap, err);
            rc = n < 0 ? (int)n : 0;
            if (n > 0)
                put(out, arr, (size_t)n);
        }
        m = pl_masks_new(g);
        cr_assert_not_null(m);
        pl_masks_result r;
        /* Every single gene, then every sample's set. */
        for (int32_t gene = 0; rc == 0 && gene < (int32_t)i->n_genes; gene++) {
            rc = pl_masks_compute(m, &gene, 1, &r);
            for (uint32_t k = 0; rc == 0 && k < r.n_lists; k++)
                put(out, r.removed[k].v, 4 * (size_t)r.removed[k].n);
        }
        for (uint64_t row = 0; rc == 0 && row < i->n_samples; row++) {
            pl_sample s;
            rc = pl_db_sample(db, row, &s, err);
            if (rc < 0)
                break;
            put(out, &s.id, 8);
            put(out, s.genes, 4 * (size_t)s.n_genes);
            put(out, s.labels, 4 * (size_t)i->n_labels);
            rc = pl_masks_compute(m, s.genes, s.n_genes, &r);
            if (rc < 0)
                rc = pl__err(err, rc, "row %" PRIu64 ": masks failed", row);
            put(out, r.pert.v, 4 * (size_t)r.pert.n);
            for (uint32_t k = 0; rc == 0 && k < r.n_lists; k++)
                put(out, r.removed[k].v, 4 * (size_t)r.removed[k].n);
        }
        /* The payload rows, read where the loader reads them. */
        uint64_t data = i->payload_row_bytes * i->n_samples;
        if (rc == 0 && data) {
            char p[4352];
            snprintf(p, sizeof p, "%s/%s", path, PL_FILE_PAYLOAD);
            int fd = open(p, O_RDONLY);
            void *rows = malloc(data);
            cr_assert_not_null(rows);
            rc = fd < 0 ? pl__err(err, -errno, "%s: %s", p, strerror(errno))
                        : pl__read_all(fd, rows, data, db->meta.payload_offset, p, err);
            if (rc == 0)
                put(out, rows, data);
            free(rows);
            if (fd >= 0)
                close(fd);
        }
    }
    free(arr);
    pl_masks_free(m);
    pl_graph_free(g);
    pl_db_close(db);
    return rc < 0 ? stage : 0;
}

static void sweep_init(void)
{
    memset(&S, 0, sizeof S);
    S.dir = pl_test_tmpdir();
    snprintf(S.good, sizeof S.good, "%s/good", S.dir);
    snprintf(S.bad, sizeof S.bad, "%s/bad", S.dir);
    build();
    pl_err err = {0};
    cr_assert_eq(read_back(S.good, &S.want, &err), 0, "pristine database: %s", err.msg);
    cr_assert_eq(pl_test_copy_dir(S.good, S.bad), 3);
}

static void sweep_fini(void)
{
    if (S.dir)
        pl_test_rmtree(S.dir);
    free(S.dir);
    free(S.want.p);
    memset(&S, 0, sizeof S);
}

TestSuite(sweep, .init = sweep_init, .fini = sweep_fini, .timeout = 300);

/* The child's side of one flip: read back and classify. */
static int check_flip(void)
{
    alarm(CHILD_SECONDS); /* a hang ends as SIGALRM */
    bytes got = {0};
    pl_err err = {0};
    int stage = read_back(S.bad, &got, &err);
    if (stage) {
        int clear = (err.code == PL_ECORRUPT || err.code == PL_EFORMAT) && err.msg[0];
        if (!clear)
            fprintf(stderr, "unclear error %d (%s): '%s'\n", err.code, pl_errname(err.code),
                    err.msg);
        return clear ? stage : UNCLEAR;
    }
    if (got.len != S.want.len || memcmp(got.p, S.want.p, got.len) != 0) {
        size_t i = 0;
        while (i < got.len && i < S.want.len && got.p[i] == S.want.p[i])
            i++;
        fprintf(stderr, "read back differs at byte %zu of %zu (pristine %zu)\n", i, got.len,
                S.want.len);
        return DIFFERS;
    }
    return HARMLESS;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

/* Sweep one file of the database; fails listing the offsets that crashed,
 * hung, gave an unclear error or a different read-back. */
static void sweep(const char *file)
{
    char p[4352], lmdb[4352], samples[4352];
    snprintf(p, sizeof p, "%s/%s", S.bad, file);
    snprintf(lmdb, sizeof lmdb, "%s/%s", S.bad, PL_FILE_LMDB);
    snprintf(samples, sizeof samples, "%s/%s", S.bad, PL_FILE_SAMPLES);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0, "%s: %s", p, strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    const char *mode = getenv("PERTLOAD_SWEEP");
    uint64_t full = mode && !strcmp(mode, "sample") ? SAMPLED : FULL_BYTES;
    int all = (mode && !strcmp(mode, "all")) || size <= full;
    int reseal = env_u64("PERTLOAD_SWEEP_RESEAL", 0) && !strcmp(file, PL_FILE_LMDB);
    uint64_t seed = env_u64("PERTLOAD_SWEEP_SEED", 20261122), state = seed;
    uint64_t n = all ? size : SAMPLED;
    int fd = open(p, O_RDWR);
    cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
    uint64_t counts[16] = {0}, bad = 0, kinds[4] = {0}; /* crash, hang, differs, unclear */
    char first_bad[2048] = "";
    size_t fb = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = all ? i : pl_test_below(&state, size);
        unsigned char orig, flipped;
        cr_assert_eq(pread(fd, &orig, 1, (off_t)off), 1);
        flipped = orig ^ 0xFF;
        cr_assert_eq(pwrite(fd, &flipped, 1, (off_t)off), 1);
        if (reseal) {
            pl_err err = {0};
            cr_assert_eq(pl__sstore_seal(samples, lmdb, &err), 0, "%s", err.msg);
        }
        pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
        if (pid == 0)
            _exit(check_flip());
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert_eq(pwrite(fd, &orig, 1, (off_t)off), 1);
        const char *why = NULL;
        char sig[64];
        if (WIFSIGNALED(status)) {
            int hang = WTERMSIG(status) == SIGALRM;
            snprintf(sig, sizeof sig, "%s", hang ? "hang (no result within the alarm)"
                                                 : strsignal(WTERMSIG(status)));
            why = sig;
            kinds[hang]++;
        } else if (WEXITSTATUS(status) == DIFFERS) {
            why = "read back differs silently";
            kinds[2]++;
        } else if (WEXITSTATUS(status) == UNCLEAR) {
            why = "unclear error";
            kinds[3]++;
        } else if (WEXITSTATUS(status) >= 16 || !outcome_names[WEXITSTATUS(status)]) {
            snprintf(sig, sizeof sig, "child exit status %d", WEXITSTATUS(status));
            why = sig;
            kinds[0]++;
        }
        if (why) {
            bad++;
            if (fb < sizeof first_bad - 100)
                fb += (size_t)snprintf(first_bad + fb, sizeof first_bad - fb,
                                       "\n  %s offset %" PRIu64 ": %s", file, off, why);
        } else {
            counts[WEXITSTATUS(status)]++;
        }
    }
    if (reseal) {
        pl_err err = {0};
        cr_assert_eq(pl__sstore_seal(samples, lmdb, &err), 0, "%s", err.msg);
    }
    close(fd);
    fprintf(stderr, "sweep %s: %" PRIu64 " bytes, %s%" PRIu64 " flips", file, size,
            all ? "every byte, " : "sampled, ", n);
    if (!all)
        fprintf(stderr, " (seed %" PRIu64 ")", seed);
    for (int o = 0; o < 16; o++)
        if (counts[o])
            fprintf(stderr, ", %" PRIu64 " %s", counts[o], outcome_names[o]);
    fprintf(stderr, ", %" PRIu64 " failures (%" PRIu64 " crashes, %" PRIu64 " hangs, %" PRIu64
            " silently different, %" PRIu64 " unclear errors)\n", bad, kinds[0], kinds[1],
            kinds[2], kinds[3]);
    cr_assert_eq(bad, 0, "%s: %" PRIu64 " of %" PRIu64 " flips crashed, hung or went "
                 "unnoticed (seed %" PRIu64 "):%s", file, bad, n, seed, first_bad);
    /* The copy is pristine again. */
    bytes got = {0};
    pl_err err = {0};
    cr_assert_eq(read_back(S.bad, &got, &err), 0, "%s", err.msg);
    cr_assert(got.len == S.want.len && !memcmp(got.p, S.want.p, got.len));
    free(got.p);
}

Test(sweep, lmdb) { sweep(PL_FILE_LMDB); }

Test(sweep, sample_store) { sweep(PL_FILE_SAMPLES); }

Test(sweep, payload) { sweep(PL_FILE_PAYLOAD); }
