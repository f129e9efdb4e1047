"""Kept data under resource limits (DESIGN sections 15 and 20): a copy that
fails never hands its slot back with a view on it (the epoch ends with the
error, kept arrays unchanged), kept copies do not take a memory mapping
each (past a limit, batches are copied at delivery and a warning says so
once), and a slot mapping that fails leaves nothing behind."""

import gc
import logging
import subprocess
import sys

import numpy as np
import pytest
import torch

import pertload
from pertload import _slots


def maps():
    """The mappings of this process (lines of /proc/self/maps)."""
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def test_a_failed_copy_ends_the_epoch_and_kept_rows_never_change(small, monkeypatch):
    """The copy of the third batch's kept rows fails (as with ENOMEM): the
    error comes out of next(), the epoch ends there, and every row kept
    (the failed one's too) keeps its values after the loop goes on."""
    real, calls = _slots._private_pages, []

    def private_pages(size):
        calls.append(size)
        if len(calls) == 3:
            raise pertload.LoaderError(f"allocating {size} bytes for a kept batch: "
                                       "Cannot allocate memory")
        return real(size)

    monkeypatch.setattr(_slots, "_private_pages", private_pages)
    loader = pertload.Loader(small.db, batch_size=8, slots=2, shuffle=True, seed=4)
    it = iter(loader)
    kept, want = [], []
    with pytest.raises(pertload.LoaderError, match="Cannot allocate memory"):
        for b in it:
            kept.append(b.row)
            want.append(b.row.copy())
            del b
    assert len(kept) == 3
    rest = len(list(it))  # the loop goes on
    monkeypatch.setattr(_slots, "_private_pages", real)
    for b in loader:  # another epoch in another ring
        pass
    gc.collect()
    for k, (got, w) in enumerate(zip(kept, want)):
        np.testing.assert_array_equal(got, w, err_msg=f"batch {k}")
    assert rest == 0  # the epoch ended with the error


UNDER_RLIMIT_AS = """
import resource, sys
import numpy as np
import pertload

loader = pertload.Loader(sys.argv[1], batch_size=256, dense="bool", slots=2, shuffle=True,
                         seed=4)
it = iter(loader)
kept, want = [], []
b = next(it)
kept.append(b.row)
want.append(b.row.copy())
assert b._head["used"] > 8 << 20
del b
with open("/proc/self/status") as f:
    vm = next(int(ln.split()[1]) << 10 for ln in f if ln.startswith("VmSize:"))
# Room for the interpreter's own allocations, not for a copy of a slot.
resource.setrlimit(resource.RLIMIT_AS, (vm + (4 << 20), resource.RLIM_INFINITY))
try:
    for b in it:
        kept.append(b.row)
        want.append(b.row.copy())
        del b
    print("no error")
except pertload.LoaderError as e:
    print("error:", e)
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("after the error:", len(list(it)), "batches")
for b in loader:  # another epoch
    pass
print("kept", len(kept), "unchanged", sum(np.array_equal(k, w) for k, w in zip(kept, want)))
"""


def test_a_copy_failing_under_rlimit_as_ends_the_epoch(medium):
    """A real ENOMEM: RLIMIT_AS just above the process's size once the epoch
    runs (14 MB slots, the first batch's rows kept)."""
    r = subprocess.run([sys.executable, "-c", UNDER_RLIMIT_AS, str(medium.db)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.splitlines()
    assert out[0].startswith("error: ") and "Cannot allocate memory" in out[0], out
    assert out[1] == "after the error: 0 batches", out
    assert out[2] == "kept 1 unchanged 1", out


def test_kept_copies_do_not_take_a_mapping_each(small, monkeypatch, caplog):
    """Every batch's labels kept (as torch.from_numpy) over 300 batches with
    the limit of kept copies lowered to 40: the process's mappings grow by
    about the limit, not by a batch each; the rest is copied at delivery,
    said once; every kept value is right."""
    alive = getattr(_slots, "_KEPT", [0])[0]  # kept copies of earlier tests
    monkeypatch.setattr(_slots, "_KEPT_MAX", 40 + alive, raising=False)
    monkeypatch.setattr(_slots, "_SAID", [], raising=False)
    monkeypatch.setattr(_slots, "_COPYING", [False], raising=False)
    caplog.set_level(logging.WARNING, logger="pertload")
    loader = pertload.Loader(small.db, batch_size=1, slots=4, shuffle=True, seed=5)
    before = maps()
    kept, want = [], []
    for b in loader:
        kept.append(torch.from_numpy(b.labels))
        want.append(b.labels.copy())
        del b
    grown = maps() - before
    assert len(kept) == 300
    assert grown < 40 + 30, grown
    assert 40 <= loader.kept_batches < 60
    assert loader.delivery_copies >= 300 - 60
    said = [r.getMessage() for r in caplog.records if "copied at delivery" in r.getMessage()]
    assert len(said) == 1 and "vm.max_map_count" in said[0]
    for k, (got, w) in enumerate(zip(kept, want)):
        np.testing.assert_array_equal(got.numpy(), w, err_msg=f"batch {k}")
    # The kept copies let go: zero-copy delivery again.
    del kept, got
    gc.collect()
    copies = loader.delivery_copies
    for b in loader:
        pass
    assert loader.delivery_copies == copies


def test_a_failed_slot_mapping_leaves_nothing_to_unmap(monkeypatch):
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(_slots, "_mmap", lambda *args: _slots._MAP_FAILED)
    with pytest.raises(pertload.LoaderError, match="mapping a ring slot"):
        _slots._Window(-1, 0, 4096)
    gc.collect()
    assert [u.exc_value for u in unraisable] == []


def test_batches_kept_from_workers_do_not_take_a_mapping_each(medium, monkeypatch, caplog):
    """Through a DataLoader worker: every batch's labels kept, so the
    worker's regions are all held and it sends shared tensors; past the
    lowered limit the main process copies each at receipt and lets its
    mapping go. Every kept value is right."""
    from torch.utils.data import DataLoader

    alive = getattr(_slots, "_KEPT", [0])[0]
    monkeypatch.setattr(_slots, "_KEPT_MAX", 40 + alive, raising=False)
    monkeypatch.setattr(_slots, "_SAID", [], raising=False)
    monkeypatch.setattr(_slots, "_COPYING", [False], raising=False)
    caplog.set_level(logging.WARNING, logger="pertload")
    want = {}
    for b in pertload.Loader(medium.db, batch_size=4):
        for i, r in enumerate(b.row.tolist()):
            want[r] = b.labels[i].copy()
    before = maps()
    kept = []
    for b in DataLoader(pertload.Dataset(medium.db, batch_size=4), batch_size=None,
                        num_workers=1):
        kept.append((b.row, torch.from_numpy(b.labels)))
        del b
    grown = maps() - before
    assert len(kept) == 500
    assert grown < 40 + 60, grown
    assert sum("copied at delivery" in r.getMessage() for r in caplog.records) == 1
    for rows, labels in kept:
        for i, r in enumerate(rows.tolist()):
            np.testing.assert_array_equal(labels[i].numpy(), want[r], err_msg=f"row {r}")
