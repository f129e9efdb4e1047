/* Synthetic input files, yeast or human scale (see synth.h; the presets: synth_preset.c).
 *
 * Every component draws from its own xoshiro256** stream, seeded from (seed, component),
 * so that changing --samples leaves the graph as it was and vice versa; gene names depend
 * on --genes only. Degrees are heavy-tailed: an endpoint is drawn with weight
 * 1/(rank + r0)^ALPHA over a random ranking of the genes, one ranking per edge type; the
 * offset r0 (about 34 for 6,607 genes, 101 for 20,000) keeps the biggest hubs at
 * thousands of edges rather than a tenth of the type. The small yeast types
 * (pl__synth_type_half) draw from a random half of the genes, so the other half is isolated there. Pairs are kept unique by a hash set
 * (otherwise hub pairs repeat by the hundred); duplicates and self-loops are then added
 * on purpose at P_DUP and P_SELF. */
#include "synth.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/npy.h"
#include "src/core/progress.h"
#include "synth_preset.h"
#include "synth_util.h"

#define N_TYPES PL_SYNTH_TYPES

#define P_SELF 0.001             /* self-loops */
#define P_DUP 0.005              /* exact duplicates of an earlier edge */
#define P_SINGLE (5694.0 / 13525071.0)
#define P_TRIPLE (376732.0 / 13525071.0)
#define P_FIT_MISSING 0.03
#define P_GI_MISSING 0.10
#define P_NA 0.25                /* a missing label is "NA", otherwise empty */
#define P_NO_GPR 0.30            /* reactions without genes */
#define LOCI (16u * 2u * 999u)   /* Y + chromosome A-P + arm L/R + 001..999 */
#define NAME_CAP 24

enum { S_NAMES = 1, S_FITNESS, S_METAB, S_SAMPLES, S_PAYLOAD, S_IDS, S_SCORES, S_RULES,
       S_EDGES = 64 };

/* --------------------------------------------------------------- generator */

typedef struct synth {
    const pl_synth_opts *o;
    const pl_synth_preset *ps;  /* the preset */
    uint32_t n;                 /* genes */
    char (*name)[NAME_CAP];     /* [n] gene names */
    uint8_t *name_len;          /* [n] */
    uint64_t n_edges[N_TYPES], n_self, n_dup;
    uint32_t n_isolated[N_TYPES];
    uint64_t max_degree[N_TYPES];
    uint64_t n_react, n_met, n_met_used, n_no_gpr, n_gpr, n_rmr;
    uint64_t n_rule_kind[4];    /* rules: isozymes (or), complexes (and), complexes
                                   sharing a subunit, complexes of isozymes */
    uint64_t n_by_k[4];         /* samples by number of deleted genes */
} synth;

/* OUT joined with `name`. */
static int out_path(const synth *s, char *buf, const char *name, pl_err *err)
{
    const char *out = s->o->out;
    size_t len = strlen(out);
    const char *sep = len && out[len - 1] == '/' ? "" : "/";
    if (snprintf(buf, PATH_MAX, "%s%s%s", out, sep, name) >= PATH_MAX)
        return pl__err(err, -ENAMETOOLONG, "%s: %s", out, strerror(ENAMETOOLONG));
    return 0;
}

/* Create `path` and any missing parents (as mkdir -p). */
static int make_dir(const char *path, pl_err *err)
{
    struct stat st;
    if (mkdir(path, 0777) == 0)
        return 0;
    int e = errno;
    if (e == ENOENT) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        char *slash = strrchr(parent, '/');
        while (slash && slash > parent && slash[1] == '\0') { /* trailing '/' */
            *slash = '\0';
            slash = strrchr(parent, '/');
        }
        if (slash && slash > parent) {
            *slash = '\0';
            PL_TRY(make_dir(parent, err));
            if (mkdir(path, 0777) == 0)
                return 0;
            e = errno;
        }
    }
    if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (e == EEXIST)
        e = ENOTDIR;
    return pl__err(err, -e, "%s: cannot create directory: %s", path, strerror(e));
}

/* Unique ORF-like names (YAL001C), sorted: a random subset of the loci, chosen in order
 * by selection sampling; past LOCI genes every locus is used again with a suffix "-1"... */
