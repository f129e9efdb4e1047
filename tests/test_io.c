/* The read backends (loader/io.h) and the sample table read through them.
 *
 * Both backends serve many random reads of a temporary file with random tags
 * (buffered and O_DIRECT, plain and registered buffers), completions taken in
 * whatever order they come and matched by tag, contents compared with the file
 * and the bytes after each read left alone; short reads (a pipe fed in pieces)
 * are resumed; reads past the end of the file, on a bad descriptor or beyond
 * the queue depth fail with a negative code instead of hanging. io_uring must
 * be available on the machines that run these tests: its absence is a
 * failure, not a skip. The sample table of a database of ~270K samples (two
 * read groups of blocks) is loaded through each backend and must come out
 * byte-identical, also under a small locked-memory limit, and a damaged block
 * makes either load fail with PL_ECORRUPT. */
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
            cr_log_warn("O_DIRECT refused by the file system of %s: buffered only", F.file);
            return;
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
