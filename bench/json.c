/* Flat JSON objects for the report driver (json.h). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int pl_bench_json_open(pl_bench_json *j, const char *path)
{
    j->n = 0;
    j->f = NULL;
    if (!path)
        return 0;
    if (!(j->f = fopen(path, "w"))) {
        fprintf(stderr, "pertload bench: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputc('{', j->f);
    return 0;
}

static void key(pl_bench_json *j, const char *k)
{
    fprintf(j->f, "%s\n  \"%s\": ", j->n++ ? "," : "", k);
}

void pl_bench_json_num(pl_bench_json *j, const char *k, double v)
{
    if (!j->f)
        return;
    key(j, k);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f);
}

void pl_bench_json_str(pl_bench_json *j, const char *k, const char *v)
{
    if (!j->f)
        return;
    key(j, k);
    fputc('"', j->f);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            fputc('\\', j->f);
        fputc(*c >= 0x20 && *c < 0x7f ? *c : '?', j->f);
    }
    fputc('"', j->f);
}

int pl_bench_json_close(pl_bench_json *j)
{
    if (!j->f)
        return 0;
    fputs("\n}\n", j->f);
    int bad = ferror(j->f);
    bad |= fclose(j->f);
    j->f = NULL;
    if (bad) {
        fprintf(stderr, "pertload bench: writing the JSON output failed\n");
        return -1;
    }
    return 0;
}