static int make_names(synth *s, pl_err *err)
{
    s->name = malloc((size_t)s->n * sizeof *s->name);
    s->name_len = malloc(s->n);
    if (!s->name || !s->name_len)
        return pl__err(err, -ENOMEM, "out of memory");
    rng r;
    rng_seed(&r, 0, S_NAMES);
    uint32_t want = s->n < LOCI ? s->n : LOCI;
    for (uint32_t l = 0, i = 0; i < s->n; l++) {
        if (l >= LOCI) /* only when n > LOCI: every locus was taken */
            l = 0;
        if (i < LOCI && rng_below(&r, LOCI - l) >= want - i)
            continue;
        uint32_t arm = l / 999, num = l % 999 + 1;
        uint64_t h = l;
        char strand = splitmix64(&h) & 1 ? 'W' : 'C';
        int n = snprintf(s->name[i], NAME_CAP, "Y%c%c%03u%c", 'A' + arm / 2,
                         arm % 2 ? 'R' : 'L', num, strand);
        if (i >= LOCI)
            n += snprintf(s->name[i] + n, NAME_CAP - (size_t)n, "-%u", i / LOCI);
        s->name_len[i++] = (uint8_t)n;
    }
    return 0;
}

static int write_genes(synth *s, pl_err *err)
{
    char path[PATH_MAX], line[NAME_CAP + 1];
    wfile w;
    PL_TRY(out_path(s, path, "genes.txt", err));
    PL_TRY(pl__w_open(&w, path, err));
    for (uint32_t g = 0; g < s->n; g++) {
        memcpy(line, s->name[g], s->name_len[g]);
        line[s->name_len[g]] = '\n';
        int rc = pl__w_put(&w, line, s->name_len[g] + 1u, err);
        if (rc < 0) {
            pl__w_abort(&w);
            return rc;
        }
    }
    return pl__w_close(&w, err);
}

/* Insert `key` (never 0) into the open-addressing set; 1 if it was new. */
static int set_add(uint64_t *set, uint64_t mask, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    for (uint64_t i = (h ^ h >> 29) & mask;; i = (i + 1) & mask) {
        if (set[i] == key)
            return 0;
        if (!set[i]) {
            set[i] = key;
            return 1;
        }
    }
}

/* One edge TSV: `src dst`, plus a STRING score for the string12_0_* types. */
static int write_edges(synth *s, uint32_t t, pl__progress *pg, uint64_t *done, pl_err *err)
{
    const uint64_t E = s->n_edges[t];
    const int scored = !strncmp(pl__synth_type_name(t), "string", 6);
    char path[PATH_MAX], file[128], line[2 * NAME_CAP + 16];
    uint64_t mask = 15, *edge = NULL, *set = NULL, *deg = NULL;
    plaw pw = {0};
    wfile w;
    rng r;
    int rc;

    while (mask + 1 < 2 * E)
        mask = mask * 2 + 1;
    snprintf(file, sizeof file, "edges/%s.tsv", pl__synth_type_name(t));
    PL_TRY(out_path(s, path, file, err));
    rng_seed(&r, s->o->seed, S_EDGES + t);
    uint32_t n_act = pl__synth_type_half(t) ? (s->n + 1) / 2 : s->n;
    PL_TRY(pl__plaw_init(&pw, &r, s->n, n_act, err));
    edge = malloc((E ? E : 1) * sizeof *edge);
    set = calloc(mask + 1, sizeof *set);
    deg = calloc(s->n, sizeof *deg);
    if (!edge || !set || !deg) {
        rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
        goto out;
    }
    if ((rc = pl__w_open(&w, path, err)) < 0)
        goto out;
    for (uint64_t i = 0; i < E; i++) {
        uint64_t e;
        if (i > 0 && rng_unif(&r) < P_DUP) {
            e = edge[(uint64_t)(rng_unif(&r) * (double)i)];
            s->n_dup++;
        } else {
            for (int tries = 0;; tries++) { /* give up on uniqueness for tiny graphs */
                uint32_t a = plaw_draw(&pw, &r), b = a;
                if (rng_unif(&r) >= P_SELF)
                    for (int k = 0; k < 64 && b == a; k++)
                        b = plaw_draw(&pw, &r);
                e = (uint64_t)a << 32 | b;
                if (set_add(set, mask, e + 1) || tries >= 64)
                    break;
            }
        }
        edge[i] = e;
        uint32_t a = (uint32_t)(e >> 32), b = (uint32_t)e;
        s->n_self += a == b;
        deg[a]++;
        deg[b] += a != b;
        char *p = line;
        memcpy(p, s->name[a], s->name_len[a]);
        p += s->name_len[a];
        *p++ = '\t';
        memcpy(p, s->name[b], s->name_len[b]);
        p += s->name_len[b];
        if (scored) { /* a function of the pair: duplicates stay exact; skewed low */
            uint64_t h = e ^ (s->o->seed * 0x9E3779B97F4A7C15ull) ^ (S_SCORES + t);
            double u = (double)(splitmix64(&h) >> 11) * 0x1p-53;
            *p++ = '\t';
            p = pl__put_u64(p, 150 + (uint64_t)(850.0 * u * u));
        }
        *p++ = '\n';
        if ((rc = pl__w_put(&w, line, (size_t)(p - line), err)) < 0) {
            pl__w_abort(&w);
            goto out;
        }
        if ((++*done & 0xffff) == 0)
            pl__progress_update(pg, *done, -1);
    }
    for (uint32_t g = 0; g < s->n; g++) {
        s->n_isolated[t] += deg[g] == 0;
        if (deg[g] > s->max_degree[t])
            s->max_degree[t] = deg[g];
    }
    rc = pl__w_close(&w, err);
out:
    pl__plaw_free(&pw);
    free(edge);
    free(set);
    free(deg);
    return rc;
}

