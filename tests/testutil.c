#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/core/fileio.h"
#include "src/core/strtab.h"

void pl_test_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "testutil: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

char *pl_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/pertload-test-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    if (!d)
        pl_test_die("mkdtemp %s: %s", tmpl, strerror(errno));
    return strdup(d);
}

void pl_test_rmtree(const char *path) { pl__rmtree(path); }

char *dir, *path;

void pl_test_dir_init(void) { dir = pl_test_tmpdir(); }

void pl_test_dir_fini(void)
{
    if (dir)
        pl_test_rmtree(dir);
    free(dir);
    free(path);
    dir = path = NULL;
}

uint64_t rng;

uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33) % n;
}

void pl_test_become_nobody(void)
{
    if (setgroups(0, NULL) < 0 || setgid(PL_TEST_NOBODY) < 0 || setuid(PL_TEST_NOBODY) < 0) {
        fprintf(stderr, "cannot drop to uid %d: %s\n", PL_TEST_NOBODY, strerror(errno));
        _exit(90);
    }
}

char *pl_test_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        pl_test_die("out of memory");
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

void pl_test_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
        pl_test_die("%s: cannot write: %s", path, strerror(errno));
}

char *pl_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        pl_test_die("%s: cannot open: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        pl_test_die("%s: cannot read", path);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

char *pl_test_write(const char *dir, const char *name, const char *text)
{
    char *p = pl_test_path(dir, name);
    pl_test_write_bytes(p, text, strlen(text));
    return p;
}

char *pl_test_write_npy(const char *dir, const char *name, const char *descr,
                        const char *fortran, const char *shape, const void *data, size_t len)
{
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }",
                     descr, fortran, shape);
    if (n < 0 || (size_t)n >= sizeof dict)
        pl_test_die("%s: .npy header too long", name);
    /* magic, version, u16 header length, dict, spaces, '\n' */
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    unsigned char *buf = malloc(total + len);
    if (!buf)
        pl_test_die("out of memory");
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((total - 10) & 0xFF);
    buf[9] = (unsigned char)((total - 10) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', total - 10 - (size_t)n - 1);
    buf[total - 1] = '\n';
    if (len)
        memcpy(buf + total, data, len);
    char *p = pl_test_path(dir, name);
    pl_test_write_bytes(p, buf, total + len);
    free(buf);
    return p;
}

void pl_test_copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (in < 0 || out < 0)
        pl_test_die("copying %s to %s: %s", from, to, strerror(errno));
    char buf[1 << 16];
    ssize_t got;
    while ((got = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)got) != got)
            pl_test_die("copying %s to %s: short write", from, to);
    if (got != 0)
        pl_test_die("copying %s: %s", from, strerror(errno));
    close(in);
    if (close(out) != 0)
        pl_test_die("copying %s to %s: %s", from, to, strerror(errno));
}

int pl_test_copy_dir(const char *from, const char *to)
{
    if (mkdir(to, 0755) != 0)
        pl_test_die("%s: %s", to, strerror(errno));
    DIR *d = opendir(from);
    if (!d)
        pl_test_die("%s: %s", from, strerror(errno));
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *a = pl_test_path(from, e->d_name), *b = pl_test_path(to, e->d_name);
        pl_test_copy_file(a, b);
        free(a);
        free(b);
        n++;
    }
    closedir(d);
    return n;
}

void pl_test_xor_byte(const char *path, uint64_t off, unsigned char mask)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        pl_test_die("%s: %s", path, strerror(errno));
    unsigned char b;
    if (pread(fd, &b, 1, (off_t)off) != 1)
        pl_test_die("%s: no byte at offset %llu", path, (unsigned long long)off);
    b ^= mask;
    if (pwrite(fd, &b, 1, (off_t)off) != 1 || close(fd) != 0)
        pl_test_die("%s: cannot write offset %llu: %s", path, (unsigned long long)off,
            strerror(errno));
}

pid_t pl_test_fork_piped(int *fd)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        pl_test_die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        pl_test_die("fork: %s", strerror(errno));
    close(pfd[pid == 0 ? 0 : 1]);
    *fd = pfd[pid == 0 ? 1 : 0];
    return pid;
}

