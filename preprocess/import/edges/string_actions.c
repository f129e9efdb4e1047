/* STRING protein.actions (v11, v11.5): tab-separated, header
 * "item_id_a item_id_b mode action is_directional a_is_acting score", ids
 * "TAXON.NAME", mode one of STRING's seven, is_directional and a_is_acting
 * "t" or "f", score an integer 0..1000. A pair is listed once per mode and
 * action, in both orders (a_is_acting says which one acts). */
#include <math.h>
#include <string.h>

#include "reader.h"
#include "src/core/error.h"

enum { MAX_COLS = 16 };

static const char *const modes[] = {"activation", "binding",  "catalysis", "expression",
                                    "inhibition", "ptmod",    "reaction"};

static int known_mode(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (strlen(modes[i]) == len && !memcmp(modes[i], s, len))
            return 1;
    return 0;
}

static int check(const pl_imp_opts *o, pl_err *err)
{
    for (uint32_t i = 0; i < o->n_modes; i++)
        if (!known_mode(o->modes[i], strlen(o->modes[i])))
            return pl__err(err, PL_EUSAGE, "unknown STRING action mode '%s' (activation, "
                           "binding, catalysis, expression, inhibition, ptmod, reaction)",
                           o->modes[i]);
    return 0;
}

/* 1 + the index of mode `f` in o->modes (1 when every mode is kept), or 0. */
static uint32_t wanted_mode(const pl_imp_opts *o, const pl__field *f)
{
    if (o->n_modes == 0)
        return 1;
    for (uint32_t i = 0; i < o->n_modes; i++)
        if (strlen(o->modes[i]) == f->len && !memcmp(o->modes[i], f->s, f->len))
            return i + 1;
    return 0;
}

/* "t" -> 1, "f" -> 0, else an error at the field. */
static int flag(const pl_src *src, const pl__field *f, const char *what, int *out, pl_err *err)
{
    if (f->len == 1 && (f->s[0] == 't' || f->s[0] == 'f')) {
        *out = f->s[0] == 't';
        return 0;
    }
    return pl__src_fail(src, f->col, err, "bad %s '%.*s' (expected t or f)", what,
                        (int)(f->len > 40 ? 40 : f->len), f->s);
}

enum { A, B, MODE, DIRECTIONAL, ACTING, SCORE, N_NEEDED };

static const char *const needed[N_NEEDED] = {"item_id_a",      "item_id_b",   "mode",
                                             "is_directional", "a_is_acting", "score"};

static int read_actions(pl_src *src, const pl_imp_opts *o, pl_imp_emit emit, void *ctx,
                        pl_imp_stats *st, pl_err *err)
{
    pl__field f[MAX_COLS + 1];
    static const char expected[] = "a STRING actions header 'item_id_a item_id_b mode action "
                                   "is_directional a_is_acting score'";
    int ncols = pl__imp_header(src, f, MAX_COLS, expected, err);
    if (ncols < 0)
        return ncols;
    int col[N_NEEDED];
    for (int k = 0; k < N_NEEDED; k++)
        if (ncols > MAX_COLS || (col[k] = pl__imp_col(f, ncols, needed[k])) < 0)
            return pl__src_fail(src, 0, err, "not %s (no column '%s')", expected, needed[k]);
    pl_imp_taxon tx = {0};
    int rc;
    while ((rc = pl__imp_row(src, f, MAX_COLS, ncols, err)) > 0) {
        st->rows++;
        const pl__field *m = &f[col[MODE]], *sc = &f[col[SCORE]];
        if (!known_mode(m->s, m->len))
            return pl__src_fail(src, m->col, err, "unknown mode '%.*s'",
                                (int)(m->len > 40 ? 40 : m->len), m->s);
        uint64_t v;
        if (pl__parse_u64(sc, &v) < 0 || v > 1000)
            return pl__src_fail(src, sc->col, err, "bad score '%.*s' (expected an integer "
                                "0..1000)", (int)(sc->len > 40 ? 40 : sc->len), sc->s);
        int directional = 0, acting = 0;
        PL_TRY(flag(src, &f[col[DIRECTIONAL]], "is_directional", &directional, err));
        PL_TRY(flag(src, &f[col[ACTING]], "a_is_acting", &acting, err));
        pl_imp_edge e = {f[col[A]], f[col[B]], (double)v, 0};
        PL_TRY(pl__imp_strip_taxon(src, &e.src, &tx, err));
        PL_TRY(pl__imp_strip_taxon(src, &e.dst, &tx, err));
        uint32_t want = wanted_mode(o, m);
        if (!want || (o->directed && !(directional && acting))) {
            st->filtered++;
            continue;
        }
        e.mode = want - 1;
        PL_TRY(pl__imp_keep(o, &e, emit, ctx, src, st, err));
    }
    return rc;
}

const pl_imp_format pl__imp_string_actions = {
    .name = "string_actions",
    .keys = PL_IMP_K_MODES | PL_IMP_K_DIRECTED | PL_IMP_K_MIN_SCORE,
    .undirected = 1,
    .check = check,
    .read = read_actions,
};
