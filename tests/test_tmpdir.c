/* The temporary directories of pl_build ("<out>.tmp-*", preprocess/tmpdir.h):
 * a build removes only those pertload made and can prove abandoned, and never
 * through a symbolic link:
 *  - another user swapping a directory and a link to a victim directory, in
 *    a shared sticky directory, while builds run and clean up (and while the
 *    tree remover itself runs) removes none of the victim's files;
 *  - a directory pertload never made, or one that exists at a name a build
 *    could have chosen, survives builds of that output;
 *  - a live build's directory survives while the build holds its lock, even
 *    from another pid namespace where its pid means nothing here; once the
 *    build is killed, a later build removes it;
 *  - an abandoned directory that holds a link or a subdirectory, or whose
 *    directory or marker belongs to another user, is left alone;
 *  - a build into a directory it may write but not list still works.
 * A live build is a real pl_build() in a child that blocks in its first
 * fsync(), which comes after its temporary directory, marker and lock are
 * made: a seccomp filter hands fsync to a supervisor that never answers. Another user is a
 * forked child that drops to nobody (uid 65534): those cases need root. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pertload.h"
#include "preprocess/tmpdir.h"
#include "testutil.h"

#define VICTIM_FILES 64
#define RACE_SECONDS 2.0

typedef struct fx {
    char *dir;   /* 0755, root's */
    char *in;    /* inputs */
    char *genes, *bad_genes, *edges, *samples;
    char *victim; /* root's files outside every output's directory */
    const char *names[1], *files[1];
    /* processes a failed assertion would leave running: killed in fx_fini */
    struct {
        pid_t pid;
        int reap; /* a child of this process */
    } kids[4];
} fx;

static fx F;

/* Kill `pid` (and reap it when `reap`) should the test end before it does. */
static void track(pid_t pid, int reap)
{
    for (size_t i = 0; i < sizeof F.kids / sizeof *F.kids; i++)
        if (!F.kids[i].pid) {
            F.kids[i].pid = pid;
            F.kids[i].reap = reap;
            return;
        }
    cr_assert_fail("too many processes to track");
}

/* `pid` is gone (reaped, or its namespace's are): nothing to kill. */
static void untrack(pid_t pid)
{
    for (size_t i = 0; i < sizeof F.kids / sizeof *F.kids; i++)
        if (F.kids[i].pid == pid)
            F.kids[i].pid = 0;
}

static void fx_init(void)
{
    memset(&F, 0, sizeof F);
    F.dir = pl_test_tmpdir();
    cr_assert_eq(chmod(F.dir, 0755), 0);
    F.in = pl_test_path(F.dir, "in");
    cr_assert_eq(mkdir(F.in, 0755), 0);
    F.genes = pl_test_write(F.in, "genes.txt", "g1\ng2\ng3\n");
    F.bad_genes = pl_test_write(F.in, "bad-genes.txt", "g1\ng1\n");
    F.edges = pl_test_write(F.in, "phys.tsv", "g1\tg2\t0.9\ng2\tg3\t0.4\n");
    F.samples = pl_test_write(F.in, "samples.tsv", "genes\tid\tfitness\ng1\t1\t0.5\n");
    F.names[0] = "phys";
    F.files[0] = F.edges;
    F.victim = pl_test_path(F.dir, "victim");
    cr_assert_eq(mkdir(F.victim, 0755), 0);
    char name[16];
    for (int i = 0; i < VICTIM_FILES; i++) {
        snprintf(name, sizeof name, "f%03d", i);
        free(pl_test_write(F.victim, name, "root's data\n"));
    }
}

static void fx_fini(void)
{
    for (int reap = 0; reap < 2; reap++) /* the grandchildren first */
        for (size_t i = 0; i < sizeof F.kids / sizeof *F.kids; i++)
            if (F.kids[i].pid && F.kids[i].reap == reap) {
                kill(F.kids[i].pid, SIGKILL);
                if (reap)
                    waitpid(F.kids[i].pid, NULL, 0);
            }
    if (F.dir)
        pl_test_rmtree(F.dir);
    char **p[] = {&F.dir, &F.in, &F.genes, &F.bad_genes, &F.edges, &F.samples,
                  &F.victim};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        free(*p[i]);
    memset(&F, 0, sizeof F);
}

TestSuite(tmpdir, .init = fx_init, .fini = fx_fini);

static void need_root(void)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to act as another user (uid %d)", PL_TEST_NOBODY);
}

