/* Slots sized for typical batches (loader/parts.h): the delivery schedule and
 * the sizing policy on their own, then databases with outliers (one sample
 * deleting 15% of the genes, one deleting every gene, among double
 * deletions) streamed through `pertload serve` and the in-process loader
 * within a byte bound: every sample exactly once, in plan order, each equal
 * to the brute-force oracle, the batches too large for a slot in parts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collate/slot.h"
#include "loader/loader.h"
#include "loader/parts.h"
#include "loader/plan.h"
#include "testdb.h"
#include "testutil.h"

#define EXPECT(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            snprintf(why, sizeof why, __VA_ARGS__);                                           \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

static char why[PL_ERR_MSG_MAX + 256];

/* ------------------------------------------------------ delivery schedule */

Test(parts, schedule_maps_every_delivery)
{
    uint64_t seed = 5;
    for (int round = 0; round < 200; round++) {
        uint64_t nb = 1 + pl_test_below(&seed, 40);
        uint32_t B = 1 + (uint32_t)pl_test_below(&seed, 9);
        pl__parts s;
        pl__parts_init(&s, nb);
        /* the expected deliveries, batch by batch */
        pl__part *want = malloc(sizeof *want * nb * B);
        uint64_t nd = 0;
        for (uint64_t b = 0; b < nb; b++) {
            uint32_t cuts[16], np = 1;
            cuts[0] = 0;
            for (uint32_t i = 1; i < B && pl_test_below(&seed, 3) == 0; i++)
                cuts[np++] = i;
            if (np == 1) {
                want[nd++] = (pl__part){b, 0, 1, 0, 0};
                continue;
            }
            cr_assert_eq(pl__parts_split(&s, b, cuts, np, B, NULL), 0);
            for (uint32_t p = 0; p < np; p++) {
                uint32_t end = p + 1 < np ? cuts[p + 1] : B;
                want[nd++] = (pl__part){b, p, np, cuts[p], end - cuts[p]};
            }
        }
        cr_assert_eq(s.n_deliveries, nd);
        for (uint64_t d = 0; d < nd; d++) {
            pl__part got;
            pl__parts_get(&s, d, &got);
            cr_assert(!memcmp(&got, &want[d], sizeof got),
                      "round %d delivery %llu: batch %llu part %u/%u first %u n %u, expected "
                      "batch %llu part %u/%u first %u n %u", round, (unsigned long long)d,
                      (unsigned long long)got.batch, got.part, got.n_parts, got.first, got.n,
                      (unsigned long long)want[d].batch, want[d].part, want[d].n_parts,
                      want[d].first, want[d].n);
        }
        pl__parts_free(&s);
        free(want);
    }
}

Test(parts, schedule_refuses_bad_splits)
{
    pl__parts s;
    pl__parts_init(&s, 10);
    pl_err err;
    uint32_t ok[] = {0, 3}, unordered[] = {0, 5, 5}, late[] = {0, 9}, first[] = {1, 2};
    cr_assert_eq(pl__parts_split(&s, 4, ok, 2, 8, &err), 0, "%s", err.msg);
    cr_assert_eq(pl__parts_split(&s, 4, ok, 2, 8, &err), PL_EUSAGE, "the same batch twice");
    cr_assert_eq(pl__parts_split(&s, 2, ok, 2, 8, &err), PL_EUSAGE, "a batch before");
    cr_assert_eq(pl__parts_split(&s, 5, unordered, 3, 8, &err), PL_EUSAGE);
    cr_assert_eq(pl__parts_split(&s, 5, late, 2, 8, &err), PL_EUSAGE, "a part past the end");
    cr_assert_eq(pl__parts_split(&s, 5, first, 2, 8, &err), PL_EUSAGE, "not from sample 0");
    cr_assert_eq(pl__parts_split(&s, 5, ok, 1, 8, &err), PL_EUSAGE, "one part");
    cr_assert_eq(pl__parts_split(&s, 10, ok, 2, 8, &err), PL_EUSAGE, "past the run");
    cr_assert_eq(s.n_deliveries, 11);
    pl__parts_free(&s);
}

