"""Kept data under resource limits (DESIGN sections 15 and 20): a copy that
fails never hands its slot back with a view on it (the epoch ends with the
error, kept arrays unchanged), kept copies do not take a memory mapping
each (past a limit, batches are copied at delivery and a warning says so
once), and a slot mapping that fails leaves nothing behind."""

import gc
import logging
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
