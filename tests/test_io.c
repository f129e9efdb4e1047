/* The read backends (loader/io.h) and the sample table read through them.
 *
 * Both backends serve many random reads of a temporary file with random tags
 * (buffered and O_DIRECT, plain and registered buffers), completions taken in
 * whatever order they come and matched by tag, contents compared with the file
 * and the bytes after each read left alone; short reads (a pipe fed in pieces)
 * are resumed; reads past the end of the file, on a bad descriptor or beyond
 * the queue depth fail with a negative code instead of hanging. io_uring must
 * be available on the machines that run these tests: its absence is a
 * failure, not a skip. The sample table read through them:
 * test_io_table.c. */
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

#define FILE_BYTES ((size_t)3 * 1048576 + 777)
#define MAX_READ ((size_t)1 << 20)
#define TAIL 64 /* bytes checked untouched after every read */

static const int modes[2] = {PL_IO_URING, PL_IO_PREAD};
static const char *const mode_names[2] = {"io_uring", "pread"};

static struct {
    char *dir;
    char file[4096];
    unsigned char *data; /* the file's contents */
    int fd;
} F;

static void file_setup(void)
{
    memset(&F, 0, sizeof F);
    F.fd = -1;
    F.dir = pl_test_tmpdir();
    snprintf(F.file, sizeof F.file, "%s/data.bin", F.dir);
    F.data = malloc(FILE_BYTES);
    cr_assert_not_null(F.data);
    uint64_t s = 31337;
    for (size_t i = 0; i < FILE_BYTES; i += 8) {
        uint64_t x = pl_test_rand(&s);
        memcpy(F.data + i, &x, FILE_BYTES - i < 8 ? FILE_BYTES - i : 8);
    }
    FILE *f = fopen(F.file, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(F.data, 1, FILE_BYTES, f), FILE_BYTES);
    cr_assert_eq(fclose(f), 0);
    F.fd = open(F.file, O_RDONLY);
    cr_assert_geq(F.fd, 0, "%s: %s", F.file, strerror(errno));
}

static void file_teardown(void)
{
    if (F.fd >= 0)
        close(F.fd);
    free(F.data);
    if (F.dir)
        pl_test_rmtree(F.dir);
    free(F.dir);
    memset(&F, 0, sizeof F);
}

TestSuite(io, .init = file_setup, .fini = file_teardown, .timeout = 60);

static pl__io *open_io(int mode, unsigned depth)
{
    pl__io *io = NULL;
    pl_err err = {0};
    int rc = pl__io_open(&io, mode, depth, &err);
    cr_assert_eq(rc, 0, "pl__io_open(%s, depth %u): %d %s%s", mode == PL_IO_URING ? "uring"
                 : mode == PL_IO_PREAD ? "pread" : "auto", depth, rc, err.msg,
                 mode == PL_IO_URING ? " (io_uring must be permitted where the tests run)"
                                     : "");
    cr_assert_not_null(io);
    return io;
}

/* ---------------------------------------------------- random reads */

typedef struct inflight {
    int active;
    uint64_t tag, off;
    size_t len;
    int expect_fail;
    uint64_t seq; /* issue order */
} inflight;

/* Many random reads, up to `depth` in flight, optionally into registered
 * buffers (one per in-flight slot, registered as index i). */
