/* The sample table in shared memory (table_shared.c; the segment's rules
 * are in table.h): the part of the table that only the loader's producers
 * and `pertload serve` use. A shared table is released by pl__table_free()
 * like a private one, through its `release` hook. */
#ifndef PL_LOADER_TABLE_SHARED_H
#define PL_LOADER_TABLE_SHARED_H

#include "loader/table.h"

/** The table of `db` in shared memory: attach the segment of the same
 *  database when one is complete, else build it (rules in table.h). Read-only.
 *  The segment holds the image of the graph's lists too: `g` (loaded from
 *  `db`) serves its lists from it when they are the same
 *  (pl__graph_image_adopt()), and then reads them only while the table
 *  is loaded.
 *  @return 0, PL_ECORRUPT (a segment under the name is truncated or altered),
 *  -EPERM (the name is held by a file of another user or with other modes),
 *  -ENOSPC (the table needs over half the free space of /dev/shm), or the
 *  codes of pl__table_load(). */
int pl__table_load_shared(pl_db *db, pl_graph *g, int io_mode, pl__table *t, pl_err *err);

/** Unmap a shared table and drop its lock, removing the segment when this
 *  was its last user (pl__table_free() calls it through `release`). */
void pl__table_shared_release(pl__table *t);

/** Drop this process's lock on shared table `fd` (file `path`) and remove the
 *  segment when no other process holds one; the mapping stays. Only system
 *  calls: the signal handler of `pertload serve` calls it before the process
 *  dies. */
void pl__table_shared_leave(int fd, const char *path);

#endif