/* Pick from a small table of cumulative probabilities. */
static uint32_t pick(rng *r, const double *cum, uint32_t n)
{
    double u = rng_unif(r);
    uint32_t i = 0;
    while (i + 1 < n && u >= cum[i])
        i++;
    return i;
}

/* The gene-reaction rule of a reaction of k >= 1 genes v[0..k), as yeast-GEM
 * writes them, into `line` (after "NAME\t"): one gene; isozymes `A or B`; a
 * complex `A and B`; complexes sharing a subunit `(A and B) or (A and C)`;
 * a complex of isozymes `(A or B) and (C or D)`. The genes appear first in
 * the order v[0..k), so the rule's GPR edges are those of gpr.tsv. Draws
 * from its own stream: the rest of the data set does not depend on it. */
static size_t put_rule(synth *s, rng *r, const uint32_t *v, uint32_t k, char *line, size_t cap)
{
    size_t n = 0;
#define PUT(...) (n += (size_t)snprintf(line + n, n < cap ? cap - n : 0, __VA_ARGS__))
    double u = rng_unif(r);
    int kind = k == 1 ? -1 : u < 0.40 ? 0 : u < 0.60 || k == 2 ? 1 : u < 0.80 ? 2 : 3;
    if (kind >= 0)
        s->n_rule_kind[kind]++;
    if (kind <= 1) {
        for (uint32_t i = 0; i < k; i++)
            PUT("%s%s", i ? (kind == 0 ? " or " : " and ") : "", s->name[v[i]]);
    } else if (kind == 2) {
        for (uint32_t i = 1; i < k; i++)
            PUT("%s(%s and %s)", i > 1 ? " or " : "", s->name[v[0]], s->name[v[i]]);
    } else {
        uint32_t h = k / 2;
        for (uint32_t i = 0; i < k; i++)
            PUT("%s%s", i == 0 ? "(" : i == h ? ") and (" : " or ", s->name[v[i]]);
        PUT(")");
    }
    PUT("\n");
#undef PUT
    return n < cap ? n : cap - 1;
}

/* reactions.txt, gpr.tsv (`gene reaction`), rules.tsv (`reaction rule`, the
 * same genes), rmr.tsv (`reaction metabolite stoich`). */
