/* pertload top: throughput and stall times of the rings running on this machine.
 * Rates come from two snapshots of the rings' shared counters taken an interval
 * apart; a wait share is the part of the interval a side spent blocked. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ring/ring_layout.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The rings whose producer lives, into a growing array; dead ones are counted
 * in `*stale`. @return the number kept, or a negative code. */
static int snapshot(pl_ring_stats **buf, int *cap, int *stale)
{
    int n;
    for (;;) {
        n = pl_ring_list(*buf, *cap);
        if (n <= *cap)
            break;
        pl_ring_stats *b = realloc(*buf, (size_t)n * 2 * sizeof *b);
        if (!b)
            return -ENOMEM;
        *buf = b;
        *cap = n * 2;
    }
    if (n < 0)
        return n;
    int kept = 0;
    *stale = 0;
    for (int i = 0; i < n; i++) {
        if (pl__shm_pid_alive((*buf)[i].producer_pid, 0))
            (*buf)[kept++] = (*buf)[i];
        else
            (*stale)++;
    }
    return kept;
}

/* The same ring in an earlier snapshot, or NULL. */
static const pl_ring_stats *find(const pl_ring_stats *v, int n, const pl_ring_stats *r)
{
    for (int i = 0; i < n; i++)
        if (v[i].producer_pid == r->producer_pid && v[i].created_ns == r->created_ns &&
            !strcmp(v[i].name, r->name))
            return &v[i];
    return NULL;
}

static void percent(char *buf, size_t cap, uint64_t now, uint64_t before, double dt)
{
    double p = now >= before ? (double)(now - before) * 1e-9 / dt * 100.0 : 0.0;
    snprintf(buf, cap, "%.1f%%", p > 100.0 ? 100.0 : p);
}

/* The job and rank of a consumer process, from the environment it started
 * with (/proc/PID/environ; another user's is unreadable): torchrun's
 * TORCHELASTIC_RUN_ID, else Slurm's SLURM_JOB_ID, else MASTER_ADDR and
 * MASTER_PORT; the rank from RANK, else SLURM_PROCID. @return 1 when found. */
static int job_of(int32_t pid, char *job, size_t cap, long *rank)
{
    char path[64], *env = NULL, *v[5] = {0};
    static const char *keys[] = {"TORCHELASTIC_RUN_ID=", "SLURM_JOB_ID=", "MASTER_ADDR=",
                                 "MASTER_PORT=", "RANK="};
    const char *procid = NULL;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = pid > 0 ? fopen(path, "re") : NULL;
    size_t len = 0;
    if (f && (env = malloc(1 << 18)))
        len = fread(env, 1, (1 << 18) - 1, f);
    if (f)
        fclose(f);
    if (!env)
        return 0;
    env[len] = 0;
    for (char *e = env; e < env + len; e += strlen(e) + 1) {
        for (int k = 0; k < 5; k++)
            if (!strncmp(e, keys[k], strlen(keys[k])))
                v[k] = e + strlen(keys[k]);
        if (!strncmp(e, "SLURM_PROCID=", 13))
            procid = e + 13;
    }
    int found = 1;
    if (v[0])
        snprintf(job, cap, "torchrun %s", v[0]);
    else if (v[1])
        snprintf(job, cap, "slurm %s", v[1]);
    else if (v[2] && v[3])
        snprintf(job, cap, "%s:%s", v[2], v[3]);
    else
        found = 0;
    const char *r = v[4] ? v[4] : procid;
    *rank = r ? strtol(r, NULL, 10) : -1;
    free(env);
    return found;
}

/* Per job (rings whose consumers share a job): each rank's samples/s and
 * stall share (the consumer's wait for data), and the spread between the
 * fastest and the slowest rank. */
