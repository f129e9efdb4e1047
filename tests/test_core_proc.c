/* The process and shared-memory helpers of src/core (shm.h) and the progress
 * line (progress.h):
 *  - a process is alive while it runs, dead once a zombie (its exit seen by
 *    waitid(WNOWAIT), not reaped) and when its start time is not the one
 *    given (a recycled pid); the start time is field 22 of /proc/PID/stat,
 *    read here by the test itself;
 *  - a segment's liveness lock is held while a holder (another open, another
 *    process) lives and free once every holder is gone, SIGKILLed or closed;
 *  - segments another user could use are refused with the reason (not a
 *    regular file, another owner, open to group or others), as are names
 *    too long, missing or holding "..", sizes over half the free space, and
 *    a segment that cannot be sized;
 *  - the progress line prints the count, the percentage of a known total or
 *    of a given fraction, and nothing when off or asked again too soon. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/progress.h"
#include "src/core/shm.h"
#include "testutil.h"

static char seg_shm[3][80], seg_path[3][80]; /* this test's segments */
static pid_t kid;

static void fx_init(void)
{
    static const char *tags[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        char base[64];
        snprintf(base, sizeof base, "t%ld-core-%s", (long)getpid(), tags[i]);
        pl__shm_names(base, seg_shm[i], seg_path[i], sizeof seg_shm[i]);
    }
}

static void fx_fini(void)
{
    for (int i = 0; i < 3; i++)
        shm_unlink(seg_shm[i]);
    if (kid > 0) {
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
    }
}

TestSuite(core_proc, .init = fx_init, .fini = fx_fini);

/* Field 22 of /proc/PID/stat, parsed here independently of the library. */
static unsigned long long proc_start(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    char s[1024];
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    ssize_t len = read(fd, s, sizeof s - 1); /* /proc gives it in one read */
    close(fd);
    cr_assert_gt(len, 0);
    s[len] = '\0';
    char *p = strrchr(s, ')');
    cr_assert(p);
    unsigned long long v = 0;
    /* after ")": fields 3 (state) .. 22 */
    int n = sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                          "%*d %*d %*d %llu", &v);
    cr_assert_eq(n, 1);
    return v;
}

Test(core_proc, pid_start_is_field_22)
{
    cr_assert_eq(pl__shm_pid_start(0), 0);
    cr_assert_eq(pl__shm_pid_start(-3), 0);
    uint64_t t = pl__shm_pid_start(getpid());
    cr_assert_neq(t, 0);
    cr_assert_eq(t, proc_start(getpid()));
}

