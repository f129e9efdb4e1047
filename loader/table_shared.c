/* The sample table in shared memory, one per database and node (rules in
 * table.h; the segment helpers are src/core/shm.h's).
 *
 * Segment layout: a 4096-byte header (struct shared_hdr), then ids [n],
 * gptr [n+1], genes [refs], labels [n*n_labels], weight [n], each at a
 * 64-aligned offset, then at a page the image of the graph's lists
 * (pl__graph_image_write(), graph_bytes); total_bytes is the file size.
 * data_checksum covers the table (header_bytes..off_graph); the image is
 * compared byte for byte instead. Each rank that attaches serves the graph
 * from the image when it equals the lists it loaded itself
 * (pl__graph_image_adopt()), so the ranks of a node hold one graph beside
 * the creator's: the rank that builds the segment keeps the lists it decoded,
 * in huge pages where the kernel grants them (/dev/shm's pages are 4 KiB
 * unless shmem THP is on: a serve reading them runs a few percent slower,
 * docs/benchmarks.md). */
#include "table_shared.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "masks/masks.h"
#include "src/core/checksum.h"
#include "src/core/db.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/shm.h"

#define MAGIC "PLTABL01" /* 8 bytes, no NUL stored */
#define VERSION 3u
#define PAGE 4096u
#define PREFIX "pertload-table-"
#define WHAT "sample table"
#define ATTEMPTS 8 /* creators that die halfway, or names lost to a racing creator */
#define FRESH_S 60 /* a temporary name younger than this may be a live creator's */

/* What makes two databases the same: the table of one serves the other. */
typedef struct identity {
    uint64_t dev, ino, size, mtime_ns; /* of samples.pls */
    uint64_t content;                  /* XXH64 of its header, the metadata, the blocks */
} identity;

typedef struct shared_hdr {
    /* Immutable once `init` is 1; covered by hdr_checksum. */
    char magic[8];
    uint32_t version, n_labels;
    uint64_t header_bytes, total_bytes;
    identity id;
    uint64_t n, refs;
    uint64_t off_ids, off_gptr, off_genes, off_labels, off_weight;
    uint64_t off_graph, graph_bytes;   /* the image of the graph's lists */
    uint64_t max_bound, max_kind_bound;
    uint32_t max_genes, reserved;
    uint64_t data_checksum;            /* XXH64 of bytes header_bytes..off_graph */
    uint64_t hdr_checksum;             /* XXH64 of the bytes above */
    /* 1 once the rest is complete (release store, after the checksums). */
    alignas(64) _Atomic uint32_t init;
} shared_hdr;

_Static_assert(sizeof(shared_hdr) <= PAGE, "header too big");

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

static int db_identity(pl_db *db, identity *id, pl_err *err)
{
    char path[4096], hdr[PL_SSTORE_HEADER];
    pl__path_join(path, sizeof path, db->path, PL_FILE_SAMPLES);
    struct stat st;
    PL_FAIL_IF(fstat(db->samples_fd, &st) < 0, err, -errno, "cannot stat %s: %s", path,
               strerror(errno));
    PL_TRY(pl__read_all(db->samples_fd, hdr, sizeof hdr, 0, path, err));
    memset(id, 0, sizeof *id);
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    id->size = (uint64_t)st.st_size;
    id->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    uint64_t h = pl__xxh64(hdr, sizeof hdr, 0);
    h = pl__xxh64(&db->meta, sizeof db->meta, h);
    id->content = pl__xxh64(db->blocks, db->meta.n_blocks * sizeof *db->blocks, h);
    return 0;
}

/* The segment's base name: this user's, and the identity's hash. */
static void seg_base(const identity *id, char *buf, size_t cap)
{
    snprintf(buf, cap, PREFIX "%u-%016llx", (unsigned)geteuid(),
             (unsigned long long)pl__xxh64(id, sizeof *id, 0));
}

/* The layout of a table of `n` samples, `refs` references, `L` labels and a
 * graph image of `graph` bytes. */
