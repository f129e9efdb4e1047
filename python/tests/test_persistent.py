"""Loader(persistent=True): one `pertload serve` (and its ring) runs every
epoch of a Loader, and of a persistent DataLoader worker, with each epoch's
batches exactly the plan's (the oracle of loader/plan.h and a fresh Loader
per epoch); changed options, a serve found dead and close() behave as
documented (docs/kept-data-and-workers.md)."""

import gc
import os
import signal
import time

import numpy as np
import pytest
import torch.utils.data as tud
from torch.utils.data import DataLoader

import pertload
from conftest import DETECT_S, plan_batches, reaped, rings

KW = dict(batch_size=50, shuffle=True, seed=11)


def epoch_of(loader, epoch):
    """(rows of each batch, (index, epoch) of each, serve pid) of one epoch."""
    loader.set_epoch(epoch)
    rows, heads, pids = [], [], set()
    for b in loader:
        rows.append(b.row.tolist())
        heads.append((b.index, b.epoch))
        pids.add(loader._proc.pid)
    assert len(pids) == 1
    return rows, heads, pids.pop()


def fresh(db, epoch, **kw):
    lo = pertload.Loader(db, **{**KW, **kw})
    lo.set_epoch(epoch)
    return [b.row.tolist() for b in lo]


def mine():
    return [r for r in rings() if r.startswith(f"pertload-py{os.getpid()}-")]


@pytest.mark.parametrize("epochs", [2, 3])
def test_epochs_go_through_one_serve(medium, epochs):
    # Two slots: the ring's batch numbers wrap within and across epochs.
    loader = pertload.Loader(medium.db, persistent=True, slots=2, **KW)
    pids = []
    for e in range(epochs):
        rows, heads, pid = epoch_of(loader, e)
        want = plan_batches(medium.n, KW["seed"], e, True, 0, 1, 50, False)
        assert rows == want, f"epoch {e}"
        assert rows == fresh(medium.db, e)
        assert heads == [(i, e) for i in range(len(want))]
        pids.append(pid)
    assert pids == [pids[0]] * epochs  # the same process served every epoch
    proc = loader._kept[1].proc
    assert proc.poll() is None and len(mine()) == 1  # waiting for the next epoch
    loader.close()
    assert proc.poll() is not None and reaped(proc.pid) and not mine()


def test_same_epoch_again_and_resume_reuse_the_serve(small):
    loader = pertload.Loader(small.db, persistent=True, **KW)
    first, _, pid = epoch_of(loader, 2)
    again, _, pid2 = epoch_of(loader, 2)
    assert again == first and pid2 == pid
    # Resuming inside an epoch (same options) asks the same serve for the rest.
    sd = loader.state_dict()
    sd.update(epoch=5, batches_consumed=3)
    loader.load_state_dict(sd)
    rest = [b.row.tolist() for b in loader]
    assert rest == plan_batches(small.n, KW["seed"], 5, True, 0, 1, 50, False)[3:]
    assert loader._kept[1].proc.pid == pid
    loader.close()


def test_changed_options_start_a_new_serve(small):
    loader = pertload.Loader(small.db, persistent=True, **KW)
    _, _, pid = epoch_of(loader, 0)
    old = loader._kept[1].proc
    sd = loader.state_dict()
    sd.update(seed=12, batches_consumed=0)
    loader.load_state_dict(sd)
    rows, _, pid2 = epoch_of(loader, 1)
    assert pid2 != pid and reaped(old.pid)
    assert rows == plan_batches(small.n, 12, 1, True, 0, 1, 50, False)
    loader.threads = 1  # any option serve is run with
    _, _, pid3 = epoch_of(loader, 2)
    assert pid3 != pid2
    loader.close()
    assert not mine()


def test_garbage_collection_ends_a_kept_serve(small):
    def one_epoch():
        loader = pertload.Loader(small.db, persistent=True, **KW)
        epoch_of(loader, 0)
        return loader._kept[1].proc

    proc = one_epoch()
    gc.collect()
    proc.wait(DETECT_S)
    assert reaped(proc.pid) and not mine()