Test(core_proc, a_zombie_and_a_recycled_pid_are_dead)
{
    int go[2];
    cr_assert_eq(pipe(go), 0);
    kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) {
        char c;
        close(go[1]);
        _exit(read(go[0], &c, 1) == 1 ? 0 : 1); /* until the parent says */
    }
    close(go[0]);
    uint64_t t = pl__shm_pid_start(kid);
    cr_assert_eq(t, proc_start(kid));
    cr_assert_eq(pl__shm_pid_alive(kid, t), 1, "running");
    cr_assert_eq(pl__shm_pid_alive(kid, 0), 1, "no start time: the pid decides");
    cr_assert_eq(pl__shm_pid_alive(kid, t + 1), 0, "another start time: a recycled pid");
    cr_assert_eq(pl__shm_pid_alive(0, 0), 0);
    cr_assert_eq(pl__shm_pid_alive(-1, 0), 0);
    /* Let it exit; wait for the exit without reaping it: a zombie. */
    cr_assert_eq(write(go[1], "x", 1), 1);
    close(go[1]);
    siginfo_t si = {0};
    cr_assert_eq(waitid(P_PID, (id_t)kid, &si, WEXITED | WNOWAIT), 0);
    cr_assert_eq(si.si_pid, kid);
    cr_assert_eq(pl__shm_pid_alive(kid, t), 0, "a zombie is dead");
    cr_assert_eq(pl__shm_pid_alive(kid, 0), 0);
    int st;
    cr_assert_eq(waitpid(kid, &st, 0), kid);
    kid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(core_proc, liveness_lock_is_held_while_a_holder_lives)
{
    int fd = pl__shm_create(seg_shm[2], seg_path[2], NULL);
    cr_assert_geq(fd, 0);
    int go[2], ready[2];
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(ready), 0);
    kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) { /* a consumer: an open of its own, holding its byte */
        char c;
        int mine = open(seg_path[2], O_RDWR);
        int rc = mine >= 0 ? pl__shm_hold(mine, PL__SHM_LOCK_PEER) : -1;
        c = rc == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(2);
        _exit(read(go[0], &c, 1) == 1 ? 0 : 1); /* until the parent says */
    }
    char c = 0;
    cr_assert_eq(read(ready[0], &c, 1), 1);
    cr_assert_eq(c, 'y');
    int other = open(seg_path[2], O_RDWR);
    cr_assert_geq(other, 0);
    cr_assert_eq(pl__shm_held(other, PL__SHM_LOCK_PEER + 1), 1, "the consumer's byte");
    cr_assert_eq(pl__shm_held(fd, PL__SHM_LOCK_OWNER + 1), 0, "no owner holds byte 0");
    cr_assert_eq(pl__shm_hold(fd, PL__SHM_LOCK_OWNER), 0, "a write lock of our own converts");
    int ro = open(seg_path[2], O_RDONLY);
    cr_assert_lt(pl__shm_held(ro, 2), 0, "a write lock needs a descriptor open for writing");
    close(ro);
    /* The holder's death (SIGKILL: no close of its own) frees its byte. */
    kill(kid, SIGKILL);
    cr_assert_eq(waitpid(kid, NULL, 0), kid);
    kid = 0;
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    cr_assert_eq(pl__shm_held(other, PL__SHM_LOCK_PEER + 1), 1, "byte 0: ours, another open");
    close(fd);
    cr_assert_eq(pl__shm_held(other, PL__SHM_LOCK_PEER + 1), 0, "every holder is gone");
    close(other);
}

Test(core_proc, owner_checks_give_the_reason)
{
    char *d = pl_test_tmpdir();
    char *f = pl_test_write(d, "seg", "x");
    cr_assert_eq(chmod(f, 0600), 0);
    struct stat st, bad;
    cr_assert_eq(stat(f, &st), 0);
    pl_err err = {0};
    cr_assert_eq(pl__shm_check_owner(&st, f, "ring", &err), 0, "%s", err.msg);

    bad = st;
    bad.st_mode = S_IFDIR | 0700;
    cr_assert_eq(pl__shm_check_owner(&bad, f, "ring", &err), -EPERM);
    cr_assert(strstr(err.msg, "is not a regular file; refusing to use it as a ring"), "%s",
              err.msg);
    bad = st;
    bad.st_uid = geteuid() + 1;
    cr_assert_eq(pl__shm_check_owner(&bad, f, "ring", &err), -EPERM);
    char want[128];
    snprintf(want, sizeof want, "belongs to uid %u, not to this user (uid %u)",
             (unsigned)geteuid() + 1, (unsigned)geteuid());
    cr_assert(strstr(err.msg, want), "%s", err.msg);
    bad = st;
    bad.st_mode = S_IFREG | 0640;
    cr_assert_eq(pl__shm_check_owner(&bad, f, "ring", &err), -EPERM);
    cr_assert(strstr(err.msg, "has mode 0640; a ring must be closed"), "%s", err.msg);
    pl_test_rmtree(d);
    free(f);
    free(d);
}