static void random_reads_fd(int mi, unsigned depth, int n_reads, int registered,
                            uint64_t seed, int direct)
{
    /* registered buffers are page-locked: keep them small */
    const size_t max_read = registered ? (size_t)128 << 10 : MAX_READ;
    int fd = F.fd;
    if (direct) {
        fd = open(F.file, O_RDONLY | O_DIRECT);
        if (fd < 0 && errno == EINVAL) {
            /* $TMPDIR's file system refuses O_DIRECT (tmpfs before Linux
             * 6.6): the same file in the working directory (meson runs the
             * tests in the build directory), never a pass without it. */
            char local[64];
            snprintf(local, sizeof local, "io-direct-%d.bin", (int)getpid());
            pl_test_copy_file(F.file, local);
            fd = open(local, O_RDONLY | O_DIRECT);
            int e = errno;
            unlink(local);
            cr_assert_geq(fd, 0, "O_DIRECT refused in %s and in the working directory: %s",
                          F.dir, strerror(e));
        }
        cr_assert_geq(fd, 0, "%s: %s", F.file, strerror(errno));
    }
    pl__io *io = open_io(modes[mi], depth);
    cr_assert_str_eq(pl__io_backend(io), mode_names[mi]);
    size_t slot = max_read + 4096; /* keeps every slot page-aligned; TAIL checked */
    unsigned char *buf = aligned_alloc(4096, (slot * depth + 4095) / 4096 * 4096);
    cr_assert_not_null(buf);
    if (registered) {
        void **bufs = malloc(depth * sizeof *bufs);
        size_t *lens = malloc(depth * sizeof *lens);
        cr_assert(bufs && lens);
        for (unsigned i = 0; i < depth; i++) {
            bufs[i] = buf + i * slot;
            lens[i] = slot;
        }
        pl_err err = {0};
        cr_assert_eq(pl__io_register(io, bufs, lens, depth, &err), 0, "%s: register: %s",
                     mode_names[mi], err.msg);
        free(bufs);
        free(lens);
    }
    inflight *fl = calloc(depth, sizeof *fl);
    cr_assert_not_null(fl);
    uint64_t s = seed, issued = 0, done = 0, out_of_order = 0, next_expected = 0;
    unsigned pending = 0;
    while (done < (uint64_t)n_reads) {
        /* issue a random number of reads */
        unsigned want = pending < depth ? 1 + (unsigned)pl_test_below(&s, depth - pending) : 0;
        for (unsigned k = 0; k < want && issued < (uint64_t)n_reads; k++) {
            unsigned i = 0;
            while (fl[i].active)
                i++;
            inflight *r = &fl[i];
            uint64_t roll = pl_test_below(&s, 100);
            r->len = roll < 5    ? 1 + pl_test_below(&s, max_read)
                     : roll < 60 ? 1 + pl_test_below(&s, 4096)
                                 : 1 + pl_test_below(&s, 65536);
            r->off = roll % 10 == 9 ? FILE_BYTES - r->len /* ends at the end of the file */
                                    : pl_test_below(&s, FILE_BYTES - r->len + 1);
            if (direct) { /* whole pages inside the file */
                r->len = (r->len + 4095) / 4096 * 4096;
                r->off = pl_test_below(&s, (FILE_BYTES - r->len) / 4096 + 1) * 4096;
            }
            uint64_t tag;
            int dup;
            do { /* unique among those in flight */
                tag = pl_test_rand(&s);
                dup = 0;
                for (unsigned j = 0; j < depth; j++)
                    dup |= fl[j].active && fl[j].tag == tag;
            } while (dup);
            r->tag = tag;
            r->active = 1;
            r->seq = issued++;
            memset(buf + i * slot, 0xEE, r->len + TAIL);
            pl_err err = {0};
            int rc = pl__io_read(io, fd, buf + i * slot, r->len, r->off,
                                 registered ? (int)i : -1, tag, &err);
            CHECK(rc == 0, "%s: pl__io_read: %d %s", mode_names[mi], rc, err.msg);
            pending++;
            if (pl_test_below(&s, 4) == 0) {
                rc = pl__io_submit(io, &err);
                CHECK(rc == 0, "%s: submit: %s", mode_names[mi], err.msg);
            }
        }
        pl_err err = {0};
        CHECK(pl__io_submit(io, &err) == 0, "%s: submit: %s", mode_names[mi], err.msg);
        CHECK(pl__io_pending(io) == pending, "%s: %u pending, expected %u", mode_names[mi],
              pl__io_pending(io), pending);
        /* take some completions, in whatever order */
        unsigned take = 1 + (unsigned)pl_test_below(&s, pending);
        for (unsigned k = 0; k < take; k++) {
            uint64_t tag = 0;
            int64_t res = 0;
            int rc = pl__io_wait(io, &tag, &res, &err);
            CHECK(rc == 0, "%s: wait: %d %s", mode_names[mi], rc, err.msg);
            unsigned i = 0;
            while (i < depth && !(fl[i].active && fl[i].tag == tag))
                i++;
            CHECK(i < depth, "%s: completion with unknown tag %016llx", mode_names[mi],
                  (unsigned long long)tag);
            inflight *r = &fl[i];
            CHECK(res == (int64_t)r->len, "%s: read of %zu at %llu completed with %lld",
                  mode_names[mi], r->len, (unsigned long long)r->off, (long long)res);
            CHECK(!memcmp(buf + i * slot, F.data + r->off, r->len),
                  "%s: read of %zu at %llu: wrong bytes", mode_names[mi], r->len,
                  (unsigned long long)r->off);
            for (size_t j = 0; j < TAIL; j++)
                CHECK(buf[i * slot + r->len + j] == 0xEE, "%s: read of %zu wrote past its end",
                      mode_names[mi], r->len);
            if (r->seq != next_expected)
                out_of_order++;
            r->active = 0;
            pending--;
            done++;
            /* the oldest read still in flight */
            next_expected = UINT64_MAX;
            for (unsigned j = 0; j < depth; j++)
                if (fl[j].active && fl[j].seq < next_expected)
                    next_expected = fl[j].seq;
            if (next_expected == UINT64_MAX)
                next_expected = issued;
        }
    }
    cr_expect_eq(pl__io_pending(io), 0);
    cr_log_info("%s%s: %d reads, %llu completed out of issue order", mode_names[mi],
                direct ? " O_DIRECT" : "", n_reads, (unsigned long long)out_of_order);
    if (direct)
        close(fd);
    free(fl);
    pl__io_close(io);
    free(buf);
}

