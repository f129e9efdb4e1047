/* pertload serve: feed one consumer through a shared-memory ring. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"
#include "collate/collate.h"
#include "loader/io.h"
#include "loader/serve.h"
#include "masks/khop.h"
#include "pl_config.h"

static const char usage[] =
    "DB --ring NAME [--batch-size B] [--shuffle] [--seed S] [--epoch E]\n"
    "       [--order rows|block [--block-rows K] [--block-window W]]\n"
    "       [--budget removed=N|payload=BYTES] [--rank-weights W0,W1,...]\n"
    "       [--rank R --world-size W] [--drop-last] [--dense bits|bool] [--threads T]\n"
    "       [--rows A:B|FILE.npy | --split [COLUMN=]LEVEL] [--slots N]\n"
    "       [--max-ring-bytes M] [--start-batch K] [--from P] [--consumer-pid PID]\n"
    "       [--io auto|uring|pread]\n"
    "       [--khop K --khop-types T1,T2,... [--khop-max-genes N]] [--no-shared-table]\n"
    "       [--no-ontology] [--more-epochs] [--quiet]\n"
    "       (with an ontology, batches carry its lists unless --no-ontology)\n"
    "       (--more-epochs: after the epoch, stdin lines 'epoch E START' each run\n"
    "       epoch E from plan batch START in the same ring; end of stdin ends it)\n"
    "       (--from P: elastic resume, the epoch's first P entries of its order\n"
    "       were consumed and the plan deals the rest (loader/plan.h, step 1e);\n"
    "       the first epoch only)\n"
    "       ('--' ends the options: OPTIONS -- DB for a path that starts with '-')";

#if PL_COVERAGE
void __gcov_dump(void); /* libgcov, linked into a coverage build */
#endif

static void on_signal(int sig)
{
    pl__serve_abort();
#if PL_COVERAGE
    /* The Loader stops its serve with SIGTERM: a coverage build counts what
     * the serve ran (the counters are otherwise written only at exit()). */
    __gcov_dump();
#endif
    signal(sig, SIG_DFL);
    raise(sig);
}

/* "3,2,2": one weight (1 to 2^20) per rank into a new array; NULL after a
 * usage message. */
static uint32_t *parse_weights(const char *cmd, const char *text, uint32_t *n)
{
    uint32_t *w = NULL, cap = 0;
    *n = 0;
    for (const char *at = text;;) {
        char num[32];
        size_t len = strcspn(at, ",");
        unsigned long long v = 0;
        if (len == 0 || len >= sizeof num) {
            pl_cli_usage(cmd, usage, "--rank-weights: '%s' is not a list of weights", text);
            break;
        }
        memcpy(num, at, len);
        num[len] = 0;
        if (pl_cli_u64(cmd, "--rank-weights", num, &v) < 0)
            break;
        if (v < 1 || v > (1u << 20)) {
            pl_cli_usage(cmd, usage, "--rank-weights: weight %llu is out of range (1 to %u)",
                         v, 1u << 20);
            break;
        }
        if (*n == cap) {
            uint32_t *g = realloc(w, (cap = cap ? 2 * cap : 16) * sizeof *w);
            if (!g)
                break;
            w = g;
        }
        w[(*n)++] = (uint32_t)v;
        if (!at[len])
            return w;
        at += len + 1;
    }
    free(w);
    return NULL;
}

