#include "testdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collate/collate.h"
#include "loader/io.h"
#include "masks/masks.h"
#include "preprocess/synth.h"
#include "src/core/db.h"
#include "src/core/dbformat.h"
#include "src/core/sstore.h"
#include "testutil.h"

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        pl_test_die("out of memory");
    return p;
}

uint32_t pl_test_db_types;

/* Build from build-args.txt: option lines each followed by their value.
 * Returns the rules file named there (malloc'd), or NULL. */
static char *build(pl_test_db *t, const char *in)
{
    char p[4608];
    snprintf(p, sizeof p, "%s/build-args.txt", in);
    size_t len;
    char *args = pl_test_read_file(p, &len);
    const char *names[PL_MAX_TYPES], *files[PL_MAX_TYPES];
    pl_build_opts o = {0};
    o.type_names = names;
    o.type_files = files;
    char *save = NULL;
    for (char *opt = strtok_r(args, "\n", &save); opt; opt = strtok_r(NULL, "\n", &save)) {
        char *v = strtok_r(NULL, "\n", &save);
        if (!v)
            pl_test_die("build-args.txt: %s without a value", opt);
        if (!strcmp(opt, "--edges")) {
            char *eq = strchr(v, '=');
            if (!eq || o.n_types == PL_MAX_TYPES)
                pl_test_die("build-args.txt: --edges %s", v);
            *eq = 0;
            names[o.n_types] = v;
            files[o.n_types++] = eq + 1;
        } else if (!strcmp(opt, "--genes")) {
            o.genes = v;
        } else if (!strcmp(opt, "--reactions")) {
            o.reactions = v;
        } else if (!strcmp(opt, "--gpr")) {
            o.gpr = v;
        } else if (!strcmp(opt, "--rules")) {
            o.rules = v;
        } else if (!strcmp(opt, "--rmr")) {
            o.rmr = v;
        } else if (!strcmp(opt, "--samples")) {
            o.samples = v;
        } else if (!strcmp(opt, "--payload")) {
            o.payload = v;
        } else {
            pl_test_die("build-args.txt: unknown option %s", opt);
        }
    }
    /* pl_test_db_types: more edge types, each a copy of the first's file */
    char extra[PL_MAX_TYPES][16];
    for (uint32_t k = 0; o.n_types && o.n_types < pl_test_db_types && o.n_types < PL_MAX_TYPES;
         k++) {
        snprintf(extra[k], sizeof extra[k], "copy%u", k);
        names[o.n_types] = extra[k];
        files[o.n_types++] = files[0];
    }
    o.out = t->path;
    pl_err err = {0};
    if (pl_build(&o, NULL, &err) != 0)
        pl_test_die("pl_build: %s", err.msg);
    char *rules = o.rules ? strdup(o.rules) : NULL;
    free(args);
    return rules;
}

/* The rule text of every reaction from a rules file (`reaction<TAB>rule`,
 * the header line `reaction<TAB>rule` skipped). */
static void read_rules(pl_test_db *t, const char *path, const char *const *rx_names)
{
    size_t len;
    char *text = pl_test_read_file(path, &len), *save = NULL;
    t->rule = calloc(t->n_rx ? t->n_rx : 1, sizeof *t->rule);
    if (!t->rule)
        pl_test_die("out of memory");
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(ln, '\t');
        if (!tab)
            pl_test_die("%s: no tab in '%s'", path, ln);
        *tab = 0;
        if (!strcmp(ln, "reaction"))
            continue;
        uint64_t r = 0;
        while (r < t->n_rx && strcmp(rx_names[r], ln))
            r++;
        if (r == t->n_rx)
            pl_test_die("%s: unknown reaction %s", path, ln);
        t->rule[r] = strdup(tab + 1);
    }
    free(text);
}

static int32_t *array(pl_test_db *t, int which, uint64_t count)
{
    size_t cap = (size_t)count * 8 + 8;
    int32_t *a = xmalloc(cap);
    pl_err err = {0};
    int64_t n = pl_db_graph_array(t->db, which, a, cap, &err);
    if (n < 0)
        pl_test_die("graph array %d: %s", which, err.msg);
    return a;
}

