/* Name -> index table (open addressing), for genes, reactions, metabolites. */
#ifndef PL_CORE_STRTAB_H
#define PL_CORE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct pl_strtab {
    uint32_t *slots;   /* index+1, 0 = empty */
    uint32_t mask;     /* capacity - 1 */
    uint32_t n;        /* names held */
    uint32_t cap_names;
    char **names;      /* [n] owned copies, in insertion order */
} pl_strtab;

/** Initialise an empty table. @return 0 or -ENOMEM. */
int pl__strtab_init(pl_strtab *t);

/** Release the table (safe on a zeroed struct). */
void pl__strtab_free(pl_strtab *t);

/** Index of `s[0..len)`, or -1 when absent (always when `s` holds a NUL:
 *  stored names never do). */
int64_t pl__strtab_find(const pl_strtab *t, const char *s, size_t len);

/** Insert `s[0..len)` if absent; `s` must not hold a NUL byte (names are
 *  stored NUL-terminated). @param added set to 1 when it was new.
 *  @return its index (>= 0) or -ENOMEM. */
int64_t pl__strtab_intern(pl_strtab *t, const char *s, size_t len, int *added);

#endif
