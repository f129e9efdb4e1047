/* Growable arrays: a pointer, a capacity in elements and a count the caller
 * keeps. */
#ifndef PL_CORE_VEC_H
#define PL_CORE_VEC_H

#include <stddef.h>
#include <stdint.h>

/** Reallocate the array `*pp` (the address of any `T *`, elements of `elem`
 *  bytes, room for `*cap`) to room for at least `need` elements: the larger
 *  of `need`, twice `*cap` and 16. On failure the array and `*cap` stay as
 *  they were. Callers use pl__grow().
 *  @return 0, or -ENOMEM (also when the size would overflow). */
int pl__grow_to(void *pp, uint64_t *cap, uint64_t need, size_t elem);

/** Make the array `*pp` (see pl__grow_to()) hold at least `need` elements;
 *  returns at once when it already does. Appending one element at a time
 *  therefore costs amortised O(1).
 *  @return 0, or -ENOMEM. */
static inline int pl__grow(void *pp, uint64_t *cap, uint64_t need, size_t elem)
{
    return need <= *cap ? 0 : pl__grow_to(pp, cap, need, elem);
}

#endif