static int write_metabolism(synth *s, pl_err *err)
{
    static const double gpr_k[] = {0.65, 0.83, 0.91, 0.96, 0.98, 1.0};          /* 1..6 */
    static const double rmr_k[] = {0.20, 0.45, 0.70, 0.82, 0.90, 0.95, 1.0};    /* 2..8 */
    const char *names[4] = {"reactions.txt", "gpr.tsv", "rmr.tsv", "rules.tsv"};
    char path[PATH_MAX], line[1024];
    wfile w[4];
    plaw genes = {0}, mets = {0};
    uint8_t *used = NULL;
    int rc = 0, open[4] = {0};
    rng r, rr;

    rng_seed(&r, s->o->seed, S_METAB);
    rng_seed(&rr, s->o->seed, S_RULES);
    double mg = floor(s->ps->metabolic_genes * s->n / (double)s->ps->n_genes + 0.5);
    uint32_t n_mg = mg < 1 ? 1 : mg > s->n ? s->n : (uint32_t)mg;
    if ((rc = pl__plaw_init(&genes, &r, s->n, n_mg, err)) < 0 ||
        (rc = pl__plaw_init(&mets, &r, (uint32_t)s->n_met, (uint32_t)s->n_met, err)) < 0)
        goto out;
    if (!(used = calloc(s->n_met, 1))) {
        rc = pl__err(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < 4; i++) {
        if ((rc = out_path(s, path, names[i], err)) < 0 || (rc = pl__w_open(&w[i], path, err)) < 0)
            goto out;
        open[i] = 1;
    }
    if ((rc = pl__w_put(&w[3], "reaction\trule\n", 14, err)) < 0)
        goto out;
    for (uint64_t j = 1; j <= s->n_react; j++) {
        char rname[32];
        uint32_t v[8];
        int rn = snprintf(rname, sizeof rname, "r_%04llu", (unsigned long long)j);
        snprintf(line, sizeof line, "%s\n", rname);
        if ((rc = pl__w_put(&w[0], line, (size_t)rn + 1, err)) < 0)
            goto out;
        int rn_tab = snprintf(line, sizeof line, "%s\t", rname);
        if (rng_unif(&r) < P_NO_GPR) {
            s->n_no_gpr++;
            line[rn_tab] = '\n';
            if ((rc = pl__w_put(&w[3], line, (size_t)rn_tab + 1, err)) < 0)
                goto out;
        } else {
            uint32_t k = 1 + pick(&r, gpr_k, 6);
            k = k < n_mg ? k : n_mg;
            pl__draw_distinct(&genes, &r, 0, v, k);
            for (uint32_t i = 0; i < k; i++) {
                int n = snprintf(line, sizeof line, "%s\t%s\n", s->name[v[i]], rname);
                if ((rc = pl__w_put(&w[1], line, (size_t)n, err)) < 0)
                    goto out;
            }
            s->n_gpr += k;
            int rt = snprintf(line, sizeof line, "%s\t", rname);
            size_t rl = put_rule(s, &rr, v, k, line + rt, sizeof line - (size_t)rt);
            if ((rc = pl__w_put(&w[3], line, (size_t)rt + rl, err)) < 0)
                goto out;
        }
        uint32_t k = 2 + pick(&r, rmr_k, 7);
        k = k < s->n_met ? k : (uint32_t)s->n_met;
        pl__draw_distinct(&mets, &r, 0, v, k);
        uint32_t n_sub = k > 1 ? 1 + rng_below(&r, k - 1) : 1;
        for (uint32_t i = 0; i < k; i++) {
            double u = rng_unif(&r), c;
            if (u < 0.80)
                c = 1;
            else if (u < 0.90)
                c = 2 + rng_below(&r, 3);
            else if (u < 0.95)
                c = 0.5;
            else
                c = (1 + rng_below(&r, 2999)) / 1000.0;
            int n = snprintf(line, sizeof line, "%s\ts_%04u\t%.6g\n", rname, v[i] + 1,
                             i < n_sub ? -c : c);
            if ((rc = pl__w_put(&w[2], line, (size_t)n, err)) < 0)
                goto out;
            s->n_met_used += !used[v[i]];
            used[v[i]] = 1;
        }
        s->n_rmr += k;
    }
    for (int i = 0; i < 4; i++) {
        open[i] = 0;
        if ((rc = pl__w_close(&w[i], err)) < 0)
            goto out;
    }
out:
    for (int i = 0; i < 4; i++)
        if (open[i])
            pl__w_abort(&w[i]);
    pl__plaw_free(&genes);
    pl__plaw_free(&mets);
    free(used);
    return rc;
}

/* A bijection of [0, 2^48): unique sample ids that are not the row numbers. */
static uint64_t sample_id(uint64_t row, uint64_t key)
{
    const uint64_t m = (1ull << 48) - 1;
    uint64_t x = (row + key) & m;
    x ^= x >> 23;
    x = (x * 0x5DEECE66Dull) & m;
    x ^= x >> 19;
    x = (x * 0x9E3779B97F4Bull) & m;
    return x ^ (x >> 25);
}

/* printf's %.6g without printf for 1e-4 <= |v| < 1e6 (samples.tsv's hot path): six
 * significant digits, trailing zeros dropped. Other values go through snprintf. */
static char *put_g6(char *p, double v)
{
    static const double p10[] = {1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6,
                                 1e7, 1e8, 1e9};
    double a = fabs(v);
    if (!(a >= 1e-4 && a < 1e6))
        return p + snprintf(p, 32, "%.6g", v);
    int e = -4; /* a in [10^e, 10^(e+1)) */
    while (a >= p10[e + 5])
        e++;
    uint64_t m = (uint64_t)(a * p10[9 - e] + 0.5); /* 6 digits: a = m * 10^(e-5) */
    if (m >= 1000000) {
        m /= 10;
        if (++e == 6)
            return p + snprintf(p, 32, "%.6g", v);
    }
    char d[6];
    for (int i = 5; i >= 0; i--, m /= 10)
        d[i] = (char)('0' + m % 10);
    int nd = 6, k = 0;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    if (v < 0)
        *p++ = '-';
    if (e < 0) {
        *p++ = '0';
        *p++ = '.';
        for (int i = -1; i > e; i--)
            *p++ = '0';
    } else {
        for (; k <= e; k++)
            *p++ = d[k];
        if (nd > k)
            *p++ = '.';
    }
    for (; k < nd; k++)
        *p++ = d[k];
    return p;
}

/* A missing label ("" or "NA"), or the value with %.6g. */
static char *put_label(char *p, rng *r, double p_missing, double v)
{
    if (rng_unif(r) < p_missing) {
        if (rng_unif(r) < P_NA) {
            memcpy(p, "NA", 2);
            p += 2;
        }
        return p;
    }
    return put_g6(p, v);
}

/* samples.tsv: `id genes fitness gene_interaction`, streamed row by row. */
static int write_samples(synth *s, pl_err *err)
{
    static const char header[] = "id\tgenes\tfitness\tgene_interaction\n";
    char path[PATH_MAX], line[512];
    double *fit = malloc((size_t)s->n * sizeof *fit);
    pl__progress pg;
    wfile w;
    rng r;
    int rc;

    if (!fit)
        return pl__err(err, -ENOMEM, "out of memory");
    rng_seed(&r, s->o->seed, S_FITNESS);
    for (uint32_t g = 0; g < s->n; g++) { /* single-mutant fitness: mostly near 1 */
        double u = rng_unif(&r);
        fit[g] = 1.0 - 0.6 * pow(u, 6) - 0.05 * u;
    }
    if ((rc = out_path(s, path, "samples.tsv", err)) < 0 || (rc = pl__w_open(&w, path, err)) < 0)
        goto out;
    if ((rc = pl__w_put(&w, header, sizeof header - 1, err)) < 0)
        goto fail;
    rng_seed(&r, s->o->seed, S_SAMPLES);
    uint64_t key = s->o->seed;
    key = splitmix64(&key) ^ S_IDS;
    pl__progress_start(&pg, s->o->progress, "samples", s->o->n_samples);
    for (uint64_t row = 0; row < s->o->n_samples; row++) {
        double u = rng_unif(&r);
        uint32_t g[3], k = u < P_SINGLE ? 1 : u < P_SINGLE + P_TRIPLE ? 3 : 2;
        k = k < s->n ? k : s->n;
        s->n_by_k[k]++;
        pl__draw_distinct(NULL, &r, s->n, g, k);
        double prod = 1, eps = 0.02 * (rng_unif(&r) + rng_unif(&r) + rng_unif(&r) +
                                      rng_unif(&r) - 2.0);
        if (rng_unif(&r) < 0.05)
            eps *= 5; /* a few strong interactions */
        char *p = pl__put_u64(line, sample_id(row, key));
        for (uint32_t i = 0; i < k; i++) {
            *p++ = i ? ';' : '\t';
            memcpy(p, s->name[g[i]], s->name_len[g[i]]);
            p += s->name_len[g[i]];
            prod *= fit[g[i]];
        }
        double f = prod + eps < 0 ? 0 : prod + eps;
        *p++ = '\t';
        p = put_label(p, &r, P_FIT_MISSING, f);
        *p++ = '\t';
        p = put_label(p, &r, k == 1 ? 1.0 : P_GI_MISSING, f - prod);
        *p++ = '\n';
        if ((rc = pl__w_put(&w, line, (size_t)(p - line), err)) < 0)
            goto fail;
        if ((row & 0xffff) == 0)
            pl__progress_update(&pg, row, -1);
    }
    pl__progress_end(&pg, s->o->n_samples);
    rc = pl__w_close(&w, err);
    goto out;
fail:
    pl__w_abort(&w);
out:
    free(fit);
    return rc;
}

/* The float16 bits of v, exact for the values write_payload draws for float16: 0, or
 * m / 2^11 with 1 <= |m| <= 1024 (normal numbers with at most 11 significant bits). */
static uint16_t f16_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xffu;
    if (!exp)
        return (uint16_t)sign;
    return (uint16_t)(sign | (exp - 127 + 15) << 10 | (b & 0x7fffffu) >> 13);
}

