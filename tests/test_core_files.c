/* The file helpers of src/core on input a user can hand them: .npy headers
 * that are malformed in the ways numpy never writes (keys without their
 * colon, an unquoted dtype, a shape of nine dimensions or one whose size
 * overflows), files that are not regular (a FIFO, a socket, a character
 * device), writes past the file size limit (RLIMIT_FSIZE), and the removal of
 * trees by odd paths (trailing slashes, ".", "..", a relative name, a tree
 * deeper than the remover enters). Every case checks the code and that the
 * message names the file and the reason. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/fileio.h"
#include "src/core/npy.h"
#include "testutil.h"

static char *D; /* the test's temporary directory */

static void fx_init(void) { D = pl_test_tmpdir(); }

static void fx_fini(void)
{
    pl_test_rmtree(D);
    free(D);
}

TestSuite(core_files, .init = fx_init, .fini = fx_fini);

/* A version-1.0 .npy at D/name with the header dict `dict` pasted as given
 * (padded with spaces and a newline) and `data_len` zero bytes after it. */
static char *raw_npy(const char *name, const char *dict, size_t data_len)
{
    size_t dl = strlen(dict), total = (10 + dl + 1 + 63) / 64 * 64;
    unsigned char *b = calloc(1, total + data_len);
    cr_assert(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)((total - 10) & 0xFF);
    b[9] = (unsigned char)((total - 10) >> 8);
    memcpy(b + 10, dict, dl);
    memset(b + 10 + dl, ' ', total - 10 - dl - 1);
    b[total - 1] = '\n';
    char *path = pl_test_path(D, name);
    pl_test_write_bytes(path, b, total + data_len);
    free(b);
    return path;
}

/* Open the npy at `path`, expect `code` and a message holding the path and
 * `why`. */
static void npy_refused(const char *path, int code, const char *why)
{
    pl__npy n;
    pl_err err = {0};
    int rc = pl__npy_open(&n, path, &err);
    pl__npy_close(&n);
    cr_assert_eq(rc, code, "%s: rc %d, want %d (%s)", path, rc, code, err.msg);
    cr_assert(strstr(err.msg, path), "the message names the file: %s", err.msg);
    cr_assert(strstr(err.msg, why), "'%s' not in: %s", why, err.msg);
}

Test(core_files, npy_blanks_before_the_colon_are_read)
{
    char *p = raw_npy("blank.npy", "{'descr' : '<i4', 'fortran_order'  : False, "
                      "'shape' : (3, 2), }", 24);
    pl__npy n;
    pl_err err = {0};
    cr_assert_eq(pl__npy_open(&n, p, &err), 0, "%s", err.msg);
    cr_assert_str_eq(n.descr, "<i4");
    cr_assert_eq(n.itemsize, 4);
    cr_assert_eq(n.ndim, 2);
    cr_assert_eq(n.shape[0], 3);
    cr_assert_eq(n.shape[1], 2);
    cr_assert_eq(n.count, 6);
    pl__npy_close(&n);
    free(p);
}

Test(core_files, npy_malformed_headers_are_refused)
{
    static const struct {
        const char *dict, *why;
    } bad[] = {
        /* a key without its colon */
        {"{'descr' '<i4', 'fortran_order': False, 'shape': (2,), }", "malformed .npy header"},
        /* a dtype that is not a string */
        {"{'descr': 4, 'fortran_order': False, 'shape': (2,), }", "malformed .npy header"},
        /* a shape that is not a tuple */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': [2], }", "malformed .npy header"},
        /* a dtype string never closed */
        {"{'fortran_order': False, 'shape': (2,), 'descr': '<i4", "unsupported dtype ''"},
        /* nine dimensions: one past the most */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
         "malformed shape"},
        /* a negative extent */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }", "malformed shape"},
        /* 2^32 * 2^32: the element count overflows 64 bits */
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
         "shape too large"},
        /* 2^61 elements of 8 bytes: the byte count overflows */
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693952,), }",
         "does not match the shape"},
        /* 2^64 - 8 bytes of data: no room for the header before them */
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693951,), }",
         "does not match the shape"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.npy", i);
        char *p = raw_npy(name, bad[i].dict, 8);
        npy_refused(p, PL_EPARSE, bad[i].why);
        free(p);
    }
}

