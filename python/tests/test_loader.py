"""Batches from a running `pertload serve`: contents against the masks engine
and brute-force oracles, epoch coverage and order, resume, liveness and
clean-up."""

import gc
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import pertload
from conftest import (KINDS, Inputs, assert_lists_equal, expected_masks, pertload_bin,
                      DETECT_S, plan_batches, reaped, rings, sample_lists)

def test_every_sample_equals_the_masks_command(small):
    seen = 0
    for batch in pertload.Loader(small.db, batch_size=32):
        assert batch.arrays["perturbation_indices"] is batch.perturbation_indices
        for i in range(len(batch)):
            row = int(batch.row[i])
            j = small.masks_json(row)
            assert j["row"] == row
            assert int(batch.sample_id[i]) == j["id"]
            for name, value in zip(small.label_names, batch.labels[i]):
                want = j["labels"][name]
                assert (math.isnan(value) and want is None) or value == np.float32(want)
            want = {"gene": j["perturbation_indices"]}
            want.update({"edges/" + t: v for t, v in j["edges"].items()})
            want.update({k: j[k] for k in KINDS})
            assert_lists_equal(sample_lists(batch, i), want, f"row {row}")
            seen += 1
    assert seen == small.n


def test_samples_equal_brute_force_oracle(medium):
    rng = np.random.default_rng(3)
    check = set(rng.choice(medium.n, 150, replace=False).tolist())
    found = 0
    for batch in pertload.Loader(medium.db, batch_size=64, shuffle=True, seed=11):
        for i, row in enumerate(batch.row.tolist()):
            assert int(batch.sample_id[i]) == medium.ids[row]
            np.testing.assert_allclose(batch.labels[i], medium.labels[row], rtol=1e-6)
            if row in check:
                assert_lists_equal(sample_lists(batch, i), medium.expected(row), f"row {row}")
                found += 1
    assert found == len(check)


def epoch_rows(loader):
    return [batch.row.tolist() for batch in loader]