static void print_jobs(const pl_ring_stats *cur, int n, const pl_ring_stats *prev, int n_prev,
                       double dt)
{
    char (*job)[96] = calloc((size_t)n, sizeof *job);
    long *rank = calloc((size_t)n, sizeof *rank);
    int *has = calloc((size_t)n, sizeof *has), *done = calloc((size_t)n, sizeof *done);
    if (!job || !rank || !has || !done)
        goto out;
    for (int i = 0; i < n; i++)
        has[i] = job_of(cur[i].consumer_pid, job[i], sizeof job[i], &rank[i]);
    for (int i = 0; i < n; i++) {
        if (!has[i] || done[i])
            continue;
        int count = 0, fast = -1, slow = -1;
        double rate_f = 0, rate_s = 0;
        for (int j = i; j < n; j++)
            count += has[j] && !done[j] && !strcmp(job[i], job[j]);
        printf("\njob %s: %d ring%s\n  %6s  %-24s %11s %7s\n", job[i], count,
               count == 1 ? "" : "s", "RANK", "RING", "SAMPLES/S", "STALL");
        for (int j = i; j < n; j++) {
            if (!has[j] || done[j] || strcmp(job[i], job[j]))
                continue;
            done[j] = 1;
            const pl_ring_stats *r = &cur[j], *p = find(prev, n_prev, r);
            char rk[24], rate[24] = "-", stall[16] = "-";
            snprintf(rk, sizeof rk, rank[j] >= 0 ? "%ld" : "?", rank[j]);
            if (p && dt > 0) {
                uint64_t ds = r->samples_consumed >= p->samples_consumed
                                  ? r->samples_consumed - p->samples_consumed : 0;
                double x = (double)ds / dt;
                snprintf(rate, sizeof rate, "%.1f", x);
                percent(stall, sizeof stall, r->consumer_wait_ns, p->consumer_wait_ns, dt);
                if (fast < 0 || x > rate_f)
                    fast = j, rate_f = x;
                if (slow < 0 || x < rate_s)
                    slow = j, rate_s = x;
            }
            printf("  %6s  %-24s %11s %7s\n", rk, r->name, rate, stall);
        }
        if (fast >= 0 && count > 1)
            printf("  spread: fastest %.1f samples/s (rank %ld), slowest %.1f (rank %ld): "
                   "%.2fx\n", rate_f, rank[fast], rate_s, rank[slow],
                   rate_s > 0 ? rate_f / rate_s : 0.0);
    }
out:
    free(job);
    free(rank);
    free(has);
    free(done);
}

static void print_table(const pl_ring_stats *cur, int n, const pl_ring_stats *prev, int n_prev,
                        double dt, int stale)
{
    int w = 4;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(cur[i].name);
        w = l > w ? l : w;
    }
    printf("%-*s %8s %8s %16s %15s %11s %9s %9s  %s\n", w, "RING", "PRODUCER", "CONSUMER",
           "SLOTS", "BATCHES", "SAMPLES/S", "PROD WAIT", "CONS WAIT", "STATE");
    for (int i = 0; i < n; i++) {
        const pl_ring_stats *r = &cur[i];
        const pl_ring_stats *p = find(prev, n_prev, r);
        char cons[16], slots[48], size[24], batches[48], rate[24], pw[16], cw[16];
        if (r->consumer_pid > 0)
            snprintf(cons, sizeof cons, "%d", (int)r->consumer_pid);
        else
            snprintf(cons, sizeof cons, "-");
        pl_cli_bytes(size, sizeof size, r->slot_bytes);
        snprintf(slots, sizeof slots, "%u x %s", r->n_slots, size);
        unsigned long long done = r->batches_consumed, total = r->n_batches;
        if (total)
            snprintf(batches, sizeof batches, "%llu/%llu", done, total);
        else
            snprintf(batches, sizeof batches, "%llu/?", done);
        if (p && dt > 0) {
            uint64_t ds = r->samples_consumed >= p->samples_consumed
                              ? r->samples_consumed - p->samples_consumed : 0;
            snprintf(rate, sizeof rate, "%.1f", (double)ds / dt);
            percent(pw, sizeof pw, r->producer_wait_ns, p->producer_wait_ns, dt);
            percent(cw, sizeof cw, r->consumer_wait_ns, p->consumer_wait_ns, dt);
        } else {
            snprintf(rate, sizeof rate, "-");
            snprintf(pw, sizeof pw, "-");
            snprintf(cw, sizeof cw, "-");
        }
        const char *state = r->state == PL_RING_RUNNING ? "running"
                            : r->state == PL_RING_DONE  ? "done"
                            : r->state == PL_RING_FAILED ? "failed"
                                                         : "?";
        printf("%-*s %8d %8s %16s %15s %11s %9s %9s  %s\n", w, r->name, (int)r->producer_pid,
               cons, slots, batches, rate, pw, cw, state);
    }
    if (stale)
        printf("(%d stale segment%s of dead producers in /dev/shm)\n", stale,
               stale == 1 ? "" : "s");
    print_jobs(cur, n, prev, n_prev, dt);
}

