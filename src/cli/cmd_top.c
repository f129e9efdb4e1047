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
        if (pl__ring_pid_alive((*buf)[i].producer_pid, 0))
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
                   "waited for a free slot and the consumer waited for data.\n"
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