/* Rewrite the `genes` field of some rows of IN/samples.tsv (outliers). */
static void edit_samples(const char *in, const pl_test_outlier *out, uint32_t n_out)
{
    char p[4608];
    snprintf(p, sizeof p, "%s/genes.txt", in);
    size_t len;
    char *genes = pl_test_read_file(p, &len);
    snprintf(p, sizeof p, "%s/samples.tsv", in);
    char *text = pl_test_read_file(p, &len);
    FILE *f = fopen(p, "w");
    if (!f)
        pl_test_die("%s: cannot write", p);
    uint64_t line = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save), line++) {
        const pl_test_outlier *o = NULL;
        for (uint32_t i = 0; i < n_out; i++)
            if (line == out[i].row + 1) /* after the header */
                o = &out[i];
        char *tab = strchr(l, '\t'), *end = tab ? strchr(tab + 1, '\t') : NULL;
        if (!o || !end) { /* synth writes id, genes, labels */
            fprintf(f, "%s\n", l);
            continue;
        }
        fprintf(f, "%.*s\t", (int)(tab - l), l);
        uint32_t k = 0;
        for (const char *g = genes; *g && k < o->n_genes; k++) {
            size_t n = strcspn(g, "\n");
            fprintf(f, "%s%.*s", k ? ";" : "", (int)n, g);
            g += n + (g[n] == '\n');
        }
        fprintf(f, "%s\n", end);
    }
    if (fclose(f) != 0)
        pl_test_die("%s: write failed", p);
    free(text);
    free(genes);
}

void pl_test_db_make(pl_test_db *t, uint64_t n_genes, uint64_t n_samples, double scale,
                     uint32_t payload_dim, uint64_t seed)
{
    pl_test_db_make_outliers(t, n_genes, n_samples, scale, payload_dim, seed, NULL, 0);
}

void pl_test_db_make_outliers(pl_test_db *t, uint64_t n_genes, uint64_t n_samples, double scale,
                              uint32_t payload_dim, uint64_t seed, const pl_test_outlier *out,
                              uint32_t n_out)
{
    memset(t, 0, sizeof *t);
    t->dir = pl_test_tmpdir();
    char in[4352];
    snprintf(in, sizeof in, "%s/in", t->dir);
    snprintf(t->path, sizeof t->path, "%s/db", t->dir);
    pl_synth_opts so = {in, n_genes, n_samples, seed, scale, payload_dim, 0, NULL, 0, 0};
    pl_err err = {0};
    if (pl__synth(&so, &err) != 0)
        pl_test_die("synth: %s", err.msg);
    if (n_out)
        edit_samples(in, out, n_out);
    char *rules = build(t, in);
    if (pl_db_open(t->path, &t->db, &err) != 0)
        pl_test_die("open: %s", err.msg);
    const pl_db_info *info = pl_db_info_get(t->db);
    t->n_rx = info->n_reactions;
    if (rules && info->reaction_rule == PL_REACTION_GPR)
        read_rules(t, rules, info->reaction_names);
    free(rules);
    t->n_types = info->n_types;
    t->n_lists = info->n_types + (info->has_metabolism ? 3 : 0);
    t->n_genes = info->n_genes;
    t->n_samples = info->n_samples;
    t->n_rx = info->n_reactions;
    for (uint32_t k = 0; k < t->n_types; k++) {
        t->len[k] = info->n_edges[k];
        t->edges[k] = array(t, (int)k, info->n_edges[k]);
    }
    if (info->has_metabolism) {
        t->len[t->n_types + PL_LIST_GPR] = info->n_gpr;
        t->len[t->n_types + PL_LIST_REACTION] = info->n_reactions;
        t->len[t->n_types + PL_LIST_RMR] = info->n_rmr;
        t->gpr = array(t, PL_ARRAY_GPR, info->n_gpr);
        t->rmr = array(t, PL_ARRAY_RMR, info->n_rmr);
    }
    t->len[t->n_lists] = t->n_genes;
    if (info->payload_dtype[0]) {
        char p[4352];
        snprintf(p, sizeof p, "%s/%s", t->path, PL_FILE_PAYLOAD);
        size_t len;
        unsigned char *file = (unsigned char *)pl_test_read_file(p, &len);
        t->payload_row_bytes = info->payload_row_bytes;
        uint64_t need = t->payload_row_bytes * t->n_samples, off = t->db->meta.payload_offset;
        if (off + need > len)
            pl_test_die("payload.npy: %zu bytes, expected %llu", len, (unsigned long long)(off + need));
        t->payload = xmalloc(need);
        memcpy(t->payload, file + off, need);
        free(file);
    }
}

