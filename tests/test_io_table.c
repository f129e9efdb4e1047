/* The sample table read through the backends of loader/io.h (their reads:
 * test_io.c): the table of a database of ~270K samples (two read groups of
 * blocks) is loaded through each backend and must come out byte-identical,
 * also under a small locked-memory limit; a damaged block makes either load
 * fail with PL_ECORRUPT; an empty store loads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "loader/io.h"
#include "loader/table.h"
#include "masks/masks.h"
#include "pertload.h"
#include "src/core/db.h"
#include "testutil.h"

static const int modes[2] = {PL_IO_URING, PL_IO_PREAD};
static const char *const mode_names[2] = {"io_uring", "pread"};

static struct {
    char *dir;
} F;

static void dir_setup(void) { F.dir = pl_test_tmpdir(); }

static void dir_teardown(void)
{
    if (F.dir)
        pl_test_rmtree(F.dir);
    free(F.dir);
    F.dir = NULL;
}

TestSuite(io, .init = dir_setup, .fini = dir_teardown, .timeout = 60);

/* --------------------------------------------------- the sample table */

#define T_GENES 60
#define T_SAMPLES 270000 /* 264 blocks: more than one read group */

static void build_table_db_n(const char *out, int n_samples)
{
    uint64_t s = 99;
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = F.dir};
    for (int g = 0; g < T_GENES; g++)
        pl_test_tprintf(&t, "g%d\n", g);
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    for (int e = 0; e < 700; e++) {
        int a = (int)pl_test_below(&s, T_GENES);
        pl_test_tprintf(&t, "g%d\tg%d\n", a, e % 9 == 0 ? a : (int)pl_test_below(&s, T_GENES));
    }
    pl_test_inputs_edges(&in, "ppi", pl_test_inputs_text(&in, "edges.tsv", &t));
    for (int i = 0; i < 40; i++)
        pl_test_tprintf(&t, "g%d\tr%d\n", (int)pl_test_below(&s, T_GENES),
                        (int)pl_test_below(&s, 12));
    in.o.gpr = pl_test_inputs_text(&in, "gpr.tsv", &t);
    for (int i = 0; i < 30; i++)
        pl_test_tprintf(&t, "r%d\tm%d\t1\n", (int)pl_test_below(&s, 12),
                        (int)pl_test_below(&s, 9));
    in.o.rmr = pl_test_inputs_text(&in, "rmr.tsv", &t);
    pl_test_tprintf(&t, "id\tgenes\tfitness\tsd\n");
    for (int r = 0; r < n_samples; r++) {
        pl_test_tprintf(&t, "%llu\t", (unsigned long long)pl_test_rand(&s) >> 1);
        int k = 1 + (int)pl_test_below(&s, 4);
        int first = (int)pl_test_below(&s, T_GENES);
        for (int i = 0; i < k; i++)
            pl_test_tprintf(&t, "%sg%d", i ? ";" : "",
                            i && pl_test_below(&s, 5) == 0 ? first
                                                           : (int)pl_test_below(&s, T_GENES));
        if (pl_test_below(&s, 9) == 0)
            pl_test_tprintf(&t, "\tNA");
        else
            pl_test_tprintf(&t, "\t%.5f", (double)pl_test_below(&s, 100000) / 50000.0);
        pl_test_tprintf(&t, "\t%.2f\n", (double)pl_test_below(&s, 1000) / 100.0);
    }
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    pl_err err = {0};
    pl_build_stats st;
    cr_assert_eq(pl_test_inputs_build(&in, out, &st, &err), 0, "pl_build: %s", err.msg);
    cr_assert_eq(st.n_samples, (uint64_t)n_samples);
    pl_test_inputs_free(&in);
}

static void build_table_db(const char *out) { build_table_db_n(out, T_SAMPLES); }

typedef struct opened {
    pl_db *db;
    pl_graph *g;
} opened;

static opened open_db(const char *path)
{
    opened o = {0};
    pl_err err = {0};
    cr_assert_eq(pl_db_open(path, &o.db, &err), 0, "%s: %s", path, err.msg);
    cr_assert_eq(pl_graph_load(o.db, &o.g, &err), 0, "%s", err.msg);
    return o;
}

static void close_db(opened *o)
{
    pl_graph_free(o->g);
    pl_db_close(o->db);
}

