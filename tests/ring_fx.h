/* The harness of the ring tests (test_ring.c, test_ring_api.c): forked
 * children that report through their exit status and a shared anonymous
 * mapping (struct box), registered child pids and ring names that the suite's
 * fini kills and removes even when an assertion fails, slot fill/check
 * patterns, and the child bodies several tests share. */
#ifndef PL_TEST_RING_FX_H
#define PL_TEST_RING_FX_H

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "pertload.h"
#include "ring/ring_layout.h"

#define MAX_KIDS 8
#define MAX_NAMES 8
#define WORD_MIX 0x9E3779B97F4A7C15ULL

/* The longest a wake-up or the detection of a dead or departed peer may take
 * in a test: the ring checks its peer every 100 ms, and a machine at load 15
 * on 2 cores can leave a runnable process unscheduled for a good part of a
 * second. A bound that must hold (a peer's death is seen at all, and soon) and
 * keeps a wide margin; the latency itself is a figure for the bench. */
#define DETECT_NS 5000000000ull

/* Shared between the test and its children. */
typedef struct box {
    _Atomic int stage;           /* handshakes */
    _Atomic int rc[4];           /* return codes seen by children */
    _Atomic uint64_t t_ns[4];    /* CLOCK_MONOTONIC stamps (system-wide) */
    _Atomic uint64_t count[4];
    char msg[PL_ERR_MSG_MAX];    /* an error message seen by a child */
} box;

/** The box of the running test (mapped by setup()). */
extern box *B;

/** Child pids and ring names registered for cleanup(). */
extern pid_t kids[MAX_KIDS];
extern int n_kids;
extern char names[MAX_NAMES][PL_RING_NAME_MAX + 1];
extern int n_names;

/** The suite's .init (maps the box) and .fini (kills the children, removes
 *  the rings, unmaps the box). */
void setup(void);
void cleanup(void);

/** CLOCK_MONOTONIC in ns. */
uint64_t now_ns(void);

/** Sleep `ms` milliseconds (through EINTR). */
void sleep_ms(long ms);

/** A ring name unique to this test process, removed by cleanup(). */
const char *ring_name(const char *tag);

/** The /dev/shm path of ring `name`. */
void shm_file(char *buf, size_t cap, const char *name);

/** 1 when ring `name`'s segment exists. */
int exists(const char *name);

/** Run fn(arg) in a child process that exits with its return value. */
pid_t spawn(int (*fn)(const char *), const char *arg);

/** Wait for a child for at most `ms`; a child still running is killed.
 *  @return its exit status, 128 + signal when killed, or -1 on timeout. */
int reap(pid_t pid, int ms);

/** Test-side wait for a handshake stage (children and parent poll the box).
 *  @return 0, or -1 after `ms`. */
int await_stage(int stage, int ms);

/** Slot contents of batch b: 64-bit words b * WORD_MIX + i. */
void fill(void *slot, uint64_t bytes, uint64_t b);

/** 0 when `slot` holds batch b's contents, else -1. */
int check(const void *slot, uint64_t bytes, uint64_t b);

/** The header page of ring `name`'s segment, mapped read-write for a test to
 *  damage or rewrite; munmap(h, 4096) when done. */
pl__ring_hdr *map_header(const char *name);

/** The test attaches to ring `name` as its consumer, waiting up to `ms`: it
 *  attaches. @return the ring. */
pl_ring *attach_ok(const char *name, int ms);

/** The consumer takes batch b of `r` (pl_ring_next() returns 0) and its slot
 *  holds batch b's `bytes` (fill()). @return the slot, still to release. */
const void *take_ok(pl_ring *r, uint64_t b, uint64_t bytes);

/** A child's last act: wait to be killed. */
_Noreturn void idle_forever(void);

/** The sample count published with batch b. */
uint32_t samples_of(uint64_t b);

#define RT_BATCHES 300
#define RT_SLOTS 4
#define RT_SLOT_BYTES (64 * 1024 + 104) /* not a multiple of 4096: stride rounds up */

/** Child bodies: a producer of RT_BATCHES batches into a new ring
 *  (single-threaded); a consumer of the whole epoch with content and counter
 *  checks; a producer of a two-slot ring that publishes batch 0, sets stage 1
 *  and idles; a child that only idles. */
int producer_main(const char *name);
int consumer_main(const char *name);
int idle_producer_main(const char *name);
int idle_main(const char *unused);

/** A consumer that takes batch 0 of an idle producer's ring (stage 2), then
 *  waits for batch 1: rc[1], t_ns[1] and msg say how that wait ended. */
int blocked_consumer_main(const char *name);

#endif
