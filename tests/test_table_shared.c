/* The shared sample table of `pertload serve` (loader/table.h): real serve
 * processes over a database built by `pertload synth` + `pertload build`,
 * real segments in /dev/shm.
 *   - 16 ranks (world size 16) cover every row exactly once, and their
 *     proportional set sizes hold one table between them, far below 16
 *     private tables (--no-shared-table, measured in the same run), and one
 *     graph: beyond the segment, a rank costs at most 16 MiB (the graph's
 *     lists alone are 23 MB a process at yeast scale);
 *   - loading the graph leaves no free heap resident (16 MiB a rank that
 *     glibc kept after the load's temporaries);
 *   - a creator stopped and then killed halfway leaves no rank hanging: the
 *     waiting ones rebuild and serve every row;
 *   - a segment of another user under the table's name is refused;
 *   - a truncated segment is an error, not a crash;
 *   - a database replaced at the same path gets a table of its own;
 *   - a complete table whose users were killed is attached by the next rank of
 *     its database, and removed when another database's table is built. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collate/slot.h"
#include "pertload.h"
#include "testutil.h"

#define RANKS 16

static char *base;

static void setup(void) { base = pl_test_tmpdir(); }

static void teardown(void)
{
    pl_test_rmtree(base);
    free(base);
}

/* Build a synthetic database of `n` samples (seed `seed`) at `db`. */
static void make_db(const char *db, unsigned n, unsigned seed)
{
    char syn[4200], ns[32], ss[32], err[4096];
    snprintf(syn, sizeof syn, "%s.syn", db);
    snprintf(ns, sizeof ns, "%u", n);
    snprintf(ss, sizeof ss, "%u", seed);
    char *sargv[] = {"pertload", "synth", syn, "--samples", ns, "--seed", ss, "--quiet", NULL};
    cr_assert_eq(pl_test_run_cli(sargv, err, sizeof err), 0, "synth: %s", err);
    char *args_path = pl_test_path(syn, "build-args.txt");
    size_t len;
    char *text = pl_test_read_file(args_path, &len);
    char *argv[64] = {"pertload", "build", "-o", (char *)db, "--quiet"};
    int argc = 5;
    for (char *line = strtok(text, "\n"); line && argc < 63; line = strtok(NULL, "\n"))
        argv[argc++] = line;
    argv[argc] = NULL;
    cr_assert_eq(pl_test_run_cli(argv, err, sizeof err), 0, "build: %s", err);
    free(text);
    free(args_path);
}

/* Start rank `rank` of `world` serving `db` into ring `ring`; stderr goes to
 * `log` (NULL: inherited). `extra` is an extra option or NULL. */
static pid_t start_rank(const char *db, const char *ring, int rank, int world,
                        const char *extra, const char *log)
{
    const char *bin = getenv("PERTLOAD_BIN");
    char r[16], w[16], cpid[32];
    snprintf(r, sizeof r, "%d", rank);
    snprintf(w, sizeof w, "%d", world);
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(126);
        }
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        char *argv[32] = {"pertload", "serve", (char *)db, "--ring", (char *)ring, "--rank", r,
                          "--world-size", w, "--batch-size", "256", "--slots", "4",
                          "--consumer-pid", cpid};
        int argc = 15;
        if (extra)
            argv[argc++] = (char *)extra;
        argv[argc] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    return pid;
}

/* Consume ring `ring` to its end, counting each row in `seen` [n].
 * @return the samples received. */
static uint64_t consume(const char *ring, uint32_t *seen, uint64_t n)
{
    pl_ring *r;
    pl_err err = {0};
    cr_assert_eq(pl_ring_attach(ring, 60000, &r, &err), 0, "attach %s: %s", ring, err.msg);
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    uint64_t got = 0;
    const void *slot;
    int rc;
    for (uint64_t b = 0; (rc = pl_ring_next(r, b, &slot, &err)) == 0; b++) {
        cr_assert_eq(pl_slot_check(slot, st.slot_bytes, &err), 0, "%s", err.msg);
        const struct pl_slot_header *h = slot;
        const struct pl_slot_array *a = (const struct pl_slot_array *)(h + 1);
        uint32_t k = 0;
        while (k < h->n_arrays && strcmp(a[k].name, "row"))
            k++;
        cr_assert_lt(k, h->n_arrays, "no row array");
        const uint64_t *rows = (const uint64_t *)((const char *)slot + a[k].offset);
        for (uint32_t i = 0; i < h->n_samples; i++) {
            cr_assert_lt(rows[i], n, "row %llu out of range", (unsigned long long)rows[i]);
            seen[rows[i]]++;
        }
        got += h->n_samples;
        pl_ring_release(r, b, h->n_samples);
    }
    cr_assert_eq(rc, 1, "ring %s ended with %d: %s", ring, rc, err.msg);
    pl_ring_detach(r);
    return got;
}

