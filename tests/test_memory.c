/* Memory linear in the input, on the input that made it quadratic.
 *
 * 6,607 genes all take part in one reaction (GPR), which has 100,000 RMR rows:
 * 1.4 MB of input. An engine that keeps, per gene, the RMR positions of all
 * its reactions holds 6,607 x 100,000 of them: 2.6 GB to build, 5 GB to open.
 * Each stage runs as the real command in a child process: build, `masks
 * --genes`, `masks --all` and `serve` streaming an epoch to this process
 * through the ring, whose batches are checked here (every sample removes the
 * reaction and each of its 100,000 RMR edges). A stage must exit 0 with a
 * peak resident size (wait4's ru_maxrss) under LIMIT_MIB: the stages take
 * under 20 MiB (under 40 MiB built with AddressSanitizer), the quadratic
 * engine ten times the limit.
 *
 * Peak resident memory rather than RLIMIT_AS: the sanitizer builds reserve
 * terabytes of shadow address space, and build maps its LMDB environment for
 * 1 TiB. While a child runs, the parent samples its VmHWM and kills it past
 * the limit, so a regression fails in seconds instead of taking gigabytes of
 * a shared machine (the child is not reaped before, so its pid is its own). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collate/slot.h"
#include "pertload.h"
#include "testutil.h"

#define N_GENES 6607
#define N_RMR 100000
#define N_SAMPLES 7
#define BIG_SAMPLE 200 /* genes deleted by the last sample */
#define LIMIT_MIB 256
#define BATCH 3

static struct {
    char *dir;
    char db[4096];
    const char *bin;
} T;

static void fx_init(void)
{
    memset(&T, 0, sizeof T);
    T.dir = pl_test_tmpdir();
    snprintf(T.db, sizeof T.db, "%s/db", T.dir);
    T.bin = getenv("PERTLOAD_BIN");
    cr_assert_not_null(T.bin, "PERTLOAD_BIN is not set");
}

static void fx_fini(void)
{
    if (T.dir) {
        pl_test_rmtree(T.dir);
        free(T.dir);
    }
    memset(&T, 0, sizeof T);
}

TestSuite(memory, .init = fx_init, .fini = fx_fini, .timeout = 300);

/* Sample i's deleted genes, as the samples file lists them. */
static uint32_t sample_genes(uint32_t i, uint32_t *g)
{
    static const uint32_t fixed[][4] = {{0, 1}, {5}, {100, 200, 300, 400}, {N_GENES - 1},
                                        {7, 7, 3}, {6000, 12, 4000}};
    static const uint32_t n_fixed[] = {2, 1, 4, 1, 3, 3};
    if (i < N_SAMPLES - 1) {
        memcpy(g, fixed[i], sizeof fixed[i]);
        return n_fixed[i];
    }
    for (uint32_t j = 0; j < BIG_SAMPLE; j++)
        g[j] = j * 31 % N_GENES;
    return BIG_SAMPLE;
}

/* genes.txt, one edge type (a ring over the genes), every gene on reaction
 * R0 in gpr.tsv, R0's 100,000 rows in rmr.tsv, the samples. */
static void write_inputs(void)
{
    pl_test_text t = {0};
    for (uint32_t g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "YG%05u\n", g);
    free(pl_test_put_text(T.dir, "genes.txt", &t));
    for (uint32_t g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "YG%05u\tYG%05u\n", g, (g + 1) % N_GENES);
    free(pl_test_put_text(T.dir, "physical.tsv", &t));
    for (uint32_t g = 0; g < N_GENES; g++)
        pl_test_tprintf(&t, "YG%05u\tR0\n", g);
    free(pl_test_put_text(T.dir, "gpr.tsv", &t));
    for (uint32_t i = 0; i < N_RMR; i++)
        pl_test_tprintf(&t, "R0\tm%u\t%d\n", i, i % 2 ? 1 : -1);
    free(pl_test_put_text(T.dir, "rmr.tsv", &t));
    pl_test_tprintf(&t, "genes\tfitness\n");
    for (uint32_t i = 0; i < N_SAMPLES; i++) {
        uint32_t g[BIG_SAMPLE], n = sample_genes(i, g);
        for (uint32_t j = 0; j < n; j++)
            pl_test_tprintf(&t, "%sYG%05u", j ? ";" : "", g[j]);
        pl_test_tprintf(&t, "\t%.2f\n", 0.5 + i / 100.0);
    }
    free(pl_test_put_text(T.dir, "samples.tsv", &t));
}

