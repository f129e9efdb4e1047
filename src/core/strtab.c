#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

int pl__strtab_init(pl_strtab *t)
{
    memset(t, 0, sizeof *t);
    t->mask = 1023;
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    return t->slots ? 0 : -ENOMEM;
}

void pl__strtab_free(pl_strtab *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint32_t *probe(const pl_strtab *t, const char *s, size_t len)
{
    uint32_t i = (uint32_t)hash_bytes(s, len) & t->mask;
    for (;; i = (i + 1) & t->mask) {
        uint32_t v = t->slots[i];
        if (v == 0)
            return &t->slots[i];
        /* strnlen first: `s` may hold a NUL, and no stored name is longer
         * than its own terminator. */
        const char *name = t->names[v - 1];
        if (strnlen(name, len + 1) == len && memcmp(name, s, len) == 0)
            return &t->slots[i];
    }
}

int64_t pl__strtab_find(const pl_strtab *t, const char *s, size_t len)
{
    uint32_t v = *probe(t, s, len);
    return (int64_t)v - 1;
}

static int grow(pl_strtab *t)
{
    uint32_t cap = (t->mask + 1) * 2;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    free(t->slots);
    t->slots = slots;
    t->mask = cap - 1;
    for (uint32_t k = 0; k < t->n; k++)
        *probe(t, t->names[k], strlen(t->names[k])) = k + 1;
    return 0;
}

int64_t pl__strtab_intern(pl_strtab *t, const char *s, size_t len, int *added)
{
    uint32_t *slot = probe(t, s, len);
    if (added)
        *added = 0;
    if (*slot)
        return (int64_t)*slot - 1;
    if ((uint64_t)(t->n + 1) * 2 > t->mask + 1) {
        if (grow(t) < 0)
            return -ENOMEM;
        slot = probe(t, s, len);
    }
    if (t->n == t->cap_names) {
        uint32_t cap = t->cap_names ? t->cap_names * 2 : 256;
        char **names = realloc(t->names, cap * sizeof *names);
        if (!names)
            return -ENOMEM;
        t->names = names;
        t->cap_names = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->names[t->n] = copy;
    *slot = ++t->n;
    if (added)
        *added = 1;
    return (int64_t)t->n - 1;
}
