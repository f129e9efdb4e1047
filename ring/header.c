/* Ring headers seen from outside a handle (header.h). */
#include "header.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/shm.h"

#define WHAT "ring" /* segment kind in messages */

/* The shm_open() name and the path of ring NAME (segment pertload-NAME). */
void pl__ring_names(const char *name, char *shm, char *path, size_t cap)
{
    char base[PL_RING_NAME_MAX + 16];
    snprintf(base, sizeof base, PL__RING_PREFIX "%s", name);
    pl__shm_names(base, shm, path, cap);
}

/* Validate a complete header (`init` already seen as 1 with acquire) against
 * the file size and the expected name; each field is read once into `out`.
 * @return 0, or -1 with the reason in `why`. */
int pl__ring_check_header(const pl__ring_hdr *h, uint64_t file_bytes, const char *name,
                          pl__ring_layout *out, char *why, size_t cap)
{
    char nm[PL_RING_NAME_MAX + 1];
    memcpy(nm, h->name, sizeof nm);
    nm[PL_RING_NAME_MAX] = '\0';
    pl__ring_layout l = {
        .n_slots = h->n_slots,
        .slot_bytes = h->slot_bytes,
        .stride = h->slot_stride,
        .header_bytes = h->header_bytes,
        .total_bytes = h->total_bytes,
        .producer_pid = h->producer_pid,
        .producer_start = h->producer_start,
    };
    memcpy(&l.source, &h->source, sizeof l.source);
    const char *bad = NULL;
    if (memcmp(h->magic, PL__RING_MAGIC, 8) != 0)
        bad = "magic is not " PL__RING_MAGIC;
    else if (h->version != PL__RING_VERSION)
        bad = "unsupported version";
    else if (h->fixed_bytes != offsetof(pl__ring_hdr, ready))
        bad = "header pl__ring_layout differs from this build's";
    else if (l.n_slots < 1 || l.n_slots > PL__RING_MAX_SLOTS)
        bad = "slot count out of range";
    else if (l.slot_bytes < 1 || l.slot_bytes > PL_RING_MAX_BYTES)
        bad = "slot size out of range";
    else if (l.stride != (l.slot_bytes + PL__RING_PAGE - 1) / PL__RING_PAGE * PL__RING_PAGE)
        bad = "slot stride inconsistent with the slot size";
    else if (l.header_bytes != pl__ring_header_bytes(l.n_slots))
        bad = "header size inconsistent with the slot count";
    else if (l.total_bytes != l.header_bytes + (uint64_t)l.n_slots * l.stride)
        bad = "total size inconsistent with the slots";
    else if (l.total_bytes != file_bytes)
        bad = "total size differs from the segment's size";
    else if (name && strcmp(nm, name) != 0)
        bad = "name differs from the segment's name";
    else if (l.source.known > 1 || l.source.n_types > PL_MAX_TYPES ||
             (!l.source.known && (l.source.n_types || l.source.db_fingerprint)))
        bad = "database fingerprints malformed";
    if (bad) {
        snprintf(why, cap, "%s", bad);
        return -1;
    }
    memset(l.source.edge_fingerprint + l.source.n_types, 0,
           (PL_MAX_TYPES - l.source.n_types) * sizeof l.source.edge_fingerprint[0]);
    *out = l;
    return 0;
}

/* Map the first page of an open segment read-only. */
const pl__ring_hdr *pl__ring_map_header_ro(int fd)
{
    void *p = mmap(NULL, PL__RING_PAGE, PROT_READ, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

void pl__ring_fill_stats(const pl__ring_hdr *h, const pl__ring_layout *l, pl_ring_stats *st)
{
    memset(st, 0, sizeof *st);
    st->batches_produced = atomic_load_explicit(&h->batches_produced, memory_order_relaxed);
    st->samples_produced = atomic_load_explicit(&h->samples_produced, memory_order_relaxed);
    st->batches_consumed = atomic_load_explicit(&h->batches_consumed, memory_order_relaxed);
    st->samples_consumed = atomic_load_explicit(&h->samples_consumed, memory_order_relaxed);
    st->producer_wait_ns = atomic_load_explicit(&h->producer_wait_ns, memory_order_relaxed);
    st->consumer_wait_ns = atomic_load_explicit(&h->consumer_wait_ns, memory_order_relaxed);
    st->n_batches = atomic_load_explicit(&h->n_batches, memory_order_relaxed);
    st->created_ns = h->created_ns;
    st->slot_bytes = l->slot_bytes;
    st->total_bytes = l->total_bytes;
    st->n_slots = l->n_slots;
    st->producer_pid = l->producer_pid;
    st->consumer_pid = atomic_load_explicit(&h->consumer_pid, memory_order_relaxed);
    st->state = atomic_load_explicit(&h->state, memory_order_relaxed);
    memcpy(st->name, h->name, sizeof st->name);
    st->name[PL_RING_NAME_MAX] = '\0';
}

PL_API int pl_ring_list(pl_ring_stats *out, int cap)
{
    DIR *d = opendir(PL__SHM_DIR);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    int found = 0;
    const size_t plen = strlen(PL__RING_PREFIX);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name + plen;
        if (strncmp(e->d_name, PL__RING_PREFIX, plen) != 0 ||
            pl__shm_check_name(name, PL_RING_NAME_MAX, WHAT, NULL) < 0)
            continue;
        char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
        pl__ring_names(name, shm, path, sizeof shm);
        int fd = shm_open(shm, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0)
            continue; /* gone, or another user's */
        struct stat st;
        const pl__ring_hdr *h = NULL;
        if (fstat(fd, &st) == 0 && pl__shm_check_owner(&st, "", WHAT, NULL) == 0 &&
            (uint64_t)st.st_size >= PL__RING_PAGE)
            h = pl__ring_map_header_ro(fd);
        close(fd);
        if (!h)
            continue;
        pl__ring_layout l;
        char why[128];
        /* acquire: pairs with the creator's release store of init */
        if (atomic_load_explicit(&h->init, memory_order_acquire) == 1 &&
            pl__ring_check_header(h, (uint64_t)st.st_size, name, &l, why, sizeof why) == 0) {
            if (found < cap && out)
                pl__ring_fill_stats(h, &l, &out[found]);
            found++;
        }
        munmap((void *)h, PL__RING_PAGE);
    }
    closedir(d);
    return found;
}
