"""Fault soak: several epochs over W ranks while producers and consumers are
killed, stopped and restarted, and /dev/shm fills up.

Each rank is a consumer process (the Python client, as under torchrun: RANK
and WORLD_SIZE in its environment) that runs epochs 0, 1, ... and, after every
batch, checkpoints "position + deliveries" in one file replaced atomically,
the way a training loop saves model and loader state together. A consumer
killed between a batch and its checkpoint is given that batch again after its
restart, and records it once; a consumer whose producer dies (LoaderError)
resumes in the same process from its last checkpoint.

Meanwhile the driver (this program without `consumer`) picks, with a seeded
random generator, one fault at a time:

  producer SIGKILL / SIGTERM   the consumer must report it (LoaderError) within
  (also while stopped)         a bound, then resume from its checkpoint
  producer SIGSTOP ... SIGCONT the consumer waits and carries on, no error
  consumer SIGKILL / SIGTERM   it exits at once (also while it waits for a
  (also while its producer is  stopped producer, or just as its producer
  stopped, or starting)        creates a ring); its producer must exit and
                               remove its ring; the consumer is restarted and
                               resumes from its file
  consumer SIGSTOP ... SIGCONT nothing fails
  /dev/shm full                a producer is killed so that its consumer
                               restarts into the full /dev/shm: it must get a
                               clear "no space" error (no SIGBUS), and succeed
                               once the space is freed

The faults and the checks of their own outcomes are in soak_faults.py; what
the driver, its consumers and the faults share is in soak_util.py.

/dev/shm is a small private tmpfs in a mount namespace of the soak's own
(`unshare --mount`), so the machine's /dev/shm is never filled.

At the end, for every rank and epoch the committed deliveries are the rank's
epoch plan (pl_plan) exactly once, batch by batch, and the ranks together
deliver every sample exactly once per epoch; every consumer error is
explained by a fault the driver injected; a long-lived consumer's file
descriptor count is the same at every restart of its loader and it maps no
ring then; no process of the soak is left and no segment in /dev/shm.

  python3 soak.py --build BUILD [--duration SECONDS] [--seed N] [--ranks W]
                  [--faults KIND,...] [--workdir DIR] [-v]

The seed is printed first; --seed N, or PERTLOAD_SOAK_SEED=N in the
environment (`PERTLOAD_SOAK_SEED=N meson test --suite soak`), repeats a run.

Exit status 0 when every check passed, 1 otherwise (the failures are listed).
"""

import argparse
import collections
import ctypes
import gc
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from soak_faults import FAULTS, Faults
from soak_util import (NOSPACE, SHM, LogTail, alive, all_pids, cmdline, proc_stat, read_json,
                       ring_segments, write_atomic)

NS_ENV = "PERTLOAD_SOAK_NAMESPACE"
DRIVER_ENV = "PERTLOAD_SOAK_DRIVER"
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PIDS = re.compile(r"(?:pid |process )(\d+)")


