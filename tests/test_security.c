/* What pertload trusts and refuses (README "Threat model"):
 *  - ring names that could read as paths;
 *  - shared-memory segments that are not this user's regular files closed to
 *    group and others: made by another user (live or stale), opened up by
 *    chmod, or a FIFO planted under the name;
 *  - the database is only ever read at run time: every descriptor and mapping
 *    pl_db_open makes is read-only, and an unprivileged user serves a
 *    read-only copy (0444 files in a 0555 directory) end to end.
 * Another user's segment is made by a forked child that drops to uid/gid
 * 65534 (nobody), so those cases need root; the read-only case runs as
 * nobody under root and as the invoking user otherwise. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pertload.h"
#include "src/core/dbformat.h"
#include "testdb.h"
#include "testutil.h"

#define NOBODY PL_TEST_NOBODY

static const char *ring_name(const char *tag)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "sec-%s-%d", tag, (int)getpid());
    return buf;
}

static void shm_file(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/dev/shm/pertload-%s", name);
}

static void expect_msg(const pl_err *e, const char *want)
{
    cr_expect(strstr(e->msg, want) != NULL, "message '%s' lacks '%s'", e->msg, want);
}

static void need_root(void)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to act as another user (uid %d)", NOBODY);
}

/* ------------------------------------------------------------- names */

Test(security, ring_names_that_read_as_paths)
{
    static const char *const bad[] = {"a/b", "/abs", "..", "../x", "x/../y", "x..y", "..x",
                                      "x..", "", "sp ace", "nul\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pl_ring *r = (pl_ring *)&r;
        pl_err err = {0};
        int rc = pl_ring_create(bad[i], 2, 4096, 0, &r, &err);
        cr_assert_eq(rc, PL_EUSAGE, "create '%s': %d %s", bad[i], rc, err.msg);
        cr_assert_neq(err.msg[0], '\0');
        rc = pl_ring_attach(bad[i], 0, &r, &err);
        cr_assert_eq(rc, PL_EUSAGE, "attach '%s': %d %s", bad[i], rc, err.msg);
        cr_assert_null(r);
    }
    pl_err err = {0};
    pl_ring *r = (pl_ring *)&r;
    cr_assert_eq(pl_ring_attach("x..y", 0, &r, &err), PL_EUSAGE);
    expect_msg(&err, "ring name 'x..y' holds '..'");
    cr_assert_eq(pl_ring_attach("a/b", 0, &r, &err), PL_EUSAGE);
    expect_msg(&err, "holds character 0x2f");
    /* Single dots stay allowed. */
    char ok[64];
    snprintf(ok, sizeof ok, "sec.ok-%d_A.b", (int)getpid());
    cr_assert_eq(pl_ring_create(ok, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_destroy(r);
}

/* ------------------------------------------------- another user's ring */

/* A child, as nobody, creates ring `name`, reports on `ready` and then
 * destroys it when `go` closes (or leaves it behind, stale, with `stale`). */
static pid_t spawn_foreign(const char *name, int stale, int *go)
{
    int ready[2], gopipe[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(gopipe), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(ready[0]);
        close(gopipe[1]);
        pl_test_become_nobody();
        pl_ring *r;
        pl_err err = {0};
        char ok = pl_ring_create(name, 2, 4096, 0, &r, &err) == 0 ? 'y' : 'n';
        if (ok != 'y')
            fprintf(stderr, "nobody's pl_ring_create: %s\n", err.msg);
        if (write(ready[1], &ok, 1) != 1)
            _exit(91);
        if (ok != 'y')
            _exit(92);
        if (stale)
            _exit(0); /* dies holding it: a stale segment */
        char c;
        while (read(gopipe[0], &c, 1) > 0) {
        }
        pl_ring_destroy(r);
        _exit(0);
    }
    close(ready[1]);
    close(gopipe[0]);
    char ok = 0;
    cr_assert_eq(read(ready[0], &ok, 1), 1, "the child did not report");
    close(ready[0]);
    cr_assert_eq(ok, 'y', "nobody could not create a ring");
    *go = gopipe[1];
    return pid;
}

static void reap_ok(pid_t pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
}

static int ring_listed(const char *name)
{
    pl_ring_stats st[64];
    int n = pl_ring_list(st, 64);
    cr_assert_geq(n, 0);
    for (int i = 0; i < n && i < 64; i++)
        if (!strcmp(st[i].name, name))
            return 1;
    return 0;
}

Test(security, another_users_live_ring)
{
    need_root();
    const char *name = ring_name("live");
    char path[128];
    shm_file(path, sizeof path, name);
    int go;
    pid_t pid = spawn_foreign(name, 0, &go);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_uid, NOBODY);
    cr_assert_eq(st.st_mode & 0777, 0600);

    pl_ring *r = (pl_ring *)&r;
    pl_err err = {0};
    int rc = pl_ring_attach(name, 500, &r, &err);
    cr_assert_eq(rc, -EPERM, "attach: %d %s", rc, err.msg);
    cr_assert_null(r);
    expect_msg(&err, "belongs to uid 65534");
    expect_msg(&err, path);
    rc = pl_ring_create(name, 2, 4096, 0, &r, &err);
    cr_assert_eq(rc, -EPERM, "create over it: %d %s", rc, err.msg);
    expect_msg(&err, "refusing to use or remove another user's ring");
    cr_assert_eq(stat(path, &st), 0, "the other user's segment was removed");
    cr_assert(!ring_listed(name), "pl_ring_list shows another user's ring");

    close(go);
    reap_ok(pid);
    cr_assert_neq(stat(path, &st), 0, "the child did not remove its ring");
}

Test(security, another_users_stale_ring)
{
    need_root();
    const char *name = ring_name("stale");
    char path[128];
    shm_file(path, sizeof path, name);
    int go;
    pid_t pid = spawn_foreign(name, 1, &go);
    reap_ok(pid);
    close(go);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the stale segment is gone");
    pl_ring *r = (pl_ring *)&r;
    pl_err err = {0};
    int rc = pl_ring_create(name, 2, 4096, 0, &r, &err);
    cr_assert_eq(rc, -EPERM, "create over another user's stale ring: %d %s", rc, err.msg);
    cr_assert_eq(stat(path, &st), 0, "another user's stale segment was removed");
    rc = pl_ring_attach(name, 0, &r, &err);
    cr_assert_eq(rc, -EPERM, "attach: %d %s", rc, err.msg);
    cr_assert_eq(unlink(path), 0);
    /* Our own stale ring, by contrast, is cleared and the name reused. */
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &r, &err), 0, "%s", err.msg);
    pl_ring_destroy(r);
}

