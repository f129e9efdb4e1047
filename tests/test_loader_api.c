/* The public C API of the in-process loader and of database plans on the
 * calls a program can get wrong: every invalid option of pl_loader_open()
 * is refused with PL_EUSAGE (or the CUDA backend's own refusal) and a message
 * naming it; NULL arguments, a batch that is not the loader's and a loader
 * that is not there are refused or ignored without harm, the loader going on
 * with the epoch afterwards; budgeted plans of a database (pl_plan_new_db)
 * are the plans of the costs its sample table holds (removed positions) or
 * of its payload rows (constant costs: every batch full to the budget);
 * the host backend refuses a device other than 0 and a consumer stream. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/expand.h"
#include "loader/loader.h"
#include "pl_config.h"
#include "testdb.h"
#include "testutil.h"

#define N_SAMPLES 300

static pl_test_db S;

static void setup(void)
{
    pl_test_db_make(&S, 200, N_SAMPLES, 0.004, 3, 5);
    cr_assert_gt(S.payload_row_bytes, 0);
    pl_test_db_load(&S);
}

static void teardown(void) { pl_test_db_free(&S); }

TestSuite(loader_api, .init = setup, .fini = teardown, .timeout = 300);

static pl_loader_opts opts(void)
{
    pl_loader_opts o = {0};
    o.db = S.path;
    o.plan.batch_size = 32;
    o.plan.world_size = 1;
    o.plan.shuffle = 1;
    o.plan.seed = 3;
    o.backend = PL_BACKEND_HOST;
    return o;
}

/* pl_loader_open(o) must fail with `code`, leave *out NULL, and say `why`. */
static void refused(const pl_loader_opts *o, int code, const char *why)
{
    pl_loader *l = (pl_loader *)&l; /* not NULL: the call must clear it */
    pl_err err = {0};
    int rc = pl_loader_open(o, &l, &err);
    cr_assert_eq(rc, code, "rc %d, want %d: %s", rc, code, err.msg);
    cr_assert_null(l);
    cr_assert(strstr(err.msg, why), "'%s' not in: %s", why, err.msg);
}

