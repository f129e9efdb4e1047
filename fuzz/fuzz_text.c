/* The line reader of the text inputs (preprocess/text.c) on an arbitrary
 * file: every line is split into fields and each field parsed as a number,
 * as the readers of pl_build do. Fields must lie inside their line, and a
 * parse error must name the memory file, a line and a column. */
#include <string.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "preprocess/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    pl__text t;
    pl_err err;
    int rc = pl__text_open(&t, path, &err);
    if (rc < 0)
        fuzz_fail("cannot open the memory file: %s", err.msg);
    pl__field f[8];
    uint64_t lines = 0;
    while ((rc = pl__text_next(&t, &err)) == 1) {
        lines++;
        if (t.line < lines)
            fuzz_fail("line numbers go back");
        int n = pl__text_fields(&t, f, 8);
        if (n < 1)
            fuzz_fail("a non-blank line without fields");
        for (int i = 0; i < n && i < 8; i++) {
            if (f[i].s < t.cur || f[i].s + f[i].len > t.cur + t.cur_len ||
                f[i].col != (uint32_t)(f[i].s - t.cur) + 1)
                fuzz_fail("field %d outside its line", i);
            double d;
            uint64_t u;
            if (pl__parse_double(&f[i], &d) == 0 && d != d)
                fuzz_fail("parsed NaN as a number");
            if (pl__parse_u64(&f[i], &u) == 0 && (f[i].len == 0 || f[i].s[0] < '0' ||
                                                  f[i].s[0] > '9'))
                fuzz_fail("parsed a non-number as unsigned");
        }
    }
    if (rc < 0 && (rc != PL_EPARSE || strncmp(err.msg, path, strlen(path)) != 0))
        fuzz_fail("parse error without the file's name: %s", err.msg);
    pl__text_close(&t);
    close(fd);
    return 0;
}