/* ---------------------------------------------------------- sizing policy */

Test(parts, fit_stays_within_the_limit)
{
    uint64_t seed = 9;
    const uint64_t P = 4096;
    for (int round = 0; round < 20000; round++) {
        pl__needs nd = {0};
        nd.one = P * (1 + pl_test_below(&seed, 64));
        nd.typical = P * (1 + pl_test_below(&seed, 64));
        nd.largest = nd.one + P * pl_test_below(&seed, 256);
        uint32_t want = 1 + (uint32_t)pl_test_below(&seed, 20);
        uint32_t keep = pl_test_below(&seed, 2) ? want : 1;
        uint64_t overhead = pl_test_below(&seed, 2) ? P : 0;
        uint64_t limit = overhead + 1 + pl_test_below(&seed, 80 * P * want);
        uint32_t n;
        uint64_t S;
        pl_err err;
        int rc = pl__parts_fit(&nd, want, keep, limit, overhead, "the limit", &n, &S, &err);
        uint64_t least = keep > 1 ? keep : 1, budget = limit - overhead;
        if (rc < 0) {
            cr_assert_eq(rc, PL_EUSAGE);
            cr_assert(least * nd.one > budget, "refused though %llu slots of %llu fit %llu",
                      (unsigned long long)least, (unsigned long long)nd.one,
                      (unsigned long long)budget);
            cr_assert(strstr(err.msg, "needs a slot of") && strstr(err.msg, "the limit"), "%s",
                      err.msg);
            continue;
        }
        cr_assert(n >= keep && n >= 1 && n <= want, "%u slots of %u, keep %u", n, want, keep);
        cr_assert(S % P == 0 && S >= nd.one, "slot %llu, one %llu", (unsigned long long)S,
                  (unsigned long long)nd.one);
        cr_assert((uint64_t)n * S <= budget, "%u x %llu over %llu", n, (unsigned long long)S,
                  (unsigned long long)budget);
        uint64_t full = nd.typical < nd.largest ? nd.typical : nd.largest;
        cr_assert(S <= (full > nd.one ? full : nd.one), "slot larger than needed");
        if (want * (full > nd.one ? full : nd.one) <= budget)
            cr_assert(n == want && S == (full > nd.one ? full : nd.one),
                      "everything fits: %u slots of %llu", n, (unsigned long long)S);
        if (keep <= 1 && want >= 2 && 2 * nd.one <= budget)
            cr_assert(n >= 2, "one slot though two of the largest sample fit");
    }
}

/* ------------------------------------------------ outlier databases: data */

#define N_GENES 400
#define N_SAMPLES 1500
#define BIG_ROW 700    /* deletes 15% of the genes (1,000 of 6,607 in yeast) */
#define ALL_ROW 1100   /* deletes every gene */

static pl_test_db db;

static void outliers_setup(void)
{
    pl_test_outlier out[] = {{BIG_ROW, N_GENES * 15 / 100}, {ALL_ROW, N_GENES}};
    pl_test_db_make_outliers(&db, N_GENES, N_SAMPLES, 0.02, 4, 21, out, 2);
    pl_test_db_load(&db);
}

static void outliers_teardown(void) { pl_test_db_free(&db); }

static const struct pl_slot_array *array(const void *slot, const char *name)
{
    const struct pl_slot_header *h = slot;
    const struct pl_slot_array *a = (const void *)(h + 1);
    for (uint32_t i = 0; i < h->n_arrays; i++)
        if (!strcmp(a[i].name, name))
            return &a[i];
    return NULL;
}

/* Name of list kind k of the test db's slots ("edges/<t>", ..., k = n_lists:
 * the genes). */
static void kind_name(uint32_t k, char *buf, size_t cap)
{
    static const char *const meta[] = {"gpr", "reaction", "rmr"};
    const pl_db_info *info = pl_db_info_get(db.db);
    if (k == db.n_lists)
        snprintf(buf, cap, "gene");
    else if (k < db.n_types)
        snprintf(buf, cap, "edges/%s", info->type_names[k]);
    else
        snprintf(buf, cap, "%s", meta[k - db.n_types]);
}