Test(core_proc, segments_open_create_size_and_unlink)
{
    pl_err err = {0};
    int fd = -2;
    struct stat st;
    /* none yet */
    cr_assert_eq(pl__shm_open_owned(seg_shm[0], seg_path[0], O_RDWR, "ring", &fd, &st, &err),
                 1);
    int c = pl__shm_create(seg_shm[0], seg_path[0], &err);
    cr_assert_geq(c, 0, "%s", err.msg);
    cr_assert_eq(pl__shm_create(seg_shm[0], seg_path[0], &err), -EEXIST);

    /* sized through a read-only descriptor: refused with the size asked */
    int ro = shm_open(seg_shm[0], O_RDONLY, 0);
    cr_assert_geq(ro, 0);
    cr_assert_lt(pl__shm_reserve(ro, seg_path[0], 8192, &err), 0);
    cr_assert(strstr(err.msg, "cannot size") && strstr(err.msg, "to 8192 bytes"), "%s",
              err.msg);
    close(ro);
    cr_assert_eq(pl__shm_reserve(c, seg_path[0], 8192, &err), 0, "%s", err.msg);
    cr_assert_eq(fstat(c, &st), 0);
    cr_assert_eq(st.st_size, 8192);

    /* opened back: this user's, 0600 */
    struct stat got;
    cr_assert_eq(pl__shm_open_owned(seg_shm[0], seg_path[0], O_RDWR, "ring", &fd, &got, &err),
                 0, "%s", err.msg);
    cr_assert_eq(got.st_ino, st.st_ino);
    close(fd);
    /* opened to group: refused, no descriptor left */
    cr_assert_eq(fchmod(c, 0660), 0);
    cr_assert_eq(pl__shm_open_owned(seg_shm[0], seg_path[0], O_RDWR, "ring", &fd, &got, &err),
                 -EPERM);
    cr_assert_eq(fd, -1);
    cr_assert(strstr(err.msg, "has mode 0660"), "%s", err.msg);

    /* another segment's identity does not remove this one */
    int other = pl__shm_create(seg_shm[1], seg_path[1], &err);
    cr_assert_geq(other, 0, "%s", err.msg);
    struct stat ost;
    cr_assert_eq(fstat(other, &ost), 0);
    cr_assert_eq(pl__shm_unlink_same(seg_shm[0], seg_path[0], &ost), 0);
    cr_assert_eq(access(seg_path[0], F_OK), 0, "still there");
    cr_assert_eq(pl__shm_unlink_same(seg_shm[0], seg_path[0], &st), 0);
    cr_assert_neq(access(seg_path[0], F_OK), 0, "removed");
    close(other);
    close(c);

    /* a name longer than a file name may be (glibc: EINVAL, or ENAMETOOLONG) */
    char shm[400], path[420];
    memset(shm, 'n', sizeof shm - 1);
    shm[0] = '/';
    shm[sizeof shm - 1] = '\0';
    snprintf(path, sizeof path, "/dev/shm%s", shm);
    int rc = pl__shm_open_owned(shm, path, O_RDONLY, "ring", &fd, &got, &err);
    cr_assert(rc == -EINVAL || rc == -ENAMETOOLONG, "%d %s", rc, err.msg);
    cr_assert(strstr(err.msg, "cannot open /dev/shm/nnn") && strstr(err.msg, strerror(-rc)),
              "%s", err.msg);
    cr_assert_eq(fd, -1);
}