/* VmHWM of process `pid` in KiB, or 0 when it cannot be read. */
static long vm_hwm_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* Wait for child `pid`, killing it if its peak resident size passes the
 * limit; returns its ru_maxrss in KiB, and its wait status in *status. */
static long wait_measured(pid_t pid, const char *what, int *status)
{
    struct rusage ru;
    int killed = 0;
    for (;;) {
        pid_t r = wait4(pid, status, WNOHANG, &ru);
        cr_assert_geq(r, 0, "%s: wait4 failed", what);
        if (r == pid)
            break;
        if (!killed && vm_hwm_kib(pid) > LIMIT_MIB * 1024L) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        usleep(2000);
    }
    long kib = ru.ru_maxrss;
    fprintf(stderr, "memory: %s: peak resident %ld KiB (limit %d MiB)%s\n", what, kib,
            LIMIT_MIB, killed ? ", killed past the limit" : "");
    cr_expect_lt(kib, LIMIT_MIB * 1024L, "%s: peak resident size %ld KiB, over %d MiB%s", what,
                 kib, LIMIT_MIB, killed ? " (killed)" : "");
    return kib;
}

/* Run `pertload argv...` with its stdout to file `out` (or /dev/null);
 * assert it exits 0 under the limit. */
static void run_stage(const char *what, const char *out, char *const argv[])
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(126);
        execv(T.bin, argv);
        _exit(127);
    }
    int st;
    wait_measured(pid, what, &st);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: exit status 0x%x", what, st);
}

static void build(void)
{
    char genes[4200], edges[4300], gpr[4200], rmr[4200], samples[4200];
    snprintf(genes, sizeof genes, "%s/genes.txt", T.dir);
    snprintf(edges, sizeof edges, "physical=%s/physical.tsv", T.dir);
    snprintf(gpr, sizeof gpr, "%s/gpr.tsv", T.dir);
    snprintf(rmr, sizeof rmr, "%s/rmr.tsv", T.dir);
    snprintf(samples, sizeof samples, "%s/samples.tsv", T.dir);
    char *argv[] = {"pertload", "build", "-o", T.db, "--genes", genes, "--edges", edges,
                    "--gpr", gpr, "--rmr", rmr, "--samples", samples, "--quiet", NULL};
    run_stage("build", NULL, argv);
}

/* Count the entries of the JSON array after "\"key\":[" in `s`, checking that
 * they are 0, 1, 2, ... (`ramp`) or just counting them. */