/* Sample i of the slot (row `row`) against the oracle: id, labels, payload,
 * every removed list and, with dense masks, every mask row. */
static int check_sample(const void *slot, uint32_t i, uint64_t row, uint32_t dense,
                        int32_t *oracle, unsigned char *P, unsigned char *mrow)
{
    const unsigned char *base = slot;
    const struct pl_slot_header *h = slot;
    const uint32_t n = h->n_samples;
    const struct pl_slot_array *a = array(slot, "sample_id");
    EXPECT(a && ((const uint64_t *)(base + a->offset))[i] == db.table.ids[row], "row %llu: id",
          (unsigned long long)row);
    a = array(slot, "labels");
    uint32_t L = db.table.n_labels;
    EXPECT(a && !memcmp(base + a->offset + 4 * (uint64_t)i * L, db.table.labels + row * L,
                       4 * (size_t)L), "row %llu: labels", (unsigned long long)row);
    a = array(slot, "payload");
    uint64_t rb = db.payload_row_bytes;
    EXPECT(a && a->shape[0] == n &&
              !memcmp(base + a->offset + i * rb, db.payload + row * rb, rb),
          "row %llu: payload", (unsigned long long)row);
    pl_test_db_pert(&db, row, P);
    for (uint32_t k = 0; k <= db.n_lists; k++) {
        char kn[160], name[200];
        kind_name(k, kn, sizeof kn);
        snprintf(name, sizeof name, k == db.n_lists ? "perturbation_indices" : "%s/removed", kn);
        const struct pl_slot_array *pos = array(slot, name);
        snprintf(name, sizeof name, k == db.n_lists ? "perturbation_ptr" : "%s/ptr", kn);
        const struct pl_slot_array *ptr = array(slot, name);
        EXPECT(pos && ptr && ptr->shape[0] == n + 1, "%s: arrays", kn);
        const int64_t *pp = (const int64_t *)(base + ptr->offset);
        const int32_t *got = (const int32_t *)(base + pos->offset) + pp[i];
        uint64_t m = pl_test_oracle(&db, k, P, oracle);
        EXPECT(pp[i + 1] - pp[i] == (int64_t)m && !memcmp(got, oracle, 4 * m),
              "row %llu: %s: %lld positions, the oracle %llu", (unsigned long long)row, kn,
              (long long)(pp[i + 1] - pp[i]), (unsigned long long)m);
        if (!dense)
            continue;
        snprintf(name, sizeof name, "%s/mask", kn);
        const struct pl_slot_array *mask = array(slot, name);
        uint64_t rowb = pl__expand_row_bytes(dense, db.len[k]);
        EXPECT(mask && mask->shape[0] == n && mask->nbytes == rowb * n, "%s: mask", kn);
        pl_test_oracle_row(&db, k, P, dense, mrow);
        EXPECT(!memcmp(base + mask->offset + rowb * i, mrow, rowb), "row %llu: %s mask",
              (unsigned long long)row, kn);
    }
    return 0;
}

/* Follows the deliveries of an epoch: each continues the plan where the
 * last left off, whole batches or the parts of one in order. */
typedef struct tracker {
    const pl_plan *plan;
    uint64_t batch;          /* plan batch of the next delivery */
    uint32_t part, n_parts;  /* the next part of it and its parts (0: not begun) */
    uint64_t first;          /* its first sample */
    uint64_t *rows;          /* [batch size] */
    uint32_t *seen;          /* [N_SAMPLES] deliveries of each row */
    uint64_t deliveries, split, samples;
    int32_t *oracle;
    unsigned char *P, *mrow;
} tracker;