def test_serve_killed_between_epochs_is_replaced(small):
    """A kept serve found dead when the next epoch starts is replaced by a
    new one (its ring removed); the epoch is whole."""
    loader = pertload.Loader(small.db, persistent=True, **KW)
    _, _, pid = epoch_of(loader, 0)
    proc = loader._kept[1].proc
    os.kill(pid, signal.SIGKILL)
    proc.wait()
    rows, _, pid2 = epoch_of(loader, 1)
    assert pid2 != pid
    assert rows == plan_batches(small.n, KW["seed"], 1, True, 0, 1, 50, False)
    loader.close()
    assert not mine()


@pytest.mark.parametrize("request_line", [
    b"epoch x", b"epoch 1", b"epoch 1 2 3", b"epoch -1 0", b"epoch 1  2", b"epoch  1 2",
    b"epoch 1 2x", b"epoch +1 2", b"EPOCH 1 2", b"epoch 18446744073709551616 0",
    b"epoch 1 0x10", b"epoch 1 " + b"0" * 120])
def test_serve_dying_while_asked_is_an_error(small, monkeypatch, request_line):
    """A serve that dies after the request for the next epoch (here: refuses
    a request it cannot parse, each a whole "epoch E START" of decimal
    digits, and exits) is a LoaderError with its message, not a wait."""
    loader = pertload.Loader(small.db, persistent=True, **KW)
    epoch_of(loader, 0)
    p = loader._kept[1]
    real = p.next_epoch

    def garbled(epoch, start, timeout):
        p.proc.stdin.write(request_line + b"\n")
        p.proc.stdin.flush()
        return real(epoch, start, timeout)

    monkeypatch.setattr(p, "next_epoch", garbled)
    loader.set_epoch(1)
    with pytest.raises(pertload.LoaderError, match="is not 'epoch E START'"):
        iter(loader)
    assert reaped(p.proc.pid) and not mine()
    assert fresh(small.db, 1) == [b.row.tolist() for b in loader]  # a new serve
    loader.close()


def test_last_batch_of_an_epoch_kept_across_the_next(small):
    loader = pertload.Loader(small.db, persistent=True, slots=2, **KW)
    for b in loader:
        last = b
    held = last.labels[:, 0]
    want = held.copy()
    rows = last.row.tolist()
    kept = loader.kept_batches
    loader.set_epoch(1)
    assert sum(1 for _ in loader) == 6
    # The slot was refilled by epoch 1: the held view is a private copy.
    np.testing.assert_array_equal(held, want)
    assert loader.kept_batches == kept + 1
    with pytest.raises(pertload.LoaderError, match="released"):
        last.row  # noqa: B018
    assert rows == plan_batches(small.n, KW["seed"], 0, True, 0, 1, 50, False)[-1]
    loader.close()


def _serve_pid(out):
    """Dataset transform (in the worker): the worker's serve pid with the rows."""
    ds = tud.get_worker_info().dataset
    return ds._kept_loader._proc.pid, out.row.tolist()


def test_persistent_workers_keep_their_serve(medium):
    ds = pertload.Dataset(medium.db, transform=_serve_pid, **KW)
    dl = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    pids = None
    for epoch in range(3):
        got = list(dl)
        want = [b for w in range(2)
                for b in plan_batches(medium.n, KW["seed"], epoch, True, w, 2, 50, False)]
        assert sorted(rows for _, rows in got) == sorted(want), f"epoch {epoch}"
        now = {pid for pid, _ in got}
        assert len(now) == 2
        assert pids is None or now == pids  # each worker's one serve, every epoch
        pids = now
    del dl


def _worker_and_rows(out):
    """Dataset transform (in the worker): the worker's pid with the rows."""
    return os.getpid(), out.row.tolist()


