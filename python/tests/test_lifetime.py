"""Batch lifetime: a batch kept past its step never shows another batch's
data; reading it after its slot was handed back raises LoaderError, and
copy() / to_torch() keep what must outlive the step."""

import numpy as np
import pytest
import torch

import pertload


def epoch_rows(db, **kw):
    """Every batch's rows, read while each batch is current."""
    return [b.row.tolist() for b in pertload.Loader(db, **kw)]


def assert_released(b):
    for name in ("sample_id", "row", "labels", "payload", "perturbation_indices",
                 "perturbation_ptr", "removed", "gpr", "reaction", "rmr", "dense", "arrays"):
        with pytest.raises(pertload.LoaderError, match=f"batch {b.index} of epoch "
                           f"{b.epoch} was released"):
            getattr(b, name)
    with pytest.raises(pertload.LoaderError, match="released"):
        b.to_torch("cpu")
    with pytest.raises(pertload.LoaderError, match="released"):
        b.copy()
    assert b.released and "released" in repr(b)


def test_batches_kept_in_a_list_raise_instead_of_changing(small):
    want = epoch_rows(small.db, batch_size=32, slots=2)
    bs = list(pertload.Loader(small.db, batch_size=32, slots=2))
    assert [b.index for b in bs] == list(range(len(want)))
    for b in bs[:-1]:
        assert_released(b)
    # The last batch's slot is never refilled: it stays valid after the epoch.
    assert not bs[-1].released and bs[-1].row.tolist() == want[-1]
    # What was kept during the step stays.
    kept = [(b.copy(), b.to_torch("cpu")) for b in pertload.Loader(small.db, batch_size=32,
                                                                   slots=2)]
    assert [c.row.tolist() for c, _ in kept] == want
    assert [t["row"].tolist() for _, t in kept] == want


@pytest.mark.parametrize("persistent", [False, True])
def test_batch_kept_across_steps_and_epochs(small, persistent):
    loader = pertload.Loader(small.db, batch_size=64, shuffle=True, slots=2,
                             persistent=persistent)
    kept, copies, tensors = [], [], []
    for epoch in range(2):
        loader.set_epoch(epoch)
        for b in loader:
            if kept and kept[-1].epoch == epoch:
                assert_released(kept[-1])  # the previous step's batch
            elif kept and persistent:  # the kept serve refills its slot: released
                assert_released(kept[-1])
            elif kept:  # the previous epoch's last batch: its slot was never refilled
                assert not kept[-1].released and kept[-1].row.tolist() == copies[-1].row.tolist()
            kept.append(b)
            copies.append(b.copy())
            tensors.append(b.to_torch("cpu"))
            assert b.sample_id is b.arrays["sample_id"]
    # copies and tensors own their memory and hold what the batches held.
    for epoch in range(2):
        loader.set_epoch(epoch)
        for k, b in enumerate(loader, start=epoch * len(loader)):
            c = copies[k]
            assert not c.released and c.index == b.index and c.epoch == b.epoch
            for name, a in b.arrays.items():
                np.testing.assert_array_equal(c.arrays[name], a, err_msg=name)
            assert torch.equal(tensors[k]["sample_id"],
                               torch.from_numpy(b.sample_id.view(np.int64)))
    loader.close()
    for c in copies:
        assert not c.released
        c.to_torch("cpu")


def test_batch_after_close_and_break(small):
    loader = pertload.Loader(small.db, batch_size=16, slots=2)
    it = iter(loader)
    first = next(it)
    rows = first.row.tolist()
    second = next(it)
    assert_released(first)
    kept = second.copy()
    assert not second.released
    loader.close()
    # Closing stops the producer: the current batch's slot is never refilled.
    assert not second.released
    assert second.row.tolist() == kept.row.tolist() == list(range(16, 32))
    assert rows == list(range(16))
    for b in loader:
        break
    for b2 in loader:  # a new epoch after a break
        assert not b.released and b.row.tolist() == b2.row.tolist() == list(range(16))
        break


def test_copy_is_independent_of_the_ring(small):
    loader = pertload.Loader(small.db, batch_size=50, slots=2)
    it = iter(loader)
    b = next(it)
    c = b.copy()
    lo, hi = b._slot_addr, b._slot_addr + b._slot_bytes
    for name, a in c.arrays.items():
        assert not lo <= a.ctypes.data < hi, name
        np.testing.assert_array_equal(a, b.arrays[name], err_msg=name)
    next(it)
    assert_released(b)
    assert c.row.tolist() == list(range(50))
    loader.close()


def test_stats_after_the_epoch_are_its_final_counters(small):
    loader = pertload.Loader(small.db, batch_size=32)
    assert loader.stats() is None
    n = 0
    for b in loader:
        n += len(b)
    st = loader.stats()
    assert st is not None and st["samples_produced"] == n == small.n
    assert st["n_batches"] == st["batches_produced"] == len(loader)