def options(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", help="meson build directory (sets the package, library and "
                   "program paths)")
    p.add_argument("--duration", type=float, default=150.0,
                   help="seconds of fault injection (default 150)")
    p.add_argument("--seed", type=int, default=None, help="fault schedule seed "
                   "(default: $PERTLOAD_SOAK_SEED, else a random one; printed)")
    p.add_argument("--ranks", type=int, default=3, help="world size (default 3)")
    p.add_argument("--samples", type=int, default=6000, help="samples in the dataset")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--slots", type=int, default=4, help="ring slots per producer")
    p.add_argument("--step-ms", type=float, default=20.0,
                   help="simulated training step per batch (default 20 ms)")
    p.add_argument("--shm-mb", type=int, default=None, help="size of the private "
                   "/dev/shm (default: 8, or 3 per rank when more)")
    p.add_argument("--detect-s", type=float, default=2.0,
                   help="bound on the time from a producer kill to the consumer's error, "
                   "beyond draining the batches already in the ring (default 2 s)")
    p.add_argument("--faults", default=",".join(FAULTS),
                   help="comma-separated subset of: " + ", ".join(FAULTS))
    p.add_argument("--workdir", help="keep dataset, checkpoints and logs here")
    p.add_argument("-v", "--verbose", action="store_true", help="print every fault")
    a = p.parse_args(argv)
    if a.shm_mb is None:
        a.shm_mb = max(8, 3 * a.ranks)  # a ring takes about 1 MiB, twice that to create one
    a.fault_kinds = [k.strip() for k in a.faults.split(",") if k.strip()]
    unknown = [k for k in a.fault_kinds if k not in FAULTS]
    if unknown or not a.fault_kinds:
        p.error(f"--faults: unknown {unknown}; choose from {', '.join(FAULTS)}")
    return a

# ----------------------------------------------------------------- consumer

def consumer(args):
    """One rank: epochs until the stop file exists, checkpoint after every
    batch, resume from the checkpoint after a LoaderError or a restart."""
    # Never outlive the driver (its producer then follows this process).
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(os.environ[DRIVER_ENV]):
        return 1
    import pertload

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    d = args.workdir
    ckpt_path = os.path.join(d, f"rank{rank}.ckpt")
    log = open(os.path.join(d, f"rank{rank}.log"), "a", buffering=1)

    def note(ev, **kw):
        log.write(json.dumps({"t": time.time(), "pid": os.getpid(), "ev": ev, **kw}) + "\n")

    def on_term(sig, frame):
        # A training loop's handler: leave through the loader's clean-up.
        raise SystemExit(128 + sig)

    signal.signal(signal.SIGTERM, on_term)
    # A serve an epoch (persistent=False): between epochs the consumer then
    # maps no ring, and every producer the driver kills is one running an
    # epoch (test_persistent.py covers the serve kept across epochs).
    loader = pertload.Loader(os.path.join(d, "db"), batch_size=args.batch_size, shuffle=True,
                             seed=args.seed, slots=args.slots, threads=1, timeout=30.0,
                             persistent=False)
    assert (loader.rank, loader.world_size) == (rank, world)
    ck = read_json(ckpt_path, {"epoch": 0, "state": None, "batches": []})
    note("start", epoch=ck["epoch"], batches=len(ck["batches"]))
    step = args.step_ms / 1000.0
    backoff = 0.05
    try:
        while True:
            epoch = ck["epoch"]
            done_path = os.path.join(d, f"rank{rank}.epoch{epoch}.json")
            if ck["state"] is None and os.path.exists(os.path.join(d, "stop")):
                break
            if ck["state"] is None:
                loader.set_epoch(epoch)
            else:
                loader.load_state_dict(ck["state"])
            gc.collect()
            note("idle", fds=len(os.listdir("/proc/self/fd")), maps=ring_maps())
            try:
                run_epoch(loader, ck, step, ckpt_path, note)
            except pertload.LoaderError as e:
                note("error", epoch=epoch, serve=getattr(e, "serve", None), msg=str(e))
                time.sleep(backoff)
                backoff = min(backoff * 2, 0.4)
                continue
            backoff = 0.05
            # The epoch's record first, then the checkpoint that moves on: a
            # kill in between redoes an empty remainder and rewrites the same.
            write_atomic(done_path, {"epoch": epoch, "batches": ck["batches"]})
            ck = {"epoch": epoch + 1, "state": None, "batches": []}
            write_atomic(ckpt_path, ck)
            note("epoch_done", epoch=epoch)
    finally:
        loader.close()
        note("exit")
    return 0


def run_epoch(loader, ck, step, ckpt_path, note):
    """Consume the rest of the loader's epoch, checkpointing after every
    batch. Runs in a function of its own so that no batch view outlives it."""
    it = iter(loader)
    serve = it.process.pid if it.process is not None else None
    note("serve", serve=serve, epoch=loader.epoch, start=loader.state_dict()["batches_consumed"])
    try:
        for batch in it:
            ids = batch.sample_id.tolist()
            time.sleep(step)  # the training step
            ck["batches"].append([batch.index] + ids)
            ck["state"] = loader.state_dict()
            write_atomic(ckpt_path, ck)
    except BaseException as e:
        e.serve = serve
        raise
    note("epoch_ok", serve=serve, epoch=loader.epoch)


def ring_maps():
    """Mappings of ring segments in this process."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if "/pertload-" in line)


# ------------------------------------------------------------------- driver
class Soak(Faults):
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.d = args.workdir
        self.consumers = {}       # rank -> Popen
        self.expect_exit = {}     # consumer pid -> the return codes expected
        self.kills = []           # producer kills: dict(t, rank, pid, sig)
        self.stops = []           # producer pids only stopped
        self.fills = []           # (t_fill, t_free) windows
        self.counts = collections.Counter()   # faults by kind
        self.sent = collections.Counter()     # signals by receiver and kind
        self.starts = 0                       # consumer processes started
        self.failures = []
        self.orphans = 0          # producers whose consumer was killed, seen to exit
        self.filler = None        # the Filler while /dev/shm is kept full
        self.kinds = args.fault_kinds
        self.tails = {r: LogTail(os.path.join(self.d, f"rank{r}.log"))
                      for r in range(args.ranks)}

    def fail(self, msg):
        self.failures.append(msg)
        print(f"soak: FAIL: {msg}", flush=True)

    def say(self, msg):
        if self.args.verbose:
            print(f"soak: {time.monotonic() - self.t0:7.2f} {msg}", flush=True)

    # -- processes

    def start_consumer(self, rank):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(self.args.ranks),
                   **{DRIVER_ENV: str(os.getpid())})
        argv = [sys.executable, os.path.abspath(__file__), "consumer", "--workdir", self.d,
                "--seed", str(self.args.seed), "--batch-size", str(self.args.batch_size),
                "--slots", str(self.args.slots), "--step-ms", str(self.args.step_ms)]
        err = open(os.path.join(self.d, f"rank{rank}.stderr"), "ab")
        self.consumers[rank] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                                stdout=err, stderr=err)
        err.close()
        self.starts += 1

    def producer_of(self, rank):
        """The live `pertload serve` child of a rank's consumer, or None."""
        c = self.consumers.get(rank)
        if c is None or c.poll() is not None:
            return None
        for pid in all_pids():
            st = proc_stat(pid)
            if st and st[1] == c.pid and st[2] == "pertload" and st[0] not in "ZXx":
                return pid
        return None

    def reap(self):
        """Collect exited children that are not consumers: producers whose
        consumer died are re-parented to us (child subreaper)."""
        mine = {c.pid for c in self.consumers.values()}
        for pid in all_pids():
            st = proc_stat(pid)
            if st and st[1] == os.getpid() and pid not in mine and st[0] == "Z":
                os.waitpid(pid, 0)

    def check_consumers(self):
        """A consumer that exited unasked is a failure; one we killed is restarted."""
        for rank, c in list(self.consumers.items()):
            rc = c.poll()
            if rc is None:
                continue
            want = self.expect_exit.pop(c.pid, None)
            if want is None and rc == 0 and self.stopping:
                del self.consumers[rank]
                continue
            if want is None or rc not in want:
                self.fail(f"rank {rank}: consumer {c.pid} exited with {rc}"
                          f"{'' if want is None else f', {sorted(want)} expected'}: "
                          f"{self.stderr_tail(rank)}")
            if not self.stopping:
                self.start_consumer(rank)
            else:
                del self.consumers[rank]

    def stderr_tail(self, rank):
        with open(os.path.join(self.d, f"rank{rank}.stderr"), "rb") as f:
            return f.read()[-1500:].decode("utf-8", "replace")

    def wait(self, seconds):
        end = time.monotonic() + seconds
        while True:
            self.check_consumers()
            self.reap()
            if self.filler is not None:
                self.filler.top_up()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def send(self, who, pid, sig):
        """Signal a producer or consumer, counting what was sent to whom."""
        os.kill(pid, sig)
        self.sent[f"{who} {signal.Signals(sig).name}"] += 1

    def wait_gone(self, pid, seconds):
        """Wait for a process to be gone or a zombie; @return whether it was."""
        end = time.monotonic() + seconds
        while alive(pid):
            if time.monotonic() > end:
                return False
            self.reap()
            time.sleep(0.01)
        return True
    # -- run

    def run(self):
        a = self.args
        self.t0 = time.monotonic()
        self.stopping = False
        try:
            for r in range(a.ranks):
                self.start_consumer(r)
            end = self.t0 + a.duration
            while time.monotonic() < end and len(self.failures) < 5:
                self.wait(self.rng.uniform(0.2, 1.0))
                self.fault()
        except BaseException:
            for c in self.consumers.values():
                c.kill()
            raise
        # Drain: every rank finishes the epoch it is in and exits.
        self.stopping = True
        open(os.path.join(self.d, "stop"), "w").close()
        end = time.monotonic() + 120
        while self.consumers and time.monotonic() < end:
            self.wait(0.1)
        for rank, c in self.consumers.items():
            self.fail(f"rank {rank}: consumer {c.pid} did not finish within 120 s of the stop")
            c.kill()
            c.wait()
        self.reap()
        self.elapsed = time.monotonic() - self.t0

    # -- checks

    def check(self):
        from pertload import _lib

        a = self.args
        ids = sample_ids(os.path.join(self.d, "in", "samples.tsv"))
        epochs = {}
        logs = {r: LogTail(os.path.join(self.d, f"rank{r}.log")).new() for r in range(a.ranks)}
        for r in range(a.ranks):
            ck = read_json(os.path.join(self.d, f"rank{r}.ckpt"))
            n_done = ck["epoch"] if ck else 0
            if ck and ck["state"] is not None:
                self.fail(f"rank {r}: stopped inside epoch {ck['epoch']}")
            epochs[r] = n_done
            for e in range(n_done):
                rec = read_json(os.path.join(self.d, f"rank{r}.epoch{e}.json"))
                want = plan_ids(_lib, a, ids, e, r)
                got = {}
                for b in rec["batches"]:
                    if b[0] in got:
                        self.fail(f"rank {r} epoch {e}: batch {b[0]} delivered twice")
                    got[b[0]] = b[1:]
                if got != {i: w for i, w in enumerate(want)}:
                    missing = sorted(set(range(len(want))) - set(got))
                    wrong = sorted(i for i in got if i >= len(want) or got[i] != want[i])
                    self.fail(f"rank {r} epoch {e}: deliveries differ from the plan "
                              f"(missing batches {missing[:10]}, wrong {wrong[:10]})")
        common = min(epochs.values()) if epochs else 0
        for e in range(common):
            seen = collections.Counter()
            for r in range(a.ranks):
                rec = read_json(os.path.join(self.d, f"rank{r}.epoch{e}.json"))
                for b in rec["batches"]:
                    seen.update(b[1:])
            if seen != collections.Counter(ids):
                self.fail(f"epoch {e}: the ranks together do not deliver every sample once")
        self.epochs, self.common = epochs, common
        self.check_errors(logs)
        self.check_fds(logs)
        self.check_leftovers()

    def check_errors(self, logs):
        killed = {k["pid"]: k for k in self.kills}
        stopped = set(self.stops) - set(killed)
        self.errors = collections.Counter()
        latencies = []
        explained = set()
        for r, log in logs.items():
            for e in (x for x in log if x["ev"] == "error"):
                msg = e["msg"]
                pids = {int(p) for p in PIDS.findall(msg)} | {e.get("serve")}
                hit = [killed[p] for p in pids if p in killed]
                if hit:
                    k = hit[0]
                    explained.add(k["pid"])
                    if k["pid"] == e.get("serve"):
                        latencies.append((e["t"] - k["t"], r, k["pid"]))
                    self.errors["producer killed"] += 1
                elif NOSPACE.search(msg) and any(t0 <= e["t"] <= t1 + 3.0
                                                 for t0, t1 in self.fills):
                    self.errors["no space"] += 1
                elif "SIGBUS" in msg or "signal 7" in msg:
                    self.fail(f"rank {r}: SIGBUS: {msg}")
                else:
                    which = "a stopped producer" if pids & stopped else "no fault"
                    self.fail(f"rank {r}: error explained by {which}: {msg}")
        # Every kill is noticed, unless the epoch had ended normally before it.
        ok = {(e.get("serve")) for log in logs.values() for e in log if e["ev"] == "epoch_ok"}
        for k in self.kills:
            if k["pid"] not in explained and k["pid"] not in ok:
                self.fail(f"rank {k['rank']}: producer {k['pid']} killed "
                          f"({signal.Signals(k['sig']).name}), no error reported")
        # Detection bound: draining what the ring holds, plus detect-s.
        slack = self.args.slots * self.args.step_ms / 1000.0 * 2
        self.latency = max((x[0] for x in latencies), default=0.0)
        for lat, r, pid in latencies:
            if lat > self.args.detect_s + slack:
                self.fail(f"rank {r}: producer {pid} killed, error {lat:.2f} s later")

    def check_fds(self, logs):
        self.fd_counts = {}
        for r, log in logs.items():
            by_pid = collections.defaultdict(list)
            for e in log:
                if e["ev"] == "idle":
                    by_pid[e["pid"]].append(e)
                    if e["maps"]:
                        self.fail(f"rank {r}: consumer {e['pid']} maps {e['maps']} ring "
                                  "segment(s) with no loader running")
            for pid, idle in by_pid.items():
                counts = [e["fds"] for e in idle]
                self.fd_counts[pid] = (len(counts), min(counts), max(counts))
                if len(set(counts)) != 1:
                    self.fail(f"rank {r}: consumer {pid}: open files at its {len(counts)} "
                              f"loader restarts went {counts[:3]} .. {counts[-3:]}")
        self.long_lived = max((n for n, _, _ in self.fd_counts.values()), default=0)

    def check_leftovers(self):
        left = [pid for pid in all_pids()
                if pid != os.getpid() and self.d in cmdline(pid) and alive(pid)]
        for pid in left:
            self.fail(f"process {pid} left: {cmdline(pid)[:200]}")
            os.kill(pid, signal.SIGKILL)
        segs = ring_segments()
        if segs:
            self.fail(f"segments left in /dev/shm: {segs}")
        others = [n for n in os.listdir(SHM) if not n.startswith("pertload-")]
        if others:
            self.fail(f"files left in /dev/shm: {others}")

    def report(self):
        a = self.args
        print(f"soak: seed {a.seed}, {a.ranks} ranks, {a.samples} samples, batch "
              f"{a.batch_size}, {a.duration:g} s of faults, {self.elapsed:.1f} s in all")
        print("soak: epochs completed per rank: "
              + ", ".join(f"{r}: {n}" for r, n in sorted(self.epochs.items()))
              + f" (checked exactly once per rank; {self.common} across all ranks)")
        print("soak: faults: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())))
        print("soak: signals: " + ", ".join(f"{k} {v}" for k, v in sorted(self.sent.items()))
              + f"; consumer processes started {self.starts}")
        print("soak: consumer errors: "
              + (", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none")
              + f"; slowest report of a producer kill {self.latency:.2f} s")
        print(f"soak: producers seen to exit after their consumer was killed: {self.orphans}")
        print(f"soak: most loader restarts in one consumer process: {self.long_lived}, "
              "open files stable: " + ("yes" if all(lo == hi for _, lo, hi in
                                                    self.fd_counts.values()) else "NO"))
        if self.failures:
            print(f"soak: {len(self.failures)} failure(s); reproduce with --seed {a.seed}")
        else:
            print("soak: OK")

def sample_ids(path):
    """Sample ids by row, from the samples TSV (column `id`)."""
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        col = head.index("id")
        return [int(line.split("\t")[col]) for line in f if line.strip()]


def plan_ids(_lib, a, ids, epoch, rank):
    """Sample ids of every batch of a rank's epoch, from the library's plan."""
    opts = _lib.PlanOpts(n_samples=len(ids), seed=a.seed, epoch=epoch, rank=rank,
                         world_size=a.ranks, batch_size=a.batch_size, shuffle=1, drop_last=0)
    plan = ctypes.c_void_p()
    err = _lib.PlErr()
    lib = _lib.lib()
    _lib.check(lib.pl_plan_new(ctypes.byref(opts), ctypes.byref(plan), ctypes.byref(err)),
               err, "epoch plan")
    try:
        rows = (ctypes.c_uint64 * a.batch_size)()
        out = []
        for b in range(lib.pl_plan_n_batches(plan)):
            n = lib.pl_plan_batch(plan, b, rows)
            out.append([ids[rows[i]] for i in range(n)])
        return out
    finally:
        lib.pl_plan_free(plan)


# -------------------------------------------------------------- namespace

def enter_namespace(argv):
    """Re-run this program in a mount namespace of its own (root, or an
    unprivileged user namespace mapping us to root)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        sys.exit("soak: the unshare program (util-linux) is needed for a private /dev/shm")
    flags = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        flags = ["--user", "--map-root-user"] + flags
    os.environ[NS_ENV] = "1"
    os.execv(unshare, [unshare, *flags, sys.executable, os.path.abspath(__file__), *argv])


def private_shm(mb):
    """Mount a small tmpfs over /dev/shm (in our namespace only) and check it."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mb}m,mode=1777", "pertload-soak",
                    SHM], check=True)
    vfs = os.statvfs(SHM)
    size = vfs.f_blocks * vfs.f_frsize
    if size != mb << 20 or os.listdir(SHM):
        sys.exit(f"soak: /dev/shm is not the private {mb} MiB tmpfs ({size} bytes)")


