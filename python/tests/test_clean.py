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
    """`ring` left behind by a serve and a consumer both SIGKILLed."""
    consumer = subprocess.Popen(["sleep", "600"])
    serve = _serve(db, ring, consumer.pid)
    for p in (serve, consumer):
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert (SHM / f"pertload-{ring}").exists()


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
            _abandoned(small.db, dead)  # after the live serve started: it reclaims at start
            out = run_cli("clean", "--dry-run").stdout
            assert live not in out
            if f"would remove /dev/shm/pertload-{dead} " not in out:
                assert not (SHM / f"pertload-{dead}").exists()  # reclaimed by another
                continue
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
            assert "main process and worker dead" in out and Path(dead).exists()
            out = run_cli("clean").stdout
            assert Path(kept).name not in out and Path(kept).exists()
            assert not Path(dead).exists()
            if f"removed {dead} " in out:
                done += 1
                break
        assert done, "every round's arena was reclaimed by another process"
    finally:
        Path(kept).unlink()
