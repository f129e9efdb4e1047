/* The files of a database are checked when it is opened, before a byte of
 * them is served:
 *  - payload.npy against what the build recorded: another valid .npy in its
 *    place (another dtype, shape or row count), a truncated or missing file;
 *  - data.mdb, samples.pls and payload.npy must be regular files of the
 *    database itself: a FIFO (refused at once, never waited on), a symbolic
 *    link or a directory is named and refused (LMDB's lock file is never
 *    opened: a FIFO in its place changes nothing);
 * and a payload cut short after the database was opened fails the loader
 * naming the file, the row and the offset, not with a bare I/O error. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/dbformat.h"
#include "src/core/npy.h"
#include "testutil.h"

#define N_ROWS 2100u /* three sample-store blocks */
#define COLS 8u
#define ROW_BYTES (4u * COLS)

static struct {
    char *dir, *db, *payload;
    uint64_t payload_bytes;
} P;

/* A database of N_ROWS samples with a float32 [N_ROWS, COLS] payload. */
static void setup(void)
{
    memset(&P, 0, sizeof P);
    P.dir = pl_test_tmpdir();
    pl_test_inputs in = {.dir = P.dir};
    pl_test_text t = {0};
    pl_test_tprintf(&t, "g0\ng1\ng2\ng3\ng4\n");
    in.o.genes = pl_test_inputs_text(&in, "genes.txt", &t);
    pl_test_tprintf(&t, "g0\tg1\ng1\tg2\ng3\tg4\n");
    pl_test_inputs_edges(&in, "phys", pl_test_inputs_text(&in, "phys.tsv", &t));
    pl_test_tprintf(&t, "genes\tfit\n");
    for (uint32_t r = 0; r < N_ROWS; r++)
        pl_test_tprintf(&t, "g%u\t%u\n", r % 5, r);
    in.o.samples = pl_test_inputs_text(&in, "samples.tsv", &t);
    float *pay = malloc((size_t)N_ROWS * ROW_BYTES);
    cr_assert_not_null(pay);
    for (uint32_t i = 0; i < N_ROWS * COLS; i++)
        pay[i] = (float)i;
    char shape[64];
    snprintf(shape, sizeof shape, "(%u, %u)", N_ROWS, COLS);
    in.o.payload = pl_test_inputs_npy(&in, "payload-in.npy", "<f4", shape, pay,
                                      (size_t)N_ROWS * ROW_BYTES);
    free(pay);
    P.db = pl_test_path(P.dir, "db");
    pl_err err = {0};
    cr_assert_eq(pl_test_inputs_build(&in, P.db, NULL, &err), 0, "%s", err.msg);
    pl_test_inputs_free(&in);
    P.payload = pl_test_path(P.db, PL_FILE_PAYLOAD);
    struct stat st;
    cr_assert_eq(stat(P.payload, &st), 0);
    P.payload_bytes = (uint64_t)st.st_size;
    cr_assert_eq(P.payload_bytes, PL_PAYLOAD_ALIGN + (uint64_t)N_ROWS * ROW_BYTES);
}

static void teardown(void)
{
    pl_test_rmtree(P.dir);
    free(P.dir);
    free(P.db);
    free(P.payload);
}

TestSuite(payload_check, .init = setup, .fini = teardown, .timeout = 60);

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "pl_db_open did not return: it waits on a FIFO\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* pl_db_open() of the database fails with `code` and exactly `want`; it must
 * return within 10 s. */
static void expect_open_fails(int code, const char *want)
{
    signal(SIGALRM, on_alarm);
    alarm(10);
    pl_db *db = (pl_db *)&db;
    pl_err err = {0};
    int rc = pl_db_open(P.db, &db, &err);
    alarm(0);
    if (rc == 0)
        pl_db_close(db);
    cr_assert_eq(rc, code, "pl_db_open: rc %d (%s), expected %s: %s", rc, pl_errname(rc),
                 pl_errname(code), err.msg);
    cr_expect_eq(err.code, rc);
    cr_expect_null(db);
    cr_expect_str_eq(err.msg, want);
}