Test(loader_api, open_refuses_each_invalid_option)
{
    pl_err err = {0};
    pl_loader *l = NULL;
    pl_loader_opts o = opts();
    cr_assert_eq(pl_loader_open(NULL, &l, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "pl_loader_open: NULL argument");
    cr_assert_eq(pl_loader_open(&o, NULL, &err), PL_EUSAGE);

    o = opts();
    o.db = NULL;
    refused(&o, PL_EUSAGE, "pl_loader_open: no database path");
    o = opts();
    o.dense = PL_MASK_BOOL + 1;
    refused(&o, PL_EUSAGE, "dense mode");
    o = opts();
    o.depth = 1;
    refused(&o, PL_EUSAGE, "depth 1 (2..1024 device buffers)");
    o.depth = 1025;
    refused(&o, PL_EUSAGE, "depth 1025 (2..1024 device buffers)");
    o = opts();
    o.threads = 1025;
    refused(&o, PL_EUSAGE, "pl_loader_open: 1025 worker threads");
    o = opts();
    o.backend = -1;
    refused(&o, PL_EUSAGE, "pl_loader_open: backend -1");
    o.backend = PL_BACKEND_CUDA + 1;
    refused(&o, PL_EUSAGE, "pl_loader_open: backend 3");
    o = opts();
    o.device = -2;
    refused(&o, PL_EUSAGE, "pl_loader_open: device -2");
    o = opts();
    o.plan.budget = 1000;
    refused(&o, PL_EUSAGE, "budgeted batches are served by pertload serve");
    /* a database that is not there: the open's own error, nothing left */
    o = opts();
    char *none = pl_test_path(S.dir, "no-such-db");
    o.db = none;
    pl_err e2 = {0};
    cr_assert_lt(pl_loader_open(&o, &l, &e2), 0);
    cr_assert_null(l);
    cr_assert(strstr(e2.msg, "no-such-db"), "%s", e2.msg);
    free(none);
}

Test(loader_api, cuda_backend_and_devices)
{
    pl_err err = {0};
    int n = pl_loader_devices(&err);
    cr_assert_geq(n, 0);
    if (!PL_HAVE_CUDA) {
        cr_assert_eq(n, 0);
        cr_assert(strstr(err.msg, "built without the CUDA path"), "%s", err.msg);
        pl_loader_opts o = opts();
        o.backend = PL_BACKEND_CUDA;
        refused(&o, PL_EUSAGE, "this library was built without the CUDA path");
    } else if (n == 0) {
        cr_assert(strstr(err.msg, "no CUDA device visible"), "%s", err.msg);
        pl_loader_opts o = opts();
        o.backend = PL_BACKEND_CUDA;
        refused(&o, -ENODEV, "no CUDA device visible");
    }
    cr_assert_str_eq(pl_loader_backend(NULL), "none");
}

Test(loader_api, null_and_foreign_batches_are_harmless)
{
    pl_loader_opts o = opts();
    pl_loader *l = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    cr_assert_str_eq(pl_loader_backend(l), "host");

    pl_device_batch b;
    cr_assert_eq(pl_loader_next(NULL, &b, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "pl_loader_next: NULL argument");
    cr_assert_eq(pl_loader_next(l, NULL, &err), PL_EUSAGE);

    /* a batch that never came from the loader */
    pl_device_batch foreign;
    memset(&foreign, 0, sizeof foreign);
    cr_assert_eq(pl__loader_sync(l, &foreign, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "no batch");
    cr_assert_eq(pl__loader_buffer_uploads(l, &foreign), 0);
    unsigned char elsewhere[64];
    foreign.slot = elsewhere;
    pl_loader_release(l, &foreign);
    pl_loader_release(NULL, &foreign);
    pl_loader_release(l, NULL);

    /* the epoch still comes whole: every row once, in the plan's order */
    pl_plan_opts po = o.plan;
    po.n_samples = N_SAMPLES;
    pl_plan *plan = NULL;
    cr_assert_eq(pl_plan_new(&po, &plan, &err), 0, "%s", err.msg);
    uint64_t nb = pl_plan_n_batches(plan), rows[32], got = 0;
    for (uint64_t k = 0;; k++) {
        int rc = pl_loader_next(l, &b, &err);
        cr_assert_geq(rc, 0, "%s", err.msg);
        if (rc == 1)
            break;
        cr_assert_eq(b.index, k);
        uint32_t n = pl_plan_batch(plan, k, rows);
        cr_assert_eq(b.n_samples, n, "batch %llu", (unsigned long long)k);
        cr_assert_eq(pl__loader_sync(l, &b, &err), 0, "%s", err.msg);
        cr_assert_geq(pl__loader_buffer_uploads(l, &b), 1);
        got += n;
        pl_loader_release(l, &b);
        cr_assert_null(b.slot, "released: the batch is cleared");
        pl_loader_release(l, &b); /* twice: nothing */
    }
    cr_assert_eq(got, N_SAMPLES);
    cr_assert_gt(nb, 1);
    pl_plan_free(plan);
    pl_loader_close(l);
    pl_loader_close(NULL);
}

Test(loader_api, host_backend_has_one_device_and_no_streams)
{
    pl_loader_opts o = opts();
    o.device = 1;
    refused(&o, PL_EUSAGE, "the host backend has one device (0), not 1");

    /* A consumer stream names CUDA work: on the host backend the release
     * fails, the batch stays held, and the loader reports why. */
    o = opts();
    o.depth = 2;
    pl_loader *l = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_loader_open(&o, &l, &err), 0, "%s", err.msg);
    pl_device_batch b;
    cr_assert_eq(pl_loader_next(l, &b, &err), 0, "%s", err.msg);
    b.consumer_stream = &b;
    pl_loader_release(l, &b);
    cr_assert_null(b.slot, "the batch is cleared all the same");
    int rc = 0, calls = 0;
    while (calls < 3 && (rc = pl_loader_next(l, &b, &err)) == 0) {
        calls++;
        pl_loader_release(l, &b);
    }
    cr_assert_eq(rc, PL_EUSAGE, "rc %d after %d batches: %s", rc, calls, err.msg);
    cr_assert_str_eq(err.msg, "the host backend has no streams");
    cr_assert_eq(pl_loader_next(l, &b, &err), PL_EUSAGE, "the failure stays");
    pl_loader_close(l);
}

Test(loader_api, plan_of_a_database_without_budget)
{
    pl_plan_opts o = {.world_size = 2, .rank = 1, .batch_size = 24, .shuffle = 1,
                      .seed = 4, .epoch = 3};
    pl_plan *p = NULL, *q = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new_db(S.db, &o, 0, &p, &err), 0, "%s", err.msg);
    o.n_samples = N_SAMPLES;
    cr_assert_eq(pl_plan_new(&o, &q, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_plan_n_samples(p), pl_plan_n_samples(q));
    cr_assert_eq(pl_plan_n_batches(p), pl_plan_n_batches(q));
    uint64_t a[24], c[24];
    for (uint64_t k = 0; k < pl_plan_n_batches(p); k++) {
        uint32_t n = pl_plan_batch(p, k, a);
        cr_assert_eq(pl_plan_batch(q, k, c), n);
        cr_assert_arr_eq(a, c, n * sizeof a[0]);
    }
    pl_plan_free(p);
    pl_plan_free(q);
}

/* The device-side expansion is set up from the slot's own descriptors: a
 * slot that is not one, or lacks an array, is refused naming it. */
Test(loader_api, expansion_of_a_malformed_slot)
{
    pl_plan_opts po = {.n_samples = N_SAMPLES, .world_size = 1, .batch_size = 32};
    pl_plan *plan = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&po, &plan, &err), 0, "%s", err.msg);
    uint64_t rows[32];
    uint32_t n = pl_test_collate(&S, plan, 32, 1, 0, rows);
    const pl_db_info *info = pl_db_info_get(S.db);
    const char *const *names = info->type_names;
    uint64_t out[PL__EXPAND_MAX] = {0};
    pl__expand_job j;
    cr_assert_eq(pl__expand_job_init(&j, S.want, PL_MASK_BITS, S.n_types, names, S.n_lists,
                                     S.len, out, &err), 0, "%s", err.msg);
    cr_assert_eq(j.n, n);
    cr_assert_eq(j.n_lists, S.n_lists + 1, "the lists and the genes");

    cr_assert_eq(pl__expand_job_init(&j, S.want, PL_MASK_BITS, S.n_types, names,
                                     S.n_types - 1, S.len, out, &err), PL_EUSAGE);
    char want[96];
    snprintf(want, sizeof want, "expansion of %u list kinds", S.n_types - 1);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(pl__expand_job_init(&j, S.want, PL_MASK_BITS, S.n_types, names,
                                     S.n_types + 4, S.len, out, &err), PL_EUSAGE);

    const char *other[PL_MAX_TYPES];
    memcpy(other, names, S.n_types * sizeof *other);
    other[S.n_types - 1] = "nope";
    cr_assert_eq(pl__expand_job_init(&j, S.want, PL_MASK_BITS, S.n_types, other, S.n_lists,
                                     S.len, out, &err), PL_ECORRUPT);
    cr_assert_str_eq(err.msg, "batch 1: the slot has no array edges/nope/removed");

    unsigned char *copy = malloc(S.want_cap);
    memcpy(copy, S.want, S.want_cap);
    copy[0] ^= 1;
    cr_assert_eq(pl__expand_job_init(&j, copy, PL_MASK_BITS, S.n_types, names, S.n_lists,
                                     S.len, out, &err), PL_ECORRUPT);
    cr_assert_str_eq(err.msg, "batch slot: bad magic");
    free(copy);
    pl_plan_free(plan);
}

