/* pl_build() error paths beyond the input contents (test_build_errors.c):
 * unreadable inputs, an existing or missing output, metabolism and edge-type
 * options, the CLI's report, and write failures (file size limit, full
 * disk): each names its cause and leaves nothing behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "preprocess/tmpdir.h"
#include "src/core/dbformat.h"
#include "build_fx.h"
#include "testutil.h"

TestSuite(build_errors, .init = fx_init, .fini = fx_fini);

/* ------------------------------------------------- unreadable inputs */

Test(build_errors, input_missing)
{
    F.o.genes = path_in(F.dir, "no-such-genes.txt");
    expect_fail(-ENOENT, F.o.genes, 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_missing_npy)
{
    F.files[0] = path_in(F.dir, "absent.npy");
    expect_fail(-ENOENT, F.files[0], 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_missing_payload)
{
    F.o.payload = path_in(F.dir, "absent-payload.npy");
    expect_fail(-ENOENT, F.o.payload, 0, 0, "cannot open: No such file or directory");
}

Test(build_errors, input_is_directory)
{
    char *d = path_in(F.dir, "samples-dir");
    cr_assert_eq(mkdir(d, 0755), 0);
    F.o.samples = d;
    expect_fail(-EISDIR, d, 0, 0, "Is a directory");
}

Test(build_errors, input_npy_is_directory)
{
    char *d = path_in(F.dir, "payload-dir.npy");
    cr_assert_eq(mkdir(d, 0755), 0);
    F.o.payload = d;
    expect_fail(-EISDIR, d, 0, 0, "Is a directory");
}

/* A character device is not a regular file: the error must say so rather
 * than report whatever errno an earlier call left behind. */
Test(build_errors, input_not_regular_file)
{
    F.o.genes = "/dev/null";
    expect_fail(-EINVAL, "/dev/null", 0, 0, "");
    cr_expect(strstr(F.err.msg, strerror(ENOENT)) == NULL, "stale errno in '%s'", F.err.msg);
}

/* ------------------------------------------------------------- output */

Test(build_errors, output_exists_directory)
{
    cr_assert_eq(mkdir(F.out, 0755), 0);
    char *keep = own(pl_test_write(F.out, "keep.txt", "precious\n"));
    int rc = build();
    cr_assert_eq(rc, PL_EEXIST, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, F.out) != NULL, "%s", F.err.msg);
    cr_expect(strstr(F.err.msg, "already exists") != NULL, "%s", F.err.msg);
    FILE *f = fopen(keep, "r");
    cr_assert_not_null(f);
    char buf[32] = {0};
    cr_expect_eq(fread(buf, 1, sizeof buf - 1, f), 9);
    fclose(f);
    cr_expect_str_eq(buf, "precious\n");
    DIR *d = opendir(F.out);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    cr_expect_eq(n, 1, "the existing output directory was modified");
    DIR *p = opendir(F.dir);
    for (struct dirent *e; (e = readdir(p));)
        cr_expect(strncmp(e->d_name, "db.tmp-", 7) != 0, "%s left behind", e->d_name);
    closedir(p);
}

Test(build_errors, output_exists_file)
{
    put("db", "not a database\n");
    int rc = build();
    cr_assert_eq(rc, PL_EEXIST, "rc %d: %s", rc, F.err.msg);
    struct stat st;
    cr_assert_eq(stat(F.out, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
    cr_expect_eq(st.st_size, 15);
}

Test(build_errors, output_parent_missing)
{
    F.o.out = path_in(F.dir, "missing-parent/db");
    int rc = build();
    cr_assert_eq(rc, -ENOENT, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "missing-parent/db.tmp-") != NULL, "%s", F.err.msg);
}

/* ---------------------------------------------------------- metabolism */

Test(build_errors, gpr_reaction_not_in_list)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\n");
    F.o.gpr = put("gpr.tsv", "g1\tr1\ng2\tr9\n");
    char reason[4300];
    snprintf(reason, sizeof reason, "reaction 'r9' is not in the reaction list %s",
             F.o.reactions);
    expect_fail(PL_EPARSE, F.o.gpr, 2, 4, reason);
}

Test(build_errors, rmr_reaction_not_in_list)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\n");
    F.o.gpr = put("gpr.tsv", "g1\tr1\n");
    F.o.rmr = put("rmr.tsv", "r1\tm1\t1\nrX\tm2\t-1\n");
    expect_fail(PL_EPARSE, F.o.rmr, 2, 1, "reaction 'rX' is not in the reaction list");
}