static void wait_ok(pid_t pid, const char *what)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status 0x%x", what, st);
}

static void check_once(const uint32_t *seen, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(seen[i], 1, "row %llu served %u times", (unsigned long long)i, seen[i]);
}

/* Consume ring `ring` to its end: its n rows, each exactly once. */
static void consume_each_once(const char *ring, uint64_t n)
{
    uint32_t *seen = calloc(n, sizeof *seen);
    cr_assert_not_null(seen);
    cr_assert_eq(consume(ring, seen, n), n);
    check_once(seen, n);
    free(seen);
}

/* Sum of the "Pss:" lines of /proc/PID/smaps_rollup, or of the mappings of
 * /proc/PID/smaps whose path holds `mapping` (kB). */
static uint64_t pss_kb(pid_t pid, const char *mapping)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, mapping ? "smaps" : "smaps_rollup");
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    uint64_t kb = 0;
    int in = !mapping;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (mapping && ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')))
            in = strstr(line, mapping) != NULL; /* a mapping's first line */
        if (in && sscanf(line, "Pss: %llu kB", &v) == 1)
            kb += v;
    }
    fclose(f);
    return kb;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait for ring `ring` of a rank. */
static void wait_ring(const char *ring)
{
    char p[1100];
    snprintf(p, sizeof p, "/dev/shm/pertload-%s", ring);
    for (int i = 0; access(p, F_OK) != 0; i++) {
        cr_assert_lt(i, 60000, "no ring %s", ring);
        sleep_ms(1);
    }
}

/* Wait until the producer of ring `ring` filled every slot it can before a
 * consumer takes one (batches produced: its slots, or the epoch when shorter). */
static void wait_filled(const char *ring)
{
    for (int i = 0;; i++) {
        int n = pl_ring_list(NULL, 0), cap = n + 16, full = 0;
        pl_ring_stats *v = calloc((size_t)cap, sizeof *v);
        cr_assert_not_null(v);
        n = pl_ring_list(v, cap);
        for (int k = 0; k < (n < cap ? n : cap); k++)
            if (!strcmp(v[k].name, ring) && v[k].n_batches &&
                v[k].batches_produced >= (v[k].n_batches < v[k].n_slots ? v[k].n_batches
                                                                         : v[k].n_slots))
                full = 1;
        free(v);
        if (full)
            return;
        cr_assert_lt(i, 60000, "ring %s: its slots were not filled", ring);
        sleep_ms(1);
    }
}

/* The table segment a rank named in its log `log` (it prints the path once
 * its ring is made). Other tests run beside this one and make segments of
 * their own: every check names the segment of its database. */