Test(security, ring_opened_to_group_or_others)
{
    const char *name = ring_name("mode");
    char path[128];
    shm_file(path, sizeof path, name);
    pl_ring *p, *c = (pl_ring *)&c;
    pl_err err = {0};
    cr_assert_eq(pl_ring_create(name, 2, 4096, 0, &p, &err), 0, "%s", err.msg);
    static const mode_t modes[] = {0660, 0606, 0640, 0604, 0620, 0602};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        cr_assert_eq(chmod(path, modes[i]), 0);
        int rc = pl_ring_attach(name, 0, &c, &err);
        cr_assert_eq(rc, -EPERM, "mode %04o: %d %s", (unsigned)modes[i], rc, err.msg);
        char want[64];
        snprintf(want, sizeof want, "has mode %04o", (unsigned)modes[i]);
        expect_msg(&err, want);
        cr_assert(!ring_listed(name));
    }
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(pl_ring_attach(name, 0, &c, &err), 0, "%s", err.msg);
    cr_assert(ring_listed(name));
    pl_ring_detach(c);
    pl_ring_destroy(p);
}

Test(security, fifo_planted_under_the_name)
{
    const char *name = ring_name("fifo");
    char path[128];
    shm_file(path, sizeof path, name);
    cr_assert_eq(mkfifo(path, 0600), 0, "%s", strerror(errno));
    pl_ring *r = (pl_ring *)&r;
    pl_err err = {0};
    alarm(20); /* an open that blocks on the FIFO ends the test */
    int rc = pl_ring_attach(name, 200, &r, &err);
    cr_assert_eq(rc, -EPERM, "attach: %d %s", rc, err.msg);
    expect_msg(&err, "is not a regular file");
    rc = pl_ring_create(name, 2, 4096, 0, &r, &err);
    cr_assert_eq(rc, -EPERM, "create: %d %s", rc, err.msg);
    cr_assert(!ring_listed(name));
    alarm(0);
    cr_assert_eq(unlink(path), 0);
}

/* ------------------------------------------------- read-only database */

/* Every descriptor of this process open on a file under `dir` is read-only
 * and every mapping of one is not writable; a descriptor of the file
 * `must_see` (a name in `dir`, or NULL) is among them. Returns how many
 * descriptors and mappings were seen. */
static int expect_read_only_access(const char *dir, const char *must_see)
{
    int saw_it = 0;
    char real[PATH_MAX];
    cr_assert_not_null(realpath(dir, real));
    size_t rl = strlen(real);
    int seen = 0;
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        char link[300], target[PATH_MAX], info[300];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, real, rl) != 0 || target[rl] != '/')
            continue;
        snprintf(info, sizeof info, "/proc/self/fdinfo/%s", e->d_name);
        FILE *f = fopen(info, "r");
        cr_assert_not_null(f);
        char line[256];
        unsigned flags = ~0u;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "flags: %o", &flags) == 1)
                break;
        fclose(f);
        cr_assert_eq(flags & O_ACCMODE, O_RDONLY, "%s open with flags 0%o", target, flags);
        saw_it |= must_see && !strcmp(target + rl + 1, must_see);
        seen++;
    }
    closedir(d);
    FILE *m = fopen("/proc/self/maps", "r");
    cr_assert_not_null(m);
    char line[PATH_MAX + 256];
    while (fgets(line, sizeof line, m)) {
        const char *p = strstr(line, real);
        if (!p)
            continue;
        char perms[8] = "";
        cr_assert_eq(sscanf(line, "%*s %7s", perms), 1);
        cr_assert_eq(perms[1], '-', "writable mapping: %s", line);
        seen++;
    }
    fclose(m);
    cr_assert(!must_see || saw_it, "no descriptor of %s/%s open", real, must_see);
    return seen;
}

