/* The .npy reader (preprocess/npy.c) on an arbitrary file. An accepted file
 * must be exactly its header plus its shape's data, which is then mapped and
 * read at both ends; its header, written again by pl__npy_header, must read
 * back to the same dtype and shape. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzutil.h"
#include "src/core/npy.h"

static void round_trip(const pl__npy *n)
{
    if (n->count * n->itemsize > (1u << 16))
        return;
    size_t data = n->count * n->itemsize;
    char *buf = calloc(1, 4096 + data);
    if (!buf)
        fuzz_fail("out of memory");
    size_t h = pl__npy_header(buf, 4096, n->descr, n->shape, n->ndim, 64);
    if (h == 0 || h % 64)
        fuzz_fail("no header written for '%s' of %u dimensions", n->descr, n->ndim);
    char path[64];
    int fd = fuzz_memfile((const uint8_t *)buf, h + data, path);
    pl__npy m;
    pl_err err;
    if (pl__npy_open(&m, path, &err) < 0)
        fuzz_fail("a written header does not read back: %s", err.msg);
    if (strcmp(m.descr, n->descr) || m.ndim != n->ndim || m.offset != h ||
        memcmp(m.shape, n->shape, sizeof m.shape) || m.count != n->count)
        fuzz_fail("a written header reads back differently");
    pl__npy_close(&m);
    close(fd);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    pl__npy n;
    pl_err err;
    if (pl__npy_open(&n, path, &err) == 0) {
        if (!n.itemsize || n.ndim > 8 || n.offset + n.count * n.itemsize != size ||
            !memchr(n.descr, '\0', sizeof n.descr))
            fuzz_fail("accepted a header that does not describe the file");
        if (pl__npy_map(&n, &err) < 0)
            fuzz_fail("cannot map an accepted file: %s", err.msg);
        const volatile uint8_t *p = (const uint8_t *)n.map;
        uint8_t sink = p[0] ^ p[n.map_size - 1];
        (void)sink;
        round_trip(&n);
    } else if (err.code != PL_EPARSE || strncmp(err.msg, path, strlen(path)) != 0) {
        fuzz_fail("refusal without PL_EPARSE and the file's name: %s", err.msg);
    }
    pl__npy_close(&n);
    close(fd);
    return 0;
}