/* pl_build of `out` from `genes`. */
static int build_from(const char *out, const char *genes, pl_err *err)
{
    pl_build_opts o = {.out = out, .genes = genes, .n_types = 1, .type_names = F.names,
                       .type_files = F.files, .samples = F.samples, .progress = 0};
    memset(err, 0, sizeof *err);
    return pl_build(&o, NULL, err);
}

static void build_ok(const char *out)
{
    pl_err err;
    int rc = build_from(out, F.genes, &err);
    cr_assert_eq(rc, 0, "building %s: %d (%s): %s", out, rc, pl_errname(rc), err.msg);
}

/* A build that fails on the duplicate gene (after its sweep). */
static void build_fail(const char *out)
{
    pl_err err;
    int rc = build_from(out, F.bad_genes, &err);
    cr_assert_eq(rc, PL_EPARSE, "building %s: %d (%s): %s", out, rc, pl_errname(rc), err.msg);
    cr_assert(strstr(err.msg, "duplicate gene name 'g1'") != NULL, "%s", err.msg);
}

/* Regular files under `dir` (one level of subdirectories too). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *p = pl_test_path(dir, e->d_name);
        struct stat st;
        cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
        n += S_ISREG(st.st_mode) ? 1 : S_ISDIR(st.st_mode) ? count_files(p) : 0;
        free(p);
    }
    closedir(d);
    return n;
}

static void expect_victim_intact(void)
{
    int n = count_files(F.victim);
    cr_assert_eq(n, VICTIM_FILES, "%d of root's %d files outside were removed",
                 VICTIM_FILES - n, VICTIM_FILES);
}

/* The names in `dir` that start with `base`.tmp-: their count, the first
 * copied into `name`. */
static int find_tmp(const char *dir, const char *base, char *name, size_t cap)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && n++ == 0 && name)
            snprintf(name, cap, "%s", e->d_name);
    closedir(d);
    return n;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A pid number that no process here has: a reaped child's. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------- another user racing */

/* The swaps the attacker has made, in memory shared with it. */
static unsigned long long *swaps_made;

static unsigned long long swaps_now(void) { return __atomic_load_n(swaps_made, __ATOMIC_RELAXED); }

/* As nobody, until `stop` becomes readable: keep `tmp`/x a directory of
 * files named like the victim's and `tmp`/y a symbolic link to the victim,
 * and swap the two (RENAME_EXCHANGE) as fast as it can, rebuilding what is
 * removed under it; counts the swaps in *swaps_made. */
static void attacker(const char *tmp, int mkdir_tmp, int stop)
{
    pl_test_become_nobody();
    umask(0);
    char x[4200], y[4200], f[4300];
    snprintf(x, sizeof x, "%s/x", tmp);
    snprintf(y, sizeof y, "%s/y", tmp);
    struct pollfd p = {.fd = stop, .events = POLLIN};
    while (poll(&p, 1, 0) == 0) {
        if (mkdir_tmp)
            mkdir(tmp, 0777);
        struct stat sx, sy;
        int hx = lstat(x, &sx) == 0, hy = lstat(y, &sy) == 0;
        const char *dir = hx && S_ISDIR(sx.st_mode) ? x : hy && S_ISDIR(sy.st_mode) ? y : NULL;
        if (!dir) {
            dir = hx ? y : x;
            if (mkdir(dir, 0777) < 0)
                continue;
        }
        const char *link = dir == x ? y : x;
        if (!exists(link) && symlink(F.victim, link) < 0)
            continue;
        snprintf(f, sizeof f, "%s/f%03d", dir, VICTIM_FILES - 1);
        for (int i = 0; !exists(f) && i < VICTIM_FILES; i++) {
            char g[4300];
            snprintf(g, sizeof g, "%s/f%03d", dir, i);
            close(open(g, O_WRONLY | O_CREAT, 0666));
        }
        for (int i = 0; i < 64; i++)
            if (renameat2(AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE) == 0)
                __atomic_add_fetch(swaps_made, 1, __ATOMIC_RELAXED);
    }
    _exit(0);
}