static void segment_in_log(const char *log, char *seg, size_t cap)
{
    for (int i = 0;; i++) {
        size_t len;
        char *text = pl_test_read_file(log, &len);
        char *at = strstr(text, "(/dev/shm/pertload-table-");
        if (at) {
            size_t k = strcspn(at + 1, ")");
            cr_assert_lt(k, cap);
            memcpy(seg, at + 1, k);
            seg[k] = 0;
            free(text);
            return;
        }
        cr_assert_lt(i, 20000, "no table path in: %s", text);
        free(text);
        sleep_ms(1);
    }
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static uint64_t table_bytes_seen; /* size of the last shared run's table */

/* 16 ranks, shared or not: every row once; returns the summed Pss (kB) of
 * the ranks once all of them are ready, and in `*table_kb` that of their
 * table mappings. */
static uint64_t run_ranks(const char *db, uint64_t n, const char *extra, uint64_t *table_kb,
                          char *seg, size_t cap)
{
    pid_t pid[RANKS];
    char ring[RANKS][64];
    for (int r = 0; r < RANKS; r++) {
        snprintf(ring[r], sizeof ring[r], "tshare-%d-%d", (int)getpid(), r);
        pid[r] = start_rank(db, ring[r], r, RANKS, extra, r == 0 ? seg : NULL);
    }
    /* A ring appears once its rank has its table and sized its slots. */
    for (int r = 0; r < RANKS; r++)
        wait_ring(ring[r]);
    for (int r = 0; r < RANKS; r++)
        wait_filled(ring[r]); /* each producer fills its slots and waits */
    uint64_t total = 0;
    *table_kb = 0;
    char log[4200];
    snprintf(log, sizeof log, "%s", seg);
    seg[0] = 0;
    if (!extra) { /* the shared table's path and size, while it is in use */
        segment_in_log(log, seg, cap);
        struct stat sst;
        cr_assert_eq(stat(seg, &sst), 0, "%s", seg);
        table_bytes_seen = (uint64_t)sst.st_size;
    }
    for (int r = 0; r < RANKS; r++) {
        total += pss_kb(pid[r], NULL);
        *table_kb += pss_kb(pid[r], "pertload-table-");
    }
    uint32_t *seen = calloc(n, sizeof *seen);
    uint64_t got = 0;
    for (int r = 0; r < RANKS; r++)
        got += consume(ring[r], seen, n);
    for (int r = 0; r < RANKS; r++)
        wait_ok(pid[r], "rank");
    cr_assert_eq(got, n);
    check_once(seen, n);
    free(seen);
    return total;
}

TestSuite(table_shared, .init = setup, .fini = teardown, .timeout = 300);

/* Built with AddressSanitizer: its allocator replaces glibc's heap and its
 * shadow memory inflates every process's resident size, so the tests of
 * memory sizes check only that the table is shared (the optimised and
 * coverage builds check the sizes). */
#if defined(__SANITIZE_ADDRESS__)
#define SIZES_MEASURED 0
#else
#define SIZES_MEASURED 1
#endif

Test(table_shared, sixteen_ranks_hold_one_table)
{
    char *db = pl_test_path(base, "db");
    const uint64_t n = 400000;
    make_db(db, n, 1);
    uint64_t tab_private, tab_shared;
    char *log = pl_test_path(base, "rank0.log"), seg[4200];
    snprintf(seg, sizeof seg, "%s", log);
    uint64_t priv = run_ranks(db, n, "--no-shared-table", &tab_private, seg, sizeof seg);
    cr_assert_eq(tab_private, 0, "a private run mapped a shared table");
    cr_assert_eq(seg[0], 0);
    snprintf(seg, sizeof seg, "%s", log);
    uint64_t shared = run_ranks(db, n, NULL, &tab_shared, seg, sizeof seg);
    cr_assert(!exists(seg), "the last rank left its table behind");
    /* The table's size: the ranks held it as long as this test held the name. */
    uint64_t table_kb = table_bytes_seen / 1024;
    free(log);
    cr_assert_gt(table_kb, n * 20 / 1024, "a table of %llu kB", (unsigned long long)table_kb);
    fprintf(stderr, "16 ranks of %llu samples: Pss %llu kB private, %llu kB shared "
            "(table mappings %llu kB in all)\n", (unsigned long long)n,
            (unsigned long long)priv, (unsigned long long)shared,
            (unsigned long long)tab_shared);
    /* One table between the 16, counted once by Pss... */
    cr_assert_gt(tab_shared, table_kb / 2, "the ranks did not map the shared table");
    if (!SIZES_MEASURED) {
        free(db);
        return;
    }
    cr_assert_lt(tab_shared, 2 * table_kb + RANKS * 4, "Pss of the table mappings %llu kB",
                 (unsigned long long)tab_shared);
    /* ... and at least 12 of the 16 private tables saved. */
    cr_assert_lt(shared + 12 * table_kb, priv, "shared %llu kB, private %llu kB",
                 (unsigned long long)shared, (unsigned long long)priv);
    /* The graph's lists are in the segment: what a rank holds beyond it (its
     * ring, plan, scratch; its share of the database's pages and libraries)
     * is far below a graph of its own. */
    uint64_t per_rank = (shared - tab_shared) / RANKS;
    cr_assert_lt(per_rank, 16 * 1024, "%llu kB a rank beyond the segment",
                 (unsigned long long)per_rank);
    free(db);
}

#if defined(__GLIBC__) && SIZES_MEASURED
/* Resident kB of this process's [heap] mapping (0 when it has none). */
static uint64_t heap_rss_kb(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    cr_assert_not_null(f);
    char line[1024];
    int in = 0;
    uint64_t kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'))
            in = strstr(line, "[heap]") != NULL;
        else if (in && sscanf(line, "Rss: %llu kB", &v) == 1)
            kb += v;
    }
    fclose(f);
    return kb;
}
#endif

