/* The import readers (preprocess/import) on arbitrary bytes. The first byte
 * picks the stage: the line source alone (plain, gzip or zstd by the bytes
 * that follow) or one reader (string, biogrid, yeastract, tflink, dango over
 * a fixed gene list, delim with or without a header). Lines must lie in
 * order with their numbers, records must name non-empty views, and every
 * error must name the memory file. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "preprocess/import/edges/reader.h"

static int check_edge(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    (void)err;
    ++*(uint64_t *)ctx;
    if (!e->src.s || !e->dst.s || e->src.len == 0 || e->dst.len == 0)
        fuzz_fail("an edge with an empty name");
    if (memchr(e->src.s, '\n', e->src.len) || memchr(e->dst.s, '\n', e->dst.len))
        fuzz_fail("a name holding a newline");
    if (pl__src_lineno(src) == 0)
        fuzz_fail("an edge before the first line");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned pick;
    char path[64];
    int fd = fuzz_pick_file(data, size, 8, &pick, path);
    if (fd < 0)
        return 0;
    pl_err err = {0};
    if (pick == 0) {
        pl_src *s;
        int rc = pl__src_open(path, &s, &err);
        if (rc < 0)
            fuzz_fail("cannot open the memory file: %s", err.msg);
        const char *line;
        size_t len;
        uint64_t n = 0, bytes = 0;
        while ((rc = pl__src_line(s, &line, &len, &err)) > 0) {
            n++;
            bytes += len;
            if (pl__src_lineno(s) != n || memchr(line, '\n', len) || memchr(line, '\0', len))
                fuzz_fail("line %llu out of order or holding a newline or NUL",
                          (unsigned long long)n);
        }
        if (rc == 0 && pl__src_bytes(s) < bytes)
            fuzz_fail("fewer bytes counted than handed out");
        fuzz_expect_named(rc, 0, err.msg, path);
        pl__src_close(s);
        close(fd);
        return 0;
    }
    static const char *const fmts[] = {"", "string", "biogrid", "yeastract", "tflink",
                                       "dango", "delim", "delim"};
    pl_imp_opts o;
    pl__imp_opts_init(&o);
    if (pick == 1) {
        o.channel = "experimental";
        o.min_score = 100;
    } else if (pick == 2) {
        o.system_type = "physical";
        o.organisms[o.n_organisms++] = 559292;
        o.throughput = "low";
    } else if (pick == 4) {
        o.small_scale = 1;
    } else if (pick == 5) {
        static char *genes;
        if (!genes)
            genes = fuzz_write(fuzz_tmpdir(), "genes.txt", "YAL001C\nYAL002W\nQ0045\n", 22);
        o.gene_list = genes;
        o.min_score = 0.5;
    } else if (pick == 6) {
        o.sep = ' ';
        o.col_src = "1";
        o.col_dst = "2";
        o.col_score = "3";
    } else if (pick == 7) {
        o.header = 1;
        o.sep = ',';
        o.col_src = "a";
        o.col_dst = "b";
        o.col_score = "w";
        o.comment = "#";
    }
    uint64_t n = 0;
    pl_imp_stats st;
    int rc = pl__imp_read_file(pl__imp_format(fmts[pick]), path, &o, check_edge, &n, &st, &err);
    fuzz_expect_named(rc, 0, err.msg, path);
    if (st.emitted != n || st.emitted + st.filtered > st.rows)
        fuzz_fail("counts disagree: rows %llu, filtered %llu, emitted %llu, seen %llu",
                  (unsigned long long)st.rows, (unsigned long long)st.filtered,
                  (unsigned long long)st.emitted, (unsigned long long)n);
    close(fd);
    return 0;
}