Test(build_errors, reactions_duplicate)
{
    F.o.reactions = put("reactions.txt", "r1\nr2\nr1\n");
    expect_fail(PL_EPARSE, F.o.reactions, 3, 1, "duplicate reaction name 'r1'");
}

/* -------------------------------------------------------- edge types */

Test(build_errors, type_name_bad_characters)
{
    F.names[0] = "phys ical";
    expect_fail(PL_EUSAGE, "--edges", 0, 0, "may only hold letters, digits");
}

Test(build_errors, type_name_empty)
{
    F.names[0] = "";
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "empty or overlong name") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, type_duplicate)
{
    F.names[1] = "phys";
    F.files[1] = F.edges;
    F.o.n_types = 2;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "edge type 'phys' given twice") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, type_count_out_of_range)
{
    F.o.n_types = 0;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "0 edge types given") != NULL, "%s", F.err.msg);
    expect_clean();
    char names[PL_MAX_TYPES + 1][8];
    for (int t = 0; t <= PL_MAX_TYPES; t++) {
        snprintf(names[t], sizeof names[t], "t%d", t);
        F.names[t] = names[t];
        F.files[t] = F.edges;
    }
    F.o.n_types = PL_MAX_TYPES + 1;
    rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "65 edge types given") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, required_option_missing)
{
    F.o.samples = NULL;
    int rc = build();
    cr_assert_eq(rc, PL_EUSAGE, "rc %d: %s", rc, F.err.msg);
    cr_expect(strstr(F.err.msg, "required") != NULL, "%s", F.err.msg);
    expect_clean();
}

Test(build_errors, min_score_without_score_column)
{
    F.files[0] = put("phys.tsv", "g1\tg2\t0.9\ng2\tg3\n");
    F.min_score[0] = 0.5;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[0], 2, 6,
                "no score column, but a minimum score is set for type 'phys'");
}

Test(build_errors, min_score_on_npy_edges)
{
    int32_t e[2][2] = {{0, 1}, {1, 2}};
    use_npy_edges("<i4", "False", "(2, 2)", e, sizeof e);
    F.min_score[0] = 0.5;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[0], 0, 0,
                "a .npy edge_index has no scores; --min-score cannot apply to type 'phys'");
}

Test(build_errors, second_type_error_names_its_file)
{
    F.names[1] = "reg";
    F.files[1] = put("reg.tsv", "g1 g2\ng3 g4\n\ng4 g5\n");
    F.o.n_types = 2;
    F.min_score[0] = NAN;
    F.min_score[1] = NAN;
    F.o.min_score = F.min_score;
    expect_fail(PL_EPARSE, F.files[1], 4, 4, "unknown gene 'g5'");
}

/* ------------------------------------------------------------------ CLI */