/* Start the attacker on `tmp`; closing *stop stops it. */
static pid_t start_attacker(const char *tmp, int mkdir_tmp, int *stop)
{
    swaps_made = mmap(NULL, sizeof *swaps_made, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(swaps_made, MAP_FAILED);
    *swaps_made = 0;
    int sp[2];
    cr_assert_eq(pipe(sp), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(sp[1]);
        attacker(tmp, mkdir_tmp, sp[0]);
    }
    close(sp[0]);
    *stop = sp[1];
    track(pid, 1);
    return pid;
}

/* Stop the attacker; the swaps it made. */
static unsigned long long stop_attacker(pid_t pid, int stop)
{
    close(stop);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    untrack(pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the attacker died (status 0x%x)", st);
    unsigned long long swaps = swaps_now();
    munmap(swaps_made, sizeof *swaps_made);
    return swaps;
}

/* In a shared 1777 directory nobody plants "db.tmp-<dead pid>" and swaps a
 * directory in it with a link to root's files while root's builds of db,
 * failing and succeeding, sweep and clean up. */
Test(tmpdir, symlink_swap_race_as_another_user, .timeout = 60)
{
    need_root();
    char *shared = pl_test_path(F.dir, "shared");
    cr_assert_eq(mkdir(shared, 0755), 0);
    cr_assert_eq(chmod(shared, 01777), 0);
    char *out = pl_test_path(shared, "db"), tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)dead_pid());
    int stop;
    pid_t pid = start_attacker(tmp, 1, &stop);
    int builds = 0;
    for (double end = now_s() + RACE_SECONDS; now_s() < end; builds++) {
        if (builds % 4 == 3) {
            build_ok(out);
            pl_test_rmtree(out);
        } else {
            build_fail(out);
        }
    }
    unsigned long long swaps = stop_attacker(pid, stop);
    cr_assert_gt(builds, 20, "only %d builds raced", builds);
    cr_assert_gt(swaps, 100, "only %llu swaps raced", swaps);
    expect_victim_intact();
    free(shared);
    free(out);
}

/* The tree remover itself (pl_test_rmtree, the one build uses) on a tree of
 * root's with a world-writable directory where nobody swaps a directory and
 * a link to root's files. */
Test(tmpdir, rmtree_symlink_swap_race, .timeout = 60)
{
    need_root();
    char *tree = pl_test_path(F.dir, "tree"), *pub = pl_test_path(tree, "pub");
    int stop;
    pid_t pid = start_attacker(pub, 0, &stop);
    int rounds = 0;
    for (double end = now_s() + RACE_SECONDS; now_s() < end; rounds++) {
        cr_assert_eq(mkdir(tree, 0755), 0, "%s: %s", tree, strerror(errno));
        cr_assert_eq(mkdir(pub, 0777), 0);
        cr_assert_eq(chmod(pub, 0777), 0);
        /* until nobody swaps in it (a second at most) */
        unsigned long long before = swaps_now();
        for (int i = 0; i < 10000 && swaps_now() == before; i++)
            usleep(100);
        pl_test_rmtree(tree);
        if (exists(tree)) { /* nobody refilled a directory meanwhile: set it aside */
            char aside[4300];
            snprintf(aside, sizeof aside, "%s-%d", tree, rounds);
            cr_assert_eq(rename(tree, aside), 0);
        }
    }
    unsigned long long swaps = stop_attacker(pid, stop);
    cr_assert_gt(rounds, 20, "only %d removals raced", rounds);
    cr_assert_gt(swaps, 100, "only %llu swaps raced", swaps);
    expect_victim_intact();
    free(tree);
    free(pub);
}

/* --------------------------------------------------- not pertload's */

/* "mkdir -p results.tmp-<pid>/important": not a build's, whatever its name. */
Test(tmpdir, foreign_tmp_named_directory_survives)
{
    char *out = pl_test_path(F.dir, "results"), foreign[4300], important[4400];
    snprintf(foreign, sizeof foreign, "%s.tmp-%ld", out, (long)dead_pid());
    snprintf(important, sizeof important, "%s/important", foreign);
    cr_assert_eq(mkdir(foreign, 0755), 0);
    cr_assert_eq(mkdir(important, 0755), 0);
    free(pl_test_write(important, "notes.txt", "keep me\n"));
    build_fail(out);
    build_ok(out);
    cr_expect_eq(count_files(foreign), 1, "%s lost its file", foreign);
    cr_expect_eq(find_tmp(F.dir, "results", NULL, 0), 1);
    free(out);
}

/* A directory planted where a build would have put its own (today's
 * "<out>.tmp-<pid>" of the building process) is neither removed nor used. */