int pl_test_small_fs(const char *dir, const char *size, const char **what)
{
    char opts[64];
    snprintf(opts, sizeof opts, "size=%s", size);
    if (unshare(CLONE_NEWNS) < 0) {
        *what = "unshare(CLONE_NEWNS)";
        return errno;
    }
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        *what = "mount --make-rprivate /";
        return errno;
    }
    if (mount("tmpfs", dir, "tmpfs", 0, opts) < 0) {
        *what = "mount tmpfs";
        return errno;
    }
    *what = "";
    return 0;
}

int pl_test_run_cli(char *const argv[], char *err, size_t cap)
{
    const char *bin = getenv("PERTLOAD_BIN");
    if (!bin || !*bin)
        pl_test_die("PERTLOAD_BIN is not set");
    int fd;
    pid_t pid = pl_test_fork_piped(&fd);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(fd, 2) < 0 || dup2(null, 1) < 0)
            _exit(126);
        execv(bin, argv);
        _exit(127);
    }
    size_t got = pl_test_recv(fd, err, cap - 1);
    err[got] = '\0';
    char rest[4096];
    while (read(fd, rest, sizeof rest) > 0) /* drain what did not fit */
        ;
    close(fd);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        pl_test_die("waitpid: %s", strerror(errno));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void pl_test_send(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len > 0) {
        ssize_t n = write(fd, c, len);
        if (n <= 0)
            _exit(3);
        c += n;
        len -= (size_t)n;
    }
}

size_t pl_test_recv(int fd, void *p, size_t len)
{
    char *c = p;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, c + got, len - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    return got;
}

void pl_test_tprintf(pl_test_text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            pl_test_die("formatting '%s' failed", fmt);
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            pl_test_die("out of memory");
    }
}

char *pl_test_put_text(const char *dir, const char *name, pl_test_text *t)
{
    char *p = pl_test_path(dir, name);
    pl_test_write_bytes(p, t->s, t->len);
    free(t->s);
    memset(t, 0, sizeof *t);
    return p;
}

static const char *keep(pl_test_inputs *in, char *path)
{
    if (in->n_paths == (int)(sizeof in->paths / sizeof in->paths[0]))
        pl_test_die("more than %d input files", in->n_paths);
    return in->paths[in->n_paths++] = path;
}

const char *pl_test_inputs_text(pl_test_inputs *in, const char *name, pl_test_text *t)
{
    return keep(in, pl_test_put_text(in->dir, name, t));
}

const char *pl_test_inputs_npy(pl_test_inputs *in, const char *name, const char *descr,
                               const char *shape, const void *data, size_t len)
{
    return keep(in, pl_test_write_npy(in->dir, name, descr, "False", shape, data, len));
}

void pl_test_inputs_edges(pl_test_inputs *in, const char *name, const char *path)
{
    if (in->o.n_types == PL_MAX_TYPES)
        pl_test_die("more than %d edge types", PL_MAX_TYPES);
    in->type_names[in->o.n_types] = name;
    in->type_files[in->o.n_types++] = path;
}

int pl_test_inputs_build(pl_test_inputs *in, const char *out, pl_build_stats *st, pl_err *err)
{
    in->o.out = out;
    in->o.type_names = in->type_names;
    in->o.type_files = in->type_files;
    return pl_build(&in->o, st, err);
}

void pl_test_inputs_free(pl_test_inputs *in)
{
    for (int i = 0; i < in->n_paths; i++)
        free(in->paths[i]);
    memset(in, 0, sizeof *in);
}

uint64_t pl_test_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t pl_test_below(uint64_t *s, uint64_t n) { return n ? pl_test_rand(s) % n : 0; }

const char *pl_test_tmp_tail(const char *msg, const char *out)
{
    size_t n = strlen(out);
    for (const char *at = strstr(msg, out); at; at = strstr(at + 1, out)) {
        const char *h = at + n;
        if (strncmp(h, ".tmp-", 5) != 0)
            continue;
        h += 5;
        int i = 0;
        while (i < 16 && h[i] && strchr("0123456789abcdef", h[i]))
            i++;
        if (i == 16 && h[16] == '/')
            return h + 17;
    }
    return NULL;
}