static void load_table(opened *o, int mode, pl__table *t)
{
    pl_err err = {0};
    int rc = pl__table_load(o->db, o->g, mode, t, &err);
    cr_assert_eq(rc, 0, "pl__table_load(%s): %d %s", mode == PL_IO_URING ? "uring" : "pread",
                 rc, err.msg);
}

Test(io, table_identical_through_both_backends, .timeout = 180)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/db", F.dir);
    build_table_db(path);
    opened o = open_db(path);
    const pl_db_info *info = pl_db_info_get(o.db);
    cr_assert_gt(info->n_blocks, 256, "the store should need more than one read group");
    pl__table a, b;
    load_table(&o, PL_IO_URING, &a);
    cr_expect_str_eq(a.backend, "io_uring");
    load_table(&o, PL_IO_PREAD, &b);
    cr_expect_str_eq(b.backend, "pread");
    cr_assert_eq(a.n, T_SAMPLES);
    cr_assert_eq(b.n, a.n);
    cr_assert_eq(a.n_labels, 2);
    cr_assert_eq(b.n_labels, a.n_labels);
    cr_expect(!memcmp(a.ids, b.ids, 8 * a.n), "ids differ");
    cr_expect(!memcmp(a.gptr, b.gptr, 8 * (a.n + 1)), "gptr differ");
    cr_assert_eq(a.gptr[a.n], b.gptr[b.n]);
    cr_expect(!memcmp(a.genes, b.genes, 4 * a.gptr[a.n]), "genes differ");
    cr_expect(!memcmp(a.labels, b.labels, 4 * a.n * a.n_labels), "labels differ");
    cr_expect_eq(a.max_genes, b.max_genes);
    cr_expect_eq(a.max_bound, b.max_bound);
    cr_expect_eq(a.max_kind_bound, b.max_kind_bound);

    /* and both agree with the database read sample by sample */
    uint32_t max_genes = 0;
    uint64_t max_bound = 0, max_kind = 0;
    uint32_t K = pl_graph_n_lists(o.g);
    for (uint64_t r = 0; r < a.n; r++) {
        pl_sample sm;
        pl_err err = {0};
        CHECK(pl_db_sample(o.db, r, &sm, &err) == 0, "row %llu: %s", (unsigned long long)r,
              err.msg);
        CHECK(a.ids[r] == sm.id, "row %llu: id", (unsigned long long)r);
        unsigned char P[T_GENES] = {0};
        for (uint32_t i = 0; i < sm.n_genes; i++)
            P[sm.genes[i]] = 1;
        int32_t set[T_GENES];
        uint32_t n = 0;
        for (int g = 0; g < T_GENES; g++)
            if (P[g])
                set[n++] = g;
        CHECK(a.gptr[r + 1] - a.gptr[r] == n && !memcmp(a.genes + a.gptr[r], set, 4 * n),
              "row %llu: genes are not the sorted unique set", (unsigned long long)r);
        for (uint32_t l = 0; l < a.n_labels; l++) {
            float x = a.labels[r * a.n_labels + l], y = sm.labels[l];
            CHECK(isnan(y) ? isnan(x) : x == y, "row %llu label %u", (unsigned long long)r, l);
        }
        if (n > max_genes)
            max_genes = n;
        uint64_t tot = 0;
        for (uint32_t k = 0; k < K; k++) {
            uint64_t bnd = pl__masks_bound(o.g, k, set, n);
            tot += bnd;
            if (bnd > max_kind)
                max_kind = bnd;
        }
        if (tot > max_bound)
            max_bound = tot;
    }
    cr_expect_eq(a.max_genes, max_genes);
    cr_expect_eq(a.max_bound, max_bound);
    cr_expect_eq(a.max_kind_bound, max_kind);

    /* PERTLOAD_IO steers AUTO for the table as well */
    pl__table c;
    setenv("PERTLOAD_IO", "pread", 1);
    load_table(&o, PL_IO_AUTO, &c);
    cr_expect_str_eq(c.backend, "pread");
    cr_expect(!memcmp(c.genes, a.genes, 4 * a.gptr[a.n]));
    pl__table_free(&c);
    setenv("PERTLOAD_IO", "uring", 1);
    load_table(&o, PL_IO_AUTO, &c);
    cr_expect_str_eq(c.backend, "io_uring");
    cr_expect(!memcmp(c.labels, a.labels, 4 * a.n * a.n_labels));
    pl__table_free(&c);
    unsetenv("PERTLOAD_IO");

    pl__table_free(&a);
    pl__table_free(&b);
    cr_expect_null(a.ids);
    pl__table_free(&a); /* twice is harmless */
    close_db(&o);
}

