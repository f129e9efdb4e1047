#include "fuzzutil.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/core/fileio.h"

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void write_all(int fd, const void *data, size_t size, const char *what)
{
    const char *p = data;
    while (size > 0) {
        ssize_t w = write(fd, p, size);
        if (w <= 0)
            fuzz_fail("cannot write %s", what);
        p += w;
        size -= (size_t)w;
    }
}

int fuzz_memfile(const uint8_t *data, size_t size, char path[64])
{
    int fd = memfd_create("pertload-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        fuzz_fail("memfd_create failed");
    write_all(fd, data, size, "a memory file");
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

int fuzz_pick_file(const uint8_t *data, size_t size, unsigned n, unsigned *pick, char path[64])
{
    if (size < 1)
        return -1;
    *pick = data[0] % n;
    return fuzz_memfile(data + 1, size - 1, path);
}

void fuzz_expect_named(int rc, int unnamed, const char *msg, const char *path)
{
    if (rc < 0 && rc != unnamed && strncmp(msg, path, strlen(path)) != 0)
        fuzz_fail("error without the file's name: %s", msg);
}

static char tmpdir[4096];

static void remove_tmpdir(void)
{
    if (tmpdir[0])
        pl__rmtree(tmpdir);
}

const char *fuzz_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/pertload-fuzz-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir))
            fuzz_fail("cannot create a directory %s", tmpdir);
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

char *fuzz_write(const char *dir, const char *name, const void *data, size_t size)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    if (!path)
        fuzz_fail("out of memory");
    snprintf(path, n, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fuzz_fail("cannot create %s", path);
    write_all(fd, data, size, path);
    close(fd);
    return path;
}