int pl_cmd_top(int argc, char **argv)
{
    const char *usage = "[--once] [--interval SECONDS]";
    int once = 0;
    double interval = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: pertload top %s\n\n"
                   "Every running ring: producer and consumer pids, slots, batches consumed,\n"
                   "samples consumed per second, and the share of the interval the producer\n"
                   "waited for a free slot and the consumer waited for data. Rings whose\n"
                   "consumers belong to one job (TORCHELASTIC_RUN_ID, SLURM_JOB_ID or\n"
                   "MASTER_ADDR:MASTER_PORT in their environment) are grouped: each rank's\n"
                   "samples/s and stall share, and the fastest against the slowest rank.\n"
                   "  --once          take two snapshots an interval apart, print, exit\n"
                   "  --interval S    seconds between snapshots (default 1)\n", usage);
            return 0;
        } else if (!strcmp(argv[i], "--once")) {
            once = 1;
        } else if (!strcmp(argv[i], "--interval")) {
            if (i + 1 >= argc)
                return pl_cli_usage("top", usage, "--interval needs a number of seconds");
            if (pl_cli_f64(argv[++i], &interval) < 0 || !(interval > 0 && interval <= 3600))
                return pl_cli_usage("top", usage,
                                    "--interval: '%s' is not a number of seconds in (0, 3600]",
                                    argv[i]);
        } else {
            return pl_cli_usage("top", usage, "unknown argument '%s'", argv[i]);
        }
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(STDOUT_FILENO);

    int cap[2] = {64, 64}, n[2], stale = 0, rc = 0, cur = 0, shown = 0;
    pl_ring_stats *snap[2] = {malloc(64 * sizeof(pl_ring_stats)),
                              malloc(64 * sizeof(pl_ring_stats))};
    if (!snap[0] || !snap[1]) {
        rc = pl_cli_fail("top", -ENOMEM, NULL);
        goto out;
    }
    n[cur] = snapshot(&snap[cur], &cap[cur], &stale);
    double t_prev = mono_s();
    if (n[cur] < 0) {
        rc = pl_cli_fail("top", n[cur], NULL);
        goto out;
    }
    if (n[cur] == 0) {
        printf("no pertload rings running\n");
        goto out;
    }
    while (!stop) {
        struct timespec ts = {.tv_sec = (time_t)interval,
                              .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};
        if (nanosleep(&ts, NULL) < 0 && stop)
            break;
        int nxt = !cur;
        n[nxt] = snapshot(&snap[nxt], &cap[nxt], &stale);
        double t = mono_s();
        if (n[nxt] < 0) {
            rc = pl_cli_fail("top", n[nxt], NULL);
            goto out;
        }
        if (!once) {
            if (tty)
                printf("\033[H\033[J");
            else if (shown)
                printf("\n");
            shown = 1;
            time_t wall = time(NULL);
            struct tm tm;
            char when[32];
            strftime(when, sizeof when, "%H:%M:%S", localtime_r(&wall, &tm));
            printf("pertload top - %s, every %.3g s (Ctrl-C quits)\n", when, interval);
        }
        if (n[nxt] == 0)
            printf("no pertload rings running\n");
        else
            print_table(snap[nxt], n[nxt], snap[cur], n[cur], t - t_prev, stale);
        fflush(stdout);
        cur = nxt;
        t_prev = t;
        if (once)
            break;
    }
out:
    free(snap[0]);
    free(snap[1]);
    return rc;
}
