/* Abandoned rings and arenas (reclaim.h). */
#include "reclaim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring_layout.h"
#include "src/core/shm.h"

/* Whether the open segment `fd` (`st`) is a complete ring whose producer and
 * consumer are both dead. */
static int abandoned(int fd, const struct stat *st)
{
    if ((uint64_t)st->st_size < PL__RING_PAGE)
        return 0;
    const pl__ring_hdr *h = mmap(NULL, PL__RING_PAGE, PROT_READ, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return 0;
    int dead = 0;
    /* acquire: pairs with the creator's release store of `init` */
    if (atomic_load_explicit(&h->init, memory_order_acquire) == 1 &&
        memcmp(h->magic, PL__RING_MAGIC, 8) == 0 && h->version == PL__RING_VERSION &&
        h->total_bytes == (uint64_t)st->st_size) {
        int32_t cpid = atomic_load_explicit(&h->consumer_pid, memory_order_acquire);
        uint64_t cstart = atomic_load_explicit(&h->consumer_start, memory_order_acquire);
        /* a consumer never named may still come to read a finished epoch */
        dead = cpid > 0 && !pl__shm_pid_alive(h->producer_pid, h->producer_start) &&
               !pl__shm_pid_alive(cpid, cstart);
    }
    munmap((void *)h, PL__RING_PAGE);
    return dead;
}

/* Whether the open segment `fd` (`st`) is an arena whose main process and
 * worker are both dead. */
static int abandoned_arena(int fd, const struct stat *st)
{
    pl__arena_id id;
    if ((uint64_t)st->st_size < PL__RING_PAGE || pread(fd, &id, sizeof id, 0) != sizeof id)
        return 0;
    return memcmp(id.magic, PL__ARENA_MAGIC, 8) == 0 && id.main_pid > 0 && id.worker_pid > 0 &&
           !pl__shm_pid_alive(id.main_pid, id.main_start) &&
           !pl__shm_pid_alive(id.worker_pid, id.worker_start);
}

int pl__ring_reclaim(int dry_run, pl__ring_reclaim_fn fn, void *ctx)
{
    DIR *d = opendir(PL__SHM_DIR);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    const size_t plen = strlen(PL__RING_PREFIX);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name + plen;
        if (strncmp(e->d_name, PL__RING_PREFIX, plen) != 0 ||
            pl__shm_check_name(name, PL_RING_NAME_MAX, "ring", NULL) < 0)
            continue;
        char shm[PL_RING_NAME_MAX + 32], path[PL_RING_NAME_MAX + 32];
        pl__shm_names(e->d_name, shm, path, sizeof shm);
        int fd;
        struct stat st;
        if (pl__shm_open_owned(shm, path, O_RDONLY, "ring", &fd, &st, NULL) != 0)
            continue; /* gone, or another user's */
        /* No lock taken: a header is read only once `init` says it is
         * complete, and a lock held here would stop the last user of a
         * shared table (also "pertload-...", not a ring: its magic differs)
         * from removing it. */
        int arena = strncmp(name, PL__ARENA_PREFIX, strlen(PL__ARENA_PREFIX)) == 0;
        if (arena ? abandoned_arena(fd, &st) : abandoned(fd, &st)) {
            int removed = !dry_run && pl__shm_unlink_same(shm, path, &st) == 0;
            found++;
            if (fn)
                fn(ctx, name, (uint64_t)st.st_size, removed,
                   arena ? "main process and worker" : "producer and consumer");
        }
        close(fd);
    }
    closedir(d);
    return found;
}
