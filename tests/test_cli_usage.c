/* Usage errors of every `pertload` subcommand ($PERTLOAD_BIN): missing
 * arguments and values, bad numbers, unknown options and names, errors after
 * options that allocate (several --edges, then --min-score). Each must exit
 * with status 2 and say what is wrong on stderr, having written nothing to
 * stdout. In the AddressSanitizer build (scripts/sanitize.sh) LeakSanitizer
 * runs at the exit of each of these processes: a leak turns the status into
 * 1 (and leaves a report), so every usage path is leak-checked too. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pertload.h"
#include "testutil.h"

#define MAX_ARGS (2 * PL_MAX_TYPES + 16)

/* Run pertload with `args` (NULL-terminated, without argv[0]); its exit
 * status; its stderr into `err`, its stdout into `out`. */
static int run(const char *const *args, char *err, size_t errcap, char *out, size_t outcap)
{
    const char *bin = getenv("PERTLOAD_BIN");
    cr_assert(bin && *bin, "PERTLOAD_BIN is not set");
    int ep[2], op[2];
    cr_assert_eq(pipe(ep), 0);
    cr_assert_eq(pipe(op), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        const char *argv[MAX_ARGS + 2] = {"pertload"};
        for (int i = 0; args[i]; i++)
            argv[i + 1] = args[i];
        if (dup2(ep[1], 2) < 0 || dup2(op[1], 1) < 0)
            _exit(126);
        close(ep[0]);
        close(op[0]);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(ep[1]);
    close(op[1]);
    /* The outputs are small: read stdout after stderr. */
    size_t n = pl_test_recv(ep[0], err, errcap - 1);
    err[n] = '\0';
    n = pl_test_recv(op[0], out, outcap - 1);
    out[n] = '\0';
    close(ep[0]);
    close(op[0]);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "pertload died (status 0x%x); stderr: %s", st, err);
    return WEXITSTATUS(st);
}

/* Describe `args` into `buf` for messages. */
static const char *show(const char *const *args, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; args[i] && len + 1 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? " " : "", args[i]);
    return buf;
}

/* `pertload args...` exits 2 with `want` (and, when `usage`, a usage line) on
 * stderr and nothing on stdout. */
static void expect_usage(const char *const *args, const char *want, int usage)
{
    char err[16384], out[4096], cmd[2048];
    int status = run(args, err, sizeof err, out, sizeof out);
    show(args, cmd, sizeof cmd);
    cr_expect_eq(status, 2, "pertload %s: exit status %d; stderr: %s", cmd, status, err);
    cr_expect(strstr(err, want) != NULL, "pertload %s: stderr '%s' lacks '%s'", cmd, err, want);
    if (usage)
        cr_expect(strstr(err, "usage: pertload") != NULL, "pertload %s: no usage line in '%s'",
                  cmd, err);
    cr_expect_str_eq(out, "", "pertload %s wrote to stdout: %s", cmd, out);
}

#define USAGE(want, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, want, 1)
#define BAD(want, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, want, 0)

Test(cli_usage, main)
{
    expect_usage((const char *const[]){NULL}, "usage: pertload COMMAND", 0);
    USAGE("unknown command 'frobnicate'", "frobnicate");
}

/* Every error comes after --edges has allocated its type names; some after
 * --min-score too. */
Test(cli_usage, build)
{
    USAGE("-o, --genes and --samples are required, and --edges unless the database has "
          "metabolism", "build");
    USAGE("-o, --genes and --samples are required, and --edges unless",
          "build", "-o", "db", "--genes", "g.txt", "--samples", "s.tsv");
    USAGE("-o needs a value", "build", "-o");
    USAGE("--edges wants NAME=FILE, got 'phys'", "build", "--edges", "phys");
    USAGE("--edges wants NAME=FILE, got '=f.tsv'", "build", "--edges", "=f.tsv");
    USAGE("unknown option '--bogus'", "build", "--edges", "a=a.tsv", "--bogus", "x");
    USAGE("--genes needs a value", "build", "--edges", "a=a.tsv", "--genes");
    USAGE("-o, --genes and --samples are required", "build", "--edges", "a=a.tsv",
          "--edges", "b=b.tsv", "--min-score", "a=0.5", "-o", "db");
    USAGE("--min-score needs a value", "build", "--edges", "a=a.tsv", "--min-score", "a=1",
          "--min-score");
    USAGE("--min-score wants NAME=X, got 'a'", "build", "--edges", "a=a.tsv", "--min-score",
          "a");
    USAGE("--min-score wants NAME=X, got 'a='", "build", "--edges", "a=a.tsv", "--min-score",
          "a=");
    USAGE("--min-score c=1: no such edge type", "build", "-o", "db", "--genes", "g.txt",
          "--samples", "s.tsv", "--edges", "a=a.tsv", "--edges", "b=b.tsv", "--min-score",
          "a=0.5", "--min-score", "c=1");
    USAGE("--min-score b=high: 'high' is not a number", "build", "-o", "db", "--genes", "g.txt",
          "--samples", "s.tsv", "--edges", "a=a.tsv", "--edges", "b=b.tsv", "--min-score",
          "a=0.5", "--min-score", "b=high");
    USAGE("--min-score a=nan: 'nan' is not a number", "build", "-o", "db", "--genes", "g.txt",
          "--samples", "s.tsv", "--edges", "a=a.tsv", "--min-score", "a=nan");
    /* one edge type too many */
    const char *args[MAX_ARGS + 1] = {"build"};
    char specs[PL_MAX_TYPES + 1][32];
    int n = 1;
    for (int t = 0; t <= PL_MAX_TYPES; t++) {
        snprintf(specs[t], sizeof specs[t], "t%d=t%d.tsv", t, t);
        args[n++] = "--edges";
        args[n++] = specs[t];
    }
    args[n] = NULL;
    char want[64];
    snprintf(want, sizeof want, "at most %d edge types", PL_MAX_TYPES);
    expect_usage(args, want, 1);
}

