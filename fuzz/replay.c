/* Run a fuzz target over inputs without libFuzzer: each argument is a file or
 * a directory whose files (sorted by name) are inputs. Used by the corpus
 * replay tests, so that every committed seed and crash input runs through
 * the target on every test run. Fails when no input was found. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzzutil.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return -1;
    }
    /* An exact-size copy, so that reading past the input is caught where a
     * sanitizer runs. */
    uint8_t *in = malloc(len ? len : 1);
    if (!in)
        return -1;
    memcpy(in, buf, len);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(in, len);
    free(in);
    return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    long n = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) < 0)
                return 1;
            n++;
            continue;
        }
        struct dirent **ents;
        int k = scandir(argv[i], &ents, NULL, by_name);
        if (k < 0) {
            fprintf(stderr, "replay: cannot list %s\n", argv[i]);
            return 1;
        }
        for (int j = 0; j < k; j++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], ents[j]->d_name);
            if (ents[j]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(path) < 0)
                    return 1;
                n++;
            }
            free(ents[j]);
        }
        free(ents);
    }
    if (n == 0) {
        fprintf(stderr, "replay: no inputs given\n");
        return 1;
    }
    printf("replay: %ld inputs ran\n", n);
    return 0;
}