/* payload.npy: NumPy 1.0, '<f4' or '<f2', shape (S, D) or (S, C, D); float32 values
 * k/2^24 in [-0.5, 0.5), float16 values k/2^11 in [-0.5, 0.5) (exact in float16). */
static int write_payload(synth *s, pl_err *err)
{
    const uint64_t S = s->o->n_samples, C = s->o->payload_cells, D = s->o->payload_dim;
    const uint64_t V = (C ? C : 1) * D, width = s->o->payload_f16 ? 2 : 4;
    char path[PATH_MAX], hdr[256];
    const uint64_t shape[3] = {S, C ? C : D, D};
    uint8_t *row = malloc(V * width);
    pl__progress pg;
    wfile w;
    rng r;
    int rc;

    if (!row)
        return pl__err(err, -ENOMEM, "out of memory");
    size_t n = pl__npy_header(hdr, sizeof hdr, width == 2 ? "<f2" : "<f4", shape, C ? 3 : 2,
                              64); /* 128 bytes at most */
    if ((rc = out_path(s, path, "payload.npy", err)) < 0 || (rc = pl__w_open(&w, path, err)) < 0)
        goto out;
    if ((rc = pl__w_put(&w, hdr, n, err)) < 0)
        goto fail;
    rng_seed(&r, s->o->seed, S_PAYLOAD);
    pl__progress_start(&pg, s->o->progress, "payload", S);
    for (uint64_t i = 0; i < S; i++) {
        for (uint64_t d = 0; d < V; d++) {
            if (width == 2) {
                uint16_t h = f16_bits((float)((double)(rng_next(&r) >> 53) * 0x1p-11 - 0.5));
                row[2 * d] = (uint8_t)h; /* little-endian on any host */
                row[2 * d + 1] = (uint8_t)(h >> 8);
                continue;
            }
            float v = (float)((double)(rng_next(&r) >> 40) * 0x1p-24 - 0.5);
            uint32_t b;
            memcpy(&b, &v, 4);
            for (int k = 0; k < 4; k++)
                row[4 * d + k] = (uint8_t)(b >> 8 * k);
        }
        if ((rc = pl__w_put(&w, row, V * width, err)) < 0)
            goto fail;
        if ((i & 0xffff) == 0)
            pl__progress_update(&pg, i, -1);
    }
    pl__progress_end(&pg, S);
    rc = pl__w_close(&w, err);
    goto out;
fail:
    pl__w_abort(&w);
out:
    free(row);
    return rc;
}