Test(core_proc, space_and_names_are_checked)
{
    pl_err err = {0};
    cr_assert_eq(pl__shm_check_space(4096, "a ring", &err), 0, "%s", err.msg);
    cr_assert_eq(pl__shm_check_space(UINT64_MAX / 2, "a ring", &err), -ENOSPC);
    char want[160];
    snprintf(want, sizeof want, "a ring needs %llu bytes, over the limit of",
             (unsigned long long)(UINT64_MAX / 2));
    cr_assert(strstr(err.msg, "free in /dev/shm"), "%s", err.msg);
    cr_assert(strstr(err.msg, want), "%s", err.msg);

    cr_assert_eq(pl__shm_check_name(NULL, 32, "ring", &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "ring name missing");
    cr_assert_eq(pl__shm_check_name("a..b", 32, "ring", &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "ring name 'a..b' holds '..'");
    char name[100];
    memset(name, 'x', 99);
    name[99] = '\0';
    cr_assert_eq(pl__shm_check_name(name, 90, "ring", &err), PL_EUSAGE);
    /* shown to 80 characters, then "..." */
    cr_assert(strstr(err.msg, "x...' is longer than 90 characters"), "%s", err.msg);
    name[60] = '\0';
    cr_assert_eq(pl__shm_check_name(name, 50, "ring", &err), PL_EUSAGE);
    snprintf(want, sizeof want, "'%s' is longer than 50 characters", name);
    cr_assert(strstr(err.msg, want), "%s", err.msg);
}

/* ------------------------------------------------------------ progress */

/* Run `fn` with stderr going to a file; return what it wrote (malloc'd). */
static char *stderr_of(void (*fn)(pl__progress *), pl__progress *p)
{
    char *d = pl_test_tmpdir();
    char *f = pl_test_path(d, "stderr");
    int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    cr_assert_eq(dup2(fd, 2), 2);
    close(fd);
    fn(p);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t len;
    char *s = pl_test_read_file(f, &len);
    pl_test_rmtree(d);
    free(f);
    free(d);
    return s;
}

/* The last update was long ago: the next one prints. */
static void long_ago(pl__progress *p) { p->last = pl__now() - 10; }

static void of_total(pl__progress *p)
{
    pl__progress_start(p, 1, "rows", 8);
    long_ago(p);
    pl__progress_update(p, 2, -1);
}

static void of_fraction(pl__progress *p)
{
    pl__progress_start(p, 1, "bytes", 0);
    long_ago(p);
    pl__progress_update(p, 300, 0.75);
}

static void unknown_then_end(pl__progress *p)
{
    pl__progress_start(p, 1, "edges", 0);
    long_ago(p);
    pl__progress_update(p, 5, -1);
    pl__progress_end(p, 9);
}

static void too_soon(pl__progress *p)
{
    pl__progress_start(p, 1, "rows", 8);
    p->last = pl__now() + 1000; /* the last print is never 0.2 s ago */
    pl__progress_update(p, 2, -1);
}

static void off(pl__progress *p)
{
    pl__progress_start(p, 0, "rows", 8);
    long_ago(p);
    pl__progress_update(p, 2, -1);
    pl__progress_end(p, 8);
}

static void if_tty(pl__progress *p)
{
    pl__progress_start(p, -1, "rows", 8); /* stderr is a file: off */
    long_ago(p);
    pl__progress_update(p, 2, -1);
    pl__progress_end(p, 8);
}

Test(core_proc, progress_lines)
{
    pl__progress p;
    char *s = stderr_of(of_total, &p);
    cr_assert(!strncmp(s, "\rrows: 2 / 8 (25.0%)  ", 22), "[%s]", s);
    cr_assert(strstr(s, "/s  ETA "), "[%s]", s);
    free(s);

    s = stderr_of(of_fraction, &p);
    cr_assert(!strncmp(s, "\rbytes: 300 (75.0%)  ", 21), "[%s]", s);
    cr_assert(strstr(s, "/s  ETA "), "[%s]", s);
    free(s);

    s = stderr_of(unknown_then_end, &p);
    cr_assert(!strncmp(s, "\redges: 5  ", 11), "[%s]", s);
    char *end = strstr(s + 1, "\redges: 9  ");
    cr_assert(end, "[%s]", s);
    cr_assert_eq(s[strlen(s) - 1], '\n', "the end ends the line");
    cr_assert(!strstr(s, "ETA"), "no ETA without a fraction: [%s]", s);
    free(s);

    s = stderr_of(too_soon, &p);
    cr_assert_str_eq(s, "");
    free(s);
    s = stderr_of(off, &p);
    cr_assert_str_eq(s, "");
    free(s);
    s = stderr_of(if_tty, &p);
    cr_assert_str_eq(s, "");
    free(s);
}
