/* Damaged databases, the files: every checksum pl_db_open, pl_db_verify and
 * pl_db_sample rely on for the sample store, the payload and data.mdb as a
 * whole catches a flipped byte or a truncation, names the block or chunk
 * involved, and never crashes. Each case damages its own copy of one pristine
 * database built from small inputs (tests/corruption_fx.h; the values stored
 * in data.mdb are test_corruption_values.c's).
 *
 * The sample store's header records the checksum of the whole of data.mdb,
 * which catches any change to it at open. To reach the finer checks behind
 * it (value trailers, sizes), the cases that damage data.mdb record the
 * damaged file's checksum again (reseal) unless they test that check. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corruption_fx.h"
#include "pertload.h"
#include "src/core/dbformat.h"
#include "src/core/sstore.h"
#include "testutil.h"

TestSuite(corruption, .init = cx_init, .fini = cx_fini, .timeout = 120);

/* ------------------------------------------------------------- pristine */

Test(corruption, pristine_database_verifies)
{
    const char *dirs[2] = {C.good, C.bad};
    for (int i = 0; i < 2; i++) {
        pl_db *db;
        pl_err err = {0};
        cr_assert_eq(pl_db_open(dirs[i], &db, &err), 0, "%s", err.msg);
        const pl_db_info *in = pl_db_info_get(db);
        cr_expect_eq(in->n_samples, N_SAMPLES);
        cr_expect_eq(in->n_blocks, 3);
        cr_expect_eq(in->n_types, 2);
        cr_expect_eq(in->has_metabolism, 1);
        cr_expect_str_eq(in->payload_dtype, "<f4");
        cr_expect_eq(in->payload_row_bytes, 4 * PAYLOAD_COLS);
        cr_expect_gt(in->payload_bytes, PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK);
        cr_expect_eq(pl_db_verify(db, &err), 0, "%s: %s", dirs[i], err.msg);
        pl_graph *g = NULL;
        cr_expect_eq(pl_graph_load(db, &g, &err), 0, "%s", err.msg);
        if (g)
            cr_expect_eq(pl_graph_n_lists(g), 5);
        pl_graph_free(g);
        pl_db_close(db);
    }
}

/* ------------------------------------------------------- sample blocks */

struct blk {
    uint64_t offset;
    uint32_t comp_size, n_rows;
};

/* Block `b` of C.bad/samples.pls, walked through the block headers. */
static struct blk block_at(uint32_t b)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    uint64_t off = PL_SSTORE_HEADER;
    for (uint32_t i = 0;; i++) {
        uint32_t h[4];
        read_at(p, off, h, sizeof h);
        cr_assert_eq(h[0], PL_BLOCK_MAGIC, "no block header at %llu", (unsigned long long)off);
        if (i == b)
            return (struct blk){off, h[1], h[3]};
        off += PL_BLOCK_HEADER + h[1];
    }
}

static void expect_rows(pl_db *db, const uint64_t *rows, int n)
{
    for (int i = 0; i < n; i++) {
        pl_sample s;
        pl_err err = {0};
        int rc = pl_db_sample(db, rows[i], &s, &err);
        cr_expect_eq(rc, 0, "row %llu: %s", (unsigned long long)rows[i], err.msg);
        if (rc == 0)
            cr_expect_eq(s.id, C.ids[rows[i]], "row %llu", (unsigned long long)rows[i]);
    }
}

static void expect_row_corrupt(pl_db *db, uint64_t row, const char *want)
{
    pl_sample s;
    pl_err err = {0};
    int rc = pl_db_sample(db, row, &s, &err);
    cr_expect_eq(rc, PL_ECORRUPT, "row %llu: rc %d (%s): %s", (unsigned long long)row, rc,
                 pl_errname(rc), err.msg);
    expect_msg(&err, want);
}

