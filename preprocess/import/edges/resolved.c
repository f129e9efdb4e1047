/* The resolution check of an edge source (import.h): a source that keeps no
 * edge, or whose names resolve on too small a share of its rows, is most
 * likely read against the wrong gene list or alias table; building it would
 * give an empty or thinned edge type without a word. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "src/core/error.h"

enum { TOP = 10 };

/* "A (12), B (3), ..." : the TOP most frequent unresolved names, ties in
 * first-seen order, into buf. */
static void top_names(const pl_unres *u, char *buf, size_t cap)
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

int pl__imp_check_resolved(const pl_imp_source *s, const pl_imp_result *r, pl_err *err)
{
    if (s->allow_empty)
        return 0;
    uint64_t rows = r->read.emitted, resolved = rows - r->unresolved;
    double share = rows ? (double)resolved / (double)rows : 0.0;
    char names[1024];
    if (r->kept == 0 && s->min_resolved > 0) {
        top_names(&r->names, names, sizeof names);
        return pl__err(err, PL_EPARSE, "edge source '%s' (%s) keeps no edge: %llu rows, %llu "
                       "filtered out, %llu with an unresolved name (resolved share %.3f); most "
                       "frequent unresolved names: %s (allow_empty: true or min_resolved: 0 "
                       "accepts it)", s->name, s->file, (unsigned long long)r->read.rows,
                       (unsigned long long)r->read.filtered, (unsigned long long)r->unresolved,
                       share, names);
    }
    if (rows > 0 && share < s->min_resolved) {
        top_names(&r->names, names, sizeof names);
        return pl__err(err, PL_EPARSE, "edge source '%s' (%s): only %llu of %llu rows resolve "
                       "(share %.3f, under min_resolved %g); most frequent unresolved names: %s "
                       "(a lower min_resolved, or allow_empty: true, accepts it)", s->name,
                       s->file, (unsigned long long)resolved, (unsigned long long)rows, share,
                       s->min_resolved, names);
    }
    return 0;
}