static void expect_load_fails(const char *path, int code, const char *what)
{
    opened o = open_db(path);
    for (int mi = 0; mi < 2; mi++) {
        pl__table t;
        memset(&t, 0x11, sizeof t);
        pl_err err = {0};
        int rc = pl__table_load(o.db, o.g, modes[mi], &t, &err);
        if (code)
            cr_expect_eq(rc, code, "%s through %s: rc %d (%s): %s", what, mode_names[mi], rc,
                         pl_errname(rc), err.msg);
        else
            cr_expect_lt(rc, 0, "%s through %s: rc %d", what, mode_names[mi], rc);
        cr_expect_eq(err.code, rc, "%s through %s: err.code", what, mode_names[mi]);
        cr_expect_neq(err.msg[0], 0, "%s through %s: no message", what, mode_names[mi]);
        cr_expect_null(t.ids, "%s: table not released after a failure", what);
        cr_expect_null(t.genes);
        if (rc == 0)
            pl__table_free(&t);
    }
    close_db(&o);
}

Test(io, corrupt_block_fails_through_both_backends, .timeout = 180)
{
    char good[4096], bad[4096], from[4200], to[4200], samples[4200];
    snprintf(good, sizeof good, "%s/good", F.dir);
    snprintf(bad, sizeof bad, "%s/bad", F.dir);
    build_table_db(good);
    cr_assert_eq(mkdir(bad, 0755), 0);
    static const char *const files[] = {"data.mdb", "samples.pls"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/%s", good, files[i]);
        snprintf(to, sizeof to, "%s/%s", bad, files[i]);
        pl_test_copy_file(from, to);
    }
    snprintf(samples, sizeof samples, "%s/samples.pls", bad);

    /* block positions from the pristine database's index */
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(good, &db, &err), 0, "%s", err.msg);
    uint64_t nb = db->meta.n_blocks;
    cr_assert_gt(nb, 256);
    struct {
        uint64_t block;
        int where; /* 0: compressed data, 1: block header magic */
    } cases[] = {{1, 0}, {100, 0}, {255, 0}, {256, 0}, {nb - 1, 0}, {3, 1}, {nb - 2, 1}};
    uint64_t offs[7];
    for (int i = 0; i < 7; i++) {
        const struct pl__block_entry *e = &db->blocks[cases[i].block];
        offs[i] = cases[i].where ? e->offset : e->offset + PL_BLOCK_HEADER + e->comp_size / 2;
    }
    pl_db_close(db);

    for (int i = 0; i < 7; i++) {
        char what[96];
        snprintf(what, sizeof what, "block %llu %s", (unsigned long long)cases[i].block,
                 cases[i].where ? "header" : "data");
        pl_test_xor_byte(samples, offs[i], 0xFF);
        expect_load_fails(bad, PL_ECORRUPT, what);
        pl_test_xor_byte(samples, offs[i], 0xFF); /* restore */
    }

    /* restored: loads again */
    opened o = open_db(bad);
    pl__table t;
    load_table(&o, PL_IO_URING, &t);
    pl__table_free(&t);
    load_table(&o, PL_IO_PREAD, &t);
    pl__table_free(&t);

    /* a store cut short after the database was opened: an error, not a hang */
    struct stat st;
    cr_assert_eq(stat(samples, &st), 0);
    cr_assert_eq(truncate(samples, st.st_size - 5000), 0);
    for (int mi = 0; mi < 2; mi++) {
        memset(&err, 0, sizeof err);
        int rc = pl__table_load(o.db, o.g, modes[mi], &t, &err);
        cr_expect_eq(rc, PL_ECORRUPT, "truncated store through %s: rc %d", mode_names[mi], rc);
        cr_expect(strstr(err.msg, "samples.pls: reading block ") &&
                      strstr(err.msg, ": the file ends before the block (truncated after the "
                                      "database was opened)"),
                  "%s: %s", mode_names[mi], err.msg);
        cr_expect_null(t.ids);
        if (rc == 0)
            pl__table_free(&t);
    }
    close_db(&o);
}