Test(tmpdir, planted_directory_at_a_build_name_survives)
{
    char *out = pl_test_path(F.dir, "db");
    int go[2];
    cr_assert_eq(pipe(go), 0);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(3);
        pl_err err;
        int rc = build_from(out, F.genes, &err);
        pl_test_send(fd, &rc, sizeof rc);
        pl_test_send(fd, &err, sizeof err);
        _exit(0);
    }
    close(go[0]);
    track(pid, 1);
    char planted[4300];
    snprintf(planted, sizeof planted, "%s.tmp-%ld", out, (long)pid);
    cr_assert_eq(mkdir(planted, 0755), 0);
    free(pl_test_write(planted, "mine.txt", "not a build's\n"));
    cr_assert_eq(write(go[1], "g", 1), 1);
    close(go[1]);
    int rc;
    pl_err err;
    cr_assert_eq(pl_test_recv(fd, &rc, sizeof rc), sizeof rc);
    cr_assert_eq(pl_test_recv(fd, &err, sizeof err), sizeof err);
    close(fd);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    untrack(pid);
    cr_assert_eq(rc, 0, "build: %d (%s): %s", rc, pl_errname(rc), err.msg);
    cr_expect_eq(count_files(planted), 1, "%s was emptied", planted);
    char *mine = pl_test_path(out, "mine.txt");
    cr_expect(!exists(mine), "the build used the planted directory");
    free(mine);
    free(out);
}

/* ------------------------------------------------------ live builds */

/* Wait until `pid` sleeps (blocked in its fsync) with a temporary
 * directory of `base` in F.dir; its name into `name`. */
static void wait_blocked(pid_t pid, const char *base, char *name, size_t cap)
{
    char statp[64];
    snprintf(statp, sizeof statp, "/proc/%ld/stat", (long)pid);
    for (int i = 0; i < 10000; i++) {
        char s[1024] = {0};
        FILE *f = fopen(statp, "r");
        cr_assert_not_null(f, "%s: %s", statp, strerror(errno));
        size_t len = fread(s, 1, sizeof s - 1, f);
        fclose(f);
        s[len] = '\0';
        const char *paren = strrchr(s, ')');
        int asleep = paren && paren[1] == ' ' && paren[2] == 'S';
        if (asleep && find_tmp(F.dir, base, name, cap) == 1)
            return;
        usleep(1000);
    }
    cr_assert_fail("build %ld never blocked in its fsync", (long)pid);
}

/* In a child: from now on the syscalls `nr` and `nr2` wait for a seccomp
 * supervisor that never answers (the listener stays open, unread). */
static void block_in(long nr, long nr2)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                &prog) < 0) {
        fprintf(stderr, "seccomp user notification: %s\n", strerror(errno));
        _exit(9);
    }
}

/* A build blocks in its first fsync with its temporary directory, marker
 * and lock in place. */
static void block_in_fsync(void) { block_in(__NR_fsync, __NR_fsync); }

/* A child that builds `out`: it blocks in fsync, its temporary
 * directory made, until killed. */
static pid_t start_blocked_build(const char *out)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        pl_err err;
        block_in_fsync();
        build_from(out, F.genes, &err);
        _exit(0);
    }
    track(pid, 1);
    return pid;
}

/* A build killed with SIGKILL; its temporary directory (in F.dir, of "db")
 * into `path`. */
static void killed_build(char *path, size_t cap)
{
    char *out = pl_test_path(F.dir, "db"), name[256];
    pid_t pid = start_blocked_build(out);
    wait_blocked(pid, "db", name, sizeof name);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    untrack(pid);
    snprintf(path, cap, "%s/%s", F.dir, name);
    cr_assert(exists(path));
    free(out);
}

Test(tmpdir, killed_build_is_cleaned_by_a_later_build)
{
    char tmp[4400], *out = pl_test_path(F.dir, "db");
    killed_build(tmp, sizeof tmp);
    build_fail(out);
    cr_expect(!exists(tmp), "%s of a killed build survived a failed build", tmp);
    killed_build(tmp, sizeof tmp);
    build_ok(out);
    cr_expect(!exists(tmp), "%s of a killed build survived a build", tmp);
    cr_expect_eq(find_tmp(F.dir, "db", NULL, 0), 0);
    char *marker = pl_test_path(out, PL__TMP_MARKER);
    cr_expect(!exists(marker), "%s left in the database", marker);
    free(marker);
    free(out);
}