Test(core_files, npy_extents_and_header_lengths_out_of_range)
{
    /* an extent past 64 bits */
    char *p = raw_npy("digits.npy", "{'descr': '<i4', 'fortran_order': False, "
                      "'shape': (99999999999999999999,), }", 8);
    npy_refused(p, PL_EPARSE, "malformed shape");
    free(p);
    /* version 2.0: a header length of 2 MiB, over the 1 MiB taken */
    p = pl_test_path(D, "v2long.npy");
    pl_test_write_bytes(p, "\x93NUMPY\x02\x00\x00\x00\x20\x00", 12);
    npy_refused(p, PL_EPARSE, ".npy header too long");
    free(p);
    /* a header written for an alignment past version 1.0's 64 KiB */
    static char buf[80000];
    uint64_t shape[1] = {3};
    cr_assert_eq(pl__npy_header(buf, sizeof buf, "<i4", shape, 1, 70000), 0);
    cr_assert_eq(pl__npy_header(buf, sizeof buf, "<i4", shape, 1, 65536), 65536);
}

Test(core_files, npy_version_2_needs_its_4_byte_length)
{
    /* Version 2.0 stores the header length in 4 bytes: 11 bytes are too few. */
    char *p = pl_test_path(D, "v2short.npy");
    pl_test_write_bytes(p, "\x93NUMPY\x02\x00\x10\x00\x00", 11);
    npy_refused(p, PL_EPARSE, "unsupported .npy version 2");
    free(p);
}

Test(core_files, npy_fifo_is_refused_not_waited_on)
{
    char *p = pl_test_path(D, "fifo.npy");
    cr_assert_eq(mkfifo(p, 0600), 0, "%s", strerror(errno));
    npy_refused(p, -EINVAL, "not a regular file");
    free(p);
}

Test(core_files, npy_header_round_trips_and_refuses_a_small_buffer)
{
    uint64_t shape[3] = {5, 0, 7};
    char buf[256];
    cr_assert_eq(pl__npy_header(buf, 100, "<f4", shape, 3, 128), 0,
                 "a 128-byte header does not fit 100 bytes");
    size_t h = pl__npy_header(buf, sizeof buf, "<f4", shape, 1, 64);
    cr_assert(h > 0 && h % 64 == 0 && h <= sizeof buf, "%zu", h);
    char *p = pl_test_path(D, "round.npy");
    unsigned char data[sizeof buf + 20] = {0};
    memcpy(data, buf, h);
    pl_test_write_bytes(p, data, h + 20);
    pl__npy n;
    pl_err err = {0};
    cr_assert_eq(pl__npy_open(&n, p, &err), 0, "%s", err.msg);
    cr_assert_eq(n.ndim, 1);
    cr_assert_eq(n.shape[0], 5);
    cr_assert_eq(n.offset, h);
    cr_assert_str_eq(n.descr, "<f4");
    pl__npy_close(&n);
    pl__npy_close(NULL); /* safe, as documented */
    free(p);
}

/* ------------------------------------------------------------ open_regular */

/* pl__open_regular(path) must fail with PL_ECORRUPT naming `kind`. */
static void not_regular(const char *path, const char *kind)
{
    pl_err err = {0};
    int fd = pl__open_regular(path, 0, &err);
    cr_assert_eq(fd, PL_ECORRUPT, "%s: %d (%s)", path, fd, err.msg);
    char want[4200];
    snprintf(want, sizeof want, "%s: %s, not a regular file", path, kind);
    cr_assert_str_eq(err.msg, want);
}

Test(core_files, open_regular_names_what_a_file_is)
{
    char *fifo = pl_test_path(D, "fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    not_regular(fifo, "a FIFO");

    char *sock = pl_test_path(D, "sock");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "sock"); /* bound by a short relative name, whatever $TMPDIR is */
    cr_assert_eq(chdir(D), 0);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0, "%s", strerror(errno));
    /* open() itself refuses a socket, before it could be looked at */
    pl_err err = {0};
    cr_assert_eq(pl__open_regular(sock, 0, &err), -ENXIO);
    cr_assert(strstr(err.msg, sock) && strstr(err.msg, strerror(ENXIO)), "%s", err.msg);
    close(s);

    not_regular("/dev/null", "a character device");

    /* a link that loops, in the directory part: not the file's own link */
    char *loop = pl_test_path(D, "loop");
    cr_assert_eq(symlink("loop", loop), 0);
    char *through = pl_test_path(loop, "x");
    pl_err e3 = {0};
    cr_assert_eq(pl__open_regular(through, 0, &e3), -ELOOP);
    cr_assert(strstr(e3.msg, through) && strstr(e3.msg, strerror(ELOOP)), "%s", e3.msg);
    /* the file itself a link: named as one */
    cr_assert_eq(pl__open_regular(loop, 0, &e3), PL_ECORRUPT);
    cr_assert(strstr(e3.msg, "a symbolic link, not a regular file"), "%s", e3.msg);
    free(through);
    free(loop);

    /* The same refusal through the checksum of a whole file. */
    uint64_t bytes = 1, sum = 1;
    cr_assert_eq(pl__file_xxh64(fifo, &bytes, &sum, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "a FIFO"), "%s", err.msg);
    cr_assert_eq(bytes, 1, "nothing set on failure");
    free(fifo);
    free(sock);
}

