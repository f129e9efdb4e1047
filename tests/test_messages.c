/* Messages that keep their reason:
 *  - numbers on the command line: digits only, or a usage error naming the
 *    option (" -1" was read as 2^64 - 1);
 *  - long messages: pl_err holds a PATH_MAX path and its reason, and a
 *    message longer still loses its middle, never its end;
 *  - a full file system or the file size limit at LMDB's commit is said so,
 *    not "Input/output error". */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
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
#include "src/core/dbformat.h"
#include "src/core/error.h"
#include "testutil.h"

/* ------------------------------------------------------- CLI numbers */

TestSuite(cli_numbers, .init = pl_test_dir_init, .fini = pl_test_dir_fini, .timeout = 60);

/* `pertload ARGS...` exits with status 2 and says exactly `want`. */
static void expect_usage_error(char *const argv[], const char *want)
{
    char err[8192];
    int status = pl_test_run_cli(argv, err, sizeof err);
    cr_expect_eq(status, 2, "%s %s: exit status %d; stderr: %s", argv[1], argv[2], status,
                 err);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "stderr '%s' does not start with '%s'",
              err, want);
}

#define NOT_UINT "is not a non-negative integer (decimal digits only, at most " \
                 "18446744073709551615)"

Test(cli_numbers, masks_row_refuses_blanks_and_signs)
{
    static const char *const bad[] = {" -1", "-1", "+5", " 5", "\t7", "5 ", "0x10", "1e3",
                                      "18446744073709551616", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[256];
        if (bad[i][0])
            snprintf(want, sizeof want, "pertload masks: --row: '%s' " NOT_UINT, bad[i]);
        else
            snprintf(want, sizeof want, "pertload masks: --row needs a non-negative integer");
        char *argv[] = {"pertload", "masks", dir, "--row", (char *)bad[i], NULL};
        expect_usage_error(argv, want);
    }
}

/* A good number still passes the parser: the failure is then the database's. */
Test(cli_numbers, masks_row_accepts_digits)
{
    char err[8192];
    char *argv[] = {"pertload", "masks", dir, "--row", "18446744073709551615", NULL};
    int status = pl_test_run_cli(argv, err, sizeof err);
    cr_expect_eq(status, 1, "exit status %d; stderr: %s", status, err);
    char want[4300];
    snprintf(want, sizeof want, "pertload masks: %s/samples.pls: ", dir);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "stderr '%s'", err);
}

Test(cli_numbers, other_commands)
{
    char *serve[] = {"pertload", "serve", dir, "--ring", "x", "--batch-size", " 64", NULL};
    expect_usage_error(serve, "pertload serve: --batch-size: ' 64' " NOT_UINT);
    char *seed[] = {"pertload", "serve", dir, "--ring", "x", "--seed", "-1", NULL};
    expect_usage_error(seed, "pertload serve: --seed: '-1' " NOT_UINT);
    char *synth[] = {"pertload", "synth", dir, "--samples", "10", "--genes", " 10", NULL};
    expect_usage_error(synth, "pertload synth: --genes: ' 10' " NOT_UINT);
    char *bench[] = {"pertload", "bench", "masks", dir, "--samples", " -5", NULL};
    expect_usage_error(bench, "pertload bench masks: --samples: ' -5' " NOT_UINT);
    char *bpay[] = {"pertload", "bench", "payload", dir, "--threads", "2x", NULL};
    expect_usage_error(bpay, "pertload bench payload: --threads: '2x' " NOT_UINT);
    char *bgpu[] = {"pertload", "bench", "gpu", dir, "--batches", "+3", NULL};
    expect_usage_error(bgpu, "pertload bench gpu: --batches: '+3' " NOT_UINT);
    char *scale[] = {"pertload", "synth", dir, "--samples", "10", "--scale", " 0.5", NULL};
    expect_usage_error(scale, "pertload synth: --scale: ' 0.5' is not a number >= 0");
    char *top[] = {"pertload", "top", "--once", "--interval", " 1", NULL};
    expect_usage_error(top, "pertload top: --interval: ' 1' is not a number of seconds");
    char *score[] = {"pertload", "build", "-o", dir, "--genes", "g", "--edges", "p=e",
                     "--samples", "s", "--min-score", "p= 0.5", NULL};
    expect_usage_error(score, "pertload build: --min-score p= 0.5: ' 0.5' is not a number");
}

/* ----------------------------------------------------- long messages */

TestSuite(long_messages, .init = pl_test_dir_init, .fini = pl_test_dir_fini, .timeout = 60);

/* A directory under the test directory whose path is about `len` bytes
 * (nested 200-byte names: each stays under NAME_MAX). */