/* Wait until `pid` is inside syscall `nr` or `nr2` (/proc/PID/syscall). */
static void wait_in_syscall(pid_t pid, long nr, long nr2)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/syscall", (long)pid);
    for (int i = 0; i < 20000; i++) {
        char s[256] = {0};
        FILE *f = fopen(p, "r");
        cr_assert_not_null(f, "%s: %s", p, strerror(errno));
        size_t len = fread(s, 1, sizeof s - 1, f);
        fclose(f);
        s[len] = '\0';
        char *end;
        long got = strtol(s, &end, 10);
        if (end != s && (got == nr || got == nr2))
            return;
        usleep(1000);
    }
    cr_assert_fail("build %ld never blocked in rename", (long)pid);
}

/* A build killed as it renames its complete directory into place left it
 * without its marker (removed just before), which no later build removed:
 * the marker now stays until after the rename. */
Test(tmpdir, build_killed_at_its_rename_is_cleaned, .timeout = 60)
{
    char *out = pl_test_path(F.dir, "db"), name[256];
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        pl_err err;
        block_in(__NR_renameat, __NR_renameat2);
        build_from(out, F.genes, &err);
        _exit(0);
    }
    track(pid, 1);
    wait_in_syscall(pid, __NR_renameat, __NR_renameat2);
    cr_assert_eq(find_tmp(F.dir, "db", name, sizeof name), 1);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    untrack(pid);
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s/%s", F.dir, name);
    cr_assert(exists(tmp));
    cr_assert(!exists(out), "the killed build's database is in place");
    build_ok(out);
    cr_expect(!exists(tmp), "%s of a build killed at its rename survived a build", tmp);
    cr_expect_eq(find_tmp(F.dir, "db", NULL, 0), 0);
    char *marker = pl_test_path(out, PL__TMP_MARKER);
    cr_expect(!exists(marker), "%s left in the database", marker);
    free(marker);
    free(out);
}

typedef struct ns_report {
    int stage; /* 0: unshare failed (errno in `err`), 1: the build runs */
    int err;
    pid_t ns_pid, pid; /* the build's pid in its namespace and here */
} ns_report;

/* A build in a new pid namespace whose own pid there is `want`: pid 1 forks
 * want - 2 throw-away children first. */
static pid_t start_build_in_pid_namespace(const char *out, pid_t want, int *fd)
{
    pid_t pid = pl_test_fork_piped(fd);
    if (pid != 0)
        return pid;
    ns_report r = {0};
    if (unshare(CLONE_NEWPID) < 0) {
        r.err = errno;
        pl_test_send(*fd, &r, sizeof r);
        _exit(0);
    }
    pid_t init = fork();
    if (init < 0)
        _exit(4);
    if (init == 0) {
        for (pid_t p = 2; p < want; p++) {
            pid_t c = fork();
            if (c == 0)
                _exit(0);
            if (c < 0 || waitpid(c, NULL, 0) != c)
                _exit(5);
        }
        pid_t b = fork();
        if (b == 0) {
            char self[32] = {0};
            /* /proc is this namespace's parent's: /proc/self is our pid there */
            if (readlink("/proc/self", self, sizeof self - 1) < 0)
                _exit(6);
            r.stage = 1;
            r.ns_pid = getpid();
            r.pid = (pid_t)atol(self);
            pl_test_send(*fd, &r, sizeof r);
            close(*fd);
            pl_err err;
            block_in_fsync();
            build_from(out, F.genes, &err);
            _exit(0);
        }
        close(*fd);
        _exit(b > 0 && waitpid(b, NULL, 0) == b ? 0 : 7);
    }
    close(*fd);
    int st;
    _exit(waitpid(init, &st, 0) == init && WIFEXITED(st) ? WEXITSTATUS(st) : 8);
}