/* Every row once, each batch within the budget by `cost` and batch_size. */
static void check_budget(const pl_plan *p, const pl_plan_opts *o, const uint32_t *cost)
{
    unsigned char *seen = calloc(N_SAMPLES, 1);
    uint64_t rows[64], total = 0;
    for (uint64_t b = 0; b < pl_plan_n_batches(p); b++) {
        uint32_t n = pl_plan_batch(p, b, rows);
        cr_assert(n >= 1 && n <= o->batch_size);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < n; i++) {
            cr_assert_lt(rows[i], N_SAMPLES);
            cr_assert_eq(seen[rows[i]]++, 0, "row %llu twice", (unsigned long long)rows[i]);
            sum += cost[rows[i]];
        }
        cr_assert(sum <= o->budget || n == 1, "batch %llu costs %llu", (unsigned long long)b,
                  (unsigned long long)sum);
        total += n;
    }
    cr_assert_eq(total, N_SAMPLES);
    free(seen);
}

Test(loader_api, budgeted_plans_of_a_database)
{
    pl_plan_opts o = {.world_size = 1, .batch_size = 64, .shuffle = 1, .seed = 9};
    pl_err err = {0};
    /* removed positions: the sample table's weights */
    uint64_t wsum = 0;
    for (uint64_t i = 0; i < N_SAMPLES; i++)
        wsum += S.table.weight[i];
    o.budget = wsum / 20 + 1; /* about 20 batches */
    pl_plan *p = NULL, *q = NULL;
    cr_assert_eq(pl_plan_new_db(S.db, &o, 0, &p, &err), 0, "%s", err.msg);
    pl_plan_opts oc = o;
    oc.n_samples = N_SAMPLES;
    cr_assert_eq(pl_plan_new_costs(&oc, S.table.weight, &q, &err), 0, "%s", err.msg);
    cr_assert_eq(pl_plan_n_batches(p), pl_plan_n_batches(q));
    cr_assert_gt(pl_plan_n_batches(p), 10);
    uint64_t a[64], b[64];
    for (uint64_t k = 0; k < pl_plan_n_batches(p); k++) {
        uint32_t n = pl_plan_batch(p, k, a);
        cr_assert_eq(pl_plan_batch(q, k, b), n);
        cr_assert_arr_eq(a, b, n * sizeof a[0]);
    }
    check_budget(p, &o, S.table.weight);
    pl_plan_free(p);
    pl_plan_free(q);

    /* payload bytes: the same cost for every row, so every batch but the
     * last holds budget / row bytes rows */
    uint32_t per = 5;
    o.budget = per * S.payload_row_bytes + S.payload_row_bytes / 2;
    cr_assert_eq(pl_plan_new_db(S.db, &o, 1, &p, &err), 0, "%s", err.msg);
    uint64_t nb = pl_plan_n_batches(p);
    cr_assert_eq(nb, (N_SAMPLES + per - 1) / per);
    for (uint64_t k = 0; k + 1 < nb; k++)
        cr_assert_eq(pl_plan_batch(p, k, a), per, "batch %llu", (unsigned long long)k);
    uint32_t *flat = malloc(N_SAMPLES * sizeof *flat);
    for (uint64_t i = 0; i < N_SAMPLES; i++)
        flat[i] = (uint32_t)S.payload_row_bytes;
    check_budget(p, &o, flat);
    free(flat);
    pl_plan_free(p);
}