Test(core_files, checksum_of_an_empty_file)
{
    char *p = pl_test_path(D, "empty");
    pl_test_write_bytes(p, "", 0);
    uint64_t bytes = 1, sum = 0;
    pl_err err = {0};
    cr_assert_eq(pl__file_xxh64(p, &bytes, &sum, &err), 0, "%s", err.msg);
    cr_assert_eq(bytes, 0);
    /* XXH64 of no bytes, seed 0 (the reference implementation's value) */
    cr_assert_eq(sum, 0xEF46DB3751D8E999ull);
    char *missing = pl_test_path(D, "missing");
    cr_assert_eq(pl__file_size(missing), 0);
    free(p);
    free(missing);
}

/* ------------------------------------------------------------ reads, writes */

Test(core_files, read_and_write_errors_name_the_file)
{
    char *p = pl_test_path(D, "data");
    pl_test_write_bytes(p, "0123456789", 10);
    char buf[16];
    pl_err err = {0};

    int wfd = open(p, O_WRONLY);
    cr_assert_geq(wfd, 0);
    cr_assert_eq(pl__read_all(wfd, buf, 4, 0, p, &err), -EBADF);
    cr_assert(strstr(err.msg, p) && strstr(err.msg, "read failed"), "%s", err.msg);
    close(wfd);

    int rfd = open(p, O_RDONLY);
    cr_assert_geq(rfd, 0);
    cr_assert_eq(pl__read_all(rfd, buf, 8, 6, p, &err), PL_ECORRUPT);
    cr_assert(strstr(err.msg, "truncated at offset 10"), "%s", err.msg);
    cr_assert_eq(pl__write_all(rfd, "x", 1, 0, p, &err), -EBADF);
    cr_assert(strstr(err.msg, p) && strstr(err.msg, "write failed"), "%s", err.msg);
    close(rfd);
    free(p);
}

Test(core_files, write_past_the_file_size_limit)
{
    /* Each test runs in its own process: the limit stays in it. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl, was;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    rl = was;
    rl.rlim_cur = 4096;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0, "%s", strerror(errno));

    char *p = pl_test_path(D, "big");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    static char block[8192];
    memset(block, 'a', sizeof block);
    pl_err err = {0};
    /* The first 4096 bytes go in; the rest fail with EFBIG. */
    cr_assert_eq(pl__write_all(fd, block, sizeof block, 0, p, &err), -EFBIG, "%s", err.msg);
    cr_assert(strstr(err.msg, p), "%s", err.msg);
    close(fd);
    cr_assert_eq(pl__file_size(p), 4096);

    char why[256];
    cr_assert_eq(pl__write_error(p, EFBIG, why, sizeof why), -EFBIG);
    cr_assert(strstr(why, "the file size limit (ulimit -f) is 4096 bytes"), "%s", why);
    /* LMDB reports a short write as EIO: a file at the limit explains it. */
    cr_assert_eq(pl__write_error(p, EIO, why, sizeof why), -EFBIG);
    cr_assert(strstr(why, "ulimit -f"), "%s", why);
    /* A file below the limit, on a file system with room: EIO stays EIO. */
    char *small = pl_test_path(D, "small");
    pl_test_write_bytes(small, "x", 1);
    cr_assert_eq(pl__write_error(small, EIO, why, sizeof why), -EIO);
    cr_assert_str_eq(why, strerror(EIO));
    /* back as it was (a coverage build writes its counters at exit) */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
    free(p);
    free(small);
}

Test(core_files, write_error_without_a_limit)
{
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
    rl.rlim_cur = rl.rlim_max; /* as high as this process may: none, unless ulimit -Hf */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    char why[256];
    cr_assert_eq(pl__write_error(D, EFBIG, why, sizeof why), -EFBIG);
    if (rl.rlim_cur == RLIM_INFINITY)
        cr_assert_str_eq(why, strerror(EFBIG));
    else
        cr_assert(strstr(why, "ulimit -f"), "%s", why);
    cr_assert_eq(pl__write_error(D, ENOSPC, why, sizeof why), -ENOSPC);
    cr_assert(!strncmp(why, "no space left on device (", 25), "%s", why);
    cr_assert_eq(pl__write_error(D, EACCES, why, sizeof why), -EACCES);
    cr_assert_str_eq(why, strerror(EACCES));
    /* a path whose file system cannot be asked: the error as it is */
    char *gone = pl_test_path(D, "none/file");
    cr_assert_eq(pl__write_error(gone, ENOSPC, why, sizeof why), -ENOSPC);
    cr_assert_str_eq(why, strerror(ENOSPC));
    free(gone);
}