Test(tmpdir, live_build_in_another_pid_namespace, .timeout = 60)
{
    need_root();
    /* the build's pid number, K, is one that no process here has */
    pid_t k = 3;
    while (k < 5000 && !(kill(k, 0) < 0 && errno == ESRCH))
        k++;
    cr_assert_lt(k, 5000);
    char *out = pl_test_path(F.dir, "db"), name[256], tmp[4400];
    int fd;
    pid_t pid = start_build_in_pid_namespace(out, k, &fd);
    track(pid, 1);
    ns_report r;
    cr_assert_eq(pl_test_recv(fd, &r, sizeof r), sizeof r, "no report from the namespace");
    close(fd);
    if (r.stage == 1)
        track(r.pid, 0); /* its death ends the namespace */
    cr_assert_eq(r.stage, 1, "unshare(CLONE_NEWPID): %s", strerror(r.err));
    cr_assert_eq(r.ns_pid, k);
    cr_assert_neq(r.pid, k);
    wait_blocked(r.pid, "db", name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s/%s", F.dir, name);
    int files = count_files(tmp);
    cr_assert(kill(k, 0) < 0 && errno == ESRCH, "pid %ld appeared here", (long)k);
    build_fail(out);
    build_ok(out);
    pl_test_rmtree(out);
    cr_assert(exists(tmp), "the live build's %s was removed", tmp);
    cr_expect_eq(count_files(tmp), files, "the live build's %s lost files", tmp);
    /* killed: abandoned, and the next build removes it */
    cr_assert_eq(kill(r.pid, SIGKILL), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    untrack(r.pid);
    untrack(pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the namespace's processes: 0x%x", st);
    cr_assert(exists(tmp));
    build_fail(out);
    cr_expect(!exists(tmp), "%s of the killed build survived", tmp);
    free(out);
}

/* ---------------------------------------- abandoned, but tampered with */

/* A killed build's directory, changed by `tamper`, survives a later build
 * (failing, then succeeding) with all it holds. */
static void expect_left_alone(void (*tamper)(const char *tmp))
{
    char tmp[4400], *out = pl_test_path(F.dir, "db");
    killed_build(tmp, sizeof tmp);
    tamper(tmp);
    int files = count_files(tmp);
    build_fail(out);
    build_ok(out);
    cr_assert(exists(tmp), "%s was removed", tmp);
    cr_expect_eq(count_files(tmp), files, "%s lost files", tmp);
    expect_victim_intact();
    free(out);
}

static void add_link(const char *tmp)
{
    char *link = pl_test_path(tmp, "link");
    cr_assert_eq(symlink(F.victim, link), 0);
    free(link);
}

static void add_subdir(const char *tmp)
{
    char *sub = pl_test_path(tmp, "sub");
    cr_assert_eq(mkdir(sub, 0755), 0);
    free(pl_test_write(sub, "data", "x\n"));
    free(sub);
}

static void give_dir_away(const char *tmp)
{
    cr_assert_eq(lchown(tmp, PL_TEST_NOBODY, PL_TEST_NOBODY), 0);
}

static void give_marker_away(const char *tmp)
{
    char *marker = pl_test_path(tmp, PL__TMP_MARKER);
    cr_assert_eq(lchown(marker, PL_TEST_NOBODY, PL_TEST_NOBODY), 0, "%s: %s", marker,
                 strerror(errno));
    free(marker);
}

Test(tmpdir, abandoned_holding_a_symlink_left_alone) { expect_left_alone(add_link); }

Test(tmpdir, abandoned_holding_a_directory_left_alone) { expect_left_alone(add_subdir); }

Test(tmpdir, abandoned_of_another_user_left_alone)
{
    need_root();
    expect_left_alone(give_dir_away);
}

Test(tmpdir, abandoned_with_another_users_marker_left_alone)
{
    need_root();
    expect_left_alone(give_marker_away);
}

/* A directory its owner may write and search but not list (a drop box):
 * the build goes ahead, without a sweep. */
Test(tmpdir, build_into_an_unlistable_directory)
{
    need_root();
    char *drop = pl_test_path(F.dir, "drop"), *out = pl_test_path(drop, "db");
    cr_assert_eq(mkdir(drop, 0755), 0);
    cr_assert_eq(chown(drop, PL_TEST_NOBODY, PL_TEST_NOBODY), 0);
    cr_assert_eq(chmod(drop, 0333), 0);
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        pl_test_become_nobody();
        pl_err err;
        int rc = build_from(out, F.genes, &err);
        pl_test_send(fd, &rc, sizeof rc);
        pl_test_send(fd, &err, sizeof err);
        _exit(0);
    }
    track(pid, 1);
    int rc = -1;
    pl_err err = {0};
    pl_test_recv(fd, &rc, sizeof rc);
    pl_test_recv(fd, &err, sizeof err);
    close(fd);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    untrack(pid);
    cr_assert_eq(rc, 0, "building %s as nobody: %d (%s): %s", out, rc, pl_errname(rc), err.msg);
    struct stat st;
    cr_assert_eq(stat(out, &st), 0);
    cr_expect(S_ISDIR(st.st_mode) && st.st_uid == PL_TEST_NOBODY);
    free(drop);
    free(out);
}
