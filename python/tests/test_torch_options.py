"""Options of the torch side never run elsewhere: Batch.to_torch with
non_blocking=False gives the tensors of the default, for every layout; a
DataModule with pin_memory=True gives the batches of one without (pinned
where CUDA is there)."""

import torch

import pertload


def flatten(d, prefix=()):
    """(key path, tensor) pairs of a to_torch mapping, in key order."""
    out = []
    for k in sorted(d, key=repr):
        v = d[k]
        if isinstance(v, dict):
            out += flatten(v, prefix + (k,))
        elif isinstance(v, torch.Tensor):
            out.append((prefix + (k,), v))
    return out


def test_to_torch_blocking_equals_the_default(small):
    loader = pertload.Loader(small.db, batch_size=32, shuffle=True, seed=2)
    checked = 0
    for batch in loader:
        for layout in ("masks", "lists"):
            a = flatten(batch.to_torch("cpu", layout=layout))
            b = flatten(batch.to_torch("cpu", non_blocking=False, layout=layout))
            assert [k for k, _ in a] == [k for k, _ in b] and len(a) > 3, layout
            for (k, x), (_, y) in zip(a, b):
                torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True,
                                           msg=f"{layout} {k}")
            checked += 1
    assert checked == 2 * len(loader)


def test_datamodule_pin_memory_gives_the_same_batches(small):
    splits = {"train": list(range(0, 200)), "val": list(range(200, 300))}
    got = {}
    for pin in (False, True):
        dm = pertload.DataModule(small.db, splits, batch_size=40, num_workers=2, seed=5,
                                 pin_memory=pin, layout="masks")
        rows = []
        for t in dm.val_dataloader():
            assert t["labels"].is_pinned() == (pin and torch.cuda.is_available())
            rows.append(t["row"].tolist())
        got[pin] = rows
    assert got[True] == got[False]
    assert sorted(r for b in got[True] for r in b) == list(range(200, 300))