static void tracker_init(tracker *tr, const pl_plan *plan, uint32_t B, uint64_t start)
{
    memset(tr, 0, sizeof *tr);
    tr->plan = plan;
    tr->batch = start;
    tr->rows = malloc(8 * (size_t)B);
    tr->seen = calloc(N_SAMPLES, sizeof *tr->seen);
    uint64_t most = 0;
    for (uint32_t k = 0; k <= db.n_lists; k++)
        most = db.len[k] > most ? db.len[k] : most;
    tr->oracle = malloc(4 * most + 4);
    tr->P = malloc(db.n_genes);
    tr->mrow = malloc(most + 64);
}

static void tracker_free(tracker *tr)
{
    free(tr->rows);
    free(tr->seen);
    free(tr->oracle);
    free(tr->P);
    free(tr->mrow);
}

/* One delivery: its slot of `slot_bytes`, dense masks `dense`. */
static int track(tracker *tr, const void *slot, uint64_t slot_bytes, uint32_t dense,
                 uint64_t epoch)
{
    pl_err err = {0};
    EXPECT(pl_slot_check(slot, slot_bytes, &err) == 0, "delivery %llu: %s",
          (unsigned long long)tr->deliveries, err.msg);
    const struct pl_slot_header *h = slot;
    EXPECT(h->batch == tr->batch && h->epoch == epoch && h->dense == dense,
          "delivery %llu holds batch %llu of epoch %llu, batch %llu expected",
          (unsigned long long)tr->deliveries, (unsigned long long)h->batch,
          (unsigned long long)h->epoch, (unsigned long long)tr->batch);
    if (tr->n_parts == 0) {
        tr->n_parts = h->n_parts;
        tr->split += h->n_parts > 1;
    }
    EXPECT(h->part == tr->part && h->n_parts == tr->n_parts && h->first == tr->first,
          "batch %llu: part %u/%u at %llu, part %u/%u at %llu expected",
          (unsigned long long)h->batch, h->part, h->n_parts, (unsigned long long)h->first,
          tr->part, tr->n_parts, (unsigned long long)tr->first);
    uint32_t all = pl_plan_batch(tr->plan, tr->batch, tr->rows);
    EXPECT(h->n_samples >= 1 && h->first + h->n_samples <= all, "batch %llu: samples %llu+%u "
          "of %u", (unsigned long long)h->batch, (unsigned long long)h->first, h->n_samples,
          all);
    const struct pl_slot_array *r = array(slot, "row");
    EXPECT(r && r->shape[0] == h->n_samples, "row array");
    for (uint32_t i = 0; i < h->n_samples; i++) {
        uint64_t row = ((const uint64_t *)((const unsigned char *)slot + r->offset))[i];
        EXPECT(row == tr->rows[h->first + i], "batch %llu sample %llu: row %llu, plan %llu",
              (unsigned long long)h->batch, (unsigned long long)(h->first + i),
              (unsigned long long)row, (unsigned long long)tr->rows[h->first + i]);
        tr->seen[row]++;
        if (check_sample(slot, i, row, dense, tr->oracle, tr->P, tr->mrow))
            return 1;
    }
    tr->samples += h->n_samples;
    tr->deliveries++;
    tr->first += h->n_samples;
    if (++tr->part == tr->n_parts) {
        EXPECT(tr->first == all, "batch %llu ended at sample %llu of %u",
              (unsigned long long)tr->batch, (unsigned long long)tr->first, all);
        tr->batch++;
        tr->part = tr->n_parts = 0;
        tr->first = 0;
    }
    return 0;
}

