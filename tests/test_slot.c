/* pl_slot_check: a well-formed slot passes, and every malformed header or
 * descriptor is refused with PL_EPARSE and a message naming the reason (and
 * the array). Each test starts from the same valid slot of three arrays, as
 * collate lays one out, and breaks one thing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "collate/slot.h"
#include "pertload.h"

#define SLOT_BYTES 4096u
#define N_ARRAYS 3u
#define TABLE_END (64u + N_ARRAYS * 240u) /* 784 */
#define DATA0 832u                          /* first 64-aligned offset after it */

static _Alignas(64) unsigned char slot[SLOT_BYTES + 64];

static struct pl_slot_header *head(void) { return (struct pl_slot_header *)slot; }

static struct pl_slot_array *desc(uint32_t i)
{
    return (struct pl_slot_array *)(slot + sizeof(struct pl_slot_header)) + i;
}

static void put(uint32_t i, const char *name, const char *dtype, uint64_t offset,
                uint32_t ndim, uint64_t d0, uint64_t d1, uint64_t itemsize)
{
    struct pl_slot_array *a = desc(i);
    memset(a, 0, sizeof *a);
    strcpy(a->name, name);
    strcpy(a->dtype, dtype);
    a->ndim = ndim;
    a->offset = offset;
    a->shape[0] = d0;
    a->shape[1] = d1;
    a->nbytes = d0 * (ndim > 1 ? d1 : 1) * itemsize;
}

/* sample_id <u8 [4] at 832, labels <f4 [4, 3] at 896, payload |u1 [4, 100] at
 * 1024; 1424 bytes used. */
static void valid_slot(void)
{
    memset(slot, 0, sizeof slot);
    struct pl_slot_header *h = head();
    memcpy(h->magic, PL_SLOT_MAGIC, 8);
    h->version = PL_SLOT_VERSION;
    h->n_arrays = N_ARRAYS;
    h->n_samples = 4;
    h->dense = 0;
    h->n_parts = 1;
    put(0, "sample_id", "<u8", DATA0, 1, 4, 0, 8);
    put(1, "labels", "<f4", DATA0 + 64, 2, 4, 3, 4);
    put(2, "payload", "|u1", 1024, 2, 4, 100, 1);
    h->used = 1024 + 400;
}

/* pl_slot_check must refuse the slot, with `part` in its message. */
static void refused(const char *part)
{
    pl_err err = {0};
    int rc = pl_slot_check(slot, SLOT_BYTES, &err);
    cr_assert_eq(rc, PL_EPARSE, "expected PL_EPARSE (%s), got %d", part, rc);
    cr_assert_eq(err.code, PL_EPARSE);
    cr_assert(strstr(err.msg, part), "message '%s' lacks '%s'", err.msg, part);
}

Test(slot, valid_slot_passes)
{
    pl_err err = {0};
    valid_slot();
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "%s", err.msg);
    /* exactly full: used == slot_bytes, the last array ending there */
    head()->used = SLOT_BYTES;
    put(2, "payload", "|u1", 1024, 2, 4, (SLOT_BYTES - 1024) / 4, 1);
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "%s", err.msg);
    /* empty arrays may share an offset with anything; every dtype is known */
    put(0, "empty", "<i4", DATA0 + 64, 1, 0, 0, 4);
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "%s", err.msg);
    const char *dtypes[] = {"<u8", "<i8", "<i4", "<f4", "<f2", "|u1", "|b1"};
    for (int i = 0; i < 7; i++) {
        strcpy(desc(0)->dtype, dtypes[i]);
        cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "%s: %s", dtypes[i], err.msg);
    }
    /* no arrays at all */
    valid_slot();
    head()->n_arrays = 0;
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "%s", err.msg);
    /* NULL err is allowed */
    head()->version = 9;
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, NULL), PL_EPARSE);
}

Test(slot, refuses_bad_headers)
{
    pl_err err;
    valid_slot();
    cr_assert_eq(pl_slot_check(slot, 63, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, "smaller than its 64-byte header"), "%s", err.msg);
    valid_slot();
    head()->magic[7] = '2';
    refused("bad magic");
    valid_slot();
    head()->version = 1;
    refused("layout version 1");
    valid_slot();
    head()->n_parts = 0;
    refused("part 0 of 0");
    valid_slot();
    head()->n_parts = 3;
    head()->part = 3;
    refused("part 3 of 3");
    valid_slot();
    head()->n_parts = 3;
    head()->part = 2;
    head()->first = 1000;
    cr_assert_eq(pl_slot_check(slot, SLOT_BYTES, &err), 0, "the last part: %s", err.msg);
    valid_slot();
    head()->dense = 3;
    refused("unknown dense format 3");
    valid_slot();
    head()->used = SLOT_BYTES + 1;
    refused("4097 bytes in use, the slot has 4096");
    valid_slot();
    head()->n_arrays = PL_SLOT_MAX_ARRAYS + 1;
    refused("1025 arrays (at most 1024)");
    valid_slot();
    head()->n_arrays = 0xFFFFFFFFu;
    refused("arrays (at most");
    /* the descriptor table must fit what is used */
    valid_slot();
    head()->used = TABLE_END - 1;
    refused("descriptors end at byte 784");
    valid_slot();
    head()->n_arrays = 17; /* 64 + 17 * 240 = 4144 > 4096 */
    head()->used = SLOT_BYTES;
    refused("descriptors end at byte 4144");
}