Test(io, empty_store_loads)
{
    pl_test_text t = {0};
    pl_test_inputs in = {.dir = F.dir};
    pl_test_tprintf(&t, "a\nb\nc\n");
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "a\tb\nc\tc\n");
    pl_test_inputs_edges(&in, "e", pl_test_inputs_text(&in, "edges.tsv", &t));
    pl_test_tprintf(&t, "genes\tfit\n");
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    char path[4096];
    snprintf(path, sizeof path, "%s/empty", F.dir);
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, path, NULL, &err), 0, "pl_build: %s", err.msg);
    pl_test_inputs_free(&in);
    opened d = open_db(path);
    for (int mi = 0; mi < 2; mi++) {
        pl__table tab;
        load_table(&d, modes[mi], &tab);
        cr_expect_eq(tab.n, 0);
        cr_expect_eq(tab.n_labels, 1);
        cr_expect_str_eq(tab.backend, mode_names[mi]);
        cr_assert_not_null(tab.gptr);
        cr_expect_eq(tab.gptr[0], 0);
        cr_expect_eq(tab.max_genes, 0);
        cr_expect_eq(tab.max_bound, 0);
        cr_expect_eq(tab.max_kind_bound, 0);
        pl__table_free(&tab);
    }
    close_db(&d);
}

/* Drop CAP_IPC_LOCK from this test's process (each test runs in its own), so
 * that RLIMIT_MEMLOCK binds as it does for an unprivileged user. */
static void drop_ipc_lock(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    cr_assert_eq(syscall(SYS_capget, &h, d), 0, "capget: %s", strerror(errno));
    uint32_t bit = 1u << (CAP_IPC_LOCK % 32);
    d[CAP_IPC_LOCK / 32].effective &= ~bit;
    d[CAP_IPC_LOCK / 32].permitted &= ~bit;
    d[CAP_IPC_LOCK / 32].inheritable &= ~bit;
    cr_assert_eq(syscall(SYS_capset, &h, d), 0, "capset: %s", strerror(errno));
}

/* An unprivileged user's locked-memory limit (often 8 MiB, 64 KiB on older
 * systems) may not cover the page-locked, registered read buffers (2 x 4 MiB):
 * the table must then still load, without them, through every mode. */
Test(io, table_loads_under_a_small_memlock_limit, .timeout = 120)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/db", F.dir);
    build_table_db_n(path, 5000);
    opened o = open_db(path);
    pl__table ref;
    load_table(&o, PL_IO_PREAD, &ref);

    drop_ipc_lock();
    struct rlimit lim = {1 << 20, 1 << 20}; /* room for the rings, not the buffers */
    cr_assert_eq(setrlimit(RLIMIT_MEMLOCK, &lim), 0, "setrlimit: %s", strerror(errno));
    size_t probe_len = (size_t)4 << 20;
    void *probe = aligned_alloc(4096, probe_len);
    cr_assert_not_null(probe);
    /* the system call itself: sanitizer runtimes replace mlock() with a no-op */
    long locked = syscall(SYS_mlock, probe, probe_len);
    if (locked == 0)
        syscall(SYS_munlock, probe, probe_len);
    free(probe);
    cr_assert_neq(locked, 0, "the 1 MiB limit does not bind: the case cannot be reproduced "
                  "here");

    static const int all[3] = {PL_IO_AUTO, PL_IO_URING, PL_IO_PREAD};
    unsetenv("PERTLOAD_IO");
    for (int i = 0; i < 3; i++) {
        pl__table t;
        pl_err err = {0};
        int rc = pl__table_load(o.db, o.g, all[i], &t, &err);
        cr_expect_eq(rc, 0, "mode %d under a 1 MiB RLIMIT_MEMLOCK: %d %s", all[i], rc, err.msg);
        if (rc < 0)
            continue;
        cr_expect_eq(t.n, ref.n);
        cr_expect(!memcmp(t.ids, ref.ids, 8 * ref.n));
        cr_expect(!memcmp(t.gptr, ref.gptr, 8 * (ref.n + 1)));
        cr_expect(!memcmp(t.genes, ref.genes, 4 * ref.gptr[ref.n]));
        cr_expect(!memcmp(t.labels, ref.labels, 4 * ref.n * ref.n_labels));
        pl__table_free(&t);
    }
    pl__table_free(&ref);
    close_db(&o);
}