def test_workers_without_persistence_end_their_serve(small):
    """Without persistent_workers each worker keeps its serve for the epoch
    only: the worker closes its loader as it exits, so neither serve nor
    ring outlives it."""
    ds = pertload.Dataset(small.db, transform=_worker_and_rows, **KW)
    for _ in range(2):
        got = list(DataLoader(ds, batch_size=None, num_workers=2))
        want = [b for w in range(2)
                for b in plan_batches(small.n, KW["seed"], 0, True, w, 2, 50, False)]
        assert sorted(rows for _, rows in got) == sorted(want)
        workers = {w for w, _ in got}
        assert len(workers) == 2
        assert not [r for r in rings() for w in workers if r.startswith(f"pertload-py{w}-")]


@pytest.mark.parametrize("kw", [{"budget": "removed=400"}, {"rows": range(30, 270)},
                                {"order": "block", "block_rows": 4},
                                {"max_ring_bytes": 1 << 19, "slots": 2}],
                         ids=["budget", "rows", "block", "split-batches"])
def test_every_plan_goes_through_one_serve(small, kw):
    """Budgeted plans (their batch count changes with the epoch), a subset,
    the block order and batches split over slots: each epoch of the kept
    serve equals a fresh Loader's."""
    loader = pertload.Loader(small.db, persistent=True, **KW, **kw)
    pids = set()
    for e in range(3):
        rows, heads, pid = epoch_of(loader, e)
        assert rows == fresh(small.db, e, **kw), f"epoch {e}"
        assert heads == [(i, e) for i in range(len(rows))]
        pids.add(pid)
    assert len(pids) == 1
    loader.close()


# serve in a shell of its own: its parent is not the consumer (no parent-death
# signal), and its pid is written where the test reads it.
SERVE_UNDER_SHELL = """#!/bin/bash
"$PERTLOAD_REAL_BIN" "$@" <&0 &
echo $! > "$SERVE_PID_FILE"
wait $!
"""


def state(pid):
    """The state letter of process `pid` in /proc."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def waits_in(pid):
    """"poll" while process `pid` sleeps in poll(), else its wait channel."""
    with open(f"/proc/{pid}/wchan") as f:
        w = f.read()
    return "poll" if "poll" in w else w


def _consume_then_die(db, ready, theirs):
    """A consumer that takes one epoch through a kept serve, leaves a child
    holding serve's stdin open and exits without closing anything."""
    theirs.close()  # the test's end, which the fork copied
    loader = pertload.Loader(db, persistent=True, **KW)
    n = sum(len(b) for b in loader)
    child = os.fork()
    if child == 0:  # holds every descriptor of its parent, serve's stdin too
        signal.pause()
        os._exit(0)
    ready.send((n, child))  # sent before the exit (a Queue's thread would not be)
    ready.recv()  # the test saw serve wait for a request
    os._exit(0)


