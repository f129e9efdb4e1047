/* pl__serve() with more epochs (`pertload serve --more-epochs`), driven as
 * the Python client drives it: serve runs in a forked child whose stdin and
 * stdout are pipes; this process reads its ready lines, attaches to the ring
 * and drains each epoch, checking every delivery's header (epoch, plan batch,
 * samples) against pl_plan_new() of that epoch, then writes the next request
 * on serve's stdin:
 *  - "epoch E START" runs epoch E from plan batch START in the same ring,
 *    whose batch counter goes on from the last epoch's;
 *  - the end of stdin ends serve with 0;
 *  - a request that is not "epoch E START" (a word, a missing START, a
 *    number too large, a line longer than a request can be) ends it with
 *    PL_EUSAGE and a message quoting the line;
 *  - a ring whose limit leaves no room for a slot is refused before it is
 *    made. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collate/slot.h"
#include "loader/serve.h"
#include "pertload_ring.h"
#include "testdb.h"
#include "testutil.h"

#define N_SAMPLES 300
#define BATCH 40
#define WAIT_MS 120000 /* a bound on a wait for serve, never reached when it works */

static pl_test_db S;

/* What the serve child reports (shared anonymous mapping). */
typedef struct report {
    int rc;
    char msg[PL_ERR_MSG_MAX];
} report;

static report *R;
static pid_t kid;
static int to_kid = -1, from_kid = -1;
static char ring[64];

