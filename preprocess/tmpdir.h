/* The temporary directory of a build: "<out>.tmp-<16 random hex digits>"
 * beside the output, created with mkdir (never an existing path), holding
 * the marker file PL__TMP_MARKER, created exclusively and flock()ed by the
 * build for its whole life. A directory there is removed by a later build
 * only when it is provably an abandoned one of pertload's: a directory of the
 * caller's, its marker a regular file of the caller's holding the marker
 * text, lockable (no live build holds it, in whatever pid namespace), and
 * nothing in it but regular files of the caller's. Removal never follows a
 * symbolic link (pl__rmtree_at). */
#ifndef PL_PREPROCESS_TMPDIR_H
#define PL_PREPROCESS_TMPDIR_H

#include <sys/stat.h>

#include "pertload.h"

/** Name of the marker file in a temporary build directory. */
#define PL__TMP_MARKER ".pertload-build"

/** A temporary build directory; filled by pl__tmpdir_create(). */
typedef struct pl__tmpdir {
    char path[4096];  /**< "<out>.tmp-XXXXXXXXXXXXXXXX" */
    const char *name; /**< its last component (inside `path`) */
    int parent;       /**< the output's parent directory */
    int fd;           /**< the temporary directory */
    int marker;       /**< the marker, locked (LOCK_EX) while the build lives */
    int made;         /**< 1 while the directory exists and is this build's */
    struct stat st;   /**< the directory's identity (st_dev, st_ino) */
} pl__tmpdir;

/** Remove the abandoned temporary directories of earlier builds of `out`
 *  (best effort), then create this build's: a fresh name, mkdir that fails
 *  on an existing path, the marker made with O_CREAT | O_EXCL and locked.
 *  On failure nothing is left and the message names the directory. */
int pl__tmpdir_create(pl__tmpdir *t, const char *out, pl_err *err);

/** Finish: fsync the directory, rename it to `out` (in the same parent),
 *  then remove the marker (so that a build killed before the rename leaves
 *  a directory a later build removes) and fsync; then release `t`. On a
 *  failure before the rename the directory is still this build's, for
 *  pl__tmpdir_discard(); a failure to remove the marker afterwards leaves
 *  the database in place, the marker in it, and is reported. */
int pl__tmpdir_commit(pl__tmpdir *t, const char *out, pl_err *err);

/** A failed build: remove the directory (safely, while the lock is still
 *  held) and release `t`. Does nothing for a `t` that holds nothing (never
 *  created, committed, or zeroed). */
void pl__tmpdir_discard(pl__tmpdir *t);

#endif
