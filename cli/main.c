/* pertload: command-line entry point. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pl_config.h"
#include "src/core/parse.h"
#include "src/core/error.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} cmds[] = {
    {"synth", pl_cmd_synth, "generate synthetic input files (yeast or human scale)"},
    {"build", pl_cmd_build, "build a database from input files"},
    {"masks", pl_cmd_masks, "print the masks of one deletion set as JSON"},
    {"inspect", pl_cmd_inspect, "summarise a database"},
    {"verify", pl_cmd_verify, "check every checksum of a database"},
    {"serve", pl_cmd_serve, "stream an epoch of batches into a shared-memory ring"},
    {"top", pl_cmd_top, "live throughput and stall times of running rings"},
    {"clean", pl_cmd_clean, "remove rings whose producer and consumer both died"},
    {"bench", pl_cmd_bench, "measure throughput"},
    {"recipe", pl_cmd_recipe, "check a dataset recipe against its downloaded files"},
};

int pl_cli_fail(const char *cmd, int rc, const pl_err *err)
{
    if (err && err->msg[0])
        fprintf(stderr, "pertload %s: %s\n", cmd, err->msg);
    else
        fprintf(stderr, "pertload %s: %s\n", cmd, pl_strerror(rc));
    return 1;
}

int pl_cli_usage(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "pertload %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: pertload %s %s\n", cmd, usage);
    return 2;
}

int pl_cli_put_name(FILE *f, const char *s, size_t n, int keep_tab)
{
    char buf[1024];
    while (n > 0) {
        size_t take = n < 128 ? n : 128;
        /* never split a C1 character (2 bytes) between two pieces */
        if (take < n && (unsigned char)s[take - 1] == 0xc2)
            take--;
        if (take == 0)
            take = 1;
        size_t e = pl__ctrl_escape(buf, sizeof buf, s, take, keep_tab);
        if (fwrite(buf, 1, e, f) != e)
            return -1;
        s += take, n -= take;
    }
    return 0;
}

void pl_cli_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.1f %s", v, unit[u]);
}

int pl_cli_u64(const char *cmd, const char *opt, const char *s, unsigned long long *out)
{
    if (!s || !*s) {
        fprintf(stderr, "pertload %s: %s needs a non-negative integer\n", cmd, opt);
        return -1;
    }
    /* Digits only: strtoull would also take leading blanks and a sign
     * (" -1" as 2^64 - 1). */
    uint64_t v;
    size_t n = strnlen(s, 32);
    pl__field f = {s, (uint32_t)n, 1};
    if (n == 32 || pl__parse_u64(&f, &v) < 0) {
        fprintf(stderr, "pertload %s: %s: '%s' is not a non-negative integer (decimal digits "
                "only, at most %llu)\n", cmd, opt, s, (unsigned long long)UINT64_MAX);
        return -1;
    }
    *out = v;
    return 0;
}

int pl_cli_f64(const char *s, double *out)
{
    size_t n = s ? strnlen(s, 64) : 64;
    pl__field f = {s, (uint32_t)n, 1};
    return n == 64 ? -1 : pl__parse_double(&f, out);
}

static void usage(FILE *f)
{
    fprintf(f, "pertload %s: data loader for gene-perturbation graph models\n\n"
               "usage: pertload COMMAND [ARGS]\n\ncommands:\n", PL_VERSION);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n'pertload COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("pertload %s\n", PL_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pertload: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
