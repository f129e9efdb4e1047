/* pl_slot_check: the consumer's validation of a slot's header and descriptors.
 *
 * The slot was written by another process, so nothing in it is trusted: all
 * arithmetic on its fields is overflow-checked, and the descriptors are
 * copied out before use (the slot need not be aligned for them). Names are
 * checked for uniqueness with a small open-addressing table and arrays for
 * overlap by sorting their extents, both on the stack (at most
 * PL_SLOT_MAX_ARRAYS descriptors), so a check costs a few microseconds. */
#include <stdlib.h>
#include <string.h>

#include "collate/slot.h"
#include "src/core/error.h"

#define NAME_TABLE (2 * PL_SLOT_MAX_ARRAYS) /* power of two, under half full */

static const struct {
    char name[4];
    uint32_t size;
} dtypes[] = {{"<u8", 8}, {"<i8", 8}, {"<i4", 4}, {"<f4", 4},
              {"<f2", 2}, {"|u1", 1}, {"|b1", 1}};

typedef struct extent {
    uint64_t start, end;
    uint32_t index;
} extent;

static int cmp_extent(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Item size of a NUL-terminated dtype field, 0 when unknown. */
static uint32_t dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtype, dtypes[i].name))
            return dtypes[i].size;
    return 0;
}

/* FNV-1a of a name, for the duplicate check. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Descriptor i of the slot at `base` (its name is its first field). */
static const char *desc_at(const unsigned char *base, uint32_t i)
{
    return (const char *)(base + sizeof(struct pl_slot_header) +
                          (size_t)i * sizeof(struct pl_slot_array));
}

/* Check descriptor `i` (copied in `a`); `table_end` ends the descriptors. */
static int check_array(const struct pl_slot_array *a, uint32_t i, uint64_t table_end,
                       uint64_t used, pl_err *err)
{
    PL_FAIL_IF(!memchr(a->name, '\0', sizeof a->name), err, PL_EPARSE,
               "slot: array %u: name not NUL-terminated", i);
    PL_FAIL_IF(!a->name[0], err, PL_EPARSE, "slot: array %u: empty name", i);
    const char *n = a->name;
    PL_FAIL_IF(!memchr(a->dtype, '\0', sizeof a->dtype), err, PL_EPARSE,
               "slot: array '%s': dtype not NUL-terminated", n);
    uint32_t isz = dtype_size(a->dtype);
    PL_FAIL_IF(!isz, err, PL_EPARSE, "slot: array '%s': unknown dtype '%s'", n, a->dtype);
    PL_FAIL_IF(a->ndim < 1 || a->ndim > PL_SLOT_MAX_DIMS, err, PL_EPARSE,
               "slot: array '%s': %u dimensions (1..%u)", n, a->ndim, PL_SLOT_MAX_DIMS);
    uint64_t bytes = isz;
    int overflow = 0;
    for (uint32_t k = 0; k < PL_SLOT_MAX_DIMS; k++) {
        if (k < a->ndim)
            overflow |= __builtin_mul_overflow(bytes, a->shape[k], &bytes);
        else
            PL_FAIL_IF(a->shape[k] != 0, err, PL_EPARSE,
                       "slot: array '%s': shape[%u] = %llu past its %u dimensions", n, k,
                       (unsigned long long)a->shape[k], a->ndim);
    }
    PL_FAIL_IF(overflow || bytes != a->nbytes, err, PL_EPARSE,
               "slot: array '%s': its shape of %s does not make %llu bytes", n, a->dtype,
               (unsigned long long)a->nbytes);
    PL_FAIL_IF(a->offset % PL_SLOT_ALIGN != 0, err, PL_EPARSE,
               "slot: array '%s': offset %llu is not a multiple of %u", n,
               (unsigned long long)a->offset, PL_SLOT_ALIGN);
    PL_FAIL_IF(a->offset < table_end, err, PL_EPARSE,
               "slot: array '%s': offset %llu overlaps the header and descriptors (%llu "
               "bytes)", n, (unsigned long long)a->offset, (unsigned long long)table_end);
    PL_FAIL_IF(a->offset > used || a->nbytes > used - a->offset, err, PL_EPARSE,
               "slot: array '%s' at offset %llu (%llu bytes) lies outside the %llu bytes "
               "in use", n, (unsigned long long)a->offset, (unsigned long long)a->nbytes,
               (unsigned long long)used);
    return 0;
}