Test(table_shared, graph_load_leaves_no_free_heap_resident)
{
#if defined(__GLIBC__) && SIZES_MEASURED
    char *db = pl_test_path(base, "db");
    make_db(db, 1000, 1); /* the yeast-scale graph of every serve rank */
    pl_db *d;
    pl_graph *g;
    pl_err err = {0};
    cr_assert_eq(pl_db_open(db, &d, &err), 0, "%s", err.msg);
    /* glibc raises its mmap threshold up to 32 MiB as large blocks are
     * freed, as in `serve` before its graph: the load's temporaries then
     * come from the heap. */
    cr_assert_eq(mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
    malloc_trim(0); /* what the build left */
    uint64_t before = heap_rss_kb();
    cr_assert_eq(pl_graph_load(d, &g, &err), 0, "%s", err.msg);
    uint64_t loaded = heap_rss_kb();
    malloc_trim(0);
    uint64_t trimmed = heap_rss_kb();
    fprintf(stderr, "heap: %llu kB before the load, %llu kB after, %llu kB trimmed\n",
            (unsigned long long)before, (unsigned long long)loaded,
            (unsigned long long)trimmed);
    /* Free pages the load left in the heap are what malloc_trim() returns. */
    cr_assert_lt(loaded - trimmed, 2048, "the load left %llu kB of free heap resident",
                 (unsigned long long)(loaded - trimmed));
    pl_graph_free(g);
    pl_db_close(d);
    free(db);
#else
    cr_skip_test("glibc's heap (AddressSanitizer replaces it)");
#endif
}

/* Serve `db` alone (world size 1) into ring `ring` with stderr into `log`. */
static pid_t serve_alone(const char *db, const char *ring, const char *log)
{
    return start_rank(db, ring, 0, 1, NULL, log);
}

/* Wait for `pid`; its exit status (the test fails on a signal). */
static int exit_status(pid_t pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "serve died of signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* The table segment's path of `db` (n samples): the one a lone rank
 * reports while it serves a whole epoch. */
static void segment_of(const char *db, uint64_t n, char *seg, size_t cap)
{
    char *log = pl_test_path(base, "probe.log"), ring[64];
    snprintf(ring, sizeof ring, "tprobe-%d", (int)getpid());
    pid_t pid = serve_alone(db, ring, log);
    wait_ring(ring);
    segment_in_log(log, seg, cap);
    uint32_t *seen = calloc(n, sizeof *seen);
    cr_assert_eq(consume(ring, seen, n), n);
    free(seen);
    wait_ok(pid, "probe");
    cr_assert(!exists(seg), "the probe left its segment");
    free(log);
}

/* Whether process `pid` is blocked on a file lock (a "->" line of
 * /proc/locks names the waiters). */
static int waits_for_lock(pid_t pid)
{
    FILE *f = fopen("/proc/locks", "r");
    cr_assert_not_null(f);
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *w = strstr(line, "->");
        char kind[32], adv[32], mode[32];
        int who;
        if (w && sscanf(w + 2, "%31s %31s %31s %d", kind, adv, mode, &who) == 4 && who == pid)
            found = 1;
    }
    fclose(f);
    return found;
}

/* Hold LOCK_SH on segment `seg` (as a user does), so that no creator of
 * another test's table removes it as unused meanwhile. */
static int hold(const char *seg)
{
    int fd = open(seg, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0 && flock(fd, LOCK_SH) == 0, "%s", seg);
    return fd;
}

Test(table_shared, creator_killed_halfway)
{
    char *db = pl_test_path(base, "db");
    const uint64_t n = 1000000;
    make_db(db, n, 2);
    char ring[4][64], seg[300];
    segment_of(db, n, seg, sizeof seg);
    for (int r = 0; r < 4; r++)
        snprintf(ring[r], sizeof ring[r], "tkill-%d-%d", (int)getpid(), r);
    /* Stop the creator halfway: the segment is there and the creator still
     * holds its exclusive lock (the table is not done). A loaded machine may
     * let it finish before the stop: then again, with a fresh creator. */
    pid_t creator = -1;
    for (int attempt = 0;; attempt++) {
        cr_assert_lt(attempt, 50, "the creator was never stopped halfway");
        creator = start_rank(db, ring[0], 0, 4, NULL, NULL);
        for (int i = 0; !exists(seg); i++) {
            cr_assert_lt(i, 600000, "no table segment appeared");
            usleep(100);
        }
        kill(creator, SIGSTOP);
        int st, fd = open(seg, O_RDONLY | O_CLOEXEC);
        cr_assert_eq(waitpid(creator, &st, WUNTRACED), creator);
        cr_assert(WIFSTOPPED(st));
        int halfway = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
        if (fd >= 0)
            close(fd);
        if (halfway)
            break;
        kill(creator, SIGKILL);
        waitpid(creator, NULL, 0);
        char p0[1100];
        snprintf(p0, sizeof p0, "/dev/shm/pertload-%s", ring[0]);
        unlink(p0);
        unlink(seg);
    }
    pid_t pid[4];
    for (int r = 1; r < 4; r++)
        pid[r] = start_rank(db, ring[r], r, 4, NULL, NULL);
    for (int r = 1; r < 4; r++) /* each waits for the creator's lock */
        for (int i = 0; !waits_for_lock(pid[r]); i++) {
            cr_assert_lt(i, 60000, "rank %d never waited for the table's lock", r);
            sleep_ms(1);
        }
    for (int r = 1; r < 4; r++) {
        char p[1100];
        snprintf(p, sizeof p, "/dev/shm/pertload-%s", ring[r]);
        cr_assert(!exists(p), "rank %d went on while the creator was stopped halfway (was it "
                              "done already?)", r);
    }
    kill(creator, SIGKILL);
    int st;
    cr_assert_eq(waitpid(creator, &st, 0), creator);
    cr_assert(WIFSIGNALED(st));
    /* Rank 0 again, and every rank serves its share. */
    pid[0] = start_rank(db, ring[0], 0, 4, NULL, NULL);
    uint32_t *seen = calloc(n, sizeof *seen);
    uint64_t got = 0;
    for (int r = 0; r < 4; r++)
        got += consume(ring[r], seen, n);
    for (int r = 0; r < 4; r++)
        wait_ok(pid[r], "rank");
    cr_assert_eq(got, n);
    check_once(seen, n);
    free(seen);
    cr_assert(!exists(seg), "the table segment was left behind");
    free(db);
}

/* Another user can predict the name and put a file there (/dev/shm is
 * sticky: this user cannot remove it); that stopped serve. Now serve warns
 * and keeps a private table, leaving the file alone. */
Test(table_shared, another_users_segment_means_a_private_table)
{
    char *db = pl_test_path(base, "db");
    make_db(db, 20000, 3);
    char seg[300];
    segment_of(db, 20000, seg, sizeof seg);
    pid_t child = fork();
    if (child == 0) {
        pl_test_become_nobody();
        int fd = open(seg, O_RDWR | O_CREAT | O_EXCL, 0600);
        _exit(fd >= 0 && ftruncate(fd, 1 << 20) == 0 ? 0 : 1);
    }
    wait_ok(child, "nobody's segment");
    char *log = pl_test_path(base, "serve.log"), ring[64];
    snprintf(ring, sizeof ring, "tother-%d", (int)getpid());
    pid_t pid = serve_alone(db, ring, log);
    wait_ring(ring);
    consume_each_once(ring, 20000);
    int rc = exit_status(pid);
    size_t len;
    char *text = pl_test_read_file(log, &len);
    cr_assert_eq(rc, 0, "serve failed: %s", text);
    cr_assert(strstr(text, "warning: ") && strstr(text, "belongs to uid 65534") &&
                  strstr(text, "this process uses a private sample table"),
              "%s", text);
    struct stat st;
    cr_assert_eq(stat(seg, &st), 0, "another user's segment was removed");
    cr_assert_eq(st.st_uid, 65534);
    cr_assert_eq(st.st_size, 1 << 20);
    unlink(seg);
    free(text);
    free(log);
    free(db);
}

/* A complete table segment of `db` left by a rank killed after its table was
 * done (its ring removed), its path in `seg`. @return a descriptor holding
 * LOCK_SH on it (hold()). */
static int complete_segment(const char *db, const char *ring, const char *log, char *seg,
                            size_t cap)
{
    char p[1100];
    pid_t a = serve_alone(db, ring, log);
    wait_ring(ring);
    segment_in_log(log, seg, cap);
    int fd = hold(seg);
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    snprintf(p, sizeof p, "/dev/shm/pertload-%s", ring);
    unlink(p);
    return fd;
}

/* A lone rank over `db` fails with a malformed sample table, for `why`. */
static void expect_refused(const char *db, const char *ring, const char *log, const char *why)
{
    int rc = exit_status(serve_alone(db, ring, log));
    size_t len;
    char *text = pl_test_read_file(log, &len);
    cr_assert_neq(rc, 0, "a damaged table was served (%s)", why);
    cr_assert(strstr(text, "malformed sample table") && strstr(text, why), "%s", text);
    free(text);
}

Test(table_shared, truncated_segment_is_an_error)
{
    char *db = pl_test_path(base, "db"), *log = pl_test_path(base, "serve.log");
    make_db(db, 20000, 4);
    char ring[64], seg[300];
    snprintf(ring, sizeof ring, "ttrunc-%d", (int)getpid());
    int fd = complete_segment(db, ring, log, seg, sizeof seg);
    struct stat st;
    cr_assert_eq(stat(seg, &st), 0);
    off_t sizes[2] = {st.st_size / 2, 100};
    const char *want[2] = {"size differs from the segment's", "shorter than its header"};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(truncate(seg, sizes[k]), 0);
        expect_refused(db, ring, log, want[k]);
    }
    close(fd);
    unlink(seg);
    free(log);
    free(db);
}