static long json_ints(const char *s, const char *key, int ramp)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":[", key);
    const char *p = strstr(s, pat);
    cr_assert_not_null(p, "no \"%s\" in the output", key);
    p += strlen(pat);
    long n = 0;
    while (*p != ']') {
        char *end;
        long v = strtol(p, &end, 10);
        cr_assert(end != p, "\"%s\": not a number at entry %ld", key, n);
        if (ramp)
            cr_assert_eq(v, n, "\"%s\": entry %ld is %ld", key, n, v);
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

Test(memory, one_reaction_shared_by_every_gene)
{
    write_inputs();
    build();

    char out[4200];
    snprintf(out, sizeof out, "%s/masks.json", T.dir);
    char *masks[] = {"pertload", "masks", T.db, "--genes", "YG00000,YG06606,YG03000", "--json",
                     NULL};
    run_stage("masks --genes", out, masks);
    size_t len;
    char *js = pl_test_read_file(out, &len);
    cr_expect_eq(json_ints(js, "rmr", 1), N_RMR);
    cr_expect_eq(json_ints(js, "reaction", 1), 1);
    cr_expect_eq(json_ints(js, "gpr", 0), 3);
    free(js);

    char *all[] = {"pertload", "masks", T.db, "--all", NULL};
    run_stage("masks --all", out, all);
    js = pl_test_read_file(out, &len);
    char want[128];
    snprintf(want, sizeof want, "masks of %d samples", N_SAMPLES);
    cr_expect(strstr(js, want) != NULL, "masks --all printed: %s", js);
    free(js);
}

/* ------------------------------------------------------------- serve */

typedef struct consumer {
    char ring[64];
    uint64_t batches, samples;
    char fail[PL_ERR_MSG_MAX + 256];
} consumer;

/* The arrays `name` of a checked slot, or NULL. */
static const struct pl_slot_array *array(const void *slot, const char *name)
{
    const struct pl_slot_header *h = slot;
    const struct pl_slot_array *a = (const struct pl_slot_array *)(h + 1);
    for (uint32_t i = 0; i < h->n_arrays; i++)
        if (!strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}

/* Every sample of the batch removes reaction 0 and RMR edges 0..N_RMR-1. */
static int check_batch(const void *slot, uint64_t slot_bytes, consumer *c)
{
    pl_err err = {0};
    if (pl_slot_check(slot, slot_bytes, &err) < 0) {
        snprintf(c->fail, sizeof c->fail, "batch %llu: %s", (unsigned long long)c->batches,
                 err.msg);
        return -1;
    }
    const struct pl_slot_header *h = slot;
    const char *names[2] = {"reaction", "rmr"};
    const uint64_t want[2] = {1, N_RMR};
    for (int k = 0; k < 2; k++) {
        char rn[64], pn[64];
        snprintf(rn, sizeof rn, "%s/removed", names[k]);
        snprintf(pn, sizeof pn, "%s/ptr", names[k]);
        const struct pl_slot_array *ra = array(slot, rn), *pa = array(slot, pn);
        if (!ra || !pa) {
            snprintf(c->fail, sizeof c->fail, "batch %llu: no %s", (unsigned long long)c->batches,
                     rn);
            return -1;
        }
        const int32_t *v = (const int32_t *)((const char *)slot + ra->offset);
        const int64_t *ptr = (const int64_t *)((const char *)slot + pa->offset);
        for (uint32_t i = 0; i < h->n_samples; i++) {
            uint64_t bad = ptr[i + 1] - ptr[i] != (int64_t)want[k];
            for (int64_t j = ptr[i]; !bad && j < ptr[i + 1]; j++)
                bad = v[j] != j - ptr[i];
            if (bad) {
                snprintf(c->fail, sizeof c->fail, "batch %llu, sample %u: %s is not 0..%llu",
                         (unsigned long long)c->batches, i, rn,
                         (unsigned long long)want[k] - 1);
                return -1;
            }
        }
    }
    c->samples += h->n_samples;
    return 0;
}

static void *consume(void *arg)
{
    consumer *c = arg;
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(c->ring, 60000, &r, &err) < 0) {
        snprintf(c->fail, sizeof c->fail, "attach: %s", err.msg);
        return NULL;
    }
    pl_ring_stats st;
    pl_ring_stats_get(r, &st);
    const void *slot;
    int rc;
    while ((rc = pl_ring_next(r, c->batches, &slot, &err)) == 0) {
        uint32_t n = ((const struct pl_slot_header *)slot)->n_samples;
        if (check_batch(slot, st.slot_bytes, c) < 0)
            break;
        pl_ring_release(r, c->batches++, n);
    }
    if (rc < 0)
        snprintf(c->fail, sizeof c->fail, "batch %llu: %s", (unsigned long long)c->batches,
                 err.msg);
    pl_ring_detach(r);
    return NULL;
}

Test(memory, serve_one_reaction_shared_by_every_gene)
{
    write_inputs();
    build();
    consumer c = {0};
    snprintf(c.ring, sizeof c.ring, "memory-test-%d", (int)getpid());
    char batch[16], cpid[32];
    snprintf(batch, sizeof batch, "%d", BATCH);
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        execl(T.bin, T.bin, "serve", T.db, "--ring", c.ring, "--batch-size", batch,
              "--threads", "2", "--slots", "2", "--consumer-pid", cpid, "--quiet",
              (char *)NULL);
        _exit(127);
    }
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, consume, &c), 0);
    int st;
    wait_measured(pid, "serve", &st);
    pthread_join(th, NULL);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "serve: exit status 0x%x", st);
    cr_expect_eq(c.fail[0], '\0', "consumer: %s", c.fail);
    cr_expect_eq(c.samples, N_SAMPLES, "%llu samples consumed", (unsigned long long)c.samples);
    cr_expect_eq(c.batches, (N_SAMPLES + BATCH - 1) / BATCH);
}