PL_API int pl_slot_check(const void *slot, uint64_t slot_bytes, pl_err *err)
{
    const unsigned char *base = slot;
    struct pl_slot_header h;
    PL_FAIL_IF(slot_bytes < sizeof h, err, PL_EPARSE,
               "slot: %llu bytes, smaller than its %zu-byte header",
               (unsigned long long)slot_bytes, sizeof h);
    memcpy(&h, base, sizeof h);
    PL_FAIL_IF(memcmp(h.magic, PL_SLOT_MAGIC, sizeof h.magic) != 0, err, PL_EPARSE,
               "slot: bad magic (not a pertload batch)");
    PL_FAIL_IF(h.version != PL_SLOT_VERSION, err, PL_EPARSE,
               "slot: layout version %u, this pertload reads version %u", h.version,
               PL_SLOT_VERSION);
    PL_FAIL_IF(h.dense > 2, err, PL_EPARSE, "slot: unknown dense format %u", h.dense);
    PL_FAIL_IF(h.n_parts < 1 || h.part >= h.n_parts, err, PL_EPARSE,
               "slot: part %u of %u", h.part, h.n_parts);
    PL_FAIL_IF(h.used > slot_bytes, err, PL_EPARSE,
               "slot: %llu bytes in use, the slot has %llu", (unsigned long long)h.used,
               (unsigned long long)slot_bytes);
    PL_FAIL_IF(h.n_arrays > PL_SLOT_MAX_ARRAYS, err, PL_EPARSE,
               "slot: %u arrays (at most %u)", h.n_arrays, PL_SLOT_MAX_ARRAYS);
    uint64_t table_end = sizeof h + (uint64_t)h.n_arrays * sizeof(struct pl_slot_array);
    PL_FAIL_IF(table_end > h.used, err, PL_EPARSE,
               "slot: %u descriptors end at byte %llu, past the %llu bytes in use",
               h.n_arrays, (unsigned long long)table_end, (unsigned long long)h.used);

    uint16_t names[NAME_TABLE]; /* descriptor index + 1, 0 = free */
    extent ext[PL_SLOT_MAX_ARRAYS];
    uint32_t n_ext = 0;
    memset(names, 0, sizeof names);
    for (uint32_t i = 0; i < h.n_arrays; i++) {
        struct pl_slot_array a;
        memcpy(&a, desc_at(base, i), sizeof a);
        PL_TRY(check_array(&a, i, table_end, h.used, err));
        uint32_t s = name_hash(a.name) & (NAME_TABLE - 1);
        for (; names[s]; s = (s + 1) & (NAME_TABLE - 1))
            PL_FAIL_IF(!strncmp(desc_at(base, names[s] - 1u), a.name, sizeof a.name), err,
                       PL_EPARSE, "slot: array '%s' appears twice", a.name);
        names[s] = (uint16_t)(i + 1);
        if (a.nbytes)
            ext[n_ext++] = (extent){a.offset, a.offset + a.nbytes, i};
    }
    qsort(ext, n_ext, sizeof *ext, cmp_extent);
    for (uint32_t i = 1; i < n_ext; i++) {
        if (ext[i].start >= ext[i - 1].end)
            continue;
        const char *x = desc_at(base, ext[i - 1].index), *y = desc_at(base, ext[i].index);
        return pl__err(err, PL_EPARSE, "slot: arrays '%.*s' and '%.*s' share byte %llu",
                       (int)PL_SLOT_NAME_MAX, x, (int)PL_SLOT_NAME_MAX, y,
                       (unsigned long long)ext[i].start);
    }
    return 0;
}
