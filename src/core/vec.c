#include "vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pl__grow_to(void *pp, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap > UINT64_MAX / 2 ? UINT64_MAX : *cap * 2;
    if (c < need)
        c = need;
    if (c < 16)
        c = 16;
    if (elem && c > SIZE_MAX / elem)
        return -ENOMEM;
    /* The pointer is moved with memcpy: `pp` may address any object pointer
     * type. */
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = realloc(p, (size_t)c * elem);
    if (!q)
        return -ENOMEM;
    memcpy(pp, &q, sizeof q);
    *cap = c;
    return 0;
}
