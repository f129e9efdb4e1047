/* The helpers the subcommands share (cli.h): failure and usage messages,
 * names and sizes as printed, numeric options. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "src/core/error.h"
#include "src/core/parse.h"

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