Test(security, database_opened_read_only)
{
    pl_test_db t;
    pl_test_db_make(&t, 50, 300, 0.05, 8, 5);
    pl_err err = {0};
    pl_db *db;
    pl_graph *g;
    cr_assert_eq(pl_db_open(t.path, &db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_db_verify(db, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_graph_load(db, &g, &err), 0, "%s", err.msg);
    /* t.db is open too: both handles' descriptors and maps are checked. */
    cr_assert_geq(expect_read_only_access(t.path, PL_FILE_SAMPLES), 2,
                  "no descriptor or map of data.mdb and samples.pls found");
    /* The loader too (its own handle, the payload descriptors, O_DIRECT
     * included), while it runs. */
    pl_loader_opts o = {0};
    o.db = t.path;
    o.plan = (pl_plan_opts){.batch_size = 16, .world_size = 1};
    o.threads = 2;
    o.backend = PL_BACKEND_HOST;
    pl_loader *l;
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    pl_device_batch b;
    cr_assert_eq(pl_loader_next(l, &b, &err), 0, "%s", err.msg);
    expect_read_only_access(t.path, PL_FILE_PAYLOAD);
    pl_loader_release(l, &b);
    pl_loader_close(l);
    pl_graph_free(g);
    pl_db_close(db);
    pl_test_db_free(&t);
}

/* Make `path` and everything in it read-only: files 0444, directory 0555. */
static void make_read_only(const char *path)
{
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char p[8192 + 256];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        cr_assert_eq(chmod(p, 0444), 0, "%s: %s", p, strerror(errno));
    }
    closedir(d);
    cr_assert_eq(chmod(path, 0555), 0);
}

/* In the child: as an unprivileged user, open and verify the read-only copy,
 * check that it really cannot be written, run `pertload serve` on it and
 * consume the whole epoch. @return the exit status (0 ok). */
static int serve_read_only(const char *db, uint64_t n_samples)
{
    char probe[8300];
    snprintf(probe, sizeof probe, "%s/%s", db, PL_FILE_SAMPLES);
    if (open(probe, O_WRONLY) >= 0 || errno != EACCES) {
        fprintf(stderr, "%s is writable by this user\n", probe);
        return 10;
    }
    pl_db *h;
    pl_err err = {0};
    if (pl_db_open(db, &h, &err) < 0 || pl_db_verify(h, &err) < 0) {
        fprintf(stderr, "open/verify as uid %u: %s\n", (unsigned)geteuid(), err.msg);
        return 11;
    }
    pl_db_close(h);
    const char *bin = getenv("PERTLOAD_BIN");
    char name[64], cpid[32];
    snprintf(name, sizeof name, "sec-ro-%d", (int)getpid());
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    pid_t serve = fork();
    if (serve == 0) {
        execl(bin, bin, "serve", db, "--ring", name, "--batch-size", "32", "--threads", "2",
              "--consumer-pid", cpid, "--quiet", (char *)NULL);
        fprintf(stderr, "cannot run %s as uid %u: %s (every directory above the build must "
                        "be searchable by that user)\n",
                bin, (unsigned)geteuid(), strerror(errno));
        _exit(127);
    }
    pl_ring *r;
    if (pl_ring_attach(name, 20000, &r, &err) < 0) {
        fprintf(stderr, "attach: %s\n", err.msg);
        kill(serve, SIGKILL);
        return 12;
    }
    uint64_t b = 0, got = 0;
    int rc;
    const void *slot;
    while ((rc = pl_ring_next(r, b, &slot, &err)) == 0) {
        got++;
        pl_ring_release(r, b++, 0);
    }
    pl_ring_detach(r);
    int st;
    waitpid(serve, &st, 0);
    if (rc != 1 || got != (n_samples + 31) / 32) {
        fprintf(stderr, "serve as uid %u: rc %d after %llu batches: %s\n",
                (unsigned)geteuid(), rc, (unsigned long long)got, err.msg);
        return 13;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "serve exited with status 0x%x\n", st);
        return 14;
    }
    return 0;
}

Test(security, serve_a_read_only_database_as_another_user)
{
    cr_assert(getenv("PERTLOAD_BIN") && *getenv("PERTLOAD_BIN"), "PERTLOAD_BIN is not set");
    pl_test_db t;
    pl_test_db_make(&t, 50, 300, 0.05, 8, 6);
    char *base = pl_test_tmpdir();
    cr_assert_eq(chmod(base, 0755), 0);
    char ro[8192];
    snprintf(ro, sizeof ro, "%s/ro", base);
    cr_assert_eq(pl_test_copy_dir(t.path, ro), 3);
    make_read_only(ro);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (geteuid() == 0)
            pl_test_become_nobody();
        _exit(serve_read_only(ro, t.n_samples));
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "serving the read-only copy failed (child status 0x%x; see its stderr)", st);
    cr_assert_eq(chmod(ro, 0755), 0);
    pl_test_rmtree(base);
    free(base);
    pl_test_db_free(&t);
}