int pl_cmd_serve(int argc, char **argv)
{
    const char *cmd = "serve";
    pl__serve_opts o = {0};
    o.plan.batch_size = 64;
    o.plan.world_size = 1;
    o.threads = 1;
    o.slots = 16;
    o.max_ring_bytes = PL__SERVE_RING_BYTES;
    o.verbose = 1;
    o.shared_table = 1; /* one sample table per database and node */
    int positional = 0; /* after "--": a database path may start with '-' */
    const char *weights_text = NULL; /* parsed once the other options are checked */
    int khop_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        unsigned long long v = 0;
        if (!positional && !strcmp(a, "--")) {
            positional = 1;
        } else if (positional || a[0] != '-') {
            if (o.db)
                return pl_cli_usage(cmd, usage, "unexpected argument '%s'", a);
            o.db = a;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: pertload serve %s\n", usage);
            return 0;
        } else if (!strcmp(a, "--shuffle")) {
            o.plan.shuffle = 1;
        } else if (!strcmp(a, "--drop-last")) {
            o.plan.drop_last = 1;
        } else if (!strcmp(a, "--quiet")) {
            o.verbose = 0;
        } else if (!strcmp(a, "--no-shared-table")) {
            o.shared_table = 0;
        } else if (!strcmp(a, "--no-ontology")) {
            o.no_ontology = 1;
        } else if (!strcmp(a, "--more-epochs")) {
            o.more_epochs = 1;
        } else if (i + 1 >= argc) {
            return pl_cli_usage(cmd, usage, "%s needs a value", a);
        } else if (!strcmp(a, "--ring")) {
            o.ring = argv[++i];
        } else if (!strcmp(a, "--rows")) {
            o.rows = argv[++i];
        } else if (!strcmp(a, "--split")) {
            o.split = argv[++i];
        } else if (!strcmp(a, "--dense")) {
            const char *d = argv[++i];
            if (!strcmp(d, "bits"))
                o.dense = PL_DENSE_BITS;
            else if (!strcmp(d, "bool"))
                o.dense = PL_DENSE_BOOL;
            else
                return pl_cli_usage(cmd, usage, "--dense is bits or bool, not '%s'", d);
        } else if (!strcmp(a, "--order")) {
            const char *d = argv[++i];
            if (!strcmp(d, "rows"))
                o.plan.order = PL_ORDER_ROWS;
            else if (!strcmp(d, "block"))
                o.plan.order = PL_ORDER_BLOCK;
            else
                return pl_cli_usage(cmd, usage, "--order is rows or block, not '%s'", d);
        } else if (!strcmp(a, "--budget")) {
            const char *d = argv[++i], *eq = strchr(d, '=');
            size_t k = eq ? (size_t)(eq - d) : 0;
            if (!eq || !((k == 7 && !strncmp(d, "removed", 7)) ||
                         (k == 7 && !strncmp(d, "payload", 7))))
                return pl_cli_usage(cmd, usage, "--budget is removed=N or payload=BYTES, not '%s'",
                                    d);
            o.budget_payload = d[0] == 'p';
            if (pl_cli_u64(cmd, "--budget", eq + 1, &v) < 0)
                return 2;
            if (v < 1)
                return pl_cli_usage(cmd, usage, "--budget %s: the budget must be at least 1", d);
            o.plan.budget = v;
        } else if (!strcmp(a, "--rank-weights")) {
            weights_text = argv[++i];
        } else if (!strcmp(a, "--khop-types")) {
            o.khop_types = argv[++i];
        } else if (!strcmp(a, "--io")) {
            const char *d = argv[++i];
            if (!strcmp(d, "auto"))
                o.io_mode = PL_IO_AUTO;
            else if (!strcmp(d, "uring"))
                o.io_mode = PL_IO_URING;
            else if (!strcmp(d, "pread"))
                o.io_mode = PL_IO_PREAD;
            else
                return pl_cli_usage(cmd, usage, "--io is auto, uring or pread, not '%s'", d);
        } else {
            struct {
                const char *opt;
                unsigned long long max;
            } nums[] = {{"--batch-size", 1u << 20}, {"--seed", ~0ULL}, {"--epoch", ~0ULL},
                        {"--rank", 1u << 30},       {"--world-size", 1u << 30},
                        {"--threads", 256},         {"--slots", 1024},
                        {"--start-batch", ~0ULL},   {"--consumer-pid", 1u << 30},
                        {"--max-ring-bytes", PL_RING_MAX_BYTES},
                        {"--khop", PL_KHOP_MAX_K},  {"--khop-max-genes", UINT32_MAX},
                        {"--block-rows", 1u << 30},   {"--block-window", 1u << 30},
                        {"--from", ~0ULL}};
            size_t k = 0;
            while (k < sizeof nums / sizeof nums[0] && strcmp(a, nums[k].opt))
                k++;
            if (k == sizeof nums / sizeof nums[0])
                return pl_cli_usage(cmd, usage, "unknown option '%s'", a);
            if (pl_cli_u64(cmd, a, argv[++i], &v) < 0)
                return 2;
            unsigned min = k == 0 || k == 4 || k == 5 || k == 6 || k == 9 || (k >= 11 && k <= 13);
            if (v > nums[k].max || v < min)
                return pl_cli_usage(cmd, usage, "%s %llu is out of range (%u to %llu)", a, v,
                                    min, nums[k].max);
            switch (k) {
            case 0: o.plan.batch_size = (uint32_t)v; break;
            case 1: o.plan.seed = v; break;
            case 2: o.plan.epoch = v; break;
            case 3: o.plan.rank = (uint32_t)v; break;
            case 4: o.plan.world_size = (uint32_t)v; break;
            case 5: o.threads = (uint32_t)v; break;
            case 6: o.slots = (uint32_t)v; break;
            case 7: o.start_batch = v; break;
            case 8: o.consumer_pid = (int32_t)v; break;
            case 9: o.max_ring_bytes = v; break;
            case 10: o.khop = (uint32_t)v; khop_set = 1; break;
            case 11: o.khop_max_genes = (uint32_t)v; break;
            case 12: o.plan.block_rows = (uint32_t)v; break;
            case 13: o.plan.window_blocks = (uint32_t)v; break;
            default: o.plan.from = v; break;
            }
        }
    }
    if (!o.db || !o.ring)
        return pl_cli_usage(cmd, usage, "a database and --ring NAME are required");
    if ((o.plan.block_rows || o.plan.window_blocks) && o.plan.order != PL_ORDER_BLOCK)
        return pl_cli_usage(cmd, usage, "--block-rows and --block-window need --order block");
    if (o.rows && o.split)
        return pl_cli_usage(cmd, usage, "--rows and --split cannot be combined (one subset)");
    if (o.plan.budget && o.plan.order != PL_ORDER_ROWS)
        return pl_cli_usage(cmd, usage, "--budget takes the row order, not --order block");
    if (khop_set != !!o.khop_types || (o.khop_max_genes && !khop_set))
        return pl_cli_usage(cmd, usage, "--khop and --khop-types go together "
                                        "(--khop-max-genes with them)");
    if (o.plan.rank >= o.plan.world_size)
        return pl_cli_usage(cmd, usage, "--rank %u must be below --world-size %u",
                            o.plan.rank, o.plan.world_size);
    if (weights_text && (o.plan.budget || o.plan.order != PL_ORDER_ROWS))
        return pl_cli_usage(cmd, usage, "--rank-weights take the row order and no --budget");
    uint32_t *weights = NULL, n_weights = 0;
    if (weights_text) {
        if (!(weights = parse_weights(cmd, weights_text, &n_weights)))
            return 2;
        if (n_weights != o.plan.world_size) {
            free(weights);
            return pl_cli_usage(cmd, usage, "--rank-weights has %u weights for --world-size %u",
                                n_weights, o.plan.world_size);
        }
        o.plan.rank_weights = weights;
    }
    /* Die with the consumer when it is our parent; remove the ring on signals. */
    if (o.consumer_pid && o.consumer_pid == (int32_t)getppid())
        prctl(PR_SET_PDEATHSIG, SIGTERM);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, on_signal);
    signal(SIGPIPE, SIG_IGN);
    pl_err err = {0};
    int rc = pl__serve(&o, &err);
    free(weights);
    if (rc < 0)
        return pl_cli_fail(cmd, rc, &err);
    return 0;
}