/* Replace payload.npy by a valid .npy of `descr` and `shape` ([ndim]) whose
 * data starts at a multiple of `align`; the data bytes are zero. Returns the
 * data offset. */
static size_t replace_payload(const char *descr, const uint64_t *shape, uint32_t ndim,
                            size_t align)
{
    char hdr[PL_PAYLOAD_ALIGN];
    size_t h = pl__npy_header(hdr, sizeof hdr, descr, shape, ndim, align);
    cr_assert_gt(h, 0);
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndim; i++)
        n *= shape[i];
    size_t item = descr[2] == '8' ? 8 : descr[2] == '4' ? 4 : descr[2] == '2' ? 2 : 1;
    size_t len = h + n * item;
    char *buf = calloc(1, len);
    cr_assert_not_null(buf);
    memcpy(buf, hdr, h);
    cr_assert_eq(unlink(P.payload), 0);
    pl_test_write_bytes(P.payload, buf, len);
    free(buf);
    /* the replacement is itself a valid .npy */
    pl__npy n2;
    pl_err err;
    cr_assert_eq(pl__npy_open(&n2, P.payload, &err), 0, "%s", err.msg);
    pl__npy_close(&n2);
    return h;
}

static void expect_payload_refused(const char *what)
{
    char want[4600];
    snprintf(want, sizeof want, "%s: %s", P.payload, what);
    expect_open_fails(PL_ECORRUPT, want);
}

/* ----------------------------------------------- another .npy in its place */

Test(payload_check, other_dtype_same_size)
{
    replace_payload("<i4", (uint64_t[]){N_ROWS, COLS}, 2, PL_PAYLOAD_ALIGN);
    expect_payload_refused("dtype '<i4', the database was built with '<f4' (the file was "
                           "replaced)");
}

Test(payload_check, other_dtype_smaller)
{
    replace_payload("<f2", (uint64_t[]){N_ROWS, COLS}, 2, PL_PAYLOAD_ALIGN);
    expect_payload_refused("dtype '<f2', the database was built with '<f4' (the file was "
                           "replaced)");
}

