/* pl_slot_check on arbitrary bytes taken as a whole slot. When it accepts,
 * every promise a consumer relies on is checked again here, independently,
 * and every array's first and last byte is read (inside the input, which the
 * sanitizers watch). */
#include <string.h>

#include "collate/slot.h"
#include "fuzzutil.h"
#include "pertload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pl_err err;
    if (pl_slot_check(data, size, &err) < 0) {
        if (err.code >= 0 || !memchr(err.msg, '\0', sizeof err.msg) || !err.msg[0])
            fuzz_fail("refusal without a code or message");
        return 0;
    }
    struct pl_slot_header h;
    memcpy(&h, data, sizeof h);
    uint64_t table_end = sizeof h + (uint64_t)h.n_arrays * sizeof(struct pl_slot_array);
    if (h.used > size || table_end > h.used || h.dense > 2)
        fuzz_fail("accepted a header that does not fit");
    volatile uint8_t sink = 0;
    for (uint32_t i = 0; i < h.n_arrays; i++) {
        struct pl_slot_array a;
        memcpy(&a, data + sizeof h + (size_t)i * sizeof a, sizeof a);
        if (!memchr(a.name, '\0', sizeof a.name) || !memchr(a.dtype, '\0', sizeof a.dtype))
            fuzz_fail("accepted an unterminated name or dtype");
        if (a.ndim < 1 || a.ndim > PL_SLOT_MAX_DIMS || a.offset % PL_SLOT_ALIGN ||
            a.offset < table_end || a.offset > h.used || a.nbytes > h.used - a.offset)
            fuzz_fail("accepted array '%s' outside the slot", a.name);
        if (a.nbytes) {
            sink ^= data[a.offset];
            sink ^= data[a.offset + a.nbytes - 1];
        }
    }
    (void)sink;
    return 0;
}