/* build-args.txt: the `pertload build` arguments after `-o DB`, one per line. */
static int write_build_args(synth *s, pl_err *err)
{
    static const char *const files[][2] = {
        {"--reactions", "reactions.txt"}, {"--rules", "rules.tsv"}, {"--rmr", "rmr.tsv"},
        {"--samples", "samples.tsv"},     {"--payload", "payload.npy"},
    };
    char path[PATH_MAX], line[2 * PATH_MAX];
    wfile w;
    int rc, n;

    PL_TRY(out_path(s, path, "build-args.txt", err));
    PL_TRY(pl__w_open(&w, path, err));
    if ((rc = out_path(s, path, "genes.txt", err)) < 0)
        goto fail;
    n = snprintf(line, sizeof line, "--genes\n%s\n", path);
    if ((rc = pl__w_put(&w, line, (size_t)n, err)) < 0)
        goto fail;
    for (uint32_t t = 0; t < N_TYPES; t++) {
        char file[128];
        snprintf(file, sizeof file, "edges/%s.tsv", pl__synth_type_name(t));
        if ((rc = out_path(s, path, file, err)) < 0)
            goto fail;
        n = snprintf(line, sizeof line, "--edges\n%s=%s\n", pl__synth_type_name(t), path);
        if ((rc = pl__w_put(&w, line, (size_t)n, err)) < 0)
            goto fail;
    }
    for (uint32_t i = 0; i < 5; i++) {
        if (i == 4 && !s->o->payload_dim)
            break;
        if ((rc = out_path(s, path, files[i][1], err)) < 0)
            goto fail;
        n = snprintf(line, sizeof line, "%s\n%s\n", files[i][0], path);
        if ((rc = pl__w_put(&w, line, (size_t)n, err)) < 0)
            goto fail;
    }
    return pl__w_close(&w, err);
fail:
    pl__w_abort(&w);
    return rc;
}