Test(corruption, sample_block_data)
{
    struct blk b0 = block_at(0), b1 = block_at(1);
    cr_assert_eq(b0.offset, PL_SSTORE_HEADER);
    cr_assert_eq(b1.n_rows, PL_BLOCK_ROWS);
    flip(PL_FILE_SAMPLES, b1.offset + PL_BLOCK_HEADER + b1.comp_size / 2);
    pl_db *db = open_bad();
    expect_verify_fails(db, "samples.pls: block 1: checksum mismatch");
    uint64_t good_before[] = {0, 1, PL_BLOCK_ROWS - 1};
    expect_rows(db, good_before, 3);
    expect_row_corrupt(db, PL_BLOCK_ROWS + 7, "block 1");
    uint64_t good_after[] = {2 * PL_BLOCK_ROWS, N_SAMPLES - 1, 5};
    expect_rows(db, good_after, 3);
    expect_row_corrupt(db, 2 * PL_BLOCK_ROWS - 1, "block 1");
    expect_row_corrupt(db, PL_BLOCK_ROWS, "block 1");
    pl_db_close(db);
}

Test(corruption, sample_block_first_byte)
{
    struct blk b0 = block_at(0);
    flip(PL_FILE_SAMPLES, b0.offset + PL_BLOCK_HEADER);
    pl_db *db = open_bad();
    expect_verify_fails(db, "block 0");
    expect_row_corrupt(db, 3, "block 0");
    uint64_t ok[] = {PL_BLOCK_ROWS, N_SAMPLES - 1};
    expect_rows(db, ok, 2);
    pl_db_close(db);
}

Test(corruption, sample_block_header)
{
    struct blk b2 = block_at(2);
    flip(PL_FILE_SAMPLES, b2.offset); /* the block magic */
    pl_db *db = open_bad();
    expect_verify_fails(db, "samples.pls: block 2: header does not match the index");
    expect_row_corrupt(db, N_SAMPLES - 1, "block 2");
    uint64_t ok[] = {0, PL_BLOCK_ROWS};
    expect_rows(db, ok, 2);
    pl_db_close(db);
}

/* -------------------------------------------------------------- payload */

Test(corruption, payload_data)
{
    uint64_t off = PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK + 123;
    flip(PL_FILE_PAYLOAD, off);
    pl_db *db = open_bad();
    char want[128];
    snprintf(want, sizeof want, "chunk 1 (bytes %llu..",
             (unsigned long long)(PL_PAYLOAD_ALIGN + PL_PAYLOAD_CHUNK));
    expect_verify_fails(db, want);
    pl_db_close(db);
}

Test(corruption, payload_first_chunk)
{
    flip(PL_FILE_PAYLOAD, PL_PAYLOAD_ALIGN);
    pl_db *db = open_bad();
    expect_verify_fails(db, "payload.npy: chunk 0 (bytes 4096..");
    pl_db_close(db);
}

/* Caught at open (tests/test_payload_check.c has the cases). */
Test(corruption, payload_truncated)
{
    char p[4352], want[4600];
    bad_path(p, sizeof p, PL_FILE_PAYLOAD);
    uint64_t size = file_size(p);
    truncate_to(PL_FILE_PAYLOAD, size - 100);
    snprintf(want, sizeof want, "%s: %llu bytes, the database expects %llu (truncated or "
             "replaced)", p, (unsigned long long)size - 100, (unsigned long long)size);
    expect_open_fails(PL_ECORRUPT, want);
}

/* ------------------------------------------------------- sample store */

Test(corruption, samples_magic)
{
    flip(PL_FILE_SAMPLES, 0);
    expect_open_fails(PL_ECORRUPT, "samples.pls: not a pertload sample store (bad magic)");
}

/* Without the reseal: the whole-file check at open names data.mdb. */
Test(corruption, lmdb_whole_file_checksum)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    uint64_t offs[3] = {0, 4096 + 100, file_size(p) - 1}; /* meta page, a page, the end */
    for (int i = 0; i < 3; i++) {
        pl_test_xor_byte(p, offs[i], 0x01);
        expect_open_fails(PL_ECORRUPT, "data.mdb: checksum mismatch");
        pl_test_xor_byte(p, offs[i], 0x01);
    }
    pl_db *db = open_bad();
    pl_db_close(db);
}

