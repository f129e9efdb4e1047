/* Small file helpers with pertload errors. */
#ifndef PL_CORE_FILEIO_H
#define PL_CORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pertload.h"

/** pwrite all `len` bytes at `off`; errors name `path` (ENOSPC included). */
int pl__write_all(int fd, const void *p, size_t len, uint64_t off, const char *path,
                  pl_err *err);

/** Why a write to the file `path` failed with errno `e`, for messages: fills
 *  `why` and returns the code to report. EIO is looked into, since LMDB
 *  reports a short write as EIO: -ENOSPC "no space left on device (N bytes
 *  free)" when the file system holding `path` has less than 1 MiB left (or
 *  `e` is ENOSPC), -EFBIG naming the file size limit (RLIMIT_FSIZE, `ulimit
 *  -f`) when `path` reached it (or `e` is EFBIG), else -e with strerror. */
int pl__write_error(const char *path, int e, char *why, size_t cap);

/** pread exactly `len` bytes at `off`; a short read is PL_ECORRUPT (truncated). */
int pl__read_all(int fd, void *p, size_t len, uint64_t off, const char *path, pl_err *err);

/** Open a file of a database for reading: `path` must name a regular file
 *  itself. A symbolic link, a directory, a FIFO (never waited on: the open
 *  does not block), a socket or a device is refused with a message naming
 *  `path` and what it is.
 *  @param flags extra open flags (O_DIRECT)
 *  @return the descriptor (close-on-exec, blocking), or a negative code:
 *  -errno from open, PL_ECORRUPT for a file of the wrong type. */
int pl__open_regular(const char *path, int flags, pl_err *err);

/** Remove the entry `name` of the open directory `parent` and, when it is a
 *  directory, the tree under it, with descriptor-relative calls that never
 *  follow a symbolic link (a link is removed, not its target). A directory
 *  is entered only when the descriptor openat(O_NOFOLLOW | O_DIRECTORY) gives
 *  is the directory lstat'ed (same st_dev and st_ino), lies on the same file
 *  system as `name`, and, unless `owner` is (uid_t)-1, is owned by `owner`;
 *  with `want`, `name` itself must be that file (st_dev and st_ino). Goes on
 *  past what it may not remove. @return 0, or the first failure as -errno
 *  (-EPERM: a directory of another owner, -ESTALE: a name swapped during
 *  the walk, -EXDEV: another file system). */
int pl__rmtree_at(int parent, const char *name, uid_t owner, const struct stat *want);

/** pl__rmtree_at() of a path, whatever the owners: the directory part may
 *  go through links, the last component and everything under it never do.
 *  @return as pl__rmtree_at(); -EINVAL for an empty, "." or ".." name. */
int pl__rmtree(const char *path);

/** Join a directory and a file name into `buf`. @return buf. */
char *pl__path_join(char *buf, size_t cap, const char *dir, const char *name);

/** Size and XXH64 (seed 0) of the whole file at `path`, read through a
 *  read-only private mapping. `path` is opened with pl__open_regular().
 *  Errors name `path`. */
int pl__file_xxh64(const char *path, uint64_t *bytes, uint64_t *sum, pl_err *err);

/** Size of the file at `path`, or 0. */
uint64_t pl__file_size(const char *path);

#endif