void pl_test_db_free(pl_test_db *t)
{
    free(t->want);
    free(t->scratch);
    free(t->P);
    free(t->row);
    pl__table_free(&t->table);
    pl_graph_free(t->g);
    pl_db_close(t->db);
    for (uint32_t k = 0; k < t->n_types; k++)
        free(t->edges[k]);
    free(t->gpr);
    for (uint64_t r = 0; t->rule && r < t->n_rx; r++)
        free(t->rule[r]);
    free(t->rule);
    free(t->rmr);
    free(t->payload);
    if (t->dir)
        pl_test_rmtree(t->dir);
    free(t->dir);
    memset(t, 0, sizeof *t);
}

void pl_test_db_pert(const pl_test_db *t, uint64_t row, unsigned char *P)
{
    pl_sample s;
    pl_err err = {0};
    if (pl_db_sample(t->db, row, &s, &err) != 0)
        pl_test_die("sample %llu: %s", (unsigned long long)row, err.msg);
    memset(P, 0, t->n_genes);
    for (uint32_t i = 0; i < s.n_genes; i++)
        P[s.genes[i]] = 1;
}

typedef struct oracle_ctx {
    const pl_test_db *t;
    const unsigned char *P;
} oracle_ctx;

static int oracle_deleted(void *ctx, const char *name, size_t len)
{
    const oracle_ctx *c = ctx;
    char buf[256];
    if (len >= sizeof buf)
        pl_test_die("gene name too long");
    memcpy(buf, name, len);
    buf[len] = 0;
    int64_t g = pl_db_gene_index(c->t->db, buf);
    if (g < 0)
        pl_test_die("rule names unknown gene %s", buf);
    return c->P[g];
}

uint64_t pl_test_oracle(const pl_test_db *t, uint32_t k, const unsigned char *P, int32_t *out)
{
    uint64_t n = 0, E = t->len[k];
    if (k == t->n_lists) {
        for (uint64_t g = 0; g < E; g++)
            if (P[g])
                out[n++] = (int32_t)g;
    } else if (k < t->n_types) {
        const int32_t *src = t->edges[k], *dst = t->edges[k] + E;
        for (uint64_t e = 0; e < E; e++)
            if (P[src[e]] || P[dst[e]])
                out[n++] = (int32_t)e;
    } else {
        uint64_t n_gpr = t->len[t->n_types + PL_LIST_GPR];
        uint64_t n_rmr = t->len[t->n_types + PL_LIST_RMR];
        unsigned char *gone = calloc(t->n_rx ? t->n_rx : 1, 1);
        if (!gone)
            pl_test_die("out of memory");
        /* a reaction is removed when any of its GPR genes is deleted (rule
         * any), or when its rule is false (rule gpr) */
        for (uint64_t i = 0; i < n_gpr; i++)
            if (P[t->gpr[i]])
                gone[t->gpr[n_gpr + i]] = 1;
        for (uint64_t r = 0; t->rule && r < t->n_rx; r++) {
            oracle_ctx c = {t, P};
            int holds = t->rule[r] ? pl_test_rule_holds(t->rule[r], oracle_deleted, &c) : 1;
            if (holds < 0)
                pl_test_die("rule of reaction %llu does not parse", (unsigned long long)r);
            gone[r] = !holds;
        }
        switch (k - t->n_types) {
        case PL_LIST_GPR:
            for (uint64_t i = 0; i < n_gpr; i++)
                if (P[t->gpr[i]])
                    out[n++] = (int32_t)i;
            break;
        case PL_LIST_REACTION:
            for (uint64_t r = 0; r < t->n_rx; r++)
                if (gone[r])
                    out[n++] = (int32_t)r;
            break;
        default:
            for (uint64_t i = 0; i < n_rmr; i++)
                if (gone[t->rmr[i]])
                    out[n++] = (int32_t)i;
        }
        free(gone);
    }
    return n;
}

