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
 * consumer are both gone: neither holds its liveness lock (src/core/shm.h),
 * in whatever PID namespace they run. Its pids, as recorded in their own
 * namespace, are only shown: into `who` (`cap` bytes). */
static int abandoned(int fd, const struct stat *st, char *who, size_t cap)
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
        /* a consumer never named may still come to read a finished epoch */
        int32_t cpid = atomic_load_explicit(&h->consumer_pid, memory_order_acquire);
        dead = cpid > 0 && pl__shm_held(fd, PL__SHM_LOCK_PEER + 1) == 0;
        snprintf(who, cap, "producer %d and consumer %d", (int)h->producer_pid, (int)cpid);
    }
    munmap((void *)h, PL__RING_PAGE);
    return dead;
}

/* Whether the open segment `fd` (`st`) is an arena whose worker is gone (it
 * holds the liveness lock while it lives, in whatever PID namespace) and
 * whose main process is not seen alive: the main process cannot hold the
 * lock of a file it has not opened yet, and may still receive a batch of a
 * worker that was killed, so a pid of this namespace that is alive with
 * the same start time keeps the arena (a pid never makes it removable).
 * Its pids go into `who` (`cap` bytes) to be shown. */
static int abandoned_arena(int fd, const struct stat *st, char *who, size_t cap)
{
    pl__arena_id id;
    if ((uint64_t)st->st_size < PL__RING_PAGE || pread(fd, &id, sizeof id, 0) != sizeof id)
        return 0;
    snprintf(who, cap, "main process %d and worker %d", (int)id.main_pid, (int)id.worker_pid);
    return memcmp(id.magic, PL__ARENA_MAGIC, 8) == 0 && id.main_pid > 0 && id.worker_pid > 0 &&
           !pl__shm_pid_alive(id.main_pid, id.main_start) &&
           pl__shm_held(fd, PL__SHM_LOCK_OWNER + 1) == 0;
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
        /* Open for writing: pl__shm_held() tries a write lock. A shared
         * table (also "pertload-...", mode 0400) fails to open so but for
         * root, and no lock is ever taken on it here: its magic is not a
         * ring's, and its liveness is its users' flock (table_shared.c). */
        if (pl__shm_open_owned(shm, path, O_RDWR, "ring", &fd, &st, NULL) != 0)
            continue; /* gone, or another user's */
        /* A header is read only once `init` says it is complete; the liveness
         * lock is tried only on a complete ring or arena. */
        int arena = strncmp(name, PL__ARENA_PREFIX, strlen(PL__ARENA_PREFIX)) == 0;
        char who[80];
        if (arena ? abandoned_arena(fd, &st, who, sizeof who)
                  : abandoned(fd, &st, who, sizeof who)) {
            int removed = !dry_run && pl__shm_unlink_same(shm, path, &st) == 0;
            found++;
            if (fn)
                fn(ctx, name, (uint64_t)st.st_size, removed, who);
        }
        close(fd);
    }
    closedir(d);
    return found;
}
