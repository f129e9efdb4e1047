/* Gene-name resolution, unresolved-name accounting and the unordered-pair
 * set (names.h). Four name tables: gene names and aliases, each as written
 * and in ASCII upper case; an alias or upper-cased key carries its gene
 * index, or AMBIGUOUS. */
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/strtab.h"
#include "src/core/vec.h"

enum { AMBIGUOUS = -2, UPPER_MAX = 256 };

/* A name table whose entries map to a gene, with the alias table that put
 * each entry there (for the precedence of earlier tables). */
typedef struct ntab {
    pl_strtab t;
    int32_t *to;
    uint32_t *table;
    uint64_t cap_to, cap_table;
} ntab;

struct pl_names {
    pl_strtab genes;
    uint64_t *gene_line;
    uint64_t cap_line;
    ntab alias, upper_genes, upper_alias;
    uint32_t n_tables;
};

static void ntab_free(ntab *n)
{
    pl__strtab_free(&n->t);
    free(n->to);
    free(n->table);
}

int pl__names_new(pl_names **out, pl_err *err)
{
    pl_names *nm = calloc(1, sizeof *nm);
    if (!nm || pl__strtab_init(&nm->genes) < 0 || pl__strtab_init(&nm->alias.t) < 0 ||
        pl__strtab_init(&nm->upper_genes.t) < 0 || pl__strtab_init(&nm->upper_alias.t) < 0) {
        pl__names_free(nm);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    *out = nm;
    return 0;
}

void pl__names_free(pl_names *nm)
{
    if (!nm)
        return;
    pl__strtab_free(&nm->genes);
    free(nm->gene_line);
    ntab_free(&nm->alias);
    ntab_free(&nm->upper_genes);
    ntab_free(&nm->upper_alias);
    free(nm);
}

/* ASCII upper case of s[0..len) into buf; 0 when too long to hold. */
static size_t upper(const char *s, size_t len, char *buf)
{
    if (len > UPPER_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        buf[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 32) : s[i];
    return len;
}

/* Map `key` to gene `g` with precedence `table` (lower wins) in `n`: a key
 * of a lower table stays, one of a higher table is replaced, one the same
 * table maps to another gene becomes ambiguous (counted once in
 * *ambiguous). @return 1 when added, 0 if not, -ENOMEM. */
static int ntab_put(ntab *n, const char *key, size_t len, int32_t g, uint32_t table,
                    uint64_t *ambiguous)
{
    int added;
    int64_t i = pl__strtab_intern(&n->t, key, len, &added);
    if (i < 0)
        return -ENOMEM;
    if (added) {
        if (pl__grow(&n->to, &n->cap_to, (uint64_t)i + 1, sizeof *n->to) < 0 ||
            pl__grow(&n->table, &n->cap_table, (uint64_t)i + 1, sizeof *n->table) < 0)
            return -ENOMEM;
        n->to[i] = g;
        n->table[i] = table;
        return 1;
    }
    if (n->table[i] > table) {
        n->to[i] = g;
        n->table[i] = table;
        return 0;
    }
    if (n->table[i] == table && n->to[i] != g && n->to[i] != AMBIGUOUS) {
        n->to[i] = AMBIGUOUS;
        if (ambiguous)
            (*ambiguous)++;
    }
    return 0;
}

int pl__names_load_genes(pl_names *nm, const char *path, int header, pl_err *err)
{
    PL_FAIL_IF(nm->genes.n, err, PL_EUSAGE, "%s: a gene list is already loaded", path);
    pl_src *src;
    PL_TRY(pl__src_open(path, &src, err));
    const char *line;
    size_t len;
    pl__field f[2];
    int rc;
    char up[UPPER_MAX];
    while ((rc = pl__src_line(src, &line, &len, err)) > 0) {
        if (header && pl__src_lineno(src) == 1)
            continue;
        int n = pl__src_split(line, len, ' ', f, 2);
        if (n == 0) {
            rc = pl__src_fail(src, 0, err, "empty line in the gene list");
            break;
        }
        uint32_t bad = pl__src_control_at(&f[0]);
        if (bad) {
            rc = pl__src_fail(src, f[0].col + bad - 1, err, "a gene name holds the control "
                              "character 0x%02x", (unsigned char)f[0].s[bad - 1]);
            break;
        }
        int added;
        int64_t g = pl__strtab_intern(&nm->genes, f[0].s, f[0].len, &added);
        if (g < 0 || pl__grow(&nm->gene_line, &nm->cap_line, (uint64_t)g + 1,
                              sizeof *nm->gene_line) < 0) {
            rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
            break;
        }
        if (!added) {
            rc = pl__src_fail(src, f[0].col, err, "gene '%.*s' listed twice (first on line "
                              "%llu)", (int)f[0].len, f[0].s,
                              (unsigned long long)nm->gene_line[g]);
            break;
        }
        nm->gene_line[g] = pl__src_lineno(src);
        size_t ul = upper(f[0].s, f[0].len, up);
        if (ul && ntab_put(&nm->upper_genes, up, ul, (int32_t)g, 0, NULL) < 0) {
            rc = pl__err(err, -ENOMEM, "%s: out of memory", path);
            break;
        }
    }
    if (rc == 0 && nm->genes.n == 0)
        rc = pl__err(err, PL_EPARSE, "%s:1: empty gene list", pl__src_path(src));
    pl__src_close(src);
    return rc;
}

int pl__names_exact_list(pl_names *nm, char *const *names, uint64_t n, pl_err *err)
{
    PL_FAIL_IF(nm->genes.n, err, PL_EUSAGE, "a gene list is already loaded");
    for (uint64_t i = 0; i < n; i++) {
        int added;
        int64_t g = pl__strtab_intern(&nm->genes, names[i], strlen(names[i]), &added);
        PL_FAIL_IF(g < 0 || pl__grow(&nm->gene_line, &nm->cap_line, (uint64_t)g + 1,
                                     sizeof *nm->gene_line) < 0, err, -ENOMEM, "out of memory");
        PL_FAIL_IF(!added, err, PL_EUSAGE, "gene '%s' listed twice", names[i]);
        nm->gene_line[g] = i + 1;
    }
    return 0;
}

/* One alias -> gene g with precedence `table`. */
static int add_alias(pl_names *nm, const char *s, size_t len, int32_t g, uint32_t table,
                     pl_alias_stats *st)
{
    if (len == 0 || pl__strtab_find(&nm->genes, s, len) >= 0)
        return 0; /* a gene name is never an alias */
    int r = ntab_put(&nm->alias, s, len, g, table, &st->ambiguous);
    if (r < 0)
        return r;
    st->added += (uint64_t)r;
    char up[UPPER_MAX];
    size_t ul = upper(s, len, up);
    if (ul && ntab_put(&nm->upper_alias, up, ul, g, table, NULL) < 0)
        return -ENOMEM;
    return 0;
}

uint32_t pl__names_table_begin(pl_names *nm)
{
    nm->n_tables += 2;
    return nm->n_tables - 2;
}

int64_t pl__names_listed(const pl_names *nm, const char *s, size_t len)
{
    return pl__strtab_find(&nm->genes, s, len);
}

int pl__names_add_alias(pl_names *nm, const char *s, size_t len, int32_t g, uint32_t prec,
                        pl_alias_stats *st)
{
    return add_alias(nm, s, len, g, prec, st);
}

uint32_t pl__names_count(const pl_names *nm) { return nm->genes.n; }

const char *pl__names_gene(const pl_names *nm, uint32_t i) { return nm->genes.names[i]; }

static int64_t ntab_get(const ntab *n, const char *s, size_t len)
{
    int64_t i = pl__strtab_find(&n->t, s, len);
    if (i < 0)
        return -1;
    return n->to[i] >= 0 ? n->to[i] : -1;
}

int64_t pl__names_resolve(const pl_names *nm, const char *s, size_t len)
{
    int64_t g = pl__strtab_find(&nm->genes, s, len);
    if (g >= 0)
        return g;
    if (pl__strtab_find(&nm->alias.t, s, len) >= 0)
        return ntab_get(&nm->alias, s, len);
    char up[UPPER_MAX];
    size_t ul = upper(s, len, up);
    if (!ul)
        return -1;
    if (pl__strtab_find(&nm->upper_genes.t, up, ul) >= 0)
        return ntab_get(&nm->upper_genes, up, ul);
    return ntab_get(&nm->upper_alias, up, ul);
}

int pl__unres_add(pl_unres *u, const char *s, size_t len, uint64_t line)
{
    if (!u->tab) {
        u->tab = calloc(1, sizeof(pl_strtab));
        if (!u->tab || pl__strtab_init(u->tab) < 0) {
            free(u->tab);
            u->tab = NULL;
            return -ENOMEM;
        }
    }
    if (memchr(s, '\0', len))
        return -EINVAL;
    int added;
    int64_t i = pl__strtab_intern(u->tab, s, len, &added);
    if (i < 0)
        return -ENOMEM;
    if (added) {
        uint64_t cap = u->cap;
        if (pl__grow(&u->count, &cap, (uint64_t)i + 1, sizeof *u->count) < 0)
            return -ENOMEM;
        cap = u->cap;
        if (pl__grow(&u->first_line, &cap, (uint64_t)i + 1, sizeof *u->first_line) < 0)
            return -ENOMEM;
        u->cap = cap;
        u->count[i] = 0;
        u->first_line[i] = line;
    }
    u->count[i]++;
    u->total++;
    return 0;
}

uint32_t pl__unres_distinct(const pl_unres *u) { return u->tab ? ((pl_strtab *)u->tab)->n : 0; }

const char *pl__unres_name(const pl_unres *u, uint32_t i, uint64_t *count, uint64_t *line)
{
    if (count)
        *count = u->count[i];
    if (line)
        *line = u->first_line[i];
    return ((pl_strtab *)u->tab)->names[i];
}

void pl__unres_free(pl_unres *u)
{
    if (u->tab) {
        pl__strtab_free(u->tab);
        free(u->tab);
    }
    free(u->count);
    free(u->first_line);
    memset(u, 0, sizeof *u);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int pl__pairset_add(pl_pairset *p, uint32_t a, uint32_t b)
{
    if (p->n * 2 >= p->mask) { /* keep the load under one half */
        uint64_t cap = p->slots ? (p->mask + 1) * 2 : 1024;
        uint64_t *s = calloc(cap, sizeof *s);
        if (!s)
            return -ENOMEM;
        for (uint64_t i = 0; p->slots && i <= p->mask; i++) {
            if (!p->slots[i])
                continue;
            uint64_t j = mix(p->slots[i] - 1) & (cap - 1);
            while (s[j])
                j = (j + 1) & (cap - 1);
            s[j] = p->slots[i];
        }
        free(p->slots);
        p->slots = s;
        p->mask = cap - 1;
    }
    uint64_t key = a < b ? ((uint64_t)a << 32 | b) : ((uint64_t)b << 32 | a);
    for (uint64_t j = mix(key) & p->mask;; j = (j + 1) & p->mask) {
        if (p->slots[j] == key + 1)
            return 0;
        if (!p->slots[j]) {
            p->slots[j] = key + 1;
            p->n++;
            return 1;
        }
    }
}

void pl__pairset_free(pl_pairset *p)
{
    free(p->slots);
    memset(p, 0, sizeof *p);
}

enum { TOP = 10 };

void pl__unres_top(const pl_unres *u, char *buf, size_t cap)
{
    uint32_t n = pl__unres_distinct(u), best[TOP];
    uint64_t cnt[TOP];
    int k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t c, line;
        pl__unres_name(u, i, &c, &line);
        int at = k;
        while (at > 0 && cnt[at - 1] < c)
            at--;
        if (at >= TOP)
            continue;
        int last = k < TOP ? k : TOP - 1;
        for (int j = last; j > at; j--)
            best[j] = best[j - 1], cnt[j] = cnt[j - 1];
        best[at] = i, cnt[at] = c;
        if (k < TOP)
            k++;
    }
    size_t h = 0;
    buf[0] = 0;
    for (int j = 0; j < k && h < cap; j++) {
        uint64_t c, line;
        const char *s = pl__unres_name(u, best[j], &c, &line);
        h += (size_t)snprintf(buf + h, cap - h, "%s'%.60s' (%llu)", j ? ", " : "", s,
                              (unsigned long long)c);
    }
    if (k == 0)
        snprintf(buf, cap, "none");
}