def set_paths(build):
    b = os.path.abspath(build)
    sys.path.insert(0, os.path.join(b, "python"))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(b, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ["PERTLOAD_BIN"] = os.path.join(b, "src", "cli", "pertload")
    os.environ["PERTLOAD_LIB"] = os.path.join(b, "libpertload.so")


def main(argv):
    if argv and argv[0] == "consumer":
        return consumer(options(argv[1:]))
    args = options(argv)
    if args.samples % args.ranks:
        sys.exit("soak: --samples must be a multiple of --ranks (no padding)")
    if args.build:
        set_paths(args.build)
    if os.environ.get(NS_ENV) != "1":
        if args.seed is None:
            # `PERTLOAD_SOAK_SEED=N meson test --suite soak` repeats a run.
            seed = os.environ.get("PERTLOAD_SOAK_SEED") or int.from_bytes(os.urandom(4),
                                                                          "little")
            argv = [*argv, "--seed", str(int(seed))]
        enter_namespace(argv)
    private_shm(args.shm_mb)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("soak: prctl(PR_SET_CHILD_SUBREAPER) failed")
    print(f"soak: seed {args.seed} (--seed {args.seed} repeats this fault schedule)",
          flush=True)
    keep = args.workdir is not None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="pertload-soak-"))
    os.makedirs(args.workdir, exist_ok=True)
    from pertload import _lib

    prog = _lib.program_path()
    subprocess.run([prog, "synth", os.path.join(args.workdir, "in"), "--genes", "600",
                    "--samples", str(args.samples), "--scale", "0.1", "--seed", "5",
                    "--quiet"], check=True)
    with open(os.path.join(args.workdir, "in", "build-args.txt")) as f:
        build_args = f.read().splitlines()
    subprocess.run([prog, "build", "-o", os.path.join(args.workdir, "db"), "--quiet",
                    *build_args], check=True)
    soak = Soak(args)
    soak.run()
    soak.check()
    soak.report()
    if not keep and not soak.failures:
        shutil.rmtree(args.workdir)
    elif soak.failures:
        print(f"soak: logs in {args.workdir}")
    return 1 if soak.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