/* ------------------------------------------------------------ tree removal */

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* D/name as a directory holding a file and a subdirectory with a file. */
static char *small_tree(const char *name)
{
    char *top = pl_test_path(D, name);
    cr_assert_eq(mkdir(top, 0700), 0);
    free(pl_test_write(top, "f", "x"));
    char *sub = pl_test_path(top, "sub");
    cr_assert_eq(mkdir(sub, 0700), 0);
    free(pl_test_write(sub, "g", "y"));
    free(sub);
    return top;
}

Test(core_files, rmtree_refuses_names_that_are_not_entries)
{
    cr_assert_eq(pl__rmtree(""), -EINVAL);
    cr_assert_eq(pl__rmtree("."), -EINVAL);
    cr_assert_eq(pl__rmtree("/"), -EINVAL);
    cr_assert_eq(pl__rmtree("//"), -EINVAL);
    char *top = small_tree("t");
    char buf[4300];
    snprintf(buf, sizeof buf, "%s/sub/..", top);
    cr_assert_eq(pl__rmtree(buf), -EINVAL);
    snprintf(buf, sizeof buf, "%s/.", top);
    cr_assert_eq(pl__rmtree(buf), -EINVAL);
    cr_assert(exists(top), "nothing removed");
    /* longer than a path may be */
    char *longp = malloc(5000);
    memset(longp, 'a', 4999);
    longp[4999] = '\0';
    cr_assert_eq(pl__rmtree(longp), -EINVAL);
    free(longp);
    /* a parent that does not exist */
    snprintf(buf, sizeof buf, "%s/none/x", top);
    cr_assert_eq(pl__rmtree(buf), -ENOENT);
    free(top);
}

Test(core_files, rmtree_by_odd_but_valid_paths)
{
    char *top = small_tree("slashes");
    char buf[4300];
    snprintf(buf, sizeof buf, "%s///", top);
    cr_assert_eq(pl__rmtree(buf), 0);
    cr_assert(!exists(top), "removed through trailing slashes");
    free(top);

    /* a name relative to the working directory, without a slash */
    top = small_tree("relative");
    cr_assert_eq(chdir(D), 0);
    cr_assert_eq(pl__rmtree("relative"), 0);
    cr_assert(!exists(top));
    free(top);

    /* an entry of "/" that is not there: nothing to do */
    snprintf(buf, sizeof buf, "/pertload-none-%ld", (long)getpid());
    cr_assert(!exists(buf));
    cr_assert_eq(pl__rmtree(buf), 0);

    /* a plain file is unlinked */
    char *f = pl_test_write(D, "plain", "z");
    cr_assert_eq(pl__rmtree(f), 0);
    cr_assert(!exists(f));
    free(f);
}

Test(core_files, rmtree_at_checks_the_file_and_the_owner)
{
    char *top = small_tree("owned");
    int dfd = open(D, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(dfd, 0);
    struct stat other;
    cr_assert_eq(stat(D, &other), 0);
    /* `want` names another file: -ESTALE, nothing removed */
    cr_assert_eq(pl__rmtree_at(dfd, "owned", (uid_t)-1, &other), -ESTALE);
    cr_assert(exists(top));
    /* a directory of another owner: -EPERM, nothing removed */
    cr_assert_eq(pl__rmtree_at(dfd, "owned", getuid() + 1, NULL), -EPERM);
    cr_assert(exists(top));
    struct stat self;
    cr_assert_eq(lstat(top, &self), 0);
    cr_assert_eq(pl__rmtree_at(dfd, "owned", getuid(), &self), 0);
    cr_assert(!exists(top));
    close(dfd);
    free(top);
}

Test(core_files, rmtree_stops_at_its_depth_bound)
{
    /* 140 nested directories: the remover enters 128 levels, then reports
     * -ELOOP and leaves the tree. */
    enum { DEPTH = 140 };
    int fds[DEPTH + 1];
    fds[0] = open(D, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fds[0], 0);
    for (int i = 1; i <= DEPTH; i++) {
        cr_assert_eq(mkdirat(fds[i - 1], "d", 0700), 0);
        fds[i] = openat(fds[i - 1], "d", O_RDONLY | O_DIRECTORY);
        cr_assert_geq(fds[i], 0);
    }
    char *top = pl_test_path(D, "d");
    cr_assert_eq(pl__rmtree(top), -ELOOP);
    cr_assert(exists(top), "a tree too deep is left");
    cr_assert_eq(faccessat(fds[DEPTH - 1], "d", F_OK, 0), 0, "its bottom too");
    /* From half way down the rest is within the bound. */
    cr_assert_eq(pl__rmtree_at(fds[DEPTH / 2], "d", (uid_t)-1, NULL), 0);
    cr_assert_eq(pl__rmtree(top), 0);
    cr_assert(!exists(top));
    for (int i = 0; i <= DEPTH; i++)
        close(fds[i]);
    free(top);
}
