/* bench_import: MB/s of decompressed text per core through the import
 * readers (preprocess/import), on generated files of yeast download size:
 * STRING protein.links.detailed (v12 layout, default 2,000,000 rows, about
 * 96 MB) and BioGRID TAB 3.0 (37 columns, default 500,000 rows, about
 * 160 MB), each as plain text, gzip and zstd.
 *
 * Three stages per file: the line source alone (decompression, line split,
 * UTF-8 check), the reader (fields, header, filters), and the whole run
 * (reader + name resolution + the unordered-pair set). Figures are per core:
 * bytes of decompressed text over the CPU time of the process (one thread).
 *
 * usage: bench_import [--string-rows N] [--biogrid-rows N] [--dir DIR] [--reps R]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "preprocess/import/edges/import.h"
#include "src/core/progress.h"

enum { N_GENES = 6600 };

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static char genes[N_GENES][12];

/* ORF-like systematic names: Y + chromosome A-P + arm L/R + 3 digits + W/C. */
static void make_genes(void)
{
    for (int i = 0; i < N_GENES; i++)
        snprintf(genes[i], sizeof genes[i], "Y%c%c%03d%c", 'A' + i % 16, (i / 16) % 2 ? 'R' : 'L',
                 (i / 32) % 1000, (i / 7) % 2 ? 'W' : 'C');
}

typedef struct buf {
    char *s;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap ? b->cap * 2 : 1 << 20;
        b->s = realloc(b->s, b->cap);
        if (!b->s) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
}

static int chan(void)
{
    uint64_t r = next() % 100;
    return r < 70 ? 0 : (int)(next() % 1000);
}

static void gen_string(buf *b, uint64_t rows)
{
    put(b, "protein1 protein2 neighborhood fusion cooccurence coexpression experimental "
           "database textmining combined_score\n");
    for (uint64_t i = 0; i < rows; i++) {
        int a = (int)(next() % N_GENES), c = (int)(next() % N_GENES);
        put(b, "4932.%s 4932.%s %d %d %d %d %d %d %d %d\n", genes[a], genes[c], chan(), chan(),
            chan(), chan(), chan(), chan(), chan(), 150 + (int)(next() % 850));
    }
}

static void gen_biogrid(buf *b, uint64_t rows)
{
    static const char *sys[] = {"Affinity Capture-MS", "Two-hybrid", "Negative Genetic",
                                "Synthetic Lethality", "Positive Genetic",
                                "Affinity Capture-Western", "Reconstituted Complex"};
    put(b, "#BioGRID Interaction ID\tEntrez Gene Interactor A\tEntrez Gene Interactor B\t"
           "BioGRID ID Interactor A\tBioGRID ID Interactor B\tSystematic Name Interactor A\t"
           "Systematic Name Interactor B\tOfficial Symbol Interactor A\tOfficial Symbol "
           "Interactor B\tSynonyms Interactor A\tSynonyms Interactor B\tExperimental System\t"
           "Experimental System Type\tAuthor\tPublication Source\tOrganism ID Interactor A\t"
           "Organism ID Interactor B\tThroughput\tScore\tModification\tQualifications\tTags\t"
           "Source Database\tSWISS-PROT Accessions Interactor A\tTREMBL Accessions Interactor A"
           "\tREFSEQ Accessions Interactor A\tSWISS-PROT Accessions Interactor B\tTREMBL "
           "Accessions Interactor B\tREFSEQ Accessions Interactor B\tOntology Term IDs\t"
           "Ontology Term Names\tOntology Term Categories\tOntology Term Qualifier IDs\t"
           "Ontology Term Qualifier Names\tOntology Term Types\tOrganism Name Interactor A\t"
           "Organism Name Interactor B\n");
    for (uint64_t i = 0; i < rows; i++) {
        int a = (int)(next() % N_GENES), c = (int)(next() % N_GENES);
        int s = (int)(next() % 7);
        put(b, "%llu\t%d\t%d\t%d\t%d\t%s\t%s\tSYM%d\tSYM%d\tSYN%d|%s\t-\t%s\t%s\t"
               "Costanzo M (2016)\tPUBMED:%d\t559292\t559292\t%s\t%s\t-\t-\t-\tBIOGRID\t"
               "P%05d\tA0A%06d\tNP_%06d\tQ%05d\t-\tNP_%06d\t-\t-\t-\t-\t-\t-\t"
               "Saccharomyces cerevisiae (S288c)\tSaccharomyces cerevisiae (S288c)\n",
            (unsigned long long)(100000 + i), 850000 + a, 850000 + c, 31000 + a, 31000 + c,
            genes[a], genes[c], a, c, a, genes[a], sys[s], s < 2 || s > 4 ? "physical" : "genetic",
            27708008 + s, next() % 4 ? "High Throughput" : "Low Throughput",
            s >= 2 && s <= 4 ? "-0.2154" : "-", a, a, a, c, c);
    }
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void write_codecs(const char *dir, const char *name, const buf *b, char paths[3][4096])
{
    snprintf(paths[0], 4096, "%s/%s.txt", dir, name);
    write_file(paths[0], b->s, b->len);
    /* gzip -6, one member */
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    size_t cap = deflateBound(&z, b->len) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (Bytef *)b->s;
    z.avail_in = (uInt)b->len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (!out || deflate(&z, Z_FINISH) != Z_STREAM_END) {
        fprintf(stderr, "gzip failed\n");
        exit(1);
    }
    snprintf(paths[1], 4096, "%s/%s.txt.gz", dir, name);
    write_file(paths[1], out, cap - z.avail_out);
    deflateEnd(&z);
    /* zstd -3 */
    size_t zn = ZSTD_compress(out, cap, b->s, b->len, 3);
    if (ZSTD_isError(zn) || zn > cap) {
        size_t zcap = ZSTD_compressBound(b->len);
        out = realloc(out, zcap);
        zn = ZSTD_compress(out, zcap, b->s, b->len, 3);
    }
    snprintf(paths[2], 4096, "%s/%s.txt.zst", dir, name);
    write_file(paths[2], out, zn);
    free(out);
}

static int count_edge(void *ctx, const pl_imp_edge *e, const pl_src *src, pl_err *err)
{
    (void)e, (void)src, (void)err;
    ++*(uint64_t *)ctx;
    return 0;
}

/* Best of `reps` CPU-second runs of one stage. */
static double stage(int which, const char *path, const pl_imp_source *s, const pl_names *nm,
                    int reps, uint64_t *bytes, uint64_t *out_n)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        pl_err err = {0};
        double t0 = pl__cpu_now();
        int rc = 0;
        if (which == 0) {
            pl_src *src;
            rc = pl__src_open(path, &src, &err);
            const char *line;
            size_t len;
            uint64_t n = 0;
            while (rc >= 0 && (rc = pl__src_line(src, &line, &len, &err)) > 0)
                n++;
            if (rc >= 0) {
                *bytes = pl__src_bytes(src);
                *out_n = n;
            }
            pl__src_close(src);
        } else if (which == 1) {
            pl_imp_stats st;
            uint64_t n = 0;
            rc = pl__imp_read_file(s->fmt, path, &s->opts, count_edge, &n, &st, &err);
            *bytes = st.bytes;
            *out_n = n;
        } else {
            pl_imp_result res;
            pl_imp_source copy = *s;
            copy.file = (char *)path;
            rc = pl__imp_run(nm, &copy, 0, NULL, NULL, &res, &err);
            *bytes = res.read.bytes;
            *out_n = res.kept;
            pl__unres_free(&res.names);
        }
        double t = pl__cpu_now() - t0;
        if (rc < 0) {
            fprintf(stderr, "bench_import: %s\n", err.msg);
            exit(1);
        }
        if (t < best)
            best = t;
    }
    return best;
}