/* The whole epoch from plan batch `start` came, every row once. */
static void tracker_done(const tracker *tr, uint64_t start)
{
    cr_assert_eq(tr->batch, pl_plan_n_batches(tr->plan), "ended at batch %llu of %llu",
                 (unsigned long long)tr->batch,
                 (unsigned long long)pl_plan_n_batches(tr->plan));
    cr_assert_eq(tr->part, 0, "ended within a batch");
    uint64_t B = tr->plan->o.batch_size, want = pl_plan_n_samples(tr->plan) - start * B;
    cr_assert_eq(tr->samples, want, "%llu samples, %llu expected",
                 (unsigned long long)tr->samples, (unsigned long long)want);
    uint64_t *rows = malloc(8 * B);
    uint32_t *plan_seen = calloc(N_SAMPLES, sizeof *plan_seen);
    for (uint64_t b = start; b < pl_plan_n_batches(tr->plan); b++)
        for (uint32_t i = 0, n = pl_plan_batch(tr->plan, b, rows); i < n; i++)
            plan_seen[rows[i]]++;
    for (uint64_t r = 0; r < N_SAMPLES; r++)
        cr_assert_eq(tr->seen[r], plan_seen[r], "row %llu delivered %u times, planned %u",
                     (unsigned long long)r, tr->seen[r], plan_seen[r]);
    free(rows);
    free(plan_seen);
}

static pl_plan *plan_of(uint32_t B, int shuffle, uint64_t epoch)
{
    pl_plan_opts po = {.n_samples = N_SAMPLES, .batch_size = B, .world_size = 1,
                       .shuffle = shuffle, .seed = 3, .epoch = epoch};
    pl_plan *p;
    pl_err err;
    cr_assert_eq(pl_plan_new(&po, &p, &err), 0, "%s", err.msg);
    return p;
}

/* ------------------------------------------------ outlier databases: serve */

/* Start `pertload serve` on the test db; stderr goes to `errfile`. */
static pid_t serve(const char *ring, const char *errfile, const char *const *extra)
{
    const char *bin = getenv("PERTLOAD_BIN");
    cr_assert(bin, "PERTLOAD_BIN is not set");
    char cpid[32];
    snprintf(cpid, sizeof cpid, "%d", (int)getpid());
    const char *argv[40] = {bin, "serve", db.path, "--ring", ring, "--consumer-pid", cpid,
                            "--quiet"};
    int n = 8;
    for (; extra && *extra; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0)
            dup2(fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Serve an epoch of the outlier db under `limit` and check every delivery. */
static void serve_epoch(uint32_t B, uint32_t dense, uint64_t limit, uint64_t start,
                        uint64_t *split)
{
    char ring[64], lim[32], bs[16], st[32], errfile[4400];
    snprintf(ring, sizeof ring, "parts-%d", (int)getpid());
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)limit);
    snprintf(bs, sizeof bs, "%u", B);
    snprintf(st, sizeof st, "%llu", (unsigned long long)start);
    snprintf(errfile, sizeof errfile, "%s/serve.err", db.dir);
    const char *extra[] = {"--batch-size", bs, "--shuffle", "--seed", "3", "--epoch", "2",
                           "--threads", "3", "--max-ring-bytes", lim, "--start-batch", st,
                           dense ? "--dense" : NULL, dense == PL_MASK_BOOL ? "bool" : "bits",
                           NULL};
    pid_t pid = serve(ring, errfile, extra);
    pl_ring *r;
    pl_err err = {0};
    if (pl_ring_attach(ring, 30000, &r, &err) < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        size_t len;
        char *msg = pl_test_read_file(errfile, &len);
        cr_assert_fail("attach: %s (serve: %s)", err.msg, msg);
    }
    /* The segment itself, as /dev/shm holds it, within the bound. */
    char shm[128];
    snprintf(shm, sizeof shm, "/dev/shm/pertload-%s", ring);
    struct stat sb;
    cr_assert_eq(stat(shm, &sb), 0);
    pl_ring_stats rs;
    pl_ring_stats_get(r, &rs);
    cr_assert((uint64_t)sb.st_size <= limit && rs.total_bytes == (uint64_t)sb.st_size,
              "segment of %lld bytes, stats %llu, limit %llu", (long long)sb.st_size,
              (unsigned long long)rs.total_bytes, (unsigned long long)limit);
    pl_plan *plan = plan_of(B, 1, 2);
    tracker tr;
    tracker_init(&tr, plan, B, start);
    const void *slot;
    int rc;
    uint64_t d = 0;
    while ((rc = pl_ring_next(r, d, &slot, &err)) == 0) {
        int bad = track(&tr, slot, rs.slot_bytes, dense, 2);
        pl_ring_release(r, d++, 0);
        if (bad) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            pl_ring_detach(r);
            cr_assert_fail("%s", why);
        }
    }
    cr_assert_eq(rc, 1, "delivery %llu: %s", (unsigned long long)d, err.msg);
    pl_ring_stats_get(r, &rs);
    cr_assert_eq(rs.n_batches, tr.deliveries, "the ring announced %llu deliveries, %llu came",
                 (unsigned long long)rs.n_batches, (unsigned long long)tr.deliveries);
    pl_ring_detach(r);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "serve: status 0x%x", status);
    tracker_done(&tr, start);
    *split = tr.split;
    tracker_free(&tr);
    pl_plan_free(plan);
}