@pytest.mark.parametrize("world", [1, 2, 3])
def test_exactly_once_per_epoch_across_ranks(medium, world):
    n, B = medium.n, 48
    union = []
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=B, shuffle=True, seed=5,
                                 rank=rank, world_size=world)
        loader.set_epoch(2)
        got = epoch_rows(loader)
        assert got == plan_batches(n, 5, 2, True, rank, world, B, False)
        assert len(got) == len(loader)
        union += [r for b in got for r in b]
    m = -(-n // world)
    assert len(union) == m * world
    assert set(union) == set(range(n))
    # Padding repeats the epoch's order from its start: only the first
    # m * world - n samples of the order appear twice.
    assert len(union) - len(set(union)) == m * world - n


@pytest.mark.parametrize("world", [2, 3])
def test_drop_last_gives_disjoint_equal_shares(medium, world):
    B = 64
    shares = []
    for rank in range(world):
        loader = pertload.Loader(medium.db, batch_size=B, shuffle=True, seed=5, rank=rank,
                                 world_size=world, drop_last=True)
        got = epoch_rows(loader)
        assert all(len(b) == B for b in got)
        assert got == plan_batches(medium.n, 5, 0, True, rank, world, B, True)
        shares.append([r for b in got for r in b])
    assert len({len(s) for s in shares}) == 1
    flat = [r for s in shares for r in s]
    assert len(flat) == len(set(flat))


def test_order_is_a_function_of_seed_and_epoch(medium):
    def order(seed, epoch):
        loader = pertload.Loader(medium.db, batch_size=100, shuffle=True, seed=seed)
        loader.set_epoch(epoch)
        return epoch_rows(loader)

    a = order(1, 0)
    assert a == order(1, 0)
    assert a != order(1, 1)
    assert a != order(2, 0)
    assert sorted(r for b in a for r in b) == list(range(medium.n))
    plain = epoch_rows(pertload.Loader(medium.db, batch_size=100))
    assert [r for b in plain for r in b] == list(range(medium.n))


def test_batch_header_and_iteration_restart(small):
    loader = pertload.Loader(small.db, batch_size=64, seed=3, shuffle=True)
    loader.set_epoch(4)
    batches = [(b.index, b.epoch, len(b)) for b in loader]
    assert batches == [(0, 4, 64), (1, 4, 64), (2, 4, 64), (3, 4, 64), (4, 4, 44)]
    # A second iteration replays the same epoch; a new iter() stops the old run.
    it = iter(loader)
    first = next(it)
    pid = loader._proc.pid
    again = [b.index for b in loader]
    assert again == [0, 1, 2, 3, 4]
    assert first.index == 0 and reaped(pid)


def test_resume_yields_exactly_the_rest(medium):
    kw = dict(batch_size=50, shuffle=True, seed=9)
    full = pertload.Loader(medium.db, **kw)
    full.set_epoch(3)
    all_rows = epoch_rows(full)
    assert len(all_rows) == 40

    loader = pertload.Loader(medium.db, **kw)
    loader.set_epoch(3)
    it = iter(loader)
    head = [next(it).row.tolist() for _ in range(13)]
    sd = loader.state_dict()
    assert sd["batches_consumed"] == 13 and sd["epoch"] == 3 and sd["seed"] == 9
    loader.close()

    resumed = pertload.Loader(medium.db, batch_size=50, shuffle=True, seed=0)
    resumed.load_state_dict(sd)
    assert len(resumed) == 27
    rest = []
    for b in resumed:
        rest.append(b.row.tolist())
        assert b.index == 13 + len(rest) - 1
    assert head + rest == all_rows
    assert resumed.state_dict()["batches_consumed"] == 40

    # Resuming at the end yields nothing and starts no producer.
    done = pertload.Loader(medium.db, **kw)
    done.load_state_dict(resumed.state_dict())
    assert list(done) == []


def test_killed_producer_raises_within_a_second(medium):
    loader = pertload.Loader(medium.db, batch_size=8, slots=2)
    it = iter(loader)
    next(it)
    proc = loader._proc
    os.kill(proc.pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(pertload.LoaderError, match="died|killed") as e:
        for _ in it:
            pass
    assert time.monotonic() - t0 < DETECT_S, e.value
    assert reaped(proc.pid)
    assert loader._proc is None


def test_producer_failure_is_reported(small, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(small.db, db)
    store = db / "samples.pls"
    data = bytearray(store.read_bytes())
    data[len(data) // 2] ^= 0xFF
    store.write_bytes(data)
    loader = pertload.Loader(db, batch_size=16)
    t0 = time.monotonic()
    with pytest.raises(pertload.LoaderError, match="serve") as e:
        list(loader)
    assert time.monotonic() - t0 < DETECT_S
    assert "checksum" in str(e.value) or "corrupt" in str(e.value), e.value


@pytest.mark.parametrize("kw,reason", [
    ({"threads": 1000}, "--threads 1000 is out of range (1 to 256)"),
    ({"slots": 5000}, "--slots 5000 is out of range (1 to 1024)"),
    ({"batch_size": 2 ** 21}, "--batch-size 2097152 is out of range (1 to 1048576)"),
    ({"world_size": 2 ** 30 + 1}, "--world-size 1073741825 is out of range (1 to 1073741824)"),
])
def test_serve_usage_errors_carry_the_reason(small, kw, reason):
    """serve's reason, not the end of its usage text that follows it."""
    loader = pertload.Loader(small.db, **kw)
    with pytest.raises(pertload.LoaderError) as e:
        iter(loader)
    assert str(e.value).endswith(f"exited with status 2: pertload serve: {reason}"), e.value


@pytest.mark.parametrize("key", ["rank", "world_size", "batch_size"])
def test_plan_parameters_over_32_bits_are_named(small, key):
    kw = {"world_size": 2 ** 32 + 2, "rank": 2 ** 32 + 1} if key == "rank" else {key: 2 ** 32}
    with pytest.raises(pertload.LoaderError, match=f"epoch plan: {key} {kw[key]} does not fit"):
        pertload.Loader(small.db, **kw)


def test_database_path_may_start_with_a_dash(small, tmp_path, monkeypatch):
    shutil.copytree(small.db, tmp_path / "-db")
    monkeypatch.chdir(tmp_path)
    rows = [r for batch in pertload.Loader("-db", batch_size=64) for r in batch.row.tolist()]
    assert rows == list(range(small.n))


def _rebuild(small, root, change):
    """A database from `small`'s inputs with one change: "edges" drops the
    first edge of the first type, "types" drops the last edge type,
    "reactions" lists the reactions in reverse (the same genes and edges)."""
    args = list(small.build_args)
    if change == "reactions":
        k = args.index("--reactions") + 1
        names = Path(args[k]).read_text().split()
        (root / "reversed.txt").write_text("\n".join(names[::-1]) + "\n")
        args[k] = str(root / "reversed.txt")
    elif change == "edges":
        k = next(k for k, a in enumerate(args) if "/edges/" in a)
        name, path = args[k].split("=", 1)
        lines = Path(path).read_text().splitlines(keepends=True)
        first = next(i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#"))
        (root / "fewer.tsv").write_text("".join(lines[:first] + lines[first + 1:]))
        args[k] = f"{name}={root / 'fewer.tsv'}"
    else:
        k = max(k for k, a in enumerate(args) if "/edges/" in a)
        del args[k - 1:k + 1]
    db = root / "new"
    subprocess.run([pertload_bin(), "build", "-o", db, *args], check=True, capture_output=True)
    return db


def test_kept_serve_goes_on_with_the_database_it_opened(small, tmp_path):
    """A database replaced between two epochs: the serve kept from the first
    goes on with the files it opened (the Loader's database); a serve
    started after close() opens the new one and is refused."""
    db = tmp_path / "db"
    shutil.copytree(small.db, db)
    loader = pertload.Loader(db, batch_size=64)
    first = [b.sample_id.tolist() for b in loader]
    pid = loader._kept[1].proc.pid
    new = _rebuild(small, tmp_path, "edges")
    os.rename(db, tmp_path / "old")
    os.rename(new, db)
    assert [b.sample_id.tolist() for b in loader] == first
    assert loader._kept[1].proc.pid == pid
    loader.close()
    with pytest.raises(pertload.LoaderError, match="changed since the Loader opened it"):
        list(loader)


@pytest.mark.parametrize("change", ["edges", "types", "reactions"])
def test_database_replaced_after_the_loader_opened_it_is_refused(small, tmp_path, change):
    db = tmp_path / "db"
    shutil.copytree(small.db, db)
    loader = pertload.Loader(db, batch_size=64)
    mine = loader._fingerprints
    new = _rebuild(small, tmp_path, change)
    theirs = pertload.Loader(new, batch_size=64)._fingerprints
    assert theirs != mine
    # Replace the directory under the Loader's path, each step a rename.
    os.rename(db, tmp_path / "old")
    os.rename(new, db)
    got = []
    with pytest.raises(pertload.LoaderError) as e:
        for b in loader:
            got.append(b.index)
    assert got == []
    msg = str(e.value)
    assert f"database at {db} changed since the Loader opened it" in msg
    assert f"gene {mine[0]:016x}" in msg and f"gene {theirs[0]:016x}" in msg
    changed = [t for t in mine[1] if mine[1][t] != theirs[1].get(t)]
    for t in changed:
        assert f"{mine[1][t]:016x}" in msg and (t not in theirs[1] or
                                                f"{theirs[1][t]:016x}" in msg)
    # other reactions: only the database fingerprint tells them apart
    assert bool(changed) == (change != "reactions")
    assert mine[2] != theirs[2]
    assert f"database {mine[2]:016x}" in msg and f"database {theirs[2]:016x}" in msg
    # A Loader opened on the new database uses it.
    assert sum(len(b) for b in pertload.Loader(db, batch_size=64)) == small.n


def test_signals_handled_during_waits_lose_no_batch(small):
    """Handlers that return (a profiler's timer, SIGCHLD) interrupt the waits
    for batches, here for a producer stopped for 0.3 s; the epoch goes on with
    every batch, in order."""
    ticks = []
    old = signal.signal(signal.SIGALRM, lambda sig, frame: ticks.append(sig))
    loader = pertload.Loader(small.db, batch_size=4, slots=1, threads=1)
    rows = []
    try:
        for batch in loader:
            rows += batch.row.tolist()
            if batch.index == 1:
                proc = loader._proc
                proc.send_signal(signal.SIGSTOP)
                threading.Timer(0.3, proc.send_signal, (signal.SIGCONT,)).start()
                signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert rows == list(range(small.n))
    assert len(ticks) > 10


ANNOUNCE_AND_DIE = """#!/bin/bash
# pertload serve that is terminated (and removes its ring) right after it
# announced the ring, before the consumer attaches.
exec 3< <(exec "$PERTLOAD_REAL_BIN" "$@")
serve=$!
read -r line <&3
kill -TERM $serve
while kill -0 $serve 2>/dev/null; do sleep 0.01; done
echo "$line"
exec sleep 60
"""


def test_ring_gone_after_the_ready_line_fails_at_once(small, tmp_path, monkeypatch):
    """A producer that dies between announcing its ring and the consumer's
    attach is reported at once, not after the start-up timeout."""
    wrapper = tmp_path / "serve-then-die"
    wrapper.write_text(ANNOUNCE_AND_DIE)
    wrapper.chmod(0o755)
    monkeypatch.setenv("PERTLOAD_REAL_BIN", pertload_bin())
    monkeypatch.setenv("PERTLOAD_BIN", str(wrapper))
    loader = pertload.Loader(small.db, batch_size=16, timeout=30.0)
    t0 = time.monotonic()
    with pytest.raises(pertload.LoaderError, match="announced ring .* gone"):
        iter(loader)
    assert time.monotonic() - t0 < DETECT_S
    assert not [r for r in rings() if r.startswith(f"pertload-py{os.getpid()}-")]


def test_serve_terminated_while_creating_its_ring_removes_it(small):
    """SIGTERM as soon as the segment appears, while serve still sizes it (as
    when the consumer dies during the producer's start and the producer gets
    its parent-death signal): serve removes it before it dies."""
    for i in range(5):
        name = f"py{os.getpid()}-creating{i}"
        path = f"/dev/shm/pertload-{name}"
        proc = subprocess.Popen([pertload_bin(), "serve", small.db, "--ring", name, "--slots",
                                 "16", "--batch-size", "64", "--quiet"])
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            pass
        appeared = os.path.exists(path)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == -signal.SIGTERM
        assert appeared, "serve never made its ring"
        assert not os.path.exists(path)


def start(loader):
    it = iter(loader)
    batch = next(it)
    proc = loader._proc
    ring = f"pertload-{loader.stats()['name']}"
    assert proc.poll() is None and ring in rings()
    return it, batch, proc, ring


def gone(proc, ring):
    return reaped(proc.pid) and ring not in rings()


def test_close_stops_the_producer(small):
    loader = pertload.Loader(small.db, batch_size=16)
    it, batch, proc, ring = start(loader)
    loader.close()
    assert gone(proc, ring)
    assert list(it) == []
    # The last batch's views stay readable after close.
    assert batch.row.tolist() == list(range(16))


def test_context_manager(small):
    with pertload.Loader(small.db, batch_size=16) as loader:
        it, batch, proc, ring = start(loader)
    assert gone(proc, ring)


def test_break_stops_the_producer(small):
    loader = pertload.Loader(small.db, batch_size=16)
    for batch in loader:
        proc = loader._proc
        ring = f"pertload-{loader.stats()['name']}"
        break
    assert gone(proc, ring)


def test_garbage_collection_stops_the_producer(small):
    def partial():
        loader = pertload.Loader(small.db, batch_size=16)
        it, batch, proc, ring = start(loader)
        return proc, ring

    proc, ring = partial()
    gc.collect()
    assert gone(proc, ring)


def test_ring_name_in_use_is_refused(small):
    name = f"py{os.getpid()}-named"
    first = pertload.Loader(small.db, batch_size=16, ring=name)
    it = iter(first)
    next(it)
    second = pertload.Loader(small.db, batch_size=16, ring=name)
    with pytest.raises(pertload.LoaderError, match="in use"):
        iter(second)
    # The refused loader leaves the running ring alone.
    assert f"pertload-{name}" in rings()
    assert len(list(it)) == 18


def test_end_of_epoch_leaves_nothing(small):
    """persistent=False: serve exits at the end of the epoch (the default
    keeps it for the next: test_persistent.py)."""
    loader = pertload.Loader(small.db, batch_size=100, persistent=False)
    it = iter(loader)
    next(it)
    proc = loader._proc
    assert len(list(it)) == 2
    assert proc.returncode == 0 and reaped(proc.pid)
    assert not [r for r in rings() if r.startswith(f"pertload-py{os.getpid()}-")]


def test_default_loader_keeps_serve_and_dropping_it_ends_serve(small):
    """By default the serve is kept after the epoch; a Loader no longer
    referenced (its last batch still held, which holds no Loader) ends it at
    once, without a garbage collection."""
    loader = pertload.Loader(small.db, batch_size=100)
    it = iter(loader)
    next(it)
    proc = loader._proc
    for last in it:
        pass
    assert proc.poll() is None and loader._kept[1].proc is proc
    gc.disable()  # freed by its reference count alone: no cycle through the batch
    try:
        del it, loader
        proc.wait(DETECT_S)
    finally:
        gc.enable()
    assert reaped(proc.pid)
    assert not [r for r in rings() if r.startswith(f"pertload-py{os.getpid()}-")]
    assert len(last.row) == 100  # the last batch stays valid (no slot refilled)


class Alarm(Exception):
    pass


@pytest.mark.parametrize("to", ["this thread", "another thread"])
def test_signal_reaches_a_consumer_waiting_for_a_stopped_producer(medium, to):
    """A signal handler (Ctrl-C, a training loop's SIGTERM handler) runs while
    the consumer waits for a stopped producer, also when the kernel gives the
    signal to another of the process's threads (here: the one the watchdog
    runs in, the waiting thread blocking it), and closing the loader then
    stops that producer at once."""
    def on_alarm(sig, frame):
        raise Alarm

    old = signal.signal(signal.SIGALRM, on_alarm)
    loader = pertload.Loader(medium.db, batch_size=8, slots=2)
    it, batch, proc, ring = start(loader)
    os.kill(proc.pid, signal.SIGSTOP)
    # Should the signal not get through, continuing the producer ends the wait:
    # the watchdog's firing (an event, not a time) fails the test.
    fired = threading.Event()

    def resume():
        fired.set()
        os.kill(proc.pid, signal.SIGCONT)

    watchdog = threading.Timer(60.0, resume)
    watchdog.start()
    blocked = set()
    try:
        if to == "another thread":  # after the watchdog's start: it takes SIGALRM
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Alarm):
            for batch in it:
                pass
        assert not fired.is_set(), "the handler ran only once the producer went on"
        assert batch.index < 10  # it waited for the stopped producer
        t0 = time.monotonic()
        loader.close()
        assert time.monotonic() - t0 < DETECT_S
        assert not fired.is_set(), "close waited for the stopped producer to go on"
        assert gone(proc, ring)
    finally:
        watchdog.cancel()
        signal.setitimer(signal.ITIMER_REAL, 0)
        if to == "another thread":
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGALRM, old)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


CONSUMER = """
import os, sys, pertload
loader = pertload.Loader(sys.argv[1], batch_size=8, slots=2)
it = iter(loader)
next(it)
print(loader._proc.pid, loader.stats()["name"], flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), 9)
"""


def dead(pid):
    """True when `pid` is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_consumer_death_or_exit_stops_the_producer(small, how):
    """A consumer killed outright, or exiting with a loader still iterating,
    leaves no producer and no ring behind."""
    child = subprocess.run([sys.executable, "-c", CONSUMER, str(small.db), how],
                           capture_output=True, text=True, timeout=60)
    pid, name = child.stdout.split()
    pid, ring = int(pid), f"pertload-{name}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (dead(pid) and ring not in rings()):
        time.sleep(0.05)
    assert dead(pid), child.stderr
    assert ring not in rings()


def test_to_torch_cpu_masks_equal_the_oracle(medium):
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=4)
    checked = 0
    for batch in loader:
        if batch.index not in (0, 7, len(loader) - 1):
            continue
        t = batch.to_torch("cpu")
        want = expected_masks(medium, batch)
        for key, m in want.items():
            got = t[key]["mask"]
            assert got.dtype == torch.bool and got.shape == m.shape
            np.testing.assert_array_equal(got.numpy(), m, err_msg=str(key))
        np.testing.assert_array_equal(t["gene"]["pert_mask"].numpy(), ~want["gene"])
        for name, (pos, ptr) in batch.removed.items():
            e = t[("gene", name, "gene")]
            assert e["removed"].dtype == torch.int64 and e["ptr"].dtype == torch.int64
            np.testing.assert_array_equal(e["removed"].numpy(), pos)
            np.testing.assert_array_equal(e["ptr"].numpy(), ptr)
        np.testing.assert_array_equal(t["gene"]["perturbation_indices"].numpy(),
                                      batch.perturbation_indices)
        np.testing.assert_array_equal(t["labels"].numpy(), batch.labels)
        np.testing.assert_array_equal(t["sample_id"].numpy().view(np.uint64), batch.sample_id)
        np.testing.assert_array_equal(t["payload"].numpy(), batch.payload)
        # The tensors own their memory: they outlive the slot.
        assert t["labels"].data_ptr() != batch.labels.ctypes.data
        checked += 1
    assert checked == 3


@pytest.mark.parametrize("dense", ["bits", "bool"])
def test_dense_slots_agree_with_sparse_lists(small, dense):
    g = pertload.Loader(small.db).graph
    sizes = {"gene": g.n_genes, ("gene", "gpr", "reaction"): g.n_gpr, "reaction": g.n_reactions,
             ("reaction", "rmr", "metabolite"): g.n_rmr}
    sizes.update({("gene", t, "gene"): g.n_edges[t] for t in g.type_names})
    loader = pertload.Loader(small.db, batch_size=64, shuffle=True, seed=2, dense=dense)
    for batch in loader:
        assert batch.dense_format == dense
        assert batch.dense.keys() == sizes.keys()
        want = expected_masks(small, batch)
        t = batch.to_torch("cpu")
        for key, n in sizes.items():
            stored = batch.dense[key]
            if dense == "bits":
                assert stored.dtype == np.uint64 and stored.shape == (len(batch), (n + 63) // 64)
                stored = pertload.unpack_bits(stored, n)
            else:
                assert stored.dtype == np.bool_ and stored.shape == (len(batch), n)
            np.testing.assert_array_equal(stored, want[key], err_msg=str(key))
            np.testing.assert_array_equal(t[key]["mask"].numpy(), want[key], err_msg=str(key))


def test_payload_rows_are_the_sampled_rows(medium):
    for batch in pertload.Loader(medium.db, batch_size=64, shuffle=True, seed=8):
        assert batch.payload.dtype == np.float32 and batch.payload.shape == (len(batch), 8)
        np.testing.assert_array_equal(batch.payload, medium.payload[batch.row])


@pytest.mark.parametrize("shuffle", [True, False])
def test_page_sized_payload_rows_are_read_directly(tmp_path, shuffle):
    # 1024 float32 = 4096-byte rows: the producer reads them with O_DIRECT into
    # the page-aligned payload array of each slot (where the file system allows);
    # in order, runs of consecutive rows are read together.
    inputs = Inputs(tmp_path, 500, 1024)
    seen = 0
    for batch in pertload.Loader(inputs.db, batch_size=64, shuffle=shuffle, seed=3):
        assert batch.payload.shape == (len(batch), 1024)
        assert batch.payload.ctypes.data % 4096 == 0
        np.testing.assert_array_equal(batch.payload, inputs.payload[batch.row])
        seen += len(batch)
    assert seen == inputs.n


def test_numpy_only_use_needs_no_torch(small):
    code = """
import sys
sys.modules["torch"] = None  # import torch now fails
import pertload
loader = pertload.Loader(sys.argv[1], batch_size=100, dense="bits")
print(sum(len(b) for b in loader), loader.graph.n_genes)
"""
    out = subprocess.run([sys.executable, "-c", code, str(small.db)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["300", "300"]


def test_views_are_zero_copy(small):
    for batch in pertload.Loader(small.db, batch_size=64):
        lo, hi = batch._slot_addr, batch._slot_addr + batch._slot_bytes
        for name, a in batch.arrays.items():
            assert not a.flags.owndata, name
            assert lo <= a.ctypes.data and a.ctypes.data + a.nbytes <= hi, name
        break


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_to_torch_cuda_equals_cpu(medium):
    for dense in (None, "bits"):
        loader = pertload.Loader(medium.db, batch_size=64, shuffle=True, dense=dense)
        for batch in loader:
            cpu = batch.to_torch("cpu")
            dev = batch.to_torch("cuda")
            for key, v in cpu.items():  # exact, NaN labels equal to NaN
                if isinstance(v, dict):
                    for k, x in v.items():
                        torch.testing.assert_close(dev[key][k].cpu(), x, rtol=0, atol=0,
                                                   equal_nan=True, msg=str((key, k)))
                else:
                    torch.testing.assert_close(dev[key].cpu(), v, rtol=0, atol=0,
                                               equal_nan=True, msg=str(key))