Test(corruption, lmdb_size_recorded)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    uint64_t size = file_size(p);
    cr_assert_eq(truncate(p, (off_t)(size + 4096)), 0, "%s: %s", p, strerror(errno));
    char want[128];
    snprintf(want, sizeof want, "data.mdb: %llu bytes, the database expects %llu",
             (unsigned long long)(size + 4096), (unsigned long long)size);
    expect_open_fails(PL_ECORRUPT, want);
}

Test(corruption, samples_header_lmdb_checksum)
{
    flip(PL_FILE_SAMPLES, 48); /* the recorded checksum of data.mdb */
    expect_open_fails(PL_ECORRUPT, "samples.pls: header checksum mismatch");
}

Test(corruption, samples_header_version)
{
    flip_mask(PL_FILE_SAMPLES, 8, 0x04);
    char want[128];
    snprintf(want, sizeof want, "samples.pls: format version %u, this pertload reads version %u",
             PL_FORMAT_VERSION ^ 0x04, PL_FORMAT_VERSION);
    expect_open_fails(PL_EFORMAT, want);
}

Test(corruption, samples_header_counts)
{
    flip(PL_FILE_SAMPLES, 16); /* n_samples */
    expect_open_fails(PL_ECORRUPT, "samples.pls: header checksum mismatch");
}

Test(corruption, samples_truncated)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    truncate_to(PL_FILE_SAMPLES, file_size(p) - 1);
    expect_open_fails(PL_ECORRUPT, "truncated or replaced");
}

Test(corruption, samples_truncated_to_header)
{
    truncate_to(PL_FILE_SAMPLES, 10);
    expect_open_fails(PL_ECORRUPT, "samples.pls");
}

Test(corruption, samples_missing)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_SAMPLES);
    cr_assert_eq(unlink(p), 0);
    expect_open_fails(-ENOENT, "samples.pls");
}

/* ---------------------------------------------------- truncated LMDB */

/* Open (and verify, when open succeeds) C.bad in a child, so that a crash is
 * reported as such; the child sends back the return code and message. */
static void expect_open_or_verify_fails_in_child(void)
{
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        pl_db *db;
        pl_err err;
        memset(&err, 0, sizeof err);
        int rc = pl_db_open(C.bad, &db, &err);
        if (rc == 0) {
            rc = pl_db_verify(db, &err);
            pl_db_close(db);
            if (rc == 0)
                rc = 1; /* opened and verified: the damage went unnoticed */
        }
        pl_test_send(fd, &rc, sizeof rc);
        pl_test_send(fd, &err, sizeof err);
        _exit(0);
    }
    int rc = 0;
    pl_err err;
    memset(&err, 0, sizeof err);
    size_t n1 = pl_test_recv(fd, &rc, sizeof rc);
    size_t n2 = n1 == sizeof rc ? pl_test_recv(fd, &err, sizeof err) : 0;
    close(fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(!WIFSIGNALED(status), "opening the damaged database crashed: signal %d (%s)",
              WTERMSIG(status), strsignal(WTERMSIG(status)));
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    cr_assert(n1 == sizeof rc && n2 == sizeof err, "short result from the child");
    cr_assert_neq(rc, 1, "the truncated database opened and verified");
    cr_assert_eq(rc, PL_ECORRUPT, "rc %d (%s), expected PL_ECORRUPT: %s", rc, pl_errname(rc),
                 err.msg);
    cr_expect_neq(err.msg[0], '\0', "no message");
    cr_expect(strstr(err.msg, "data.mdb") != NULL || strstr(err.msg, C.bad) != NULL,
              "message '%s' names neither the file nor the database", err.msg);
}

Test(corruption, lmdb_truncated_half)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    truncate_to(PL_FILE_LMDB, file_size(p) / 2 / 4096 * 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_truncated_to_meta_pages)
{
    truncate_to(PL_FILE_LMDB, 2 * 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_truncated_last_page)
{
    char p[4352];
    bad_path(p, sizeof p, PL_FILE_LMDB);
    truncate_to(PL_FILE_LMDB, file_size(p) - 4096);
    expect_open_or_verify_fails_in_child();
}

Test(corruption, lmdb_empty)
{
    truncate_to(PL_FILE_LMDB, 0);
    expect_open_or_verify_fails_in_child();
}
