/* Helpers of the fuzz targets (fuzz_*.c). Each target defines
 * LLVMFuzzerTestOneInput; it is linked either with libFuzzer (clang,
 * -Dfuzz=true) or with replay.c, which runs it over files and directories of
 * inputs (the corpus replay tests of every build). */
#ifndef PL_FUZZUTIL_H
#define PL_FUZZUTIL_H

#include <stddef.h>
#include <stdint.h>

/** The entry point every target defines (libFuzzer's interface). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/** Stop the process with a message: a property the target checks failed. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/** Put `size` bytes in an anonymous in-memory file and name it for open():
 *  writes "/proc/self/fd/N" into `path` (64 bytes) and returns the fd, which
 *  the caller closes. Aborts when the file cannot be made. */
int fuzz_memfile(const uint8_t *data, size_t size, char path[64]);

/** The input of a target that reads one file in `n` ways: data[0] % n picks
 *  the way (*pick), data[1..size) is the file, put in memory (fuzz_memfile:
 *  its name in `path`). @return the file's descriptor, which the caller
 *  closes, or -1 (no file made) for an empty input. */
int fuzz_pick_file(const uint8_t *data, size_t size, unsigned n, unsigned *pick, char path[64]);

/** A reader's failure must name its file: fail unless `rc` >= 0, `rc` is
 *  `unnamed` (a code whose message need not name it, or 0 for none) or the
 *  message `msg` starts with `path`. */
void fuzz_expect_named(int rc, int unnamed, const char *msg, const char *path);

/** A private directory for the process's files (under $TMPDIR or /tmp),
 *  made on first use and removed at exit. */
const char *fuzz_tmpdir(void);

/** Write `size` bytes to dir/name (created or truncated); returns the path,
 *  malloc'd. Aborts on failure. */
char *fuzz_write(const char *dir, const char *name, const void *data, size_t size);

#endif