static char *deep_dir(size_t len)
{
    char *p = strdup(dir);
    char name[201];
    memset(name, 'd', 200);
    name[200] = '\0';
    while (strlen(p) + 201 < len) {
        char *q = pl_test_path(p, name);
        free(p);
        p = q;
        cr_assert_eq(mkdir(p, 0755), 0, "%s", strerror(errno));
    }
    return p;
}

/* A reason after a path of nearly PATH_MAX bytes arrives whole. */
Test(long_messages, path_max_path_keeps_reason)
{
    char *d = deep_dir(PATH_MAX - 40);
    char *genes = pl_test_write(d, "genes.txt", "g1\ng2\ng3\ng2\n");
    cr_assert_gt(strlen(genes), 3900);
    char *edges = pl_test_write(dir, "e.tsv", "g1\tg2\n");
    char *samples = pl_test_write(dir, "s.tsv", "genes\ng1\n");
    char *out = pl_test_path(dir, "db");
    const char *names[] = {"phys"}, *files[] = {edges};
    pl_build_opts o = {.out = out, .genes = genes, .n_types = 1, .type_names = names,
                       .type_files = files, .samples = samples};
    pl_err err = {0};
    cr_assert_eq(pl_build(&o, NULL, &err), PL_EPARSE, "%s", err.msg);
    char want[PATH_MAX + 100];
    snprintf(want, sizeof want, "%s:4:1: duplicate gene name 'g2'", genes);
    cr_expect_str_eq(err.msg, want);
    free(d);
    free(genes);
    free(edges);
    free(samples);
    free(out);
}

/* Valid UTF-8 in, valid UTF-8 out. */
static int utf8_valid(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        int n = *u < 0x80 ? 0 : (*u & 0xE0) == 0xC0 ? 1 : (*u & 0xF0) == 0xE0 ? 2
                : (*u & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0)
            return 0;
        for (int k = 1; k <= n; k++)
            if ((u[k] & 0xC0) != 0x80)
                return 0;
        u += n + 1;
    }
    return 1;
}

/* Longer than pl_err.msg: the middle goes, the start and the reason stay,
 * cut between characters (three-byte ones, at each alignment). */
static void overlong_case(size_t shift)
{
    size_t n = 1 + shift + 3 * PL_ERR_MSG_MAX;
    char *path = malloc(n + 1);
    cr_assert_not_null(path);
    memset(path, '/', 1 + shift);
    for (size_t i = 1 + shift; i < n; i += 3) /* "€" repeated */
        memcpy(path + i, "\xE2\x82\xAC", 3);
    path[n] = '\0';
    cr_assert(utf8_valid(path));
    pl_err err = {0};
    cr_assert_eq(pl__err(&err, PL_EPARSE, "%s:7:3: the reason is here", path), PL_EPARSE);
    size_t len = strlen(err.msg);
    cr_expect_lt(len, sizeof err.msg);
    cr_expect_gt(len, sizeof err.msg - 8, "the room is used: %zu bytes", len);
    cr_expect(strncmp(err.msg, path, 100) == 0, "the start is not kept");
    const char *tail = ":7:3: the reason is here";
    cr_expect_str_eq(err.msg + len - strlen(tail), tail);
    cr_expect(strstr(err.msg, "...") != NULL, "no '...' in place of the middle");
    cr_expect(utf8_valid(err.msg), "shift %zu: a character was cut in two", shift);
    /* pl__err_prefix() too: a long prefix before a message. */
    pl__err(&err, PL_ECORRUPT, "block 3: checksum mismatch");
    cr_assert_eq(pl__err_prefix(&err, "%s", path), PL_ECORRUPT);
    len = strlen(err.msg);
    cr_expect_lt(len, sizeof err.msg);
    tail = ": block 3: checksum mismatch";
    cr_expect_str_eq(err.msg + len - strlen(tail), tail);
    cr_expect(utf8_valid(err.msg), "shift %zu: a character was cut in two", shift);
    free(path);
}

Test(long_messages, overlong_message_loses_its_middle)
{
    for (size_t shift = 0; shift < 3; shift++)
        overlong_case(shift);
}

/* A short message is untouched by the prefix either. */
Test(long_messages, short_prefix_unchanged)
{
    pl_err err = {0};
    pl__err(&err, -ENOENT, "b: gone");
    cr_expect_eq(pl__err_prefix(&err, "a%d", 1), -ENOENT);
    cr_expect_str_eq(err.msg, "a1: b: gone");
    cr_expect_eq(err.code, -ENOENT);
}

/* The ring's failure message (1,024 bytes in shared memory) keeps its end
 * too: a consumer learns why the producer failed. */
