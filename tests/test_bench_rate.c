/* The rates `pertload bench` prints (bench/rate.h): an amount a batch over
 * the time of every timed batch. The figures of docs/gpu.md's first device
 * run (32 batches kept, the first one a warm-up: 31 timed), whose printed
 * GB/s had divided one batch's bytes by the time of all 31. */
#include <criterion/criterion.h>

#include "bench/rate.h"

static void near(double got, double want)
{
    cr_assert(got > want * (1 - 1e-9) && got < want * (1 + 1e-9), "%.6g, not %.6g", got, want);
}

Test(bench_rate, bytes_of_one_batch_over_the_time_of_all)
{
    /* Bit masks: 20.2 MB a batch, 0.025 ms a batch: 808 GB/s, not 808 / 31. */
    near(pl_bench_per_s(20.2e6, 31, 0.025 * 31), 808e9);
    /* Bool masks: 161.8 MB a batch, 0.119 ms a batch: 1.36 TB/s. */
    near(pl_bench_per_s(161.8e6, 31, 0.119 * 31), 161.8e6 / 0.119e-3);
    cr_assert(pl_bench_per_s(161.8e6, 31, 0.119 * 31) > 1.35e12);
    /* The copy: 0.676 MB a batch, 0.037 ms a batch. */
    near(pl_bench_per_s(0.676e6, 31, 0.037 * 31), 0.676e6 / 0.037e-3);
}

Test(bench_rate, rate_does_not_depend_on_the_count)
{
    /* The same per-batch time gives the same rate over 1 or 1000 batches. */
    near(pl_bench_per_s(1e6, 1, 2.0), 5e8);
    near(pl_bench_per_s(1e6, 1000, 2000.0), 5e8);
    /* Samples: 64 a batch in (0.037 + 0.025) ms of device time. */
    near(pl_bench_per_s(64, 31, (0.037 + 0.025) * 31), 64 / 0.062e-3);
}

Test(bench_rate, nothing_timed_is_zero)
{
    cr_assert_eq(pl_bench_per_s(1e6, 10, 0), 0);
    cr_assert_eq(pl_bench_per_s(1e6, 10, -1), 0);
    cr_assert_eq(pl_bench_per_s(1e6, 0, 5), 0);
}