Test(slot, refuses_bad_names_and_dtypes)
{
    valid_slot();
    memset(desc(1)->name, 'x', PL_SLOT_NAME_MAX);
    refused("array 1: name not NUL-terminated");
    valid_slot();
    desc(1)->name[0] = '\0';
    refused("array 1: empty name");
    valid_slot();
    strcpy(desc(2)->name, "sample_id");
    refused("array 'sample_id' appears twice");
    valid_slot();
    memset(desc(1)->dtype, 'f', sizeof desc(1)->dtype);
    refused("array 'labels': dtype not NUL-terminated");
    valid_slot();
    strcpy(desc(1)->dtype, "<c16");
    refused("array 'labels': unknown dtype '<c16'");
    valid_slot();
    strcpy(desc(1)->dtype, ">f4");
    refused("unknown dtype '>f4'");
    valid_slot();
    strcpy(desc(1)->dtype, "");
    refused("unknown dtype ''");
}

Test(slot, refuses_bad_shapes)
{
    valid_slot();
    desc(1)->ndim = 0;
    refused("array 'labels': 0 dimensions (1..10)");
    valid_slot();
    desc(1)->ndim = PL_SLOT_MAX_DIMS + 1;
    refused("11 dimensions");
    valid_slot();
    desc(0)->shape[1] = 5; /* past ndim = 1 */
    refused("array 'sample_id': shape[1] = 5 past its 1 dimensions");
    valid_slot();
    desc(0)->nbytes = 24; /* 4 x <u8 are 32 bytes */
    refused("array 'sample_id': its shape of <u8 does not make 24 bytes");
    /* a shape whose product overflows to the right number of bytes */
    valid_slot();
    desc(0)->shape[0] = (UINT64_C(1) << 61) + 4; /* x 8 = 2^64 + 32 = 32 mod 2^64 */
    refused("array 'sample_id': its shape of <u8 does not make 32 bytes");
    valid_slot();
    desc(1)->shape[0] = UINT64_C(1) << 32;
    desc(1)->shape[1] = UINT64_C(1) << 32; /* x 4 overflows to 0 */
    desc(1)->nbytes = 0;
    refused("array 'labels': its shape of <f4 does not make 0 bytes");
}

Test(slot, refuses_offsets_outside_the_slot)
{
    valid_slot();
    desc(0)->offset = DATA0 + 1;
    refused("array 'sample_id': offset 833 is not a multiple of 64");
    valid_slot();
    desc(0)->offset = 768; /* 64-aligned but inside the descriptors */
    refused("array 'sample_id': offset 768 overlaps the header and descriptors");
    valid_slot();
    desc(0)->offset = 0;
    refused("overlaps the header");
    valid_slot();
    desc(2)->offset = 1088; /* 1088 + 400 > 1424 used */
    refused("array 'payload' at offset 1088 (400 bytes) lies outside the 1424 bytes in use");
    valid_slot();
    desc(2)->offset = UINT64_MAX - 63; /* offset + nbytes wraps around */
    refused("lies outside");
    valid_slot();
    desc(2)->offset = 1 << 20;
    refused("lies outside");
    /* an array inside the slot but past `used` */
    valid_slot();
    desc(2)->offset = 2048;
    refused("lies outside the 1424 bytes in use");
}

Test(slot, refuses_overlapping_arrays)
{
    valid_slot();
    desc(1)->offset = DATA0; /* labels over sample_id */
    refused("arrays 'sample_id' and 'labels' share byte 832");
    valid_slot();
    desc(0)->offset = 1024 + 320; /* sample_id inside the payload */
    refused("arrays 'payload' and 'sample_id' share byte 1344");
}

Test(slot, refuses_many_arrays_and_duplicates_among_them)
{
    /* the most descriptors a slot may hold, all distinct, then one repeated */
    static _Alignas(64) unsigned char big[64 + PL_SLOT_MAX_ARRAYS * 240 + 64];
    struct pl_slot_header *h = (struct pl_slot_header *)big;
    memcpy(h->magic, PL_SLOT_MAGIC, 8);
    h->version = PL_SLOT_VERSION;
    h->n_arrays = PL_SLOT_MAX_ARRAYS;
    h->n_parts = 1;
    h->used = sizeof big;
    struct pl_slot_array *a = (struct pl_slot_array *)(h + 1);
    for (uint32_t i = 0; i < PL_SLOT_MAX_ARRAYS; i++) {
        snprintf(a[i].name, sizeof a[i].name, "edges/t%u/removed", i);
        strcpy(a[i].dtype, "<i4");
        a[i].ndim = 1;
        a[i].offset = sizeof big - 64;
    }
    a[7].shape[0] = 16;
    a[7].nbytes = 64;
    pl_err err;
    cr_assert_eq(pl_slot_check(big, sizeof big, &err), 0, "%s", err.msg);
    strcpy(a[900].name, a[3].name);
    cr_assert_eq(pl_slot_check(big, sizeof big, &err), PL_EPARSE);
    cr_assert(strstr(err.msg, "'edges/t3/removed' appears twice"), "%s", err.msg);
}