Test(payload_check, fewer_rows)
{
    replace_payload("<f4", (uint64_t[]){N_ROWS - 96, COLS}, 2, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (2004, 8), the database was built with (2100, 8) (the file "
                           "was replaced)");
}

Test(payload_check, other_row_shape)
{
    replace_payload("<f4", (uint64_t[]){N_ROWS, COLS / 2}, 2, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (2100, 4), the database was built with (2100, 8) (the file "
                           "was replaced)");
}

Test(payload_check, other_shape_same_size)
{
    replace_payload("<f4", (uint64_t[]){2 * N_ROWS, COLS / 2}, 2, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (4200, 4), the database was built with (2100, 8) (the file "
                           "was replaced)");
    replace_payload("<f4", (uint64_t[]){N_ROWS, 2, COLS / 2}, 3, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (2100, 2, 4), the database was built with (2100, 8) (the "
                           "file was replaced)");
}

Test(payload_check, fewer_dimensions)
{
    /* one value per row: a 1-d array, shown as numpy writes its shape */
    replace_payload("<f4", (uint64_t[]){N_ROWS * COLS}, 1, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (16800,), the database was built with (2100, 8) (the file "
                           "was replaced)");
    /* a single value: a 0-d array */
    replace_payload("<f4", NULL, 0, PL_PAYLOAD_ALIGN);
    expect_payload_refused("shape (), the database was built with (2100, 8) (the file was "
                           "replaced)");
}

Test(payload_check, other_data_offset)
{
    size_t h = replace_payload("<f4", (uint64_t[]){N_ROWS, COLS}, 2, 64);
    cr_assert_lt(h, PL_PAYLOAD_ALIGN);
    char want[256];
    snprintf(want, sizeof want, "data at byte %zu of %llu, the database expects byte %u of "
             "%llu (the file was rewritten)", h,
             (unsigned long long)(h + N_ROWS * ROW_BYTES), PL_PAYLOAD_ALIGN,
             (unsigned long long)P.payload_bytes);
    expect_payload_refused(want);
}

/* --------------------------------------------------- damaged or missing */

static void expect_truncated_refused(uint64_t size)
{
    cr_assert_eq(truncate(P.payload, (off_t)size), 0);
    char want[256];
    snprintf(want, sizeof want, "%llu bytes, the database expects %llu (truncated or "
             "replaced)", (unsigned long long)size, (unsigned long long)P.payload_bytes);
    expect_payload_refused(want);
}

Test(payload_check, truncated_in_data) { expect_truncated_refused(P.payload_bytes - 100); }
Test(payload_check, truncated_in_header) { expect_truncated_refused(50); }
Test(payload_check, empty) { expect_truncated_refused(0); }

Test(payload_check, bad_magic)
{
    pl_test_xor_byte(P.payload, 1, 0xFF);
    expect_payload_refused("not a .npy file (bad magic)");
}

Test(payload_check, missing)
{
    cr_assert_eq(unlink(P.payload), 0);
    char want[4600];
    snprintf(want, sizeof want, "%s: %s", P.payload, strerror(ENOENT));
    expect_open_fails(-ENOENT, want);
}

/* ---------------------------------------------- files that are not files */

enum { AS_FIFO, AS_SYMLINK, AS_DIRECTORY };

/* Put file `name` of the database back as a FIFO, a symbolic link to a copy
 * of itself (same bytes: only the link is wrong) or an empty directory. */
static void replace_with(const char *name, int kind)
{
    char *p = pl_test_path(P.db, name), *copy = pl_test_path(P.dir, name);
    if (kind == AS_SYMLINK) {
        pl_test_copy_file(p, copy);
        cr_assert_eq(unlink(p), 0);
        cr_assert_eq(symlink(copy, p), 0, "%s", strerror(errno));
    } else {
        cr_assert_eq(unlink(p), 0);
        cr_assert_eq(kind == AS_FIFO ? mkfifo(p, 0644) : mkdir(p, 0755), 0, "%s: %s", p,
                     strerror(errno));
    }
    free(p);
    free(copy);
}

static void not_regular_case(const char *name, int kind)
{
    replace_with(name, kind);
    static const char *const why[] = {
        "a FIFO, not a regular file",
        "a symbolic link, not a regular file (the files of a database must be its own)",
        "a directory, not a regular file",
    };
    char want[4600];
    snprintf(want, sizeof want, "%s/%s: %s", P.db, name, why[kind]);
    expect_open_fails(PL_ECORRUPT, want);
}

Test(payload_check, fifo_payload) { not_regular_case(PL_FILE_PAYLOAD, AS_FIFO); }
Test(payload_check, fifo_samples) { not_regular_case(PL_FILE_SAMPLES, AS_FIFO); }
Test(payload_check, fifo_lmdb) { not_regular_case(PL_FILE_LMDB, AS_FIFO); }
Test(payload_check, symlink_payload) { not_regular_case(PL_FILE_PAYLOAD, AS_SYMLINK); }
Test(payload_check, symlink_samples) { not_regular_case(PL_FILE_SAMPLES, AS_SYMLINK); }
Test(payload_check, symlink_lmdb) { not_regular_case(PL_FILE_LMDB, AS_SYMLINK); }
Test(payload_check, directory_payload) { not_regular_case(PL_FILE_PAYLOAD, AS_DIRECTORY); }
Test(payload_check, directory_samples) { not_regular_case(PL_FILE_SAMPLES, AS_DIRECTORY); }
Test(payload_check, directory_lmdb) { not_regular_case(PL_FILE_LMDB, AS_DIRECTORY); }

/* A database is opened without LMDB's lock file (read-only, MDB_NOLOCK): a
 * FIFO named lock.mdb beside the files is never opened, so never waited on. */
Test(payload_check, fifo_lock_file_ignored)
{
    char *p = pl_test_path(P.db, "lock.mdb");
    cr_assert_eq(mkfifo(p, 0644), 0, "%s: %s", p, strerror(errno));
    signal(SIGALRM, on_alarm);
    alarm(10);
    pl_db *db;
    pl_err err = {0};
    int rc = pl_db_open(P.db, &db, &err);
    alarm(0);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_expect_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    pl_db_close(db);
    free(p);
}

/* The loader refuses a replaced payload up front, before any batch. */
Test(payload_check, loader_refuses_replaced_payload)
{
    replace_payload("<f4", (uint64_t[]){N_ROWS - 96, COLS}, 2, PL_PAYLOAD_ALIGN);
    pl_loader_opts o = {0};
    o.db = P.db;
    o.plan = (pl_plan_opts){.batch_size = 100, .world_size = 1};
    o.backend = PL_BACKEND_HOST;
    pl_loader *l = NULL;
    pl_err err = {0};
    int rc = pl_loader_open(&o, &l, &err);
    pl_loader_close(l);
    cr_assert_eq(rc, PL_ECORRUPT, "rc %d (%s): %s", rc, pl_errname(rc), err.msg);
    char want[4600];
    snprintf(want, sizeof want, "%s: shape (2004, 8), the database was built with (2100, 8) "
             "(the file was replaced)", P.payload);
    cr_expect_str_eq(err.msg, want);
}

/* ------------------------------------------- cut short after the open */

/* The payload ends inside row 1500 once the loader runs: the loader fails
 * naming the file, the row and the offset. */
static void cut_while_loading(const char *io)
{
    cr_assert_eq(setenv("PERTLOAD_IO", io, 1), 0);
    pl_loader_opts o = {0};
    o.db = P.db;
    o.plan = (pl_plan_opts){.batch_size = 100, .world_size = 1};
    o.threads = 1;
    o.backend = PL_BACKEND_HOST;
    pl_loader *l;
    pl_err err = {0};
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    uint64_t cut = PL_PAYLOAD_ALIGN + 1500ull * ROW_BYTES + ROW_BYTES / 2;
    cr_assert_eq(truncate(P.payload, (off_t)cut), 0);
    pl_device_batch b;
    int rc;
    uint64_t batches = 0;
    while ((rc = pl_loader_next(l, &b, &err)) == 0) {
        batches++;
        pl_loader_release(l, &b);
    }
    pl_loader_close(l);
    unsetenv("PERTLOAD_IO");
    cr_assert_eq(rc, PL_ECORRUPT, "%s: rc %d (%s): %s", io, rc, pl_errname(rc), err.msg);
    /* batches done before the failure may be dropped; none after it comes */
    cr_expect_leq(batches, 15, "%s: %llu batches, the cut is in batch 15", io,
                  (unsigned long long)batches);
    char want[4600];
    snprintf(want, sizeof want, "%s/%s: row 1500 (offset %llu): the file ends at byte %llu "
             "(truncated after the database was opened)", P.db, PL_FILE_PAYLOAD,
             (unsigned long long)(PL_PAYLOAD_ALIGN + 1500ull * ROW_BYTES),
             (unsigned long long)cut);
    cr_expect_str_eq(err.msg, want, "%s", io);
}

Test(payload_check, cut_while_loading_pread) { cut_while_loading("pread"); }
Test(payload_check, cut_while_loading_uring) { cut_while_loading("uring"); }

/* pl_db_verify() of a handle opened before the cut names the sizes. */
Test(payload_check, cut_before_verify)
{
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(P.db, &db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    cr_assert_eq(truncate(P.payload, (off_t)(P.payload_bytes - 1)), 0);
    cr_assert_eq(pl_db_verify(db, &err), PL_ECORRUPT, "%s", err.msg);
    char want[4600];
    snprintf(want, sizeof want, "%s: %llu bytes, the database expects %llu (truncated?)",
             P.payload, (unsigned long long)P.payload_bytes - 1,
             (unsigned long long)P.payload_bytes);
    cr_expect_str_eq(err.msg, want);
    pl_db_close(db);
}