static void random_reads(int mi, unsigned depth, int n_reads, int registered, uint64_t seed)
{
    random_reads_fd(mi, depth, n_reads, registered, seed, 0);
}

Test(io, uring_is_available)
{
    pl__io *io = NULL;
    pl_err err = {0};
    int rc = pl__io_open(&io, PL_IO_URING, 8, &err);
    cr_assert_eq(rc, 0, "io_uring_queue_init is refused on this machine (%d: %s); the io_uring "
                 "backend cannot be tested", rc, err.msg);
    cr_assert_str_eq(pl__io_backend(io), "io_uring");
    pl__io_close(io);
    /* AUTO picks io_uring where it works and nothing asks otherwise */
    unsetenv("PERTLOAD_IO");
    io = open_io(PL_IO_AUTO, 8);
    cr_expect_str_eq(pl__io_backend(io), "io_uring");
    pl__io_close(io);
}

Test(io, random_reads_uring) { random_reads(0, 64, 4000, 0, 1); }
Test(io, random_reads_pread) { random_reads(1, 64, 4000, 0, 2); }
Test(io, random_reads_uring_depth_1) { random_reads(0, 1, 300, 0, 3); }
Test(io, random_reads_uring_odd_depth) { random_reads(0, 5, 1000, 0, 4); }
Test(io, random_reads_pread_odd_depth) { random_reads(1, 5, 1000, 0, 5); }
Test(io, registered_buffers_uring) { random_reads(0, 8, 1500, 1, 6); }
Test(io, registered_buffers_pread) { random_reads(1, 8, 1500, 1, 7); }
Test(io, direct_reads_uring) { random_reads_fd(0, 32, 1500, 0, 8, 1); }
Test(io, direct_reads_pread) { random_reads_fd(1, 32, 1500, 0, 9, 1); }
Test(io, direct_registered_uring) { random_reads_fd(0, 8, 800, 1, 10, 1); }

/* A pipe delivers a read in pieces: io_uring resumes the short reads until
 * the whole length arrived (the offset means nothing on a pipe); pread cannot
 * read a pipe at an offset and must say so. When the writer closes early, the
 * read fails instead of waiting forever. */
typedef struct feeder {
    int fd;
    const unsigned char *data;
    size_t len;
    int close_early;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    size_t at = 0, piece = 1;
    while (at < f->len) {
        size_t n = piece < f->len - at ? piece : f->len - at;
        if (write(f->fd, f->data + at, n) != (ssize_t)n)
            break;
        at += n;
        piece = piece * 3 + 7;
        usleep(2000);
    }
    close(f->fd);
    return NULL;
}

static void pipe_case(int mi, size_t want, size_t supplied)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pl__io *io = open_io(modes[mi], 2);
    unsigned char *buf = calloc(1, want + 1);
    cr_assert_not_null(buf);
    feeder f = {p[1], F.data, supplied, 0};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, feed, &f), 0);
    pl_err err = {0};
    int rc = pl__io_read(io, p[0], buf, want, 0, -1, 77, &err);
    if (rc == 0)
        rc = pl__io_submit(io, &err);
    int64_t res = 0;
    if (rc == 0) {
        uint64_t tag;
        rc = pl__io_wait(io, &tag, &res, &err);
        cr_assert_eq(rc, 0, "%s", err.msg);
        cr_expect_eq(tag, 77);
    }
    pthread_join(th, NULL);
    if (modes[mi] == PL_IO_URING && supplied >= want) {
        cr_expect_eq(res, (int64_t)want, "io_uring: a pipe read of %zu bytes gave %lld", want,
                     (long long)res);
        cr_expect(!memcmp(buf, F.data, want), "io_uring: pieces reassembled wrongly");
    } else {
        cr_expect(rc < 0 || res < 0, "%s: read of %zu from a pipe given %zu bytes: rc %d res %lld",
                  mode_names[mi], want, supplied, rc, (long long)res);
    }
    close(p[0]);
    free(buf);
    pl__io_close(io);
}

