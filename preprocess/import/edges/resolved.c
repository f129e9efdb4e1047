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

int pl__imp_check_resolved(const pl_imp_source *s, const pl_imp_result *r, pl_err *err)
{
    if (s->allow_empty)
        return 0;
    uint64_t rows = r->read.emitted, resolved = rows - r->unresolved;
    double share = rows ? (double)resolved / (double)rows : 0.0;
    char names[1024];
    if (r->kept == 0 && s->min_resolved > 0) {
        pl__unres_top(&r->names, names, sizeof names);
        return pl__err(err, PL_EPARSE, "edge source '%s' (%s) keeps no edge: %llu rows, %llu "
                       "filtered out, %llu with an unresolved name (resolved share %.3f); most "
                       "frequent unresolved names: %s (allow_empty: true or min_resolved: 0 "
                       "accepts it)", s->name, s->file, (unsigned long long)r->read.rows,
                       (unsigned long long)r->read.filtered, (unsigned long long)r->unresolved,
                       share, names);
    }
    if (rows > 0 && share < s->min_resolved) {
        pl__unres_top(&r->names, names, sizeof names);
        return pl__err(err, PL_EPARSE, "edge source '%s' (%s): only %llu of %llu rows resolve "
                       "(share %.3f, under min_resolved %g); most frequent unresolved names: %s "
                       "(a lower min_resolved, or allow_empty: true, accepts it)", s->name,
                       s->file, (unsigned long long)resolved, (unsigned long long)rows, share,
                       s->min_resolved, names);
    }
    return 0;
}