/* ------------------------------------------------ gene-reaction rules */

typedef struct rule_eval {
    const char *s;
    int (*deleted)(void *, const char *, size_t);
    void *ctx;
    int bad;
} rule_eval;

static int rule_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* The next token's start and length (0 at the end). */
static size_t rule_token(rule_eval *e, const char **start)
{
    while (rule_space(*e->s))
        e->s++;
    *start = e->s;
    if (!*e->s)
        return 0;
    if (*e->s == '(' || *e->s == ')')
        return 1;
    size_t n = 0;
    while (e->s[n] && !rule_space(e->s[n]) && e->s[n] != '(' && e->s[n] != ')')
        n++;
    return n;
}

static int rule_is(const char *t, size_t n, const char *w)
{
    return n == strlen(w) && strncasecmp(t, w, n) == 0;
}

static int rule_or(rule_eval *e);

static int rule_atom(rule_eval *e)
{
    const char *t;
    size_t n = rule_token(e, &t);
    if (n == 0 || *t == ')' || rule_is(t, n, "and") || rule_is(t, n, "or")) {
        e->bad = 1;
        return 0;
    }
    e->s = t + n;
    if (*t == '(') {
        int v = rule_or(e);
        n = rule_token(e, &t);
        if (n != 1 || *t != ')')
            e->bad = 1;
        else
            e->s = t + 1;
        return v;
    }
    return !e->deleted(e->ctx, t, n);
}

static int rule_and(rule_eval *e)
{
    int v = rule_atom(e);
    for (;;) {
        const char *t;
        size_t n = rule_token(e, &t);
        if (!rule_is(t, n, "and"))
            return v;
        e->s = t + n;
        v &= rule_atom(e); /* both sides are parsed: no short cut */
    }
}

static int rule_or(rule_eval *e)
{
    int v = rule_and(e);
    for (;;) {
        const char *t;
        size_t n = rule_token(e, &t);
        if (!rule_is(t, n, "or"))
            return v;
        e->s = t + n;
        v |= rule_and(e);
    }
}

int pl_test_rule_holds(const char *rule, int (*deleted)(void *ctx, const char *name, size_t len),
                       void *ctx)
{
    rule_eval e = {rule, deleted, ctx, 0};
    const char *t;
    if (rule_token(&e, &t) == 0)
        return 1;
    int v = rule_or(&e);
    if (rule_token(&e, &t) != 0)
        e.bad = 1;
    return e.bad ? -1 : v;
}

int64_t pl_test_resolve(void *ctx, const char *s, size_t len)
{
    return pl__strtab_find(ctx, s, len);
}

int pl_test_db_deleted(void *ctx, const char *name, size_t len)
{
    const pl_test_deleted *d = ctx;
    char buf[256];
    if (len >= sizeof buf)
        pl_test_die("gene name of %zu bytes", len);
    memcpy(buf, name, len);
    buf[len] = '\0';
    int64_t g = pl_db_gene_index(d->db, buf);
    if (g < 0)
        pl_test_die("gene %s not in the database", buf);
    return d->P[g];
}

uint64_t pl_test_mulhi64(uint64_t x, uint64_t k)
{
    uint64_t xl = x & 0xFFFFFFFFu, xh = x >> 32, kl = k & 0xFFFFFFFFu, kh = k >> 32;
    uint64_t ll = xl * kl, lh = xl * kh, hl = xh * kl, hh = xh * kh;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

uint32_t *pl_test_plan_order(uint64_t n, uint64_t seed, uint64_t epoch, int shuffle)
{
    uint32_t *o = malloc((n + 1) * sizeof *o);
    if (!o)
        abort();
    for (uint64_t i = 0; i < n; i++)
        o[i] = (uint32_t)i;
    uint64_t s = seed + epoch * UINT64_C(0x9E3779B97F4A7C15);
    for (uint64_t i = n; shuffle && i-- > 1;) {
        uint64_t j = pl_test_mulhi64(pl_test_rand(&s), i + 1);
        uint32_t t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
    return o;
}
