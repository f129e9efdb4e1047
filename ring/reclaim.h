/* Rings left behind when both of their processes died (serve and its
 * consumer SIGKILLed): the Python client names each epoch's ring afresh, so
 * such a name never recurs and pl_ring_create()'s check of its own name
 * never meets it. `serve` reclaims them at its start; `pertload clean`
 * lists and removes them. */
#ifndef PL_RING_RECLAIM_H
#define PL_RING_RECLAIM_H

#include "pertload.h"

/** Called per abandoned ring with its name (without the "pertload-"
 *  prefix), its size in bytes and whether it was removed. */
typedef void (*pl__ring_reclaim_fn)(void *ctx, const char *name, uint64_t bytes, int removed);

/** Find this user's rings under /dev/shm whose producer and consumer are
 *  both dead (pid and start time; a ring whose consumer was never named is
 *  kept: one may still attach to read a finished epoch),
 *  complete (a creator still building holds its lock) and well-formed;
 *  remove them unless `dry_run` (only while the name still names the
 *  segment inspected). Another user's segments and live rings are never
 *  touched. `fn` may be NULL.
 *  @return the number found, or -errno when /dev/shm cannot be listed. */
int pl__ring_reclaim(int dry_run, pl__ring_reclaim_fn fn, void *ctx);

#endif