static void layout(shared_hdr *h, uint64_t n, uint64_t refs, uint32_t L, uint64_t graph)
{
    h->header_bytes = PAGE;
    h->n = n;
    h->refs = refs;
    h->n_labels = L;
    h->off_ids = PAGE;
    h->off_gptr = align64(h->off_ids + 8 * n);
    h->off_genes = align64(h->off_gptr + 8 * (n + 1));
    h->off_labels = align64(h->off_genes + 4 * refs);
    h->off_weight = align64(h->off_labels + 4 * n * L);
    h->off_graph = (h->off_weight + 4 * n + PAGE - 1) / PAGE * PAGE;
    h->graph_bytes = graph;
    h->total_bytes = (h->off_graph + graph + PAGE - 1) / PAGE * PAGE;
}

static void point(pl__table *t, const shared_hdr *h, unsigned char *base)
{
    t->n = h->n;
    t->n_labels = h->n_labels;
    t->ids = (uint64_t *)(base + h->off_ids);
    t->gptr = (uint64_t *)(base + h->off_gptr);
    t->genes = (int32_t *)(base + h->off_genes);
    t->labels = (float *)(base + h->off_labels);
    t->weight = (uint32_t *)(base + h->off_weight);
    t->max_genes = h->max_genes;
    t->max_bound = h->max_bound;
    t->max_kind_bound = h->max_kind_bound;
}

/* Check a complete header against the file size and the identity; copies it
 * into `out`. @return 0, or -1 with the reason in `why`. */
static int check_header(const shared_hdr *h, uint64_t file_bytes, const identity *id,
                        shared_hdr *out, const char **why)
{
    memcpy(out, h, offsetof(shared_hdr, init));
    shared_hdr want = {0};
    layout(&want, out->n, out->refs, out->n_labels, out->graph_bytes);
    *why = NULL;
    if (memcmp(out->magic, MAGIC, 8) != 0)
        *why = "magic is not " MAGIC;
    else if (out->version != VERSION)
        *why = "unsupported version";
    else if (pl__xxh64(out, offsetof(shared_hdr, hdr_checksum), 0) != out->hdr_checksum)
        *why = "header checksum mismatch";
    else if (memcmp(&out->id, id, sizeof *id) != 0)
        *why = "made for another database";
    else if (out->n > (1ull << 40) || out->refs > (1ull << 44) || out->n_labels > (1u << 20) ||
             out->graph_bytes > (1ull << 44) ||
             memcmp(&want.header_bytes, &out->header_bytes, 2 * sizeof(uint64_t)) != 0 ||
             memcmp(&want.off_ids, &out->off_ids, 7 * sizeof(uint64_t)) != 0)
        *why = "layout inconsistent with its counts";
    else if (out->total_bytes != file_bytes)
        *why = "size differs from the segment's (truncated or grown)";
    return *why ? -1 : 0;
}

/* Attach the complete segment `base` of identity `id`.
 * @return 0 attached; 1 no such segment; 2 it went stale or was replaced
 * (try again); or < 0. */