TestSuite(outliers, .init = outliers_setup, .fini = outliers_teardown, .timeout = 300);

/* What the sample deleting every gene needs in a slot on its own. */
static uint64_t every_gene_slot(uint32_t dense)
{
    pl__collate_cfg c;
    pl__collate_cfg_init(&c, db.db, db.g, 1, dense);
    return pl__collate_slot_bytes(&c, 1, N_GENES, db.table.weight[ALL_ROW]);
}

Test(outliers, serve_streams_every_sample_once_within_the_bound)
{
    /* The old sizing (batch size x the largest sample) for 16 slots of 32. */
    uint64_t old = 16 * 32 * every_gene_slot(0);
    uint64_t limit = 16 * (every_gene_slot(0) + 4096) + 4096, split;
    cr_assert(old > 8 * limit, "the outliers are too small to test anything");
    serve_epoch(32, 0, limit, 0, &split);
    cr_assert(split >= 1, "no batch was split: the bound tested nothing");
}

Test(outliers, serve_resumes_at_a_split_batch)
{
    /* Where the every-gene sample is, in the plan of serve_epoch(). */
    pl_plan *plan = plan_of(32, 1, 2);
    uint64_t rows[32], at = 0;
    for (uint64_t b = 0; b < pl_plan_n_batches(plan); b++)
        for (uint32_t i = 0, n = pl_plan_batch(plan, b, rows); i < n; i++)
            if (rows[i] == ALL_ROW)
                at = b;
    pl_plan_free(plan);
    uint64_t split;
    serve_epoch(32, 0, 16 * (every_gene_slot(0) + 4096) + 4096, at, &split);
    cr_assert(split >= 1, "the batch of the every-gene sample came whole");
}

Test(outliers, serve_dense_bits_and_bool_split_to_the_bound)
{
    /* Two slots with room for the every-gene sample and the masks of six
     * more: fewer samples a slot than a batch has. */
    for (uint32_t dense = PL_MASK_BITS; dense <= PL_MASK_BOOL; dense++) {
        uint64_t masks = 0, split;
        for (uint32_t k = 0; k <= db.n_lists; k++)
            masks += pl__expand_row_bytes(dense, db.len[k]);
        uint64_t limit = 2 * (every_gene_slot(dense) + 6 * masks + 4096) + 4096;
        serve_epoch(64, dense, limit, 0, &split);
        cr_assert(split * 2 >= (N_SAMPLES + 63) / 64, "dense %u: %llu batches split", dense,
                  (unsigned long long)split);
    }
}

Test(outliers, serve_names_a_sample_too_large_for_the_bound)
{
    char ring[64], lim[32], errfile[4400];
    snprintf(ring, sizeof ring, "parts-small-%d", (int)getpid());
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)every_gene_slot(0));
    snprintf(errfile, sizeof errfile, "%s/serve.err", db.dir);
    const char *extra[] = {"--max-ring-bytes", lim, NULL};
    pid_t pid = serve(ring, errfile, extra);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status 0x%x", status);
    size_t len;
    char *msg = pl_test_read_file(errfile, &len);
    char want[128];
    snprintf(want, sizeof want, "sample row %u (id %llu) needs a slot of", ALL_ROW,
             (unsigned long long)db.table.ids[ALL_ROW]);
    cr_assert(strstr(msg, want) && strstr(msg, "--max-ring-bytes"), "%s", msg);
    free(msg);
    char shm[128];
    snprintf(shm, sizeof shm, "/dev/shm/pertload-%s", ring);
    cr_assert(access(shm, F_OK) != 0, "a ring was left behind");
}