static void setup(void)
{
    pl_test_db_make(&S, 200, N_SAMPLES, 0.004, 3, 13);
    R = mmap(NULL, sizeof *R, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(R, MAP_FAILED);
    snprintf(ring, sizeof ring, "t%ld-serve", (long)getpid());
}

static void teardown(void)
{
    if (kid > 0) {
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
    }
    char shm[96];
    snprintf(shm, sizeof shm, "/pertload-%s", ring);
    shm_unlink(shm);
    if (to_kid >= 0)
        close(to_kid);
    if (from_kid >= 0)
        close(from_kid);
    munmap(R, sizeof *R);
    pl_test_db_free(&S);
}

TestSuite(serve_epochs, .init = setup, .fini = teardown, .timeout = 300);

static pl_plan_opts plan_opts(uint64_t epoch)
{
    pl_plan_opts p = {.n_samples = N_SAMPLES, .seed = 21, .epoch = epoch, .world_size = 1,
                      .batch_size = BATCH, .shuffle = 1};
    return p;
}

/* Start serve over S with more epochs, epoch 0 first. */
static void start_serve(void)
{
    int in[2], out[2];
    cr_assert_eq(pipe(in), 0);
    cr_assert_eq(pipe(out), 0);
    R->rc = 1;
    kid = fork();
    cr_assert_geq(kid, 0);
    if (kid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        pl__serve_opts o = {.db = S.path, .ring = ring, .plan = plan_opts(0), .threads = 2,
                            .slots = 3, .consumer_pid = getppid(), .verbose = 1,
                            .more_epochs = 1};
        pl_err err = {0};
        int rc = pl__serve(&o, &err);
        memcpy(R->msg, err.msg, sizeof R->msg);
        R->rc = rc;
        fflush(stdout);
        _exit(0);
    }
    close(in[0]);
    close(out[1]);
    to_kid = in[1];
    from_kid = out[0];
}

/* The next line serve prints (its ready line), or "" at its end. */
static void read_line(char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {.fd = from_kid, .events = POLLIN};
        cr_assert_eq(poll(&p, 1, WAIT_MS), 1, "serve printed nothing");
        if (read(from_kid, buf + n, 1) != 1 || buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
}

/* Wait for serve to end; return its code (message in R->msg). */
static int serve_end(void)
{
    int st;
    cr_assert_eq(waitpid(kid, &st, 0), kid);
    kid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "serve's child failed: %d", st);
    return R->rc;
}

static void request(const char *line)
{
    size_t n = strlen(line);
    cr_assert_eq(write(to_kid, line, n), (ssize_t)n);
}

/* Read the ready line of an epoch and drain it: its deliveries are ring
 * batches base.., plan batches start.. of `epoch`. Returns the deliveries. */
static uint64_t drain(pl_ring **r, uint64_t base, uint64_t epoch, uint64_t start)
{
    char line[256], want[160];
    read_line(line, sizeof line);
    pl_plan_opts po = plan_opts(epoch);
    pl_plan *plan = NULL;
    pl_err err = {0};
    cr_assert_eq(pl_plan_new(&po, &plan, &err), 0, "%s", err.msg);
    uint64_t nb = pl_plan_n_batches(plan);
    snprintf(want, sizeof want, ", %llu batches, %llu deliveries",
             (unsigned long long)(nb - start), (unsigned long long)(nb - start));
    cr_assert(!strncmp(line, "ring ", 5) && strstr(line, ring) && strstr(line, want),
              "ready line [%s], want [%s]", line, want);
    if (!*r)
        cr_assert_eq(pl_ring_attach(ring, WAIT_MS, r, &err), 0, "%s", err.msg);
    uint64_t rows[BATCH], b = base;
    for (;; b++) {
        const void *slot;
        int rc = pl_ring_next(*r, b, &slot, &err);
        cr_assert_geq(rc, 0, "batch %llu: %s", (unsigned long long)b, err.msg);
        if (rc == 1)
            break;
        const struct pl_slot_header *h = slot;
        uint64_t pb = start + (b - base);
        cr_assert_eq(h->epoch, epoch);
        cr_assert_eq(h->batch, pb);
        cr_assert_eq(h->n_samples, pl_plan_batch(plan, pb, rows));
        pl_ring_release(*r, b, h->n_samples);
    }
    cr_assert_eq(b - base, nb - start);
    pl_plan_free(plan);
    return b - base;
}

Test(serve_epochs, requested_epochs_then_end_of_stdin)
{
    start_serve();
    pl_ring *r = NULL;
    uint64_t base = drain(&r, 0, 0, 0);
    request("epoch 3 2\n");
    base += drain(&r, base, 3, 2);
    request("epoch 1 0\n");
    base += drain(&r, base, 1, 0);
    cr_assert_eq(base, 8 + 6 + 8);
    close(to_kid);
    to_kid = -1;
    cr_assert_eq(serve_end(), 0, "%s", R->msg);
    pl_ring_detach(r);
}

/* After one epoch, `line` must end serve with PL_EUSAGE quoting `quoted`. */
static void refused(const char *line, const char *quoted)
{
    start_serve();
    pl_ring *r = NULL;
    drain(&r, 0, 0, 0);
    request(line);
    cr_assert_eq(serve_end(), PL_EUSAGE, "%d %s", R->rc, R->msg);
    char want[160];
    snprintf(want, sizeof want, "stdin: request '%s' is not 'epoch E START'", quoted);
    cr_assert_str_eq(R->msg, want);
    pl_ring_detach(r);
    close(to_kid);
    to_kid = -1;
    close(from_kid);
    from_kid = -1;
}

Test(serve_epochs, a_word_is_refused) { refused("next\n", "next"); }

Test(serve_epochs, a_missing_start_is_refused) { refused("epoch 4\n", "epoch 4"); }

Test(serve_epochs, a_start_that_is_not_a_number_is_refused)
{
    refused("epoch 4 x\n", "epoch 4 x");
}

Test(serve_epochs, trailing_text_is_refused) { refused("epoch 4 1 2\n", "epoch 4 1 2"); }

Test(serve_epochs, a_number_past_64_bits_is_refused)
{
    refused("epoch 99999999999999999999 0\n", "epoch 99999999999999999999 0");
}

Test(serve_epochs, an_unterminated_last_line_is_refused)
{
    /* no newline, then the end of stdin: the line as it is */
    start_serve();
    pl_ring *r = NULL;
    drain(&r, 0, 0, 0);
    request("epoch");
    close(to_kid);
    to_kid = -1;
    cr_assert_eq(serve_end(), PL_EUSAGE, "%d %s", R->rc, R->msg);
    cr_assert_str_eq(R->msg, "stdin: request 'epoch' is not 'epoch E START'");
    pl_ring_detach(r);
}

Test(serve_epochs, a_line_longer_than_a_request_is_refused)
{
    char line[200], quoted[48];
    memset(line, '7', sizeof line);
    memcpy(line, "epoch ", 6);
    line[sizeof line - 2] = '\n';
    line[sizeof line - 1] = '\0';
    /* the request is cut at 95 bytes: 89 digits, a number past 64 bits;
     * the message quotes its first 40 bytes */
    snprintf(quoted, sizeof quoted, "%.40s", line);
    refused(line, quoted);
}

Test(serve_epochs, rings_that_cannot_hold_a_slot_are_refused)
{
    pl__serve_opts o = {.db = S.path, .ring = ring, .plan = plan_opts(0), .threads = 1,
                        .slots = 0, .consumer_pid = getpid()};
    pl_err err = {0};
    cr_assert_eq(pl__serve(&o, &err), PL_EUSAGE);
    cr_assert_str_eq(err.msg, "0 slots, keeping 1");
    o.slots = 3;
    o.max_ring_bytes = pl_ring_bytes(3, 0);
    cr_assert_eq(pl__serve(&o, &err), PL_EUSAGE);
    char want[128];
    snprintf(want, sizeof want, "--max-ring-bytes (%llu bytes) leaves no room for slots",
             (unsigned long long)o.max_ring_bytes);
    cr_assert_str_eq(err.msg, want);
    /* room for the header and less than a page: not even one sample fits */
    o.max_ring_bytes += 100;
    cr_assert_eq(pl__serve(&o, &err), PL_EUSAGE);
    cr_assert(strstr(err.msg, "needs a slot of") && strstr(err.msg, "exceed --max-ring-bytes"),
              "%s", err.msg);
    char shm[96];
    snprintf(shm, sizeof shm, "/dev/shm/pertload-%s", ring);
    cr_assert_neq(access(shm, F_OK), 0, "no ring was made");
}