Test(io, uring_resumes_short_reads) { pipe_case(0, 4000, 4000); }
Test(io, uring_pipe_closed_early_fails) { pipe_case(0, 4000, 1500); }
Test(io, pread_pipe_fails) { pipe_case(1, 4000, 4000); }

/* --------------------------------------------------- failing reads */

Test(io, past_end_of_file_fails)
{
    for (int mi = 0; mi < 2; mi++) {
        pl__io *io = open_io(modes[mi], 16);
        unsigned char *buf = malloc(6 * 8192);
        cr_assert_not_null(buf);
        struct {
            uint64_t off;
            size_t len;
            int ok;
        } cases[6] = {
            {FILE_BYTES - 100, 200, 0},    /* straddles the end */
            {FILE_BYTES, 1, 0},            /* starts at the end */
            {FILE_BYTES + 4096, 4096, 0},  /* entirely past it */
            {0, 8192, 1},                  /* good reads among them */
            {FILE_BYTES - 8192, 8192, 1},
            {(uint64_t)1 << 40, 16, 0},    /* far past it */
        };
        pl_err err = {0};
        for (int i = 0; i < 6; i++)
            cr_assert_eq(pl__io_read(io, F.fd, buf + i * 8192, cases[i].len, cases[i].off, -1,
                                     100 + (uint64_t)i, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__io_submit(io, &err), 0, "%s", err.msg);
        int seen[6] = {0};
        for (int k = 0; k < 6; k++) {
            uint64_t tag;
            int64_t res;
            cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0, "%s", err.msg);
            cr_assert(tag >= 100 && tag < 106, "tag %llu", (unsigned long long)tag);
            int i = (int)(tag - 100);
            cr_expect_eq(seen[i], 0, "tag %d completed twice", i);
            seen[i] = 1;
            if (cases[i].ok) {
                cr_expect_eq(res, (int64_t)cases[i].len, "%s: good read %d: %lld",
                             mode_names[mi], i, (long long)res);
                cr_expect(!memcmp(buf + i * 8192, F.data + cases[i].off, cases[i].len));
            } else {
                cr_expect_lt(res, 0, "%s: read %d of %zu at %llu (file %zu bytes) gave %lld",
                             mode_names[mi], i, cases[i].len,
                             (unsigned long long)cases[i].off, FILE_BYTES, (long long)res);
            }
        }
        cr_expect_eq(pl__io_pending(io), 0);
        free(buf);
        pl__io_close(io);
    }
}

Test(io, bad_descriptor_fails)
{
    for (int mi = 0; mi < 2; mi++) {
        pl__io *io = open_io(modes[mi], 4);
        char buf[64];
        pl_err err = {0};
        int rc = pl__io_read(io, 987654, buf, sizeof buf, 0, -1, 42, &err);
        if (rc == 0)
            rc = pl__io_submit(io, &err);
        if (rc == 0) {
            uint64_t tag;
            int64_t res;
            cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0, "%s", err.msg);
            cr_expect_eq(tag, 42);
            cr_expect_eq(res, -EBADF, "%s: res %lld", mode_names[mi], (long long)res);
        } else {
            cr_expect_lt(rc, 0);
        }
        cr_expect_eq(pl__io_pending(io), 0);
        pl__io_close(io);
    }
}

Test(io, depth_is_enforced_and_wait_needs_a_read)
{
    for (int mi = 0; mi < 2; mi++) {
        pl__io *io = open_io(modes[mi], 3);
        char buf[4][16];
        pl_err err = {0};
        uint64_t tag;
        int64_t res;
        int rc = pl__io_wait(io, &tag, &res, &err);
        cr_expect_lt(rc, 0, "%s: wait with nothing in flight returned %d", mode_names[mi], rc);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(pl__io_read(io, F.fd, buf[i], 16, 16 * (uint64_t)i, -1,
                                     (uint64_t)i, &err), 0, "%s", err.msg);
        memset(&err, 0, sizeof err);
        rc = pl__io_read(io, F.fd, buf[3], 16, 0, -1, 3, &err);
        cr_expect_eq(rc, -EBUSY, "%s: a fourth read at depth 3 gave %d", mode_names[mi], rc);
        cr_expect_neq(err.msg[0], 0);
        cr_expect_eq(pl__io_pending(io), 3);
        cr_assert_eq(pl__io_submit(io, &err), 0);
        unsigned got = 0;
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0, "%s", err.msg);
            cr_assert_lt(tag, 3);
            got |= 1u << tag;
            cr_expect_eq(res, 16);
            cr_expect(!memcmp(buf[tag], F.data + 16 * tag, 16));
        }
        cr_expect_eq(got, 7);
        /* the freed slots take reads again */
        cr_assert_eq(pl__io_read(io, F.fd, buf[0], 16, 1000, -1, 9, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__io_submit(io, &err), 0);
        cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0);
        cr_expect_eq(tag, 9);
        cr_expect(!memcmp(buf[0], F.data + 1000, 16));
        pl__io_close(io);
    }
}