/* A complete segment altered in place (its magic, version, header or table
 * bytes), or another database's table under this one's name: each is an
 * error naming the reason, never a table served. An altered graph image is
 * no error: a rank serves an image only when it equals its own lists. */
Test(table_shared, altered_segment_is_an_error)
{
    char *db = pl_test_path(base, "db"), *other = pl_test_path(base, "other"),
         *log = pl_test_path(base, "serve.log");
    make_db(db, 20000, 4);
    make_db(other, 20000, 5);
    char ring[64], seg[300], seg_other[300];
    segment_of(other, 20000, seg_other, sizeof seg_other);
    snprintf(ring, sizeof ring, "talter-%d", (int)getpid());
    int fd = complete_segment(db, ring, log, seg, sizeof seg);
    static const struct {
        uint64_t off;
        const char *why;
    } cases[] = {{0, "magic is not"}, {8, "unsupported version"},
                 {40, "header checksum mismatch"}, {4096 + 8, "data checksum mismatch"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pl_test_xor_byte(seg, cases[k].off, 0x10);
        expect_refused(db, ring, log, cases[k].why);
        pl_test_xor_byte(seg, cases[k].off, 0x10);
    }
    /* A byte of the graph's image (its last page): the table is served, the
     * image is not (it differs from the lists the rank loaded itself). */
    struct stat st;
    cr_assert_eq(stat(seg, &st), 0);
    cr_assert_gt(st.st_size, 3 * 4096);
    pl_test_xor_byte(seg, (uint64_t)st.st_size - 4096 - 64, 0x10);
    pid_t a = serve_alone(db, ring, log);
    wait_ring(ring);
    consume_each_once(ring, 20000);
    wait_ok(a, "rank over a table with an altered graph image");
    pl_test_xor_byte(seg, (uint64_t)st.st_size - 4096 - 64, 0x10);
    /* The intact table of `db` under the name of `other`'s. */
    pl_test_copy_file(seg, seg_other);
    cr_assert_eq(chmod(seg_other, 0600), 0);
    int fd_other = hold(seg_other); /* in use: no other creator removes it */
    expect_refused(other, ring, log, "made for another database");
    close(fd_other);
    unlink(seg_other);
    close(fd);
    unlink(seg);
    free(log);
    free(other);
    free(db);
}

Test(table_shared, replaced_database_gets_its_own_table)
{
    char *db = pl_test_path(base, "db"), *other = pl_test_path(base, "other"),
         *old = pl_test_path(base, "db.old"), *log_a = pl_test_path(base, "a.log"),
         *log_b = pl_test_path(base, "b.log");
    make_db(db, 30000, 5);
    make_db(other, 50000, 6);
    /* A rank of the first database holds its table... */
    char ring_a[64], ring_b[64], seg_a[300], seg_b[300];
    snprintf(ring_a, sizeof ring_a, "trepl-a-%d", (int)getpid());
    snprintf(ring_b, sizeof ring_b, "trepl-b-%d", (int)getpid());
    pid_t a = serve_alone(db, ring_a, log_a);
    wait_ring(ring_a);
    segment_in_log(log_a, seg_a, sizeof seg_a);
    /* ... while another database takes its path. */
    cr_assert_eq(rename(db, old), 0);
    cr_assert_eq(rename(other, db), 0);
    pid_t b = serve_alone(db, ring_b, log_b);
    wait_ring(ring_b);
    segment_in_log(log_b, seg_b, sizeof seg_b);
    cr_assert_str_neq(seg_a, seg_b, "the new database attached the old table");
    cr_assert(exists(seg_a) && exists(seg_b));
    consume_each_once(ring_b, 50000);
    wait_ok(b, "rank over the new database");
    consume_each_once(ring_a, 30000);
    wait_ok(a, "rank over the old database");
    cr_assert(!exists(seg_a) && !exists(seg_b));
    free(db);
    free(other);
    free(old);
    free(log_a);
    free(log_b);
}

Test(table_shared, leftovers_are_reused_or_removed)
{
    char *db = pl_test_path(base, "db"), *other = pl_test_path(base, "other"),
         *log = pl_test_path(base, "serve.log");
    make_db(db, 20000, 7);
    make_db(other, 25000, 8);
    char ring[64], seg[300], p[1100];
    snprintf(ring, sizeof ring, "tleft-%d", (int)getpid());
    snprintf(p, sizeof p, "/dev/shm/pertload-%s", ring);
    /* Every user of a complete table killed: the segment stays... */
    pid_t a = serve_alone(db, ring, log);
    wait_ring(ring);
    segment_in_log(log, seg, sizeof seg);
    int fd = hold(seg);
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    unlink(p);
    cr_assert(exists(seg));
    /* ... and the next rank of that database attaches it. */
    pid_t b = serve_alone(db, ring, log);
    uint32_t *seen = calloc(25000, sizeof *seen);
    cr_assert_eq(consume(ring, seen, 20000), 20000);
    check_once(seen, 20000);
    wait_ok(b, "rank");
    size_t len;
    char *text = pl_test_read_file(log, &len);
    cr_assert(strstr(text, "attached from a shared table"), "%s", text);
    free(text);
    close(fd);
    /* Unused now: removed when the table of another database is built. */
    b = serve_alone(other, ring, NULL);
    wait_ring(ring);
    cr_assert(!exists(seg), "the unused table was kept");
    memset(seen, 0, 25000 * sizeof *seen);
    cr_assert_eq(consume(ring, seen, 25000), 25000);
    check_once(seen, 25000);
    wait_ok(b, "rank");
    free(seen);
    free(log);
    free(db);
    free(other);
}

/* A creator's temporary name is unlocked for a moment between its creation
 * and the creator's lock: a table built meanwhile for another database must
 * not take it for an unused leftover (found with 16 ranks of two databases
 * starting at once: "cannot link ...-new-... : No such file or directory"). */
Test(table_shared, fresh_temporary_name_of_another_creator_is_kept)
{
    char *db = pl_test_path(base, "db");
    make_db(db, 3000, 11);
    char tmp[200], ring[64];
    snprintf(tmp, sizeof tmp, "/dev/shm/pertload-table-%u-%016llx-new-%016llx",
             (unsigned)geteuid(), 0x5eedULL + (unsigned long long)getpid(),
             0xfeedULL + (unsigned long long)getpid());
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    cr_assert(fd >= 0, "%s: %s", tmp, strerror(errno));
    snprintf(ring, sizeof ring, "tfresh-%d", (int)getpid());
    pid_t pid = serve_alone(db, ring, NULL);
    wait_ring(ring);
    consume_each_once(ring, 3000);
    wait_ok(pid, "rank");
    int kept = exists(tmp);
    unlink(tmp);
    close(fd);
    cr_assert(kept, "a fresh temporary name of another creator was removed as unused");
    free(db);
}