Test(cli_usage, synth)
{
    USAGE("missing OUT", "synth");
    USAGE("missing OUT", "synth", "--genes", "10");
    USAGE("more than one OUT ('a', 'b')", "synth", "a", "b");
    USAGE("--genes needs a value", "synth", "out", "--genes");
    BAD("--genes: 'ten' is not a non-negative integer", "synth", "out", "--genes", "ten");
    BAD("--samples: '-5' is not a non-negative integer", "synth", "out", "--samples=-5");
    BAD("--seed: '1x' is not a non-negative integer", "synth", "out", "--seed", "1x");
    USAGE("--scale: 'big' is not a number >= 0", "synth", "out", "--scale", "big");
    USAGE("--scale: '-1' is not a number >= 0", "synth", "out", "--scale=-1");
    USAGE("--payload-dim: 99999999999 is too large", "synth", "out", "--payload-dim",
          "99999999999");
    USAGE("unknown option '--bogus'", "synth", "out", "--bogus", "1");
    USAGE("--preset: no preset 'mouse' (there are: yeast, human)", "synth", "out", "--preset",
          "mouse");
    USAGE("--payload-dtype: 'int8' is not float32 or float16", "synth", "out",
          "--payload-dtype", "int8");
    USAGE("--payload-cells needs --payload-dim", "synth", "out", "--payload-cells", "4");
    USAGE("--payload-cells: 99999999999 is too large", "synth", "out", "--payload-cells",
          "99999999999");
    USAGE("a payload row must have at most 16777216 values", "synth", "out", "--payload-cells",
          "65536", "--payload-dim", "65536");
}

Test(cli_usage, masks)
{
    USAGE("expected a database path", "masks");
    USAGE("expected a database path", "masks", "--all");
    USAGE("give exactly one of --genes, --row and --all", "masks", "db");
    USAGE("give exactly one of --genes, --row and --all", "masks", "db", "--all", "--row", "1");
    USAGE("--row needs a value", "masks", "db", "--row");
    USAGE("--genes needs a value", "masks", "db", "--genes");
    BAD("--row: 'first' is not a non-negative integer", "masks", "db", "--row", "first");
    USAGE("unknown option '--bogus'", "masks", "db", "--bogus");
    USAGE("unexpected argument 'extra'", "masks", "db", "extra", "--all");
    USAGE("--khop needs a value", "masks", "db", "--all", "--khop");
    USAGE("--types and --khop-max-genes need --khop", "masks", "db", "--all", "--types", "a");
    USAGE("--khop 65 is out of range (0 to 64)", "masks", "db", "--all", "--khop", "65");
    USAGE("--khop-max-genes 0 is out of range", "masks", "db", "--all", "--khop", "1",
          "--khop-max-genes", "0");
    BAD("--khop: 'two' is not a non-negative integer", "masks", "db", "--all", "--khop", "two");
}

Test(cli_usage, inspect_and_verify)
{
    const char *cmds[] = {"inspect", "verify"};
    for (int i = 0; i < 2; i++) {
        USAGE("expected one database path", cmds[i]);
        USAGE("expected one database path", cmds[i], "a", "b");
        USAGE("expected one database path", cmds[i], "--bogus", "a");
    }
}

