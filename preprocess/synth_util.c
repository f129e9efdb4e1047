/* The tools of `pertload synth` (synth_util.h). */
#include "synth_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"

#define WBUF (1u << 20)

void pl__plaw_free(plaw *p)
{
    free(p->id);
    free(p->thr);
    free(p->alias);
}

/* Rank a random n-subset of 0..n_all-1 (1 <= n <= n_all). */
int pl__plaw_init(plaw *p, rng *r, uint32_t n_all, uint32_t n, pl_err *err)
{
    double *w = malloc((size_t)n * sizeof *w), r0 = 1.0 + n / 200.0, sum = 0;
    uint32_t *stack = malloc((size_t)n * sizeof *stack), n_small = 0, n_large = n;
    p->n = n;
    p->id = malloc((size_t)n_all * sizeof *p->id);
    p->thr = malloc((size_t)n * sizeof *p->thr);
    p->alias = malloc((size_t)n * sizeof *p->alias);
    if (!w || !stack || !p->id || !p->thr || !p->alias) {
        free(w);
        free(stack);
        pl__plaw_free(p);
        return pl__err(err, -ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n_all; i++)
        p->id[i] = i;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i + rng_below(r, n_all - i), t = p->id[i];
        p->id[i] = p->id[j];
        p->id[j] = t;
    }
    for (uint32_t k = 0; k < n; k++)
        sum += w[k] = pow(k + r0, -ALPHA);
    for (uint32_t k = 0; k < n; k++) { /* small slots at the bottom, large at the top */
        w[k] *= n / sum;
        p->alias[k] = k;
        stack[w[k] < 1 ? n_small++ : --n_large] = k;
    }
    while (n_small > 0 && n_large < n) {
        uint32_t sm = stack[--n_small], lg = stack[n_large];
        p->thr[sm] = (uint32_t)(w[sm] * 0x1p32);
        p->alias[sm] = lg;
        w[lg] -= 1 - w[sm];
        if (w[lg] < 1) { /* lg moves from the large to the small stack */
            n_large++;
            stack[n_small++] = lg;
        }
    }
    for (uint32_t i = 0; i < n_small; i++) /* rounding leftovers: keep always */
        p->thr[stack[i]] = UINT32_MAX, p->alias[stack[i]] = stack[i];
    for (uint32_t i = n_large; i < n; i++)
        p->thr[stack[i]] = UINT32_MAX, p->alias[stack[i]] = stack[i];
    free(w);
    free(stack);
    return 0;
}

/* Fill v[0..k) with distinct draws (k <= the number of ids that can be drawn). */
void pl__draw_distinct(const plaw *p, rng *r, uint32_t n_uniform, uint32_t *v, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++) {
        int again;
        do {
            v[i] = p ? plaw_draw(p, r) : rng_below(r, n_uniform);
            again = 0;
            for (uint32_t j = 0; j < i; j++)
                again |= v[j] == v[i];
        } while (again);
    }
}

/* Create `path`.tmp for writing; nothing to release on failure. */
int pl__w_open(wfile *w, const char *path, pl_err *err)
{
    w->f = NULL;
    w->buf = NULL;
    if (snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path)
        return pl__err(err, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
    w->buf = malloc(WBUF);
    if (!w->buf)
        return pl__err(err, -ENOMEM, "%s: out of memory", path);
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        int e = errno;
        free(w->buf);
        return pl__err(err, -e, "%s: cannot create: %s", w->tmp, strerror(e));
    }
    setvbuf(w->f, w->buf, _IOFBF, WBUF);
    return 0;
}

int pl__w_put(wfile *w, const void *p, size_t n, pl_err *err)
{
    if (fwrite(p, 1, n, w->f) == n)
        return 0;
    int e = errno ? errno : EIO;
    return pl__err(err, -e, "%s: write failed: %s", w->path, strerror(e));
}

/* Close and drop the temporary file (after a failure). */
void pl__w_abort(wfile *w)
{
    if (w->f) {
        fclose(w->f);
        unlink(w->tmp);
    }
    free(w->buf);
    w->f = NULL;
    w->buf = NULL;
}

/* Flush, close and rename into place. Releases `w` whatever happens. */
int pl__w_close(wfile *w, pl_err *err)
{
    int e = 0;
    errno = 0;
    if (fflush(w->f) != 0 || ferror(w->f))
        e = errno ? errno : EIO;
    if (fclose(w->f) != 0 && !e)
        e = errno ? errno : EIO;
    w->f = NULL;
    free(w->buf);
    w->buf = NULL;
    if (!e && rename(w->tmp, w->path) == 0)
        return 0;
    if (!e) {
        e = errno;
        unlink(w->tmp);
        return pl__err(err, -e, "%s: rename failed: %s", w->path, strerror(e));
    }
    unlink(w->tmp);
    return pl__err(err, -e, "%s: write failed: %s", w->path, strerror(e));
}

char *pl__put_u64(char *p, uint64_t v)
{
    char t[20];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n)
        *p++ = t[--n];
    return p;
}