Test(io, zero_length_read_completes_with_zero)
{
    /* io.h: a completion's result is the full length; for 0 bytes that is 0 */
    for (int mi = 0; mi < 2; mi++) {
        pl__io *io = open_io(modes[mi], 2);
        char buf[8];
        pl_err err = {0};
        cr_assert_eq(pl__io_read(io, F.fd, buf, 0, 10, -1, 5, &err), 0, "%s", err.msg);
        cr_assert_eq(pl__io_submit(io, &err), 0);
        uint64_t tag;
        int64_t res;
        cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0, "%s", err.msg);
        cr_expect_eq(tag, 5);
        cr_expect_eq(res, 0, "%s: a read of 0 bytes completed with %lld", mode_names[mi],
                     (long long)res);
        pl__io_close(io);
    }
}

Test(io, environment_selects_the_backend)
{
    static const struct {
        const char *env;
        int mode;
        const char *want;
    } cases[] = {
        {"pread", PL_IO_AUTO, "pread"},     {"uring", PL_IO_AUTO, "io_uring"},
        {"uring", PL_IO_PREAD, "pread"},    /* the environment only steers AUTO */
        {"pread", PL_IO_URING, "io_uring"}, {"", PL_IO_AUTO, "io_uring"},
        {"bogus", PL_IO_AUTO, "io_uring"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(setenv("PERTLOAD_IO", cases[i].env, 1), 0);
        pl__io *io = open_io(cases[i].mode, 4);
        cr_expect_str_eq(pl__io_backend(io), cases[i].want, "PERTLOAD_IO=%s mode %d: %s",
                         cases[i].env, cases[i].mode, pl__io_backend(io));
        /* and it reads */
        char b[32];
        pl_err err = {0};
        uint64_t tag;
        int64_t res;
        cr_assert_eq(pl__io_read(io, F.fd, b, 32, 4096, -1, 1, &err), 0);
        cr_assert_eq(pl__io_submit(io, &err), 0);
        cr_assert_eq(pl__io_wait(io, &tag, &res, &err), 0);
        cr_expect_eq(res, 32);
        cr_expect(!memcmp(b, F.data + 4096, 32));
        pl__io_close(io);
    }
    unsetenv("PERTLOAD_IO");
}

/* io_uring refused as a seccomp sandbox refuses it: io_uring_setup fails with
 * EPERM. Run in a child, since a filter cannot be removed. */
static void forbid_io_uring(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        _exit(10);
}

Test(io, auto_falls_back_to_pread_when_io_uring_is_refused)
{
    unsetenv("PERTLOAD_IO");
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        forbid_io_uring();
        pl__io *io = NULL;
        pl_err err = {0};
        /* explicit io_uring: a clear failure naming the reason */
        if (pl__io_open(&io, PL_IO_URING, 4, &err) != -EPERM || !strstr(err.msg, "io_uring"))
            _exit(11);
        /* AUTO: chosen at run time, reported as "pread", and it reads */
        if (pl__io_open(&io, PL_IO_AUTO, 4, &err) != 0 || strcmp(pl__io_backend(io), "pread"))
            _exit(12);
        char b[32];
        uint64_t tag;
        int64_t res;
        if (pl__io_read(io, F.fd, b, 32, 8192, -1, 7, &err) != 0 ||
            pl__io_submit(io, &err) != 0 || pl__io_wait(io, &tag, &res, &err) != 0 ||
            tag != 7 || res != 32 || memcmp(b, F.data + 8192, 32) != 0)
            _exit(13);
        pl__io_close(io);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "child ended by a signal");
    cr_assert_eq(WEXITSTATUS(status), 0,
                 "child exit %d (10 seccomp refused, 11 URING did not fail with EPERM, "
                 "12 AUTO did not fall back, 13 the fallback read failed)",
                 WEXITSTATUS(status));
}