Test(cli_usage, serve)
{
    USAGE("a database and --ring NAME are required", "serve");
    USAGE("a database and --ring NAME are required", "serve", "db");
    USAGE("a database and --ring NAME are required", "serve", "--ring", "r");
    USAGE("--ring needs a value", "serve", "db", "--ring");
    USAGE("--batch-size 0 is out of range", "serve", "db", "--ring", "r", "--batch-size", "0");
    USAGE("--threads 257 is out of range", "serve", "db", "--ring", "r", "--threads", "257");
    BAD("--slots: 'many' is not a non-negative integer", "serve", "db", "--ring", "r",
        "--slots", "many");
    BAD("--seed: '-1' is not a non-negative integer", "serve", "db", "--ring", "r",
        "--seed", "-1");
    USAGE("--dense is bits or bool, not 'bytes'", "serve", "db", "--ring", "r", "--dense",
          "bytes");
    USAGE("--io is auto, uring or pread, not 'mmap'", "serve", "db", "--ring", "r", "--io",
          "mmap");
    USAGE("--rank 2 must be below --world-size 2", "serve", "db", "--ring", "r", "--rank", "2",
          "--world-size", "2");
    USAGE("unknown option '--bogus'", "serve", "db", "--ring", "r", "--bogus", "1");
    USAGE("--order is rows or block, not 'random'", "serve", "db", "--ring", "r", "--order",
          "random");
    USAGE("--block-rows and --block-window need --order block", "serve", "db", "--ring", "r",
          "--block-rows", "8");
    USAGE("--budget is removed=N or payload=BYTES, not 'bytes=5'", "serve", "db", "--ring",
          "r", "--budget", "bytes=5");
    USAGE("--budget removed=0: the budget must be at least 1", "serve", "db", "--ring", "r",
          "--budget", "removed=0");
    USAGE("--budget takes the row order, not --order block", "serve", "db", "--ring", "r",
          "--budget", "payload=4096", "--order", "block");
    USAGE("--rank-weights has 2 weights for --world-size 3", "serve", "db", "--ring", "r",
          "--world-size", "3", "--rank-weights", "1,2");
    USAGE("--rank-weights: '1,,2' is not a list of weights", "serve", "db", "--ring", "r",
          "--world-size", "3", "--rank-weights", "1,,2");
    USAGE("--rank-weights: weight 0 is out of range (1 to 1048576)", "serve", "db", "--ring",
          "r", "--world-size", "2", "--rank-weights", "0,2");
    USAGE("--rank-weights take the row order and no --budget", "serve", "db", "--ring", "r",
          "--world-size", "2", "--rank-weights", "1,2", "--budget", "removed=9");
    USAGE("--block-window 0 is out of range", "serve", "db", "--ring", "r", "--order", "block",
          "--block-window", "0");
    USAGE("unexpected argument 'db2'", "serve", "db", "db2", "--ring", "r");
    USAGE("--rows and --split cannot be combined (one subset)", "serve", "db", "--ring", "r",
          "--rows", "0:5", "--split", "train");
    USAGE("--split needs a value", "serve", "db", "--ring", "r", "--split");
    USAGE("--khop and --khop-types go together", "serve", "db", "--ring", "r", "--khop", "1");
    USAGE("--khop and --khop-types go together", "serve", "db", "--ring", "r", "--khop-types",
          "physical");
    USAGE("--khop 65 is out of range (0 to 64)", "serve", "db", "--ring", "r", "--khop", "65");
    USAGE("--khop-max-genes 0 is out of range", "serve", "db", "--ring", "r", "--khop", "1",
          "--khop-types", "physical", "--khop-max-genes", "0");
}

Test(cli_usage, top)
{
    USAGE("--interval needs a number of seconds", "top", "--interval");
    USAGE("--interval: '0' is not a number of seconds in (0, 3600]", "top", "--interval", "0");
    USAGE("--interval: 'soon' is not a number of seconds", "top", "--interval", "soon");
    USAGE("unknown argument '--bogus'", "top", "--bogus");
}

Test(cli_usage, bench)
{
    USAGE("unknown benchmark 'nosuch'", "bench", "nosuch");
    BAD("usage: pertload bench masks", "bench", "masks");
    BAD("usage: pertload bench masks", "bench", "masks", "db", "--bogus");
    BAD("usage: pertload bench collate", "bench", "collate", "db", "--outputs", "none");
    BAD("usage: pertload bench collate", "bench", "collate", "db", "--batch-size", "0");
    BAD("usage: pertload bench payload", "bench", "payload", "db", "--rounds", "65");
    BAD("usage: pertload bench payload", "bench", "payload");
    BAD("usage: pertload bench gpu", "bench", "gpu", "db", "--batches", "1");
    BAD("usage: pertload bench gpu", "bench", "gpu");
    BAD("usage: pertload bench memory", "bench", "memory", "--mib", "0");
    BAD("usage: pertload bench memory", "bench", "memory", "--bogus");
}
