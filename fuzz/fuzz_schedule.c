/* pl_schedule_affected on schedule maps made from arbitrary bytes: up to 16
 * terms with widths small or huge (2^31 and past it: their running sum, the
 * slot_out array, wraps as a caller's int64 cumulative sum would), up to
 * 2^32 - 1 annotation columns, groups and strata laid out by the bytes, then
 * one entry of the map or of the term lists spoiled, and up to 4 samples'
 * term lists (ids negative or past the terms too). Every output gets exactly
 * the room pertload.h documents, computed from the map as its caller would
 * (each its own allocation, so that the sanitizers see a write past it); a
 * room too large to allocate means the map is past the column limit, which
 * must be refused. An accepted map is checked: every slot once, scatter
 * columns inside the state, each sample's slots its terms'. */
#include <stdlib.h>
#include <string.h>

#include "fuzzutil.h"
#include "pertload.h"

enum { MAX_TERMS = 16, MAX_SAMPLES = 4, MAX_ENTRIES = 8, ROOM_CAP = 1 << 16 };

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t byte(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint32_t u32(input *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)byte(in) << (8 * i);
    return v;
}

/* Widths of 2^31 and past it: each makes the map invalid (a wrapped sum
 * decreases, an unwrapped one passes PL_SCHEDULE_MAX_COLUMNS). */
static const uint64_t huge[16] = {
    1ull << 31, (1ull << 31) + 1, 1ull << 32, (1ull << 32) - 1, 1ull << 40, 1ull << 62,
    (1ull << 62) + 1, 1ull << 63, (1ull << 63) + 1, 3ull << 62, UINT64_MAX, UINT64_MAX - 1,
    UINT64_MAX - (1ull << 31), 0x8000000000000000ull - 1, 0x7fffffffffffffffull - 6,
    0xfffffffe00000000ull};

