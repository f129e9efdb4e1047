/* OBO 1.2 / 1.4 reader: [Term] stanzas only; id first, then namespace,
 * is_obsolete, alt_id, is_a and relationship (other tags are skipped). Values
 * end at " !" (a comment) or " {" (trailing qualifiers). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ontology.h"
#include "preprocess/import/source/source.h"
#include "src/core/error.h"
#include "src/core/vec.h"

typedef struct stanza {
    int is_term;      /* inside a [Term] stanza */
    int has_id;
    uint32_t term;
    uint64_t line;    /* of the "[Term]" header */
} stanza;

/* The first token of a value: up to a blank, or the end. */
static size_t token(const char *v, size_t n)
{
    size_t i = 0;
    while (i < n && v[i] != ' ' && v[i] != '\t')
        i++;
    return i;
}

static int end_stanza(const pl_src *src, const stanza *s, pl_err *err)
{
    if (s->is_term && !s->has_id)
        return pl__err(err, PL_EPARSE, "%s:%llu: [Term] stanza without an id", pl__src_path(src),
                       (unsigned long long)s->line);
    return 0;
}

static int add_alt(pl_onto_raw *r, const char *v, size_t n, uint32_t term)
{
    if (!r->alt.slots && pl__strtab_init(&r->alt) < 0)
        return -ENOMEM;
    int added = 0;
    int64_t a = pl__strtab_intern(&r->alt, v, n, &added);
    if (a < 0 || pl__grow(&r->alt_to, &r->cap_alt, (uint64_t)a + 1, sizeof *r->alt_to) < 0)
        return -ENOMEM;
    if (added)
        r->alt_to[a] = term;
    return 0;
}

static int set_namespace(pl_onto_raw *r, const char *v, size_t n, uint32_t term)
{
    if (!r->nss.slots && pl__strtab_init(&r->nss) < 0)
        return -ENOMEM;
    int64_t k = pl__strtab_intern(&r->nss, v, n, NULL);
    if (k < 0)
        return -ENOMEM;
    r->ns[term] = (uint32_t)k + 1;
    return 0;
}

/* One "tag: value" line of a [Term] stanza. */
static int term_tag(pl_onto_raw *r, const pl_src *src, stanza *s, const char *tag, size_t tn,
                    const char *v, size_t n, uint32_t vcol, const pl_onto_opts *o,
                    pl_onto_stats *st, pl_err *err)
{
#define TAG(x) (tn == sizeof(x) - 1 && !memcmp(tag, x, tn))
    if (TAG("id")) {
        if (s->has_id)
            return pl__src_fail(src, 1, err, "a second id in one [Term] stanza");
        size_t k = token(v, n);
        if (k == 0 || k != n)
            return pl__src_fail(src, vcol, err, "bad term id '%.*s'", (int)(n > 60 ? 60 : n), v);
        PL_TRY(pl__onto_raw_term(r, v, k, &s->term));
        int again = pl__onto_raw_define(r, s->term);
        PL_TRY(again);
        if (again)
            return pl__src_fail(src, vcol, err, "term %.*s is defined twice", (int)k, v);
        s->has_id = 1;
        st->terms_read++;
        return 0;
    }
    if (!s->has_id)
        return pl__src_fail(src, 1, err, "tag '%.*s' before the id of its [Term] stanza",
                            (int)(tn > 40 ? 40 : tn), tag);
    if (TAG("namespace"))
        return set_namespace(r, v, token(v, n), s->term);
    if (TAG("is_obsolete")) {
        if (token(v, n) == 4 && !memcmp(v, "true", 4)) {
            r->flags[s->term] |= PL_ONTO_OBSOLETE;
            st->obsolete++;
        }
        return 0;
    }
    if (TAG("alt_id"))
        return add_alt(r, v, token(v, n), s->term);
    const char *rel = "is_a", *target = v;
    size_t rn = 4, tlen = token(v, n);
    if (TAG("relationship")) {
        rel = v;
        rn = tlen;
        target = v + rn;
        while (target < v + n && (*target == ' ' || *target == '\t'))
            target++;
        tlen = token(target, (size_t)(v + n - target));
        if (tlen == 0)
            return pl__src_fail(src, vcol, err, "relationship '%.*s' without a target term",
                                (int)(rn > 40 ? 40 : rn), rel);
    } else if (!TAG("is_a")) {
        return 0;
    }
    if (tlen == 0)
        return pl__src_fail(src, vcol, err, "is_a without a target term");
    st->edges_read++;
    if (!pl__onto_in_list(o->relations ? o->relations : "is_a", rel, rn)) {
        st->relations_skipped++;
        return 0;
    }
    uint32_t parent;
    PL_TRY(pl__onto_raw_term(r, target, tlen, &parent));
    return pl__onto_raw_edge(r, s->term, parent, pl__src_lineno(src));
#undef TAG
}

int pl__onto_read_obo(pl_onto_raw *r, const char *path, const pl_onto_opts *o,
                      pl_onto_stats *st, pl_err *err)
{
    pl_src *src = NULL;
    PL_TRY(pl__src_open(path, &src, err));
    int rc = 0;
    free(r->edge_path);
    if (!(r->edge_path = strdup(path)))
        rc = pl__err(err, -ENOMEM, "out of memory");
    stanza s = {0};
    const char *line;
    size_t len;
    while (rc == 0 && (rc = pl__src_line(src, &line, &len, err)) == 1) {
        rc = 0;
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
            len--;
        if (len == 0 || line[0] == '!')
            continue;
        if (line[0] == '[') {
            if ((rc = end_stanza(src, &s, err)) < 0)
                break;
            if (line[len - 1] != ']') {
                rc = pl__src_fail(src, 1, err, "stanza header without its closing ']'");
                break;
            }
            s = (stanza){.is_term = len == 6 && !memcmp(line, "[Term]", 6),
                         .line = pl__src_lineno(src)};
            continue;
        }
        const char *colon = memchr(line, ':', len);
        if (!colon || colon == line) {
            rc = pl__src_fail(src, 1, err, "expected 'tag: value'");
            break;
        }
        if (!s.is_term)
            continue; /* the header and [Typedef]/[Instance] stanzas */
        const char *v = colon + 1;
        while (v < line + len && (*v == ' ' || *v == '\t'))
            v++;
        size_t n = v < line + len && *v == '!' ? 0 : (size_t)(line + len - v);
        /* a trailing " ! comment" or " {qualifiers}" is not part of the value */
        for (size_t i = 0; i + 1 < n; i++)
            if ((v[i] == ' ' || v[i] == '\t') && (v[i + 1] == '!' || v[i + 1] == '{')) {
                n = i;
                break;
            }
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        rc = term_tag(r, src, &s, line, (size_t)(colon - line), v, n, (uint32_t)(v - line) + 1,
                      o, st, err);
    }
    if (rc == 0)
        rc = end_stanza(src, &s, err);
    if (rc == -ENOMEM)
        pl__err(err, rc, "%s: out of memory", path);
    pl__src_close(src);
    return rc < 0 ? rc : 0;
}