void pl_test_oracle_row(const pl_test_db *t, uint32_t k, const unsigned char *P, uint32_t dense,
                        unsigned char *row)
{
    uint64_t E = t->len[k];
    int32_t *rem = xmalloc(E * 4);
    uint64_t n = pl_test_oracle(t, k, P, rem);
    unsigned char *kept = xmalloc(E);
    memset(kept, 1, E);
    for (uint64_t i = 0; i < n; i++)
        kept[rem[i]] = 0;
    if (dense == PL_MASK_BOOL) {
        memcpy(row, kept, E);
    } else {
        uint64_t words = (E + 63) / 64;
        memset(row, 0, words * 8);
        for (uint64_t e = 0; e < E; e++)
            if (kept[e])
                row[e / 8] |= (unsigned char)(1u << (e % 8)); /* LSB first, little-endian */
    }
    free(kept);
    free(rem);
}

void pl_test_db_corrupt_block(const pl_test_db *t, uint32_t b)
{
    char p[4352];
    snprintf(p, sizeof p, "%s/%s", t->path, PL_FILE_SAMPLES);
    FILE *f = fopen(p, "r+b");
    if (!f)
        pl_test_die("%s: cannot open", p);
    uint64_t off = PL_SSTORE_HEADER;
    for (uint32_t i = 0;; i++) {
        uint32_t h[4];
        if (fseek(f, (long)off, SEEK_SET) != 0 || fread(h, sizeof h, 1, f) != 1 ||
            h[0] != PL_BLOCK_MAGIC)
            pl_test_die("%s: no block %u", p, b);
        if (i == b) {
            long at = (long)(off + PL_BLOCK_HEADER + h[1] / 2);
            unsigned char c;
            fseek(f, at, SEEK_SET);
            if (fread(&c, 1, 1, f) != 1)
                pl_test_die("%s: short read", p);
            c ^= 0xFF;
            fseek(f, at, SEEK_SET);
            fwrite(&c, 1, 1, f);
            break;
        }
        off += PL_BLOCK_HEADER + h[1];
    }
    if (fclose(f) != 0)
        pl_test_die("%s: write failed", p);
}

void pl_test_db_load(pl_test_db *t)
{
    pl_err err = {0};
    if (pl_graph_load(t->db, &t->g, &err) != 0)
        pl_test_die("graph: %s", err.msg);
    if (pl__table_load(t->db, t->g, PL_IO_AUTO, &t->table, &err) != 0)
        pl_test_die("sample table: %s", err.msg);
    uint64_t most = 0;
    for (uint32_t k = 0; k <= t->n_lists; k++)
        most = t->len[k] > most ? t->len[k] : most;
    t->row = xmalloc(most + 64);
    t->P = xmalloc(t->n_genes);
    t->scratch = xmalloc((t->table.max_kind_bound + PL__MASKS_PAD) * 4);
}