static int64_t *room(uint64_t n)
{
    int64_t *a = malloc((n ? n : 1) * sizeof *a);
    if (!a)
        fuzz_fail("out of memory");
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size};
    uint32_t T = byte(&in) % (MAX_TERMS + 1), n_samples = byte(&in) % (MAX_SAMPLES + 1);
    uint8_t a = byte(&in);
    uint64_t n_ann = a & 0x80 ? u32(&in) : a % 16;
    uint32_t term_slot[MAX_TERMS + 1], group_ptr[MAX_TERMS + 2], stratum_ptr[MAX_TERMS + 2];
    uint64_t slot_in_ptr[MAX_TERMS + 2], slot_out[MAX_TERMS + 2];
    int64_t slot_in[MAX_TERMS * 8 + 256];
    uint32_t n_groups = 0, n_strata = 0;
    int any_huge = 0;
    slot_in_ptr[0] = 0;
    slot_out[0] = n_ann;
    for (uint32_t s = 0; s < T; s++) {
        uint8_t w = byte(&in), k = byte(&in);
        uint64_t width = w >= 0xf0 ? huge[w & 15] : w % 8;
        any_huge |= w >= 0xf0;
        slot_out[s + 1] = slot_out[s] + width; /* wraps as the caller's sum would */
        slot_in_ptr[s + 1] = slot_in_ptr[s] + k % 8;
        if (s == 0 || (k & 0x40)) { /* a new group; the first of a new stratum too */
            if (s == 0 || (k & 0x80))
                stratum_ptr[n_strata++] = n_groups;
            group_ptr[n_groups++] = s;
        }
        term_slot[s] = s;
    }
    group_ptr[n_groups] = T;
    stratum_ptr[n_strata] = n_groups;
    for (uint32_t t = T; t > 1; t--) { /* term_slot: a permutation */
        uint32_t j = byte(&in) % t, x = term_slot[t - 1];
        term_slot[t - 1] = term_slot[j], term_slot[j] = x;
    }
    for (size_t i = 0; i < sizeof slot_in / sizeof *slot_in; i++)
        slot_in[i] = (int64_t)i - 3;
    int32_t terms[MAX_SAMPLES * MAX_ENTRIES + 1];
    int64_t ptr[MAX_SAMPLES + 1] = {0};
    for (uint32_t b = 0; b < n_samples; b++) {
        uint32_t n = byte(&in) % (MAX_ENTRIES + 1);
        for (uint32_t i = 0; i < n; i++)
            terms[ptr[b] + i] = (int8_t)byte(&in) % (int32_t)(T + 3);
        ptr[b + 1] = ptr[b] + n;
    }
    int64_t n_entries = ptr[n_samples];
    /* one entry spoiled: 0 none, else term_slot, group_ptr, stratum_ptr,
     * slot_in_ptr or ptr (each kept small: the room follows the map) */
    uint8_t spoil = byte(&in), at = byte(&in), v = byte(&in);
    switch (spoil % 8) {
    case 1:
        if (T)
            term_slot[at % T] = v % (T + 2);
        break;
    case 2:
        group_ptr[at % (n_groups + 1)] = v % (T + 2);
        break;
    case 3:
        stratum_ptr[at % (n_strata + 1)] = v % (n_groups + 2);
        break;
    case 4:
        slot_in_ptr[at % (T + 1)] = v % (T * 8 + 8);
        break;
    case 5:
        ptr[at % (n_samples + 1)] = v % (n_entries + 1);
        break;
    default:
        break;
    }
    pl_schedule_map m = {T, n_groups, n_strata, term_slot, group_ptr, stratum_ptr,
                         slot_in_ptr, slot_in, slot_out};
    /* the rooms, as the caller computes them from the map */
    uint64_t scatter = slot_out[T] - slot_out[0], gather = slot_in_ptr[T];
    int too_big = scatter > ROOM_CAP;
    if (too_big && !any_huge)
        fuzz_fail("a room of %llu columns from small widths", (unsigned long long)scatter);
    if (too_big)
        scatter = ROOM_CAP;
    int64_t *o[12];
    uint64_t rooms[12] = {n_groups + 1, T, n_strata + 1, gather, n_strata + 1, scatter};
    for (int i = 0; i < 6; i++)
        rooms[6 + i] = rooms[i];
    for (int i = 0; i < 12; i++)
        o[i] = room(rooms[i]);
    int64_t *sample_ptr = room(n_samples + 1), *sample_slots = room((uint64_t)n_entries);
    pl_schedule_affected_out out = {
        .group_ptr = o[0], .positions = o[1], .gather_ptr = o[2], .gather = o[3],
        .scatter_ptr = o[4], .scatter = o[5], .rest_group_ptr = o[6], .rest_positions = o[7],
        .rest_gather_ptr = o[8], .rest_gather = o[9], .rest_scatter_ptr = o[10],
        .rest_scatter = o[11], .sample_ptr = sample_ptr, .sample_slots = sample_slots};
    pl_err err = {0};
    int rc = pl_schedule_affected(&m, terms, ptr, n_samples, &out, &err);
    if (rc < 0) {
        if (err.code >= 0 || !err.msg[0] || !memchr(err.msg, '\0', sizeof err.msg))
            fuzz_fail("refusal without a code or message");
        if (rc == PL_EUSAGE && strncmp(err.msg, "schedule map: ", 14))
            fuzz_fail("a refused map not named: %s", err.msg);
    } else {
        if (any_huge || too_big || slot_out[T] > PL_SCHEDULE_MAX_COLUMNS)
            fuzz_fail("a map with a width of 2^31 or more, or past the column limit, accepted");
        if ((uint64_t)(o[0][n_groups] + o[6][n_groups]) != T)
            fuzz_fail("the slots are not each once in a part");
        for (int w = 0; w < 2; w++)
            for (int64_t i = 0; i < o[4 + 6 * w][n_strata]; i++)
                if ((uint64_t)o[5 + 6 * w][i] < slot_out[0] ||
                    (uint64_t)o[5 + 6 * w][i] >= slot_out[T])
                    fuzz_fail("scatter column %lld outside the terms' columns",
                              (long long)o[5 + 6 * w][i]);
        for (uint32_t b = 0; b < n_samples; b++)
            for (int64_t i = ptr[b]; i < ptr[b + 1]; i++) {
                int64_t j = ptr[b];
                while (j < ptr[b + 1] && (int64_t)term_slot[terms[j]] != sample_slots[i])
                    j++;
                if (j == ptr[b + 1] || (i > ptr[b] && sample_slots[i] < sample_slots[i - 1]))
                    fuzz_fail("sample %u: slot %lld, not one of its terms' in order", b,
                              (long long)sample_slots[i]);
            }
    }
    for (int i = 0; i < 12; i++)
        free(o[i]);
    free(sample_ptr), free(sample_slots);
    return 0;
}
