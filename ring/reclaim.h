/* Rings left behind when both of their processes died (serve and its
 * consumer SIGKILLed): the Python client names each epoch's ring afresh, so
 * such a name never recurs and pl_ring_create()'s check of its own name
 * never meets it. `serve` reclaims them at its start; `pertload clean`
 * lists and removes them. */
#ifndef PL_RING_RECLAIM_H
#define PL_RING_RECLAIM_H

#include "pertload.h"

/* A DataLoader worker's arena (python/pertload/arena.py), a file
 * "pertload-arena-..." in /dev/shm, begins with this identity: the main
 * process and the worker that made it, each by pid and start time (field
 * 22 of /proc/<pid>/stat). The worker holds byte PL__SHM_LOCK_OWNER of its
 * liveness lock (src/core/shm.h) while it lives. The main process removes
 * the name once it maps the file, the worker at its exit when it was never
 * mapped: a worker SIGKILLed before the main process received its first
 * batch leaves it. */
#define PL__ARENA_PREFIX "arena-" /* after PL__RING_PREFIX */
#define PL__ARENA_MAGIC "PLARENA1"
typedef struct {
    char magic[8];
    int32_t main_pid, worker_pid;
    uint64_t main_start, worker_start;
} pl__arena_id;

/** Called per abandoned ring or arena with its name (without the
 *  "pertload-" prefix), its size in bytes, whether it was removed and whose
 *  death made it abandoned, with the pids its header records (in the PID
 *  namespace of those processes, to be shown only): "producer P and
 *  consumer C", "main process M and worker W". */
typedef void (*pl__ring_reclaim_fn)(void *ctx, const char *name, uint64_t bytes, int removed,
                                    const char *dead);

/** Find this user's rings under /dev/shm whose producer and consumer are
 *  both gone (neither holds the ring's liveness lock, which holds across PID
 *  namespaces; a ring whose consumer was never named is kept: one may still
 *  attach to read a finished epoch),
 *  complete (a creator still building holds its lock) and well-formed, and
 *  the arenas whose worker is gone (its lock) and whose main process is not
 *  alive in this PID namespace (pid and start time); remove them
 *  unless `dry_run` (only while the name still names the segment
 *  inspected). Another user's segments and live rings are never touched.
 *  `fn` may be NULL.
 *  @return the number found, or -errno when /dev/shm cannot be listed. */
int pl__ring_reclaim(int dry_run, pl__ring_reclaim_fn fn, void *ctx);

#endif