uint32_t pl_test_collate(pl_test_db *t, const pl_plan *plan, uint32_t B, uint64_t pb,
                         uint64_t epoch, uint64_t *rows)
{
    pl__collate_cfg c;
    pl__collate_cfg_init(&c, t->db, t->g, B, PL_DENSE_NONE);
    uint64_t cap = pl__collate_slot_bytes(&c, B, (uint64_t)B * t->table.max_genes,
                                          (uint64_t)B * t->table.max_bound);
    if (cap > t->want_cap) {
        free(t->want);
        t->want = xmalloc(cap);
        t->want_cap = cap;
    }
    uint32_t n = pl_plan_batch(plan, pb, rows);
    if (n == 0)
        pl_test_die("plan batch %llu is past the plan", (unsigned long long)pb);
    uint64_t *ids = xmalloc(8 * (size_t)n);
    uint32_t *ng = xmalloc(4 * (size_t)n);
    const int32_t **genes = xmalloc(sizeof *genes * n);
    const float **labels = xmalloc(sizeof *labels * n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = rows[i];
        ids[i] = t->table.ids[r];
        genes[i] = t->table.genes + t->table.gptr[r];
        ng[i] = (uint32_t)(t->table.gptr[r + 1] - t->table.gptr[r]);
        labels[i] = t->table.labels + r * t->table.n_labels;
    }
    unsigned char *pay = t->want + pl__collate_payload_offset(&c, n);
    for (uint32_t i = 0; i < n && c.payload_row_bytes; i++)
        memcpy(pay + i * c.payload_row_bytes, t->payload + rows[i] * c.payload_row_bytes,
               c.payload_row_bytes);
    pl__batch_src src = {.n = n, .ids = ids, .rows = rows, .genes = genes, .n_genes = ng,
                         .labels = labels};
    pl_err err = {0};
    if (pl__collate(&c, &src, t->want, cap, pb, epoch, t->scratch,
                    t->table.max_kind_bound + PL__MASKS_PAD, &err) != 0)
        pl_test_die("collate: %s", err.msg);
    free(ids);
    free(ng);
    free(genes);
    free(labels);
    return n;
}

int pl_test_slot_diff(const pl_test_db *t, const void *slot, uint64_t bytes, char *why,
                      size_t cap)
{
    const struct pl_slot_header *h = slot, *w = (const void *)t->want;
    const unsigned char *got = slot;
    if (memcmp(h, w, sizeof *h)) {
        snprintf(why, cap, "slot header differs (batch %llu, expected %llu)",
                 (unsigned long long)h->batch, (unsigned long long)w->batch);
        return 1;
    }
    if (bytes != w->used) {
        snprintf(why, cap, "%llu bytes uploaded, the slot uses %llu", (unsigned long long)bytes,
                 (unsigned long long)w->used);
        return 1;
    }
    const struct pl_slot_array *ga = (const void *)(h + 1), *wa = (const void *)(w + 1);
    if (memcmp(ga, wa, w->n_arrays * sizeof *wa)) {
        snprintf(why, cap, "array descriptors differ");
        return 1;
    }
    for (uint32_t i = 0; i < w->n_arrays; i++) {
        if (wa[i].offset + wa[i].nbytes > w->used) {
            snprintf(why, cap, "array %s lies past the used bytes", wa[i].name);
            return 1;
        }
        if (memcmp(got + wa[i].offset, t->want + wa[i].offset, wa[i].nbytes)) {
            snprintf(why, cap, "array %s differs", wa[i].name);
            return 1;
        }
    }
    return 0;
}

int pl_test_masks_diff(pl_test_db *t, uint32_t dense, uint32_t n, const uint64_t *rows,
                       const void *gene_mask, const void *const *mask, char *why, size_t cap)
{
    for (uint32_t i = 0; i < n; i++) {
        pl_test_db_pert(t, rows[i], t->P);
        for (uint32_t k = 0; k <= t->n_lists; k++) {
            const unsigned char *m = k == t->n_lists ? gene_mask : mask[k];
            uint64_t row = pl__expand_row_bytes(dense, t->len[k]);
            pl_test_oracle_row(t, k, t->P, dense, t->row);
            if (memcmp(m + row * i, t->row, row)) {
                snprintf(why, cap, "sample %u (row %llu) list %u: %s mask differs from the "
                         "oracle", i, (unsigned long long)rows[i], k,
                         dense == PL_MASK_BITS ? "bits" : "bool");
                return 1;
            }
        }
    }
    return 0;
}

