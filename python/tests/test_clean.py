"""Rings whose serve and consumer were both SIGKILLed were never reclaimed
(the Python client names each epoch's ring afresh): `pertload clean` lists
and removes them, and `serve` reclaims them when it starts. Live rings stay."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pertload
from conftest import pertload_bin, run_cli

SHM = Path("/dev/shm")


def _serve(db, ring, consumer_pid):
    """A serve process on `ring`, blocked on its one slot once ready."""
    p = subprocess.Popen([pertload_bin(), "serve", "--ring", ring, "--batch-size", "4",
                          "--slots", "1", "--threads", "1", "--consumer-pid",
                          str(consumer_pid), "--", str(db)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout.readline().startswith(b"ring " + ring.encode())
    return p


def _abandoned(db, ring):
    """`ring` left behind by a serve and a consumer both SIGKILLed: what
    `clean` says of them."""
    consumer = subprocess.Popen(["sleep", "600"])
    serve = _serve(db, ring, consumer.pid)
    for p in (serve, consumer):
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert (SHM / f"pertload-{ring}").exists()
    return f"producer {serve.pid} and consumer {consumer.pid} dead"


def test_clean_removes_only_abandoned_rings(small):
    """Every serve that starts reclaims abandoned rings too: one of another
    test run on this machine may remove the test's abandoned ring between
    two commands. Such a round is done again (a new abandoned ring); at
    least one of five must see `clean` list and remove it."""
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    live = f"tlive-{tag}"
    consumer = subprocess.Popen(["sleep", "600"])
    serve = _serve(small.db, live, consumer.pid)
    done = 0
    try:
        for attempt in range(5):
            dead = f"tdead-{tag}-{attempt}"
            # after the live serve started: it reclaims at start
            pids = _abandoned(small.db, dead)
            out = run_cli("clean", "--dry-run").stdout
            assert live not in out
            if f"would remove /dev/shm/pertload-{dead} " not in out:
                assert not (SHM / f"pertload-{dead}").exists()  # reclaimed by another
                continue
            assert pids in out  # shown as recorded
            assert (SHM / f"pertload-{dead}").exists()
            out = run_cli("clean").stdout
            assert live not in out
            assert not (SHM / f"pertload-{dead}").exists()
            if f"removed /dev/shm/pertload-{dead} " in out:
                done += 1
                break
        assert done, "every round's abandoned ring was reclaimed by another process"
        assert (SHM / f"pertload-{live}").exists(), "a live ring was removed"
        assert serve.poll() is None and consumer.poll() is None
    finally:
        for p in (serve, consumer):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        run_cli("clean")
    assert not (SHM / f"pertload-{live}").exists()


def test_serve_reclaims_abandoned_rings_at_start(small):
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    dead = f"tdead-{tag}"
    _abandoned(small.db, dead)
    rows = [r for b in pertload.Loader(small.db, batch_size=64, threads=1) for r in b.row.tolist()]
    assert rows == list(range(small.n))
    assert not (SHM / f"pertload-{dead}").exists()


_LEAVE_ARENA = """
import os, sys
from pertload import arena
pid = os.fork()
if pid == 0:  # the worker: makes its arena and dies without its exit handlers
    a = arena._Arena(1 << 16)
    print(a.path, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def _left_arena(main_alive):
    """The path of an arena whose worker died without removing it; its main
    process is this one (alive) or a child that exited."""
    if main_alive:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            from pertload import arena
            a = arena._Arena(1 << 16)  # held: its finalizer would remove it
            os.write(w, a.path.encode())
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as f:
            path = f.read().decode()
    else:
        path = subprocess.run([sys.executable, "-c", _LEAVE_ARENA], check=True,
                              capture_output=True, text=True).stdout.strip()
    assert Path(path).exists()
    return path


def test_clean_removes_arenas_whose_main_process_and_worker_died():
    kept = _left_arena(main_alive=True)
    try:
        done = 0
        for _ in range(5):  # another run's serve may reclaim it first (see above)
            dead = _left_arena(main_alive=False)
            out = run_cli("clean", "--dry-run").stdout
            assert Path(kept).name not in out
            if f"would remove {dead} " not in out:
                assert not Path(dead).exists()
                continue
            main, worker = Path(dead).name.split("-")[2:4]  # the pids of its name
            assert f"main process {main} and worker {worker} dead" in out and Path(dead).exists()
            out = run_cli("clean").stdout
            assert Path(kept).name not in out and Path(kept).exists()
            assert not Path(dead).exists()
            if f"removed {dead} " in out:
                done += 1
                break
        assert done, "every round's arena was reclaimed by another process"
    finally:
        Path(kept).unlink()


# Job A: a DataLoader of two workers, each with its serve and ring, each
# worker's first batches shipped in its arena before the main process reads
# any (prefetch); it waits for a line on stdin, then reads the epoch.
_JOB_A = """
import os, sys, time
from pathlib import Path
from torch.utils.data import DataLoader
import pertload
dl = DataLoader(pertload.Dataset(sys.argv[1], batch_size=8), batch_size=None, num_workers=2)
it = iter(dl)
deadline = time.monotonic() + 60
while len(list(Path("/dev/shm").glob(f"pertload-arena-{os.getpid()}-*"))) < 2:
    assert time.monotonic() < deadline, "no arenas"
    time.sleep(0.05)
print("ready", flush=True)
sys.stdin.readline()
rows = [r for b in it for r in b.row.tolist()]
print("rows", len(rows), len(set(rows)), min(rows), max(rows), flush=True)
"""

# Job B: a Loader (a new serve: it reclaims at its start) over the epoch.
_JOB_B = """
import sys
import pertload
rows = [r for b in pertload.Loader(sys.argv[1], batch_size=16, threads=1) for r in b.row.tolist()]
print("rows", len(rows), len(set(rows)), min(rows), max(rows), flush=True)
"""


def _other_pid_namespace(*argv):
    """argv run as pid 1's child of a new PID namespace, with its own /proc,
    sharing /dev/shm (as containers run with --ipc=host)."""
    user = [] if os.geteuid() == 0 else ["-r"]  # root inside a user namespace
    return subprocess.run(["unshare", *user, "-p", "-f", "--mount-proc", *map(str, argv)],
                          capture_output=True, text=True, timeout=300)


def _in_private_shm(scenario, inputs):
    """Run scenario(db, n) of this module in a mount namespace of its own
    whose /dev/shm is a fresh tmpfs: no serve of another run on the machine
    reclaims its segments first (every serve reclaims at its start), and the
    PID namespaces it makes share that /dev/shm."""
    user = [] if os.geteuid() == 0 else ["-r"]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import test_clean; "
            f"test_clean.{scenario.__name__}(sys.argv[2], int(sys.argv[3]))")
    out = subprocess.run(["unshare", *user, "-m", "--propagation", "private", "sh", "-c",
                          'mount -t tmpfs -o mode=1777 pertload-test /dev/shm && exec "$@"',
                          "sh", sys.executable, "-c", code, str(Path(__file__).parent),
                          str(inputs.db), str(inputs.n)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def _live_jobs(db, n):
    """Job A (_JOB_A) paused with its workers' first batches in their
    arenas; in another PID namespace, `clean` and job B (a new serve); then
    job A reads its epoch."""
    job = subprocess.Popen([sys.executable, "-c", _JOB_A, db], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline() == "ready\n", job.stderr.read()
        arenas = sorted(SHM.glob(f"pertload-arena-{job.pid}-*"))
        workers = {a.name.split("-")[3] for a in arenas}
        rings = [r for w in workers for r in SHM.glob(f"pertload-py{w}-*")]
        assert len(workers) == 2 and len(rings) == 2, (arenas, rings)
        out = _other_pid_namespace("sh", "-c", '"$1" clean && exec "$2" -c "$3" "$4"', "sh",
                                   pertload_bin(), sys.executable, _JOB_B, db)
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"0 abandoned rings or arenas\nrows {n} {n} 0 {n - 1}\n", out.stdout
        assert all(a.exists() for a in arenas), "a live worker's arena was removed"
        assert all(r.exists() for r in rings), "a live serve's ring was removed"
        stdout, stderr = job.communicate("go\n", timeout=120)
        assert job.returncode == 0, stderr
        assert stdout == f"rows {n} {n} 0 {n - 1}\n", stdout
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


def test_clean_and_serve_in_another_pid_namespace_leave_live_jobs_alone(small):
    """Liveness is the lock of each ring and arena, not the pids in them: a
    `clean` and a new serve in another PID namespace, where the pids of job
    A's serves, workers and main process name nobody, remove none of its
    rings and arenas; both jobs read their epoch exactly once."""
    _in_private_shm(_live_jobs, small)


def _dead_owners(db, n):
    """A ring and an arena whose processes all died; `clean` in another PID
    namespace."""
    ring = SHM / "pertload-tdead"
    pids = _abandoned(db, "tdead")  # first: its serve reclaims at its start
    arena = Path(_left_arena(main_alive=False))
    out = _other_pid_namespace(pertload_bin(), "clean")
    assert out.returncode == 0, out.stderr
    assert f"removed {ring} (" in out.stdout and f"; {pids})" in out.stdout, out.stdout
    assert f"removed {arena} " in out.stdout and "2 abandoned" in out.stdout, out.stdout
    assert not ring.exists() and not arena.exists()


def test_clean_in_another_pid_namespace_removes_what_dead_owners_left(small):
    """A ring whose serve and consumer were SIGKILLed and an arena whose
    worker and main process died hold no lock: a `clean` in another PID
    namespace removes both."""
    _in_private_shm(_dead_owners, small)