static void bench_file(const char *label, char paths[3][4096], const pl_imp_source *s,
                       const pl_names *nm, int reps)
{
    static const char *codec[] = {"plain", "gzip", "zstd"};
    static const char *what[] = {"source (decompress + lines + UTF-8)",
                                 "reader (+ fields, filters)",
                                 "run (+ names, unordered pairs)"};
    for (int c = 0; c < 3; c++)
        for (int w = 0; w < 3; w++) {
            uint64_t bytes = 0, n = 0;
            double t = stage(w, paths[c], s, nm, reps, &bytes, &n);
            printf("%-16s %-6s %-38s %8.1f MB/s per core  (%.1f MB in %.3f s CPU, %llu %s)\n",
                   label, codec[c], what[w], (double)bytes / 1e6 / t, (double)bytes / 1e6, t,
                   (unsigned long long)n, w == 0 ? "lines" : w == 1 ? "edges" : "kept");
            fflush(stdout);
        }
}

int main(int argc, char **argv)
{
    uint64_t string_rows = 2000000, biogrid_rows = 500000;
    const char *dir = NULL;
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--string-rows"))
            string_rows = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--biogrid-rows"))
            biogrid_rows = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "--dir"))
            dir = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_import [--string-rows N] [--biogrid-rows N] "
                            "[--dir DIR] [--reps R]\n");
            return 2;
        }
    }
    const char *tmp = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/pertload-bench-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!dir && !(dir = mkdtemp(tmpl))) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    make_genes();
    char gpath[4200];
    snprintf(gpath, sizeof gpath, "%s/genes.txt", dir);
    buf g = {0};
    for (int i = 0; i < N_GENES; i++)
        put(&g, "%s\n", genes[i]);
    write_file(gpath, g.s, g.len);
    free(g.s);
    pl_names *nm;
    pl_err err = {0};
    if (pl__names_new(&nm, &err) < 0 || pl__names_load_genes(nm, gpath, 0, &err) < 0) {
        fprintf(stderr, "bench_import: %s\n", err.msg);
        return 1;
    }
    char sp[3][4096], bp[3][4096];
    buf b = {0};
    gen_string(&b, string_rows);
    write_codecs(dir, "4932.protein.links.detailed", &b, sp);
    b.len = 0;
    gen_biogrid(&b, biogrid_rows);
    write_codecs(dir, "BIOGRID-ORGANISM-Saccharomyces_cerevisiae_S288c.tab3", &b, bp);
    free(b.s);

    pl_imp_source s = {.name = "experimental", .fmt = &pl__imp_string, .undirected = 1};
    pl__imp_opts_init(&s.opts);
    s.opts.channel = "experimental";
    s.opts.min_score = 150;
    bench_file("string-detailed", sp, &s, nm, reps);
    pl_imp_source bg = {.name = "physical", .fmt = &pl__imp_biogrid, .undirected = 1};
    pl__imp_opts_init(&bg.opts);
    bg.opts.system_type = "physical";
    bg.opts.organisms[bg.opts.n_organisms++] = 559292;
    bench_file("biogrid-tab3", bp, &bg, nm, reps);
    pl__names_free(nm);
    for (int c = 0; c < 3; c++) {
        unlink(sp[c]);
        unlink(bp[c]);
    }
    unlink(gpath);
    if (dir == tmpl)
        rmdir(dir);
    return 0;
}