static void print_summary(const synth *s, double seconds)
{
    const pl_synth_opts *o = s->o;
    uint64_t total = 0;
    for (uint32_t t = 0; t < N_TYPES; t++)
        total += s->n_edges[t];
    printf("pertload synth: wrote %s in %.2f s (preset %s, seed %llu)\n", o->out, seconds,
           s->ps->name, (unsigned long long)o->seed);
    printf("  genes.txt       %u genes\n", s->n);
    printf("  edges/*.tsv     %llu edges in %d types (%llu self-loops, %llu duplicates)\n",
           (unsigned long long)total, N_TYPES, (unsigned long long)s->n_self,
           (unsigned long long)s->n_dup);
    for (uint32_t t = 0; t < N_TYPES; t++)
        printf("    %-24s %8llu edges, max degree %6llu, %5u isolated genes\n",
               pl__synth_type_name(t), (unsigned long long)s->n_edges[t],
               (unsigned long long)s->max_degree[t], s->n_isolated[t]);
    printf("  reactions.txt   %llu reactions (%llu without genes)\n",
           (unsigned long long)s->n_react, (unsigned long long)s->n_no_gpr);
    printf("  gpr.tsv         %llu gene-reaction rows\n", (unsigned long long)s->n_gpr);
    printf("  rules.tsv       gene-reaction rules: %llu isozymes (or), %llu complexes (and), "
           "%llu complexes sharing a subunit, %llu complexes of isozymes\n",
           (unsigned long long)s->n_rule_kind[0], (unsigned long long)s->n_rule_kind[1],
           (unsigned long long)s->n_rule_kind[2], (unsigned long long)s->n_rule_kind[3]);
    printf("  rmr.tsv         %llu reaction-metabolite rows, %llu metabolites\n",
           (unsigned long long)s->n_rmr, (unsigned long long)s->n_met_used);
    printf("  samples.tsv     %llu samples (%llu single, %llu double, %llu triple)\n",
           (unsigned long long)o->n_samples, (unsigned long long)s->n_by_k[1],
           (unsigned long long)s->n_by_k[2], (unsigned long long)s->n_by_k[3]);
    if (o->payload_dim && o->payload_cells)
        printf("  payload.npy     %s [%llu, %u, %u]\n", o->payload_f16 ? "float16" : "float32",
               (unsigned long long)o->n_samples, o->payload_cells, o->payload_dim);
    else if (o->payload_dim)
        printf("  payload.npy     %s [%llu, %u]\n", o->payload_f16 ? "float16" : "float32",
               (unsigned long long)o->n_samples, o->payload_dim);
    printf("  build-args.txt  use: xargs -d '\\n' -a %s%sbuild-args.txt"
           " pertload build -o DB\n",
           o->out, o->out[0] && o->out[strlen(o->out) - 1] == '/' ? "" : "/");
}

