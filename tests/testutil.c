#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/fileio.h"

char *pl_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/pertload-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    if (!d) {
        perror("mkdtemp");
        abort();
    }
    return strdup(d);
}

void pl_test_rmtree(const char *path) { pl__rmtree(path); }

char *pl_test_write(const char *dir, const char *name, const char *text)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
        perror(p);
        abort();
    }
    return p;
}

uint64_t pl_test_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t pl_test_below(uint64_t *s, uint64_t n) { return n ? pl_test_rand(s) % n : 0; }
