/* `pertload bench memory --table DB`: the memory of N serve ranks (world size
 * N, one node) over one database, with the shared sample table and with a
 * table per rank (--no-shared-table). Memory is the proportional set size
 * (Pss of /proc/PID/smaps_rollup): a page mapped by k processes counts 1/k in
 * each, so the sum over the ranks counts a shared table once. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "json.h"

#define MAX_RANKS 256

/* Pss (kB) of process `pid`: all of it, or (with `mapping`) of the mappings
 * whose path holds `mapping`, the first such path into `file` (when empty).
 * @return -1 when /proc cannot be read. */
static long long pss_kb(pid_t pid, const char *mapping, char *file, size_t cap)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, mapping ? "smaps" : "smaps_rollup");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long kb = 0;
    int in = !mapping;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (mapping && ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'))) {
            char *at = strstr(line, mapping);
            in = at != NULL;
            if (in && file && !file[0]) { /* the path starts at the '/' before it */
                while (at > line && at[-1] != ' ')
                    at--;
                snprintf(file, cap, "%.*s", (int)strcspn(at, " \n"), at);
            }
        }
        if (in && sscanf(line, "Pss: %llu kB", &v) == 1)
            kb += (long long)v;
    }
    fclose(f);
    return kb;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct run {
    long long total_kb, table_kb; /* Pss of the ranks, and of their table mappings */
    unsigned long long table_bytes;
    double ready_s;               /* until every rank had its table */
} run;

/* Start `n` ranks, wait until each made its ring (its table is loaded),
 * measure, stop them (SIGTERM: they remove their ring and table). */
static int measure(const char *exe, const char *db, int n, int shared, run *out)
{
    pid_t pid[MAX_RANKS];
    char ring[MAX_RANKS][64], cpid[32];
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int started = 0, rc = 0;
    for (int r = 0; r < n; r++) {
        char rank[16], world[16];
        snprintf(rank, sizeof rank, "%d", r);
        snprintf(world, sizeof world, "%d", n);
        snprintf(ring[r], sizeof ring[r], "bench-table-%d-%d", (int)getpid(), r);
        pid[r] = fork();
        if (pid[r] < 0) {
            rc = -1;
            break;
        }
        if (pid[r] == 0) {
            char *argv[] = {(char *)exe, "serve", (char *)db, "--ring", ring[r], "--rank", rank,
                            "--world-size", world, "--slots", "2", "--consumer-pid", cpid,
                            "--quiet", shared ? NULL : "--no-shared-table", NULL};
            execv(exe, argv);
            _exit(127);
        }
        started++;
    }
    memset(out, 0, sizeof *out);
    for (int r = 0; r < started && rc == 0; r++) {
        char p[128];
        snprintf(p, sizeof p, "/dev/shm/pertload-%.63s", ring[r]);
        while (access(p, F_OK) != 0) {
            int st;
            if (waitpid(pid[r], &st, WNOHANG) == pid[r]) {
                fprintf(stderr, "pertload bench memory: rank %d exited (status 0x%x)\n", r, st);
                pid[r] = 0;
                rc = -1;
                break;
            }
            sleep_ms(2);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->ready_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    sleep_ms(500); /* each producer fills its slots, then waits for its consumer */
    char file[512] = "";
    for (int r = 0; r < started && rc == 0; r++) {
        long long all = pss_kb(pid[r], NULL, NULL, 0);
        long long tab = pss_kb(pid[r], "pertload-table-", file, sizeof file);
        if (all < 0 || tab < 0)
            rc = -1;
        out->total_kb += all;
        out->table_kb += tab;
    }
    struct stat st;
    if (file[0] && stat(file, &st) == 0)
        out->table_bytes = (unsigned long long)st.st_size;
    for (int r = 0; r < started; r++)
        if (pid[r] > 0) {
            kill(pid[r], SIGTERM);
            waitpid(pid[r], NULL, 0);
        }
    return rc;
}

int pl_bench_memory_table(const char *db, int ranks, const char *json)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0 || ranks < 1 || ranks > MAX_RANKS) {
        fprintf(stderr, "pertload bench memory: %s\n",
                len <= 0 ? strerror(errno) : "--ranks is 1 to 256");
        return len <= 0 ? 1 : 2;
    }
    exe[len] = 0;
    run priv, shared;
    if (measure(exe, db, ranks, 0, &priv) < 0 || measure(exe, db, ranks, 1, &shared) < 0) {
        fprintf(stderr, "pertload bench memory: a rank failed\n");
        return 1;
    }
    double mib = 1024.0, table = (double)shared.table_bytes / 1048576.0;
    /* The ranks without any table: the private run less its N tables. */
    double base = (double)priv.total_kb / mib - ranks * table;
    double added = (double)shared.total_kb / mib - base - table;
    printf("%d serve ranks of %s, Pss summed over the ranks once each had its table:\n",
           ranks, db);
    printf("  table per rank (--no-shared-table)  %9.1f MiB  (ready in %.2f s)\n",
           (double)priv.total_kb / mib, priv.ready_s);
    printf("  shared table (default)              %9.1f MiB  (ready in %.2f s)\n",
           (double)shared.total_kb / mib, shared.ready_s);
    printf("  one table                           %9.1f MiB; the ranks' table mappings "
           "%.1f MiB in all\n", table, (double)shared.table_kb / mib);
    printf("  saved %.1f MiB; the shared tables add %.1f MiB in all beyond one table\n",
           (double)(priv.total_kb - shared.total_kb) / mib, added);
    pl_bench_json j;
    if (pl_bench_json_open(&j, json) < 0)
        return 1;
    pl_bench_json_num(&j, "ranks", ranks);
    pl_bench_json_num(&j, "table_bytes", (double)shared.table_bytes);
    pl_bench_json_num(&j, "pss_private_bytes", (double)priv.total_kb * 1024);
    pl_bench_json_num(&j, "pss_shared_bytes", (double)shared.total_kb * 1024);
    pl_bench_json_num(&j, "pss_table_mappings_bytes", (double)shared.table_kb * 1024);
    pl_bench_json_num(&j, "added_beyond_one_table_bytes", added * 1048576.0);
    return pl_bench_json_close(&j) < 0;
}