def test_serve_between_epochs_ends_when_its_consumer_is_a_zombie(small, tmp_path, monkeypatch):
    """Between epochs serve waits for a request on stdin. A consumer that
    died with its stdin held open elsewhere, and not yet waited for (a
    zombie, whose pid kill() still finds), is found dead: serve ends."""
    import multiprocessing as mp

    wrapper = tmp_path / "serve-under-shell"
    wrapper.write_text(SERVE_UNDER_SHELL)
    wrapper.chmod(0o755)
    pid_file = tmp_path / "serve.pid"
    monkeypatch.setenv("PERTLOAD_REAL_BIN", pertload.program_path())
    monkeypatch.setenv("PERTLOAD_BIN", str(wrapper))
    monkeypatch.setenv("SERVE_PID_FILE", str(pid_file))
    ctx = mp.get_context("fork")
    got, ready = ctx.Pipe()
    consumer = ctx.Process(target=_consume_then_die, args=(small.db, ready, got))
    consumer.start()
    ready.close()  # the consumer's end: closing ours ends its wait, whatever happens
    assert got.poll(60), "the consumer never finished its epoch"
    n, holder = got.recv()
    try:
        assert n == small.n
        serve = int(pid_file.read_text())
        deadline = time.monotonic() + DETECT_S
        # serve waits for the next request in poll() (not for the ring's
        # consumer, whose death the ring finds by itself)
        while waits_in(serve) != "poll" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waits_in(serve) == "poll", waits_in(serve)
        got.send("die")
        while state(consumer.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state(consumer.pid) == "Z"  # until joined below
        assert not reaped(holder)  # serve's stdin stays open
        while not reaped(serve) and time.monotonic() < deadline + DETECT_S:
            time.sleep(0.05)
        assert reaped(serve), "serve still waits for a request of a dead consumer"
    finally:
        os.kill(holder, signal.SIGKILL)
        got.close()
        consumer.join()
    assert not [r for r in rings() if r.startswith(f"pertload-py{consumer.pid}-")]


def test_loader_keeps_its_serve_by_default(small):
    """Without options the Loader runs every epoch through one serve."""
    loader = pertload.Loader(small.db, **KW)
    assert loader.persistent
    pids = {epoch_of(loader, e)[2] for e in range(3)}
    assert len(pids) == 1
    loader.close()
    assert not mine()


def test_kept_serve_killed_in_a_later_epoch_raises_within_the_bound(medium):
    """A kept serve that dies during a later epoch is found as a fresh
    serve's death is (test_loader.py: within DETECT_S), its ring removed;
    the next epoch starts a new serve."""
    loader = pertload.Loader(medium.db, slots=2, **{**KW, "batch_size": 8})
    _, _, pid = epoch_of(loader, 0)
    loader.set_epoch(1)
    it = iter(loader)
    next(it)
    proc = loader._proc
    assert proc.pid == pid  # the kept serve runs epoch 1
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(pertload.LoaderError, match="died|killed") as e:
        for _ in it:
            pass
    assert time.monotonic() - t0 < DETECT_S, e.value
    assert reaped(pid) and loader._proc is None and loader._kept is None and not mine()
    rows, _, pid2 = epoch_of(loader, 2)
    assert pid2 != pid and rows == fresh(medium.db, 2, batch_size=8)
    loader.close()


def _main_serve(out):
    """Dataset transform without workers: the main process's serve pid."""
    return os.getpid(), out.row.tolist()


def test_dataset_without_workers_keeps_one_serve(medium):
    """A DataLoader without workers (DataModule's default) iterates the
    Dataset itself: its Loader, and serve, are kept across epochs; each
    epoch is the plan's; close() ends the serve."""
    ds = pertload.Dataset(medium.db, **KW)
    dl = DataLoader(ds, batch_size=None)
    serves = set()
    for epoch in range(3):
        ds.set_epoch(epoch)
        rows = [b.row.tolist() for b in dl]
        assert rows == plan_batches(medium.n, KW["seed"], epoch, True, 0, 1, 50, False)
        serves.add(ds._kept_loader._kept[1].proc.pid)
    assert len(serves) == 1 and len(mine()) == 1
    proc = ds._kept_loader._kept[1].proc
    ds.close()
    assert reaped(proc.pid) and not mine()


def test_datamodule_without_workers_keeps_one_serve(split_db):
    dm = pertload.DataModule(split_db.db, batch_size=64, seed=3)
    train = dm.train_dataloader()
    ds = dm.datasets["train"]
    epochs, serves = [], set()
    for _ in range(3):
        epochs.append([b.row.tolist() for b in train])
        serves.add(ds._kept_loader._kept[1].proc.pid)
    assert len(serves) == 1
    assert epochs[0] != epochs[1]  # the next epoch each iteration (shuffled)
    assert sorted(sum(epochs[0], [])) == sorted(sum(epochs[2], []))
    val = [b.row.tolist() for b in dm.val_dataloader()]
    assert val == [b.row.tolist() for b in dm.val_dataloader()]  # not shuffled
    assert len(mine()) == 2  # train's and val's serves, each kept
    dm.teardown("fit")
    assert not mine()


def test_dataset_iterated_twice_at_once(small):
    """Two iterations of one Dataset at once in one process: the second gets
    a Loader of its own (closed at its end); both epochs are whole."""
    ds = pertload.Dataset(small.db, **KW)
    a, b = iter(ds), iter(ds)
    first = [next(a).row.tolist()]
    second = [x.row.tolist() for x in b]
    first += [x.row.tolist() for x in a]
    want = plan_batches(small.n, KW["seed"], 0, True, 0, 1, 50, False)
    assert first == second == want
    ds.close()
    assert not mine()


def test_dataset_epoch_left_early_starts_a_new_serve(small):
    ds = pertload.Dataset(small.db, **KW)
    for x in ds:
        break
    del x
    assert not mine()  # the epoch left early stopped its serve
    ds.set_epoch(1)
    assert [x.row.tolist() for x in ds] == plan_batches(small.n, KW["seed"], 1, True, 0, 1, 50,
                                                        False)
    ds.close()


def test_a_done_iterator_keeps_no_loader_alive(small):
    """An epoch's iterator still referenced after its end (a loop's `it`)
    holds neither the Loader nor its kept serve: the Loader's end stops
    serve at once (no collection), and a new Loader may take the ring's
    name (serve would refuse a name its live ring holds)."""
    name = f"py{os.getpid()}-done"
    loader = pertload.Loader(small.db, ring=name, **KW)
    it = iter(loader)
    assert sum(len(b) for b in it) == small.n
    proc = loader._kept[1].proc
    gc.disable()
    try:
        loader = pertload.Loader(small.db, ring=name, **KW)  # the first is dropped
        proc.wait(DETECT_S)
        it = iter(loader)
        assert sum(len(b) for b in it) == small.n
    finally:
        gc.enable()
    assert reaped(proc.pid)
    loader.close()
    assert not os.path.exists(f"/dev/shm/pertload-{name}")


def test_kept_serve_stopped_between_epochs_fails_within_the_timeout(small):
    """A kept serve that does not answer the request for the next epoch (here
    stopped, SIGSTOP) is bounded as a new serve's start is: LoaderError after
    `timeout`, the serve ended and its ring removed."""
    loader = pertload.Loader(small.db, timeout=2.0, **KW)
    _, _, pid = epoch_of(loader, 0)
    proc = loader._kept[1].proc
    os.kill(pid, signal.SIGSTOP)
    loader.set_epoch(1)
    t0 = time.monotonic()
    with pytest.raises(pertload.LoaderError, match="within 2 s"):
        iter(loader)
    assert time.monotonic() - t0 < 2.0 + DETECT_S
    proc.wait(DETECT_S)
    assert reaped(pid) and not mine()
    assert [b.row.tolist() for b in loader] == fresh(small.db, 1)  # a new serve
    loader.close()


@pytest.mark.parametrize("slots", [2, 1])
def test_unpadded_epochs_with_padding_left_keep_their_serve(small, slots):
    """pad=False where serve's plan holds a batch of padding after the rank's
    samples (9 rows, 2 ranks, batches of 4: rank 1's 4 samples in one batch,
    its padded share two): the padding is taken unseen and serve kept, the
    rank's last batch valid until the next epoch starts. With one slot the
    padding would need the last batch's slot: serve is stopped instead."""
    loader = pertload.Loader(small.db, batch_size=4, rows=range(9), rank=1, world_size=2,
                             pad=False, slots=slots, shuffle=True, seed=3)
    pids = []
    for epoch in range(3):
        loader.set_epoch(epoch)
        got = list(loader)
        assert len(got) == 1 and len(got[0]) == 4
        want = plan_batches(9, 3, epoch, True, 1, 2, 4, False)[0]
        assert got[0].row.tolist() == want  # still valid after the loop
        kept = loader._kept
        pids.append(kept[1].proc.pid if kept else None)
    if slots == 2:
        assert pids[0] is not None and pids == [pids[0]] * 3
        assert loader.stats()["samples_consumed"] >= 4
    else:
        assert pids == [None] * 3
    loader.close()
    assert not mine()