Test(long_messages, ring_failure_keeps_reason)
{
    char name[64];
    snprintf(name, sizeof name, "msg-%d", (int)getpid());
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    char msg[3000];
    memset(msg, 'p', sizeof msg);
    const char *reason = ": row 7 (offset 4320): the file ends at byte 4000";
    memcpy(msg + sizeof msg - strlen(reason) - 1, reason, strlen(reason) + 1);
    pl_ring_finish(r, 0, msg);
    pl_ring *c;
    cr_assert_eq(pl_ring_attach(name, 1000, &c, &err), 0, "%s", err.msg);
    const void *slot;
    int rc = pl_ring_next(c, 0, &slot, &err);
    cr_expect_eq(rc, PL_EPEER, "rc %d: %s", rc, err.msg);
    size_t len = strlen(err.msg);
    cr_expect_gt(len, strlen(reason));
    cr_expect_str_eq(err.msg + len - strlen(reason), reason);
    cr_expect(strstr(err.msg, "...") != NULL);
    pl_ring_detach(c);
    pl_ring_destroy(r);
}

/* ------------------------------------------------ commit to a full disk */

TestSuite(commit_errors, .init = pl_test_dir_init, .fini = pl_test_dir_fini, .timeout = 120);

typedef struct child_result {
    int setup_errno;
    char setup_what[64];
    int rc;
    pl_err err;
    int left; /* entries left in the output's directory */
} child_result;

/* Inputs whose graph (data.mdb, some 500 KB) is far larger than their sample
 * store (a few hundred bytes): filling up shows at LMDB's commit. */
static void big_graph_inputs(pl_build_opts *o, const char **names, const char **files)
{
    pl_test_text t = {0};
    for (int g = 0; g < 2000; g++)
        pl_test_tprintf(&t, "g%d\n", g);
    o->genes = pl_test_put_text(dir, "genes.txt", &t);
    uint64_t s = 42;
    for (int e = 0; e < 60000; e++)
        pl_test_tprintf(&t, "g%llu\tg%llu\n", (unsigned long long)pl_test_below(&s, 2000),
                        (unsigned long long)pl_test_below(&s, 2000));
    files[0] = pl_test_put_text(dir, "edges.tsv", &t);
    names[0] = "phys";
    pl_test_tprintf(&t, "genes\tfit\n");
    for (int r = 0; r < 20; r++)
        pl_test_tprintf(&t, "g%d\t%d\n", r, r);
    o->samples = pl_test_put_text(dir, "samples.tsv", &t);
    o->n_types = 1;
    o->type_names = names;
    o->type_files = files;
}

static int count_entries(const char *d)
{
    int n = 0;
    DIR *dh = opendir(d);
    if (!dh)
        return -1;
    for (struct dirent *e; (e = readdir(dh));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dh);
    return n;
}

static void free_inputs(pl_build_opts *o, const char **files)
{
    free((char *)o->genes);
    free((char *)o->samples);
    free((char *)files[0]);
}

/* The build, in a child that first mounts a 256 KiB tmpfs on `out_dir`
 * (use_tmpfs) or limits the size of files to 64 KiB; `*child` its pid. */
static void build_in_child(pl_build_opts *o, const char *out_dir, int use_tmpfs,
                           child_result *r, pid_t *child)
{
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        child_result c;
        memset(&c, 0, sizeof c);
        const char *what = "";
        if (use_tmpfs) {
            c.setup_errno = pl_test_small_fs(out_dir, "256k", &what);
        } else {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {64 * 1024, 64 * 1024};
            if (setrlimit(RLIMIT_FSIZE, &rl) < 0) {
                c.setup_errno = errno;
                what = "setrlimit";
            }
        }
        snprintf(c.setup_what, sizeof c.setup_what, "%s", what);
        if (!c.setup_errno) {
            c.rc = pl_build(o, NULL, &c.err);
            c.left = count_entries(out_dir);
            if (use_tmpfs)
                umount2(out_dir, MNT_DETACH);
        }
        pl_test_send(fd, &c, sizeof c);
        _exit(0);
    }
    size_t got = pl_test_recv(fd, r, sizeof *r);
    close(fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
    cr_assert_eq(got, sizeof *r);
    *child = pid;
}

