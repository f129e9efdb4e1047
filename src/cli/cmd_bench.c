/* pertload bench: throughput measurements (bench/). */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "cli.h"

int pl_cmd_bench(int argc, char **argv)
{
    const char *usage = "masks DB [--samples N] [--peer-samples M]\n"
                        "       pertload bench collate DB [--batch-size B] [--samples N]\n"
                        "       pertload bench payload DB [--batch-size B] [--threads T] "
                        "[--shuffle]\n"
                        "       pertload bench gpu DB [--batch-size B] [--batches N] "
                        "[--threads T]";
    if (argc >= 2 && !strcmp(argv[1], "masks"))
        return pl_bench_masks(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "collate"))
        return pl_bench_collate(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "payload"))
        return pl_bench_payload(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "gpu"))
        return pl_bench_gpu(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: pertload bench %s\n", usage);
        return 0;
    }
    return pl_cli_usage("bench", usage, "expected a benchmark name");
}