static int try_attach(const char *base, const identity *id, pl_graph *g, pl__table *t,
                      pl_err *err)
{
    char shm[128], path[128];
    pl__shm_names(base, shm, path, sizeof shm);
    int fd;
    struct stat st;
    int rc = pl__shm_open_owned(shm, path, O_RDONLY, WHAT, &fd, &st, err);
    if (rc != 0)
        return rc;
    /* The creator holds LOCK_EX until the table is complete or it died. */
    while ((rc = flock(fd, LOCK_SH)) < 0 && errno == EINTR) {
    }
    if (rc < 0 || fstat(fd, &st) < 0) {
        rc = pl__err(err, -errno, "cannot lock %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    if ((uint64_t)st.st_size < PAGE) {
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: malformed sample table: %llu bytes, shorter "
                       "than its header (truncated)", path, (unsigned long long)st.st_size);
    }
    const shared_hdr *h = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED) {
        rc = pl__err(err, -errno, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    /* acquire: pairs with the creator's release store of init */
    if (atomic_load_explicit(&h->init, memory_order_acquire) != 1) {
        /* The lock is ours: the creator is gone without finishing. */
        munmap((void *)h, PAGE);
        pl__shm_unlink_same(shm, path, &st);
        close(fd);
        return 2;
    }
    shared_hdr hd;
    const char *why;
    int bad = check_header(h, (uint64_t)st.st_size, id, &hd, &why);
    munmap((void *)h, PAGE);
    if (bad) {
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: malformed sample table: %s (remove it, or "
                       "serve with --no-shared-table)", path, why);
    }
    /* The last user may have removed the name while we waited for the lock. */
    struct stat now;
    if (stat(path, &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
        close(fd);
        return 2;
    }
    void *map = mmap(NULL, hd.total_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        rc = pl__err(err, -errno, "cannot map %s (%llu bytes): %s", path,
                     (unsigned long long)hd.total_bytes, strerror(errno));
        close(fd);
        return rc;
    }
    if (pl__xxh64((unsigned char *)map + PAGE, hd.off_graph - PAGE, 0) != hd.data_checksum) {
        munmap(map, hd.total_bytes);
        close(fd);
        return pl__err(err, PL_ECORRUPT, "%s: malformed sample table: data checksum mismatch "
                       "(altered after it was built)", path);
    }
    point(t, &hd, map);
    pl__graph_image_adopt(g, (unsigned char *)map + hd.off_graph, hd.graph_bytes);
    t->shm_base = map;
    t->release = pl__table_shared_release;
    t->shm_bytes = hd.total_bytes;
    t->shm_fd = fd;
    snprintf(t->shm_path, sizeof t->shm_path, "%s", path);
    t->backend = "shared";
    return 0;
}

/* Remove this user's table segments that no process holds (their creator
 * died before linking them, or every user died): a live user or creator
 * holds a lock on it. A creator's temporary name ("-new-") is unlocked for
 * a moment after it is created, so one is removed only when older than
 * FRESH_S seconds. */
static void clear_unused(void)
{
    DIR *d = opendir(PL__SHM_DIR);
    if (!d)
        return;
    char own[64];
    snprintf(own, sizeof own, PREFIX "%u-", (unsigned)geteuid());
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char shm[300], path[300];
        if (strncmp(e->d_name, own, strlen(own)) != 0 || strlen(e->d_name) > 200)
            continue;
        pl__shm_names(e->d_name, shm, path, sizeof shm);
        int fd;
        struct stat st;
        if (pl__shm_open_owned(shm, path, O_RDONLY, WHAT, &fd, &st, NULL) != 0)
            continue;
        int fresh = strstr(e->d_name, "-new-") && time(NULL) - st.st_ctime < FRESH_S;
        if (!fresh && flock(fd, LOCK_EX | LOCK_NB) == 0)
            pl__shm_unlink_same(shm, path, &st);
        close(fd);
    }
    closedir(d);
}

/* Build the table under a new name, link it as `base` and decode into it.
 * @return 0 built (t filled), -EEXIST (another process linked the name
 * first: attach it), -EAGAIN (the temporary name was removed before it
 * was linked: try again), or < 0. */
static int create(pl_db *db, pl_graph *g, int io_mode, const char *base, const identity *id,
                  pl__table *t, pl_err *err)
{
    shared_hdr lay = {0};
    layout(&lay, db->meta.n_samples, pl__table_refs(db), db->meta.n_labels,
           pl__graph_image_bytes(g));
    char shm[128], path[128], tshm[160], tpath[160], tmp[160];
    pl__shm_names(base, shm, path, sizeof shm);
    uint64_t rnd;
    if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
        rnd = pl__shm_now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
    snprintf(tmp, sizeof tmp, "%s-new-%016llx", base, (unsigned long long)rnd);
    pl__shm_names(tmp, tshm, tpath, sizeof tshm);
    char what[200];
    snprintf(what, sizeof what, "the sample table of %s (%llu samples)", db->path,
             (unsigned long long)lay.n);
    clear_unused(); /* before the free space is measured */
    PL_TRY(pl__shm_check_space(lay.total_bytes, what, err));
    int fd = pl__shm_create(tshm, tpath, err);
    PL_FAIL_IF(fd == -EEXIST, err, PL_EBUSY, "%s exists already", tpath);
    PL_TRY(fd);
    /* Held until the table is complete: a process that finds the name waits
     * for it, and sees a dead creator as soon as the kernel drops it. */
    flock(fd, LOCK_EX);
    int rc = pl__shm_reserve(fd, tpath, lay.total_bytes, err);
    if (rc == 0 && link(tpath, path) < 0)
        rc = errno == EEXIST   ? -EEXIST
             : errno == ENOENT ? -EAGAIN /* the temporary name was removed: again */
                               : pl__err(err, -errno, "cannot link %s to %s: %s", tpath,
                                         path, strerror(errno));
    shm_unlink(tshm);
    unsigned char *map = MAP_FAILED;
    if (rc == 0) {
        map = mmap(NULL, lay.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
            rc = pl__err(err, -errno, "cannot map %s (%llu bytes): %s", path,
                         (unsigned long long)lay.total_bytes, strerror(errno));
    }
    if (rc == 0) {
        point(t, &lay, map);
        rc = pl__table_decode(db, g, io_mode, NULL, t, err);
    }
    if (rc < 0) {
        if (map != MAP_FAILED)
            munmap(map, lay.total_bytes);
        if (rc != -EEXIST && rc != -EAGAIN) {
            struct stat st;
            if (fstat(fd, &st) == 0)
                pl__shm_unlink_same(shm, path, &st);
        }
        close(fd);
        memset(t, 0, sizeof *t);
        return rc;
    }
    shared_hdr *h = (shared_hdr *)map;
    memcpy(h, &lay, offsetof(shared_hdr, init));
    memcpy(h->magic, MAGIC, 8);
    h->version = VERSION;
    h->id = *id;
    h->max_genes = t->max_genes;
    h->max_bound = t->max_bound;
    h->max_kind_bound = t->max_kind_bound;
    pl__graph_image_write(g, map + lay.off_graph);
    h->data_checksum = pl__xxh64(map + PAGE, lay.off_graph - PAGE, 0);
    h->hdr_checksum = pl__xxh64(h, offsetof(shared_hdr, hdr_checksum), 0);
    /* release: the table and the header are visible to whoever loads init == 1 */
    atomic_store_explicit(&h->init, 1, memory_order_release);
    mprotect(map, lay.total_bytes, PROT_READ);
    fchmod(fd, 0400);
    flock(fd, LOCK_SH); /* waiters attach now */
    t->shm_base = map;
    t->release = pl__table_shared_release;
    t->shm_bytes = lay.total_bytes;
    t->shm_fd = fd;
    t->shm_created = 1;
    snprintf(t->shm_path, sizeof t->shm_path, "%s", path);
    return 0;
}

int pl__table_load_shared(pl_db *db, pl_graph *g, int io_mode, pl__table *t, pl_err *err)
{
    memset(t, 0, sizeof *t);
    identity id;
    PL_TRY(db_identity(db, &id, err));
    char base[96];
    seg_base(&id, base, sizeof base);
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        int rc = try_attach(base, &id, g, t, err);
        if (rc <= 0)
            return rc;
        if (rc == 2)
            continue;
        rc = create(db, g, io_mode, base, &id, t, err);
        if (rc != -EEXIST && rc != -EAGAIN)
            return rc;
    }
    return pl__err(err, PL_EBUSY, "%s/%s: the sample table's creators keep failing or "
                   "racing; serve with --no-shared-table", PL__SHM_DIR, base);
}

void pl__table_shared_leave(int fd, const char *path)
{
    /* The last user (no other lock held) removes the name. */
    struct stat st;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 &&
        strncmp(path, PL__SHM_DIR "/", sizeof PL__SHM_DIR) == 0)
        pl__shm_unlink_same(path + sizeof PL__SHM_DIR - 1, path, &st);
}

void pl__table_shared_release(pl__table *t)
{
    if (!t->shm_base)
        return;
    munmap(t->shm_base, t->shm_bytes);
    pl__table_shared_leave(t->shm_fd, t->shm_path);
    close(t->shm_fd);
    t->shm_base = NULL;
}