Test(build_errors, cli_reports_position_and_exits_1)
{
    const char *bin = getenv("PERTLOAD_BIN");
    cr_assert(bin && *bin, "PERTLOAD_BIN is not set");
    F.o.genes = put("genes.txt", "g1\ng2\ng3\ng2\n");
    char *errpath = path_in(F.dir, "stderr.txt");
    char edges[4200];
    snprintf(edges, sizeof edges, "phys=%s", F.edges);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0 || dup2(fd, 2) < 0 || dup2(null, 1) < 0)
            _exit(126);
        execl(bin, "pertload", "build", "-o", F.out, "--genes", F.o.genes, "--edges", edges,
              "--samples", F.samples, "--quiet", (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "pertload did not exit normally (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 1, "exit status %d", WEXITSTATUS(status));
    FILE *f = fopen(errpath, "r");
    cr_assert_not_null(f);
    char buf[8192] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_assert_gt(n, 0, "nothing on stderr");
    char want[4300];
    snprintf(want, sizeof want, "%s:4:1: duplicate gene name 'g2'", F.o.genes);
    cr_expect(strstr(buf, want) != NULL, "stderr '%s' lacks '%s'", buf, want);
    expect_clean();
}

/* -------------------------------------------------------- write failures */

/* Samples whose sample store is far larger than `limit` bytes: 8 label
 * columns of incompressible floats. */
static void big_samples(int rows)
{
    size_t cap = (size_t)rows * 160 + 256, len = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    len += (size_t)snprintf(t, cap, "genes\tid\tl0\tl1\tl2\tl3\tl4\tl5\tl6\tl7\n");
    uint64_t s = 42;
    for (int r = 0; r < rows; r++) {
        len += (size_t)snprintf(t + len, cap - len, "g%d;g%d\t%d", 1 + r % 4,
                                1 + (r / 4) % 4, r);
        for (int l = 0; l < 8; l++)
            len += (size_t)snprintf(t + len, cap - len, "\t%.8g",
                                    (double)pl_test_rand(&s) / 18446744073709551616.0);
        t[len++] = '\n';
    }
    t[len] = '\0';
    F.o.samples = put("big-samples.tsv", t);
    free(t);
}

typedef struct child_result {
    int stage; /* 0: could not set up (errno in `setup_errno`), 1: built */
    int setup_errno;
    char setup_what[64];
    int rc;
    pl_err err;
    int out_exists;
    char leftover[256];
} child_result;

static void recv_result(int fd, pid_t pid, child_result *r)
{
    size_t got = pl_test_recv(fd, r, sizeof *r);
    close(fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the building child died (status 0x%x)", status);
    cr_assert_eq(got, sizeof *r, "short result from the child");
}

/* First entry of `dir` other than . and .., or "" when empty. */
static void first_entry(const char *dir, char *buf, size_t cap)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(buf, cap, "(cannot list %s: %s)", dir, strerror(errno));
        return;
    }
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(buf, cap, "%s", e->d_name);
            break;
        }
    closedir(d);
}