Test(commit_errors, full_file_system_at_commit)
{
    pl_build_opts o = {0};
    const char *names[1], *files[1];
    big_graph_inputs(&o, names, files);
    char *mnt = pl_test_path(dir, "small-fs");
    cr_assert_eq(mkdir(mnt, 0755), 0);
    char *out = pl_test_path(mnt, "db");
    o.out = out;
    child_result r;
    pid_t pid;
    build_in_child(&o, mnt, 1, &r, &pid);
    cr_assert_eq(r.setup_errno, 0, "%s: %s (a tmpfs is needed; run as root)", r.setup_what,
                 strerror(r.setup_errno));
    cr_assert_eq(r.rc, -ENOSPC, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    cr_expect_eq(r.err.code, -ENOSPC);
    char want[256];
    snprintf(want, sizeof want, "%s: commit: no space left on device (", PL_FILE_LMDB);
    const char *tail = pl_test_tmp_tail(r.err.msg, out);
    cr_expect(tail && r.err.msg == strstr(r.err.msg, out) &&
              strncmp(tail, want, strlen(want)) == 0,
              "message '%s', expected '%s.tmp-<16 hex digits>/%s...'", r.err.msg, out, want);
    cr_expect(strstr(r.err.msg, " bytes free)") != NULL, "%s", r.err.msg);
    cr_expect_eq(r.left, 0, "%d entries left on the full file system", r.left);
    free_inputs(&o, files);
    free(out);
    free(mnt);
}

Test(commit_errors, file_size_limit_at_commit)
{
    pl_build_opts o = {0};
    const char *names[1], *files[1];
    big_graph_inputs(&o, names, files);
    char *out = pl_test_path(dir, "db");
    o.out = out;
    child_result r;
    pid_t pid;
    build_in_child(&o, dir, 0, &r, &pid);
    cr_assert_eq(r.setup_errno, 0, "%s: %s", r.setup_what, strerror(r.setup_errno));
    cr_assert_eq(r.rc, -EFBIG, "rc %d (%s): %s", r.rc, pl_errname(r.rc), r.err.msg);
    char want[256];
    snprintf(want, sizeof want, "%s: commit: %s: the file size limit (ulimit -f) "
             "is 65536 bytes", PL_FILE_LMDB, strerror(EFBIG));
    const char *tail = pl_test_tmp_tail(r.err.msg, out);
    cr_expect(tail && r.err.msg == strstr(r.err.msg, out) && !strcmp(tail, want),
              "message '%s', expected '%s.tmp-<16 hex digits>/%s'", r.err.msg, out, want);
    struct stat st;
    cr_expect(lstat(out, &st) < 0 && errno == ENOENT, "%s left behind", out);
    free_inputs(&o, files);
    free(out);
}

/* 1 when the message holds a raw control character (tabs aside). */
static int raw_control(const char *m)
{
    for (const unsigned char *p = (const unsigned char *)m; *p; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return 1;
    return 0;
}

/* Names from inputs (ESC, BEL, BS in a gene name) were printed raw by every
 * message that quotes them: a terminal escape injection. Every message has
 * its controls written out; a tab stays. */
Test(long_messages, control_characters_escaped)
{
    pl_err err = {0};
    pl__err(&err, PL_EPARSE, "f:1:2: unknown gene '%s'", "a\x1b[31mred\x07\bb\tc\x7f\xc2\x9b" "d");
    cr_expect_str_eq(err.msg, "f:1:2: unknown gene 'a\\x1b[31mred\\x07\\x08b\tc\\x7f\\u009bd'");
    cr_expect_eq(err.code, PL_EPARSE);
    /* a long message: escaped, then fitted (the end kept) */
    char name[3000];
    memset(name, '\x1b', sizeof name - 1);
    name[sizeof name - 1] = 0;
    pl__err(&err, -EINVAL, "head '%s' tail", name);
    cr_expect(!raw_control(err.msg), "%s", err.msg);
    size_t len = strlen(err.msg);
    cr_expect(len < sizeof err.msg && len > 5 && !strcmp(err.msg + len - 5, " tail"), "%s", err.msg);
    /* no control: untouched, UTF-8 kept */
    pl__err(&err, -EINVAL, "g\xc3\xa8ne '%s'", "\xc3\xa9");
    cr_expect_str_eq(err.msg, "g\xc3\xa8ne '\xc3\xa9'");
    char out[64];
    cr_expect_eq(pl__ctrl_escape(out, sizeof out, "a\tb", 3, 0), 6);
    cr_expect_str_eq(out, "a\\x09b");
    cr_expect_eq(pl__ctrl_escape(out, 5, "\x01\x02", 2, 0), 4); /* cut at a character */
    cr_expect_str_eq(out, "\\x01");
}

/* pl_strerror: the text of every library code, errno's for -errno, and the
 * fallbacks; pl_errname names the same codes. */
Test(error_codes, strerror_names_every_code)
{
    static const struct {
        int code;
        const char *text, *name;
    } codes[] = {
        {PL_EPARSE, "malformed input", "PL_EPARSE"},
        {PL_EFORMAT, "unsupported database format version", "PL_EFORMAT"},
        {PL_ECORRUPT, "database corrupt (checksum or structure)", "PL_ECORRUPT"},
        {PL_ELMDB, "LMDB error", "PL_ELMDB"},
        {PL_EZSTD, "zstd error", "PL_EZSTD"},
        {PL_ERANGE, "index out of range", "PL_ERANGE"},
        {PL_EEXIST, "output already exists", "PL_EEXIST"},
        {PL_EUSAGE, "invalid argument", "PL_EUSAGE"},
        {PL_EPEER, "peer process died", "PL_EPEER"},
        {PL_EBUSY, "in use by a live process", "PL_EBUSY"},
        {PL_ETIMEDOUT, "timed out", "PL_ETIMEDOUT"},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        cr_assert_str_eq(pl_strerror(codes[i].code), codes[i].text);
        cr_assert_str_eq(pl_errname(codes[i].code), codes[i].name);
    }
    cr_assert_str_eq(pl_strerror(0), "success");
    cr_assert_str_eq(pl_strerror(-ENOENT), strerror(ENOENT));
    cr_assert_str_eq(pl_strerror(-ENOSPC), strerror(ENOSPC));
    cr_assert_str_eq(pl_strerror(5), "unknown error");
    cr_assert_str_eq(pl_strerror(-5000), "unknown error");
    cr_assert_str_eq(pl_errname(-ENOENT), "ENOENT");
    static const struct {
        int code;
        const char *name;
    } errnos[] = {{0, "OK"},          {-EACCES, "EACCES"}, {-ENOSPC, "ENOSPC"},
                  {-ENOMEM, "ENOMEM"}, {-EIO, "EIO"},       {-EINVAL, "EINVAL"},
                  {-EEXIST, "EEXIST"}, {-EFBIG, "EFBIG"},   {-EISDIR, "EISDIR"},
                  {-ENOTDIR, "ENOTDIR"}, {-EPIPE, "E?"},    {5, "E?"}};
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        cr_assert_str_eq(pl_errname(errnos[i].code), errnos[i].name, "code %d",
                         errnos[i].code);
}

/* The message helpers at their edges: no room at all, room for less than the
 * "..." cut, no error to prefix, an escape into no room. */
Test(error_codes, message_helpers_at_their_edges)
{
    char dst[8] = "keep";
    pl__msg_fit(dst, 0, "abcdef", 6);
    cr_assert_str_eq(dst, "keep", "no room: nothing written");
    pl__msg_fit(dst, 5, "abcdefghij", 10);
    cr_assert_str_eq(dst, "abcd", "too little room for the cut: the head");
    pl__msg_fit(dst, 8, "abcdefghij", 10);
    cr_assert_str_eq(dst, "a...hij", "a quarter of the room for the head, the rest the tail");
    cr_assert_eq(pl__ctrl_escape(dst, 0, "a\nb", 3, 0), 0);
    cr_assert_eq(pl__err_prefix(NULL, "%s", "x"), 0);
    pl_err err = {0};
    cr_assert_eq(pl__err(&err, PL_EPARSE, "f:1:1: a\001b"), PL_EPARSE);
    cr_assert_str_eq(err.msg, "f:1:1: a\\x01b", "a control character escaped");
}

/* LMDB's return codes as pertload's: errno values pass through, a full map is
 * ENOSPC, damage is PL_ECORRUPT, another LMDB version PL_EFORMAT, the rest
 * PL_ELMDB. */
Test(error_codes, lmdb_codes)
{
    cr_assert_eq(pl__lmdb_code(0), 0);
    cr_assert_eq(pl__lmdb_code(EIO), -EIO);
    cr_assert_eq(pl__lmdb_code(ENOSPC), -ENOSPC);
    cr_assert_eq(pl__lmdb_code(MDB_MAP_FULL), -ENOSPC);
    cr_assert_eq(pl__lmdb_code(MDB_CORRUPTED), PL_ECORRUPT);
    cr_assert_eq(pl__lmdb_code(MDB_PAGE_NOTFOUND), PL_ECORRUPT);
    cr_assert_eq(pl__lmdb_code(MDB_INVALID), PL_ECORRUPT);
    cr_assert_eq(pl__lmdb_code(MDB_VERSION_MISMATCH), PL_EFORMAT);
    cr_assert_eq(pl__lmdb_code(MDB_KEYEXIST), PL_ELMDB);
    cr_assert_eq(pl__lmdb_code(MDB_READERS_FULL), PL_ELMDB);
}
