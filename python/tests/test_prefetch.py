"""Loader(device=..., prefetch=N): batches laid out ahead of the consumer on
a thread and side stream of their own (pertload.prefetch).

On the CPU the thread alone is real; through the device double of
test_cuda_paths the CUDA branches run on the CPU with stand-in streams and
events that log where the copies, layouts and waits are queued. Every
prefetched batch is compared with the one the plain Loader gives."""

import itertools
import os
import signal
import threading

import pytest
import torch

import pertload
from pertload import prefetch
from test_cuda_paths import Double, assert_same


def plain(db, layout, n=None, **opts):
    loader = pertload.Loader(db, batch_size=40, shuffle=True, seed=3, **opts)
    out = [b.to_torch("cpu", layout=layout) for b in itertools.islice(loader, n)]
    loader.close()
    return out


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "pertload-prefetch"]


@pytest.mark.parametrize("layout", ["masks", "pyg", "lazy"])
@pytest.mark.parametrize("depth", [1, 3])
def test_prefetched_batches_equal_the_plain_loader(medium, layout, depth):
    want = plain(medium.db, layout)
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=3, device="cpu",
                             layout=layout, prefetch=depth)
    got = list(loader)
    assert len(got) == len(want) == len(loader) == 50
    for g, w in zip(got, want):
        assert_same(g, w)
    assert not prefetch_threads()
    loader.close()


def test_the_device_path_waits_by_event_and_records_every_tensor(medium, monkeypatch):
    """Through the device double (kernels' host twin): the layout runs
    inside the prefetch stream's context, the consumer's stream waits for its
    event, and every tensor of the batch is recorded for the consumer's
    stream; the batches equal the plain Loader's."""
    want = plain(medium.db, "pyg", 4)
    d = Double()
    d.install(monkeypatch, kernels_on=True)
    waits = []
    d.current.wait_event = lambda ev: waits.append(ev)
    records = []
    monkeypatch.setattr(torch.Tensor, "record_stream",
                        lambda t, s: records.append((t.data_ptr(), s.name)), raising=False)
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=3, device="cpu",
                             layout="pyg", prefetch=2)
    it = iter(loader)
    for i in range(4):
        got = next(it)
        assert_same(got, want[i])
        assert len(waits) == i + 1
        # recorded for the consumer's stream by the thread, before delivery
        ptrs = {t.data_ptr() for t in prefetch.tensors(got) if t.numel()}
        assert ptrs and ptrs <= {p for p, s in records if s == "current"}
    assert ("enter", "side") in d.log and ("record", "side") in d.log
    loader.close()
    assert not prefetch_threads()


def test_state_dict_counts_delivered_batches_not_prefetched_ones(medium):
    loader = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=3, device="cpu",
                             layout="lists", prefetch=4)
    it = iter(loader)
    for _ in range(3):
        next(it)
    # the thread is up to 4 batches ahead: the state names the 3 delivered
    sd = loader.state_dict()
    loader.close()
    want = plain(medium.db, "lists")[3:]
    again = pertload.Loader(medium.db, batch_size=40, shuffle=True, seed=3, device="cpu",
                            layout="lists")
    again.load_state_dict(sd)
    rest = list(again)
    assert len(rest) == len(want) == 47
    for g, w in zip(rest, want):
        assert_same(g, w)
    again.close()


def test_leaving_early_stops_the_thread_and_the_serve(medium):
    loader = pertload.Loader(medium.db, batch_size=40, device="cpu", layout="pyg", prefetch=2)
    it = iter(loader)
    next(it)
    proc = loader._proc
    assert proc is not None and proc.poll() is None
    loader.close()
    assert not prefetch_threads()
    assert proc.wait(timeout=10) is not None
    it2 = iter(loader)  # the next epoch starts afresh
    assert next(it2)["labels"].shape[0] == 40
    del it, it2
    loader.close()


def test_a_dead_serve_is_raised_to_the_consumer(medium):
    loader = pertload.Loader(medium.db, batch_size=8, device="cpu", layout="masks", prefetch=2,
                             timeout=5.0)
    it = iter(loader)
    next(it)
    os.kill(loader._proc.pid, signal.SIGKILL)
    with pytest.raises(pertload.LoaderError):
        for _ in it:
            pass
    loader.close()
    assert not prefetch_threads()


def test_options_are_checked():
    with pytest.raises(ValueError, match="device="):
        pertload.Loader("/nonexistent", layout="pyg")
    with pytest.raises(ValueError, match="prefetch"):
        pertload.Loader("/nonexistent", device="cpu", prefetch=0)


@pytest.mark.parametrize("workers", [0, 2])
def test_datamodule_device_loaders_equal_the_lists_expanded(split_db, workers):
    """DataModule(device=...): the loaders yield the layout built from the
    lists the workers (or the main process) serve, as the step would build
    it; len() and the count agree."""
    want_dm = pertload.DataModule(split_db.db, batch_size=50, num_workers=workers)
    want = [b.to_torch("cpu", layout="pyg") for b in want_dm.val_dataloader()]
    dm = pertload.DataModule(split_db.db, batch_size=50, num_workers=workers, device="cpu",
                             layout="pyg", prefetch=2, transform=lambda b: ("t", b))
    dl = dm.val_dataloader()
    got = list(dl)
    assert len(got) == len(want) == len(dl) and len(want) > 1
    for (tag, g), w in zip(got, want):
        assert tag == "t"
        assert_same(g, w)
    assert not prefetch_threads()