int pl__synth(const pl_synth_opts *o, pl_err *err)
{
    synth s = {.o = o};
    char path[PATH_MAX];
    double t0 = pl__now();
    uint64_t total = 0, done = 0;
    pl__progress pg;
    int rc;

    PL_FAIL_IF(!o->out || !*o->out, err, PL_EUSAGE, "no output directory");
    PL_FAIL_IF(o->n_genes < 1 || o->n_genes > INT32_MAX, err, PL_EUSAGE,
               "--genes must be in 1..%d", INT32_MAX);
    PL_FAIL_IF(!(o->scale >= 0 && o->scale <= 1e4), err, PL_EUSAGE,
               "--scale must be in 0..10000");
    PL_FAIL_IF(o->payload_dim > (1u << 20), err, PL_EUSAGE,
               "--payload-dim must be at most %u", 1u << 20);
    PL_FAIL_IF(o->n_samples > (1ull << 48), err, PL_EUSAGE, "--samples: too many samples");
    PL_FAIL_IF(o->payload_cells > (1u << 20), err, PL_EUSAGE,
               "--payload-cells must be at most %u", 1u << 20);
    PL_FAIL_IF(o->payload_cells && !o->payload_dim, err, PL_EUSAGE,
               "--payload-cells needs --payload-dim");
    PL_FAIL_IF((o->payload_cells ? o->payload_cells : 1) * (uint64_t)o->payload_dim > (1u << 24),
               err, PL_EUSAGE, "a payload row must have at most %u values", 1u << 24);
    s.ps = pl__synth_preset(o->preset);
    PL_FAIL_IF(!s.ps, err, PL_EUSAGE, "--preset: no preset '%s' (there are: %s)", o->preset,
               pl__synth_preset_names());
    s.n = (uint32_t)o->n_genes;
    for (uint32_t t = 0; t < N_TYPES; t++)
        s.n_edges[t] = (uint64_t)floor((double)s.ps->edges[t] * o->scale + 0.5);
    s.n_react = (uint64_t)floor(s.ps->reactions * o->scale + 0.5);
    s.n_met = (uint64_t)floor(s.ps->metabolites * o->scale + 0.5);
    s.n_react = s.n_react < 4 ? 4 : s.n_react; /* keep a few */
    s.n_met = s.n_met < 8 ? 8 : s.n_met;

    PL_TRY(make_dir(o->out, err));
    PL_TRY(out_path(&s, path, "edges", err));
    PL_TRY(make_dir(path, err));
    if ((rc = make_names(&s, err)) < 0 || (rc = write_genes(&s, err)) < 0)
        goto out;

    for (uint32_t t = 0; t < N_TYPES; t++)
        total += s.n_edges[t];
    pl__progress_start(&pg, o->progress, "edges", total);
    for (uint32_t t = 0; t < N_TYPES; t++)
        if ((rc = write_edges(&s, t, &pg, &done, err)) < 0)
            goto out;
    pl__progress_end(&pg, done);

    if ((rc = write_metabolism(&s, err)) < 0 || (rc = write_samples(&s, err)) < 0)
        goto out;
    if (o->payload_dim) {
        if ((rc = write_payload(&s, err)) < 0)
            goto out;
    } else if ((rc = out_path(&s, path, "payload.npy", err)) < 0) {
        goto out;
    } else {
        unlink(path); /* a stale payload from an earlier run would not match */
    }
    if ((rc = write_build_args(&s, err)) < 0)
        goto out;
    if (o->progress)
        print_summary(&s, pl__now() - t0);
out:
    free(s.name);
    free(s.name_len);
    return rc;
}