/* ---------------------------------------- outlier databases: the C loader */

static void loader_epoch(uint32_t B, uint32_t dense, uint64_t limit, uint64_t start,
                         uint64_t *split)
{
    pl_loader_opts o = {0};
    o.db = db.path;
    o.plan = (pl_plan_opts){.batch_size = B, .world_size = 1, .shuffle = 1, .seed = 3,
                            .epoch = 2};
    o.start_batch = start;
    o.dense = dense;
    o.threads = 2;
    o.backend = PL_BACKEND_HOST;
    o.max_buffer_bytes = limit;
    pl_loader *l;
    pl_err err = {0};
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    pl_plan *plan = plan_of(B, 1, 2);
    tracker tr;
    tracker_init(&tr, plan, B, start);
    pl_device_batch b;
    int rc;
    while ((rc = pl_loader_next(l, &b, &err)) == 0) {
        const struct pl_slot_header *h = b.slot;
        int bad = b.index != h->batch || b.part != h->part || b.n_parts != h->n_parts ||
                  b.first != h->first || b.n_samples != h->n_samples;
        if (bad)
            snprintf(why, sizeof why, "batch %llu: pl_device_batch differs from its slot",
                     (unsigned long long)b.index);
        uint64_t rows[256];
        pl_plan_batch(plan, b.index, rows);
        bad = bad || track(&tr, b.slot, b.bytes, 0, 2); /* checks b.first + n against B */
        if (!bad && dense)
            bad = pl_test_masks_diff(&db, dense, b.n_samples, rows + b.first, b.gene_mask,
                                     b.mask, why, sizeof why);
        pl_loader_release(l, &b);
        if (bad) {
            pl_loader_close(l);
            cr_assert_fail("%s", why);
        }
    }
    cr_assert_eq(rc, 1, "%s", err.msg);
    pl__loader_stats st;
    pl__loader_stats_get(l, &st);
    cr_assert(st.slot_bytes * st.host_buffers <= limit, "%u host buffers of %llu bytes, "
              "limit %llu", st.host_buffers, (unsigned long long)st.slot_bytes,
              (unsigned long long)limit);
    pl_loader_close(l);
    tracker_done(&tr, start);
    *split = tr.split;
    tracker_free(&tr);
    pl_plan_free(plan);
}

Test(outliers, loader_delivers_parts_within_the_bound)
{
    uint64_t split, one = every_gene_slot(0) + 4096;
    /* threads + depth = 4 host buffers */
    loader_epoch(32, PL_MASK_NONE, 4 * one, 0, &split);
    cr_assert(split >= 1, "no batch was split");
    loader_epoch(32, PL_MASK_BITS, 4 * one, 3, &split);
    loader_epoch(16, PL_MASK_BOOL, 4 * one, 0, &split);
}

Test(outliers, loader_fails_on_a_sample_too_large_for_the_bound)
{
    pl_loader_opts o = {0};
    o.db = db.path;
    o.plan = (pl_plan_opts){.batch_size = 32, .world_size = 1};
    o.backend = PL_BACKEND_HOST;
    o.max_buffer_bytes = 2 * every_gene_slot(0); /* 3 buffers of it do not fit */
    pl_loader *l;
    pl_err err = {0};
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    pl_device_batch b;
    int rc = pl_loader_next(l, &b, &err);
    cr_assert_eq(rc, PL_EUSAGE, "%d: %s", rc, err.msg);
    cr_assert(strstr(err.msg, "needs a slot of") && strstr(err.msg, "max_buffer_bytes"), "%s",
              err.msg);
    pl_loader_close(l);
}