Test(build_errors, write_failure_file_size_limit, .timeout = 120)
{
    big_samples(4000);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) < 0) {
            r.setup_errno = errno;
            snprintf(r.setup_what, sizeof r.setup_what, "setrlimit");
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    cr_assert_eq(r.stage, 1, "%s: %s", r.setup_what, strerror(r.setup_errno));
    cr_assert_eq(r.rc, -EFBIG, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    cr_expect_eq(r.err.code, -EFBIG);
    expect_tmp_msg(r.err.msg, F.out, PL_FILE_SAMPLES ": write failed");
    expect_clean();
}

/* A real full file system: a 256 KiB tmpfs in a private mount namespace. */
Test(build_errors, write_failure_no_space, .timeout = 120)
{
    big_samples(16000);
    char *mnt = path_in(F.dir, "small-fs");
    cr_assert_eq(mkdir(mnt, 0755), 0);
    char *out = path_in(mnt, "db");
    F.o.out = out;
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        const char *what;
        r.setup_errno = pl_test_small_fs(mnt, "256k", &what);
        if (r.setup_errno) {
            snprintf(r.setup_what, sizeof r.setup_what, "%s", what);
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
            struct stat st;
            r.out_exists = lstat(out, &st) == 0;
            first_entry(mnt, r.leftover, sizeof r.leftover);
            umount2(mnt, MNT_DETACH);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    if (r.stage == 0) {
        cr_assert(r.setup_errno == EPERM || r.setup_errno == EACCES,
                  "%s failed: %s", r.setup_what, strerror(r.setup_errno));
        cr_skip_test("cannot mount a small tmpfs here (%s: %s)", r.setup_what,
                     strerror(r.setup_errno));
    }
    cr_assert_eq(r.rc, -ENOSPC, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    cr_expect_eq(r.err.code, -ENOSPC);
    char tail[256];
    snprintf(tail, sizeof tail, "%s: write failed: %s", PL_FILE_SAMPLES, strerror(ENOSPC));
    expect_tmp_msg(r.err.msg, out, tail);
    cr_expect(!r.out_exists, "%s exists after the failed build", out);
    cr_expect_str_eq(r.leftover, "", "'%s' left on the full file system", r.leftover);
}

/* An input the builder may not read. Permissions do not bind root, so as
 * root the build runs in a child that has dropped to an unprivileged user. */
Test(build_errors, input_permission_denied)
{
    F.o.genes = put("genes-locked.txt", "g1\ng2\ng3\ng4\n");
    cr_assert_eq(chmod(F.o.genes, 0), 0);
    if (geteuid() != 0) {
        expect_fail(-EACCES, F.o.genes, 0, 0, "cannot open: Permission denied");
        return;
    }
    cr_assert_eq(chmod(F.dir, 0777), 0);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result r;
        memset(&r, 0, sizeof r);
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
            r.setup_errno = errno;
            snprintf(r.setup_what, sizeof r.setup_what, "dropping privileges");
        } else {
            r.stage = 1;
            r.rc = pl_build(&F.o, NULL, &r.err);
        }
        pl_test_send(fd, &r, sizeof r);
        _exit(0);
    }
    child_result r;
    recv_result(fd, pid, &r);
    cr_assert_eq(r.stage, 1, "%s: %s", r.setup_what, strerror(r.setup_errno));
    cr_assert_eq(r.rc, -EACCES, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    char want[4300];
    snprintf(want, sizeof want, "%s: cannot open: %s", F.o.genes, strerror(EACCES));
    cr_expect(strstr(r.err.msg, want) != NULL, "message '%s' lacks '%s'", r.err.msg, want);
    expect_clean();
}

/* ---------------------------------------------------- node features */

static const char *feat_types[1] = {"gene"};
static const char *feat_files[1];

/* The fixture's four genes given the features `path` (of node type `type`). */
static void use_features(const char *type, const char *path)
{
    feat_types[0] = type;
    feat_files[0] = path;
    F.o.n_node_features = 1;
    F.o.feature_types = feat_types;
    F.o.feature_files = feat_files;
}

Test(build_errors, node_features_stored_and_read)
{
    float m[4][3];
    for (int i = 0; i < 12; i++)
        m[i / 3][i % 3] = (float)i * 0.5f - 1.0f;
    use_features("gene", put_npy("emb.npy", "<f4", "False", "(4, 3)", m, sizeof m));
    expect_ok();
    pl_db *db;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(F.out, &db, &err), 0, "%s", err.msg);
    uint64_t rows, cols;
    char dtype[4];
    const void *data;
    cr_assert_eq(pl_db_features(db, "gene", &rows, &cols, dtype, &data, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(rows, 4);
    cr_assert_eq(cols, 3);
    cr_assert_str_eq(dtype, "<f4");
    cr_assert_eq((uintptr_t)data % 4, 0, "not aligned to the element size");
    cr_assert_eq(memcmp(data, m, sizeof m), 0, "the stored matrix differs from the .npy");
    cr_assert_eq(pl_db_features(db, "reaction", &rows, &cols, dtype, &data, &err), -ENOENT);
    cr_assert(strstr(err.msg, "no features stored for node type 'reaction'"), "%s", err.msg);
    cr_assert_eq(pl_db_features(db, "cell", &rows, &cols, dtype, &data, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "'cell' is not a node type"), "%s", err.msg);
    cr_assert_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    pl_db_close(db);
}

Test(build_errors, node_features_refused)
{
    float m[8][3] = {{0}}; /* 96 bytes: the largest matrix written below */
    use_features("gene", put_npy("f8.npy", "<f8", "False", "(4, 3)", m, 96));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "dtype '<f8'; float32 ('<f4') or float16");
    use_features("gene", put_npy("rows.npy", "<f4", "False", "(5, 3)", m, 60));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "5 rows; the database has 4 gene nodes");
    use_features("gene", put_npy("rank.npy", "<f4", "False", "(4,)", m, 16));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "1 dimension; a matrix [4, F] expected");
    use_features("gene", put_npy("short.npy", "<f2", "False", "(4, 3)", m, 23));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "does not match the shape in its header");
    use_features("gene", put_npy("fortran.npy", "<f4", "True", "(4, 3)", m, 48));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "Fortran-ordered arrays are not supported");
    use_features("gene", put_bin("magic.npy", "\x93NUMPZ\x01\x00", 8));
    expect_fail(PL_EPARSE, feat_files[0], 0, 0, "not a .npy file (bad magic)");
    use_features("reaction", put_npy("r.npy", "<f4", "False", "(4, 3)", m, 48));
    expect_fail(PL_EUSAGE, feat_files[0], 0, 0, "the database has no reaction nodes (it has "
                "gene)");
}