static void expand_case(pl_test_expand_case *c, uint32_t dense, uint64_t seed,
                        const uint32_t *lens, uint32_t L, uint32_t n)
{
    uint32_t longest = 0;
    for (uint32_t k = 0; k < L; k++)
        longest = lens[k] > longest ? lens[k] : longest;
    memset(c, 0, sizeof *c);
    c->job.dense = dense;
    c->job.n = n;
    c->job.n_lists = L;
    uint64_t cap = 0, want_bytes = 0, at = 0, mask_at = 0;
    for (uint32_t k = 0; k < L; k++) {
        cap += 8 * (n + 1) + 4 * (uint64_t)lens[k] * n + 128;
        want_bytes += pl__expand_row_bytes(dense, lens[k]) * n;
    }
    c->slot = calloc(1, cap);
    c->want = xmalloc(want_bytes);
    unsigned char *kept = xmalloc(longest + 1);
    if (!c->slot)
        pl_test_die("out of memory");
    for (uint32_t k = 0; k < L; k++) {
        pl__expand_list *l = &c->job.list[k];
        uint64_t row = pl__expand_row_bytes(dense, lens[k]);
        l->len = lens[k];
        l->ptr = at;
        int64_t *ptr = (int64_t *)(c->slot + at);
        at += 8 * (n + 1);
        l->removed = at;
        int32_t *pos = (int32_t *)(c->slot + at);
        l->out = mask_at;
        l->tiles = (uint32_t)((row + PL__EXPAND_TILE - 1) / PL__EXPAND_TILE);
        l->first = c->job.tiles;
        c->job.tiles += l->tiles;
        ptr[0] = 0;
        for (uint32_t i = 0; i < n; i++) {
            memset(kept, 1, lens[k]);
            int64_t m = ptr[i];
            for (uint32_t p = 0; p < lens[k]; p++) {
                int take = i == 2 ? 1                                       /* all */
                           : i == 3 ? 0                                     /* none */
                           : i == 1 ? p == 0 || p + 1 == lens[k] || p % 64 == 63
                           : i == 4 ? p % 7 < 3
                                    : pl_test_below(&seed, 50) == 0;
                if (take) {
                    pos[m++] = (int32_t)p;
                    kept[p] = 0;
                }
            }
            ptr[i + 1] = m;
            unsigned char *w = c->want + mask_at + row * i;
            if (dense == PL_MASK_BOOL) {
                memcpy(w, kept, lens[k]);
            } else {
                memset(w, 0, row);
                for (uint32_t p = 0; p < lens[k]; p++)
                    if (kept[p])
                        w[p / 8] |= (unsigned char)(1u << (p % 8));
            }
        }
        at = (at + 4 * (uint64_t)ptr[n] + 63) & ~(uint64_t)63;
        /* bits rows stay word-aligned: every row is a multiple of 8 bytes */
        mask_at += row * n;
    }
    free(kept);
    c->slot_bytes = at;
    c->mask_bytes = want_bytes;
}

void pl_test_expand_case_make(pl_test_expand_case *c, uint32_t dense, uint64_t seed)
{
    static const uint32_t lens[] = {0, 1, 63, 64, 65, 3 * 8 * PL__EXPAND_TILE + 5,
                                    2 * PL__EXPAND_TILE + 1, 7};
    expand_case(c, dense, seed, lens, sizeof lens / sizeof lens[0], 5);
}

void pl_test_expand_case_make_wide(pl_test_expand_case *c, uint32_t dense, uint64_t seed)
{
    /* Lists of one tile or none, an odd number of tiles a sample and an odd
     * number of samples, over 70,000 tiles: two rows of a grid at most
     * 65,535 wide, one block of the second idle. */
    enum { L = PL__EXPAND_MAX - 1 };
    uint32_t lens[L];
    static const uint32_t some[] = {0, 1, 63, 64, 65, 127, 200, 7};
    for (uint32_t k = 0; k < L; k++)
        lens[k] = some[k % (sizeof some / sizeof some[0])] + 64 * (k / 8 % 3);
    uint32_t tiles = 0;
    for (uint32_t k = 0; k < L; k++)
        tiles += lens[k] > 0;
    if (tiles % 2 == 0) {
        lens[1] = 0;
        tiles--;
    }
    expand_case(c, dense, seed, lens, L, (70000 / tiles + 1) | 1);
}

void pl_test_expand_case_free(pl_test_expand_case *c)
{
    free(c->slot);
    free(c->want);
    memset(c, 0, sizeof *c);
}
