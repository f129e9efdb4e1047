"""Ring slots sized for typical batches: yeast-scale databases with outliers
(one sample deleting 1,000 genes, one deleting every gene, among 2,000 double
deletions) stream every sample exactly once, in plan order and full batches,
with /dev/shm bounded by max_ring_bytes; dense masks respect the bound too."""

import json
import os
import random

import numpy as np
import pytest

import pertload
from conftest import (KINDS, SHM, assert_lists_equal, expected_masks, plan_batches, run_cli,
                      sample_lists)

N = 2000
BIG_ROW, ALL_ROW = 700, 1100
DEFAULT_LIMIT = 256 << 20


class Outliers:
    """`pertload synth` at yeast scale (6,607 genes, 2.5M edges), N samples,
    row BIG_ROW made to delete 1,000 genes and, with every_gene, row ALL_ROW
    every gene."""

    def __init__(self, root, every_gene):
        src, self.db = root / "inputs", root / "db"
        run_cli("synth", src, "--samples", N, "--seed", 7, "--quiet")
        genes = (src / "genes.txt").read_text().split()
        lines = (src / "samples.tsv").read_text().splitlines()
        col = lines[0].split("\t").index("genes")
        edits = {BIG_ROW: random.Random(1).sample(genes, 1000)}
        if every_gene:
            edits[ALL_ROW] = genes
        for row, deleted in edits.items():
            f = lines[row + 1].split("\t")
            f[col] = ";".join(deleted)
            lines[row + 1] = "\t".join(f)
        (src / "samples.tsv").write_text("\n".join(lines) + "\n")
        run_cli("build", "-o", self.db, *(src / "build-args.txt").read_text().splitlines())
        self.outliers = sorted(edits)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return Outliers(tmp_path_factory.mktemp("big"), False)


@pytest.fixture(scope="module")
def every(tmp_path_factory):
    return Outliers(tmp_path_factory.mktemp("every"), True)


def masks_of(db, row):
    """`pertload masks DB --row ROW --json` as {"gene": ..., "edges/<t>": ...}."""
    j = json.loads(run_cli("masks", db, "--row", row, "--json").stdout)
    want = {"gene": j["perturbation_indices"]}
    want.update({"edges/" + t: v for t, v in j["edges"].items()})
    want.update({k: j[k] for k in KINDS})
    return want


def segment_bytes(loader):
    """Size of the running epoch's segment in /dev/shm (the stats say the
    same), read while the first batch is held: the segment goes once every
    slot was handed back, which a batch put together from parts did."""
    size = os.stat(SHM / f"pertload-{loader.stats()['name']}").st_size
    assert size == loader.stats()["total_bytes"]
    return size


def stream(loader, limit, check_rows=()):
    """Every batch's rows and parts, the segment within `limit` bytes, the
    samples of `check_rows` equal to `pertload masks`."""
    rows, parts = [], []
    for batch in loader:
        if not rows:
            size = segment_bytes(loader)
            assert size <= limit, f"a ring of {size} bytes"
        rows.append(batch.row.tolist())
        parts.append(batch.parts)
        for i, row in enumerate(rows[-1]):
            if row in check_rows:
                assert_lists_equal(sample_lists(batch, i), masks_of(loader.db, row),
                                   f"row {row}")
    return rows, parts


@pytest.mark.parametrize("which", ["big", "every"])
def test_outliers_stream_exactly_once_within_the_default_bound(request, which):
    db = request.getfixturevalue(which)
    loader = pertload.Loader(db.db, batch_size=64, shuffle=True, seed=1)
    check = set(db.outliers) | {0, 5, 1999}
    rows, parts = stream(loader, DEFAULT_LIMIT, check)
    assert rows == plan_batches(N, 1, 0, True, 0, 1, 64, False)
    assert len(rows) == len(loader) == 32
    # Slots are sized for the largest sample (the last outlier): its batch
    # came in parts, and whole all the same; batches of double deletions in
    # one slot each.
    for i, b in enumerate(rows):
        assert len(b) == (64 if i < 31 else N - 31 * 64)
        if db.outliers[-1] in b:
            assert parts[i] > 1
        elif not set(db.outliers) & set(b):
            assert parts[i] == 1, i


def test_max_ring_bytes_bounds_the_segment_and_names_a_sample_too_large(every):
    limit = 64 << 20
    loader = pertload.Loader(every.db, batch_size=64, shuffle=True, seed=2, max_ring_bytes=limit)
    rows, parts = stream(loader, limit)
    assert rows == plan_batches(N, 2, 0, True, 0, 1, 64, False)
    assert max(parts) > 1
    # The every-gene sample needs about 20 MiB of slot on its own.
    loader = pertload.Loader(every.db, batch_size=64, max_ring_bytes=16 << 20)
    with pytest.raises(pertload.LoaderError, match=f"sample row {ALL_ROW} .* needs a slot of "
                                                   ".*--max-ring-bytes"):
        list(loader)


def test_resume_before_within_and_after_a_split_batch(every):
    kw = dict(batch_size=64, shuffle=True, seed=3)
    full = plan_batches(N, 3, 1, True, 0, 1, 64, False)
    at = next(i for i, b in enumerate(full) if ALL_ROW in b)
    for consumed in (at, at + 1):
        loader = pertload.Loader(every.db, **kw)
        loader.set_epoch(1)
        it = iter(loader)
        head = [next(it).row.tolist() for _ in range(consumed)]
        sd = loader.state_dict()
        assert sd["batches_consumed"] == consumed
        loader.close()
        resumed = pertload.Loader(every.db, **kw)
        resumed.load_state_dict(sd)
        assert len(resumed) == len(full) - consumed
        rest = []
        for b in resumed:
            assert b.index == consumed + len(rest)
            assert (b.parts > 1) == (b.index == at)
            rest.append(b.row.tolist())
        assert head + rest == full


@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_share_the_outliers_exactly_once(every, drop_last):
    world, union = 3, []
    for rank in range(world):
        loader = pertload.Loader(every.db, batch_size=50, shuffle=True, seed=4, rank=rank,
                                 world_size=world, drop_last=drop_last)
        rows, _ = stream(loader, DEFAULT_LIMIT)
        assert rows == plan_batches(N, 4, 0, True, rank, world, 50, drop_last)
        union += [r for b in rows for r in b]
    m = N // world // 50 * 50 if drop_last else -(-N // world)
    assert len(union) == m * world
    if drop_last:
        assert len(set(union)) == len(union)
    else:
        assert set(union) == set(range(N))


@pytest.mark.parametrize("dense", ["bits", "bool"])
def test_dense_batches_split_to_the_bound(small, dense):
    g = pertload.Loader(small.db).graph
    lens = [g.n_genes, g.n_gpr, g.n_reactions, g.n_rmr] + [g.n_edges[t] for t in g.type_names]
    per_sample = sum((n + 63) // 64 * 8 if dense == "bits" else n for n in lens)
    # Two slots with the masks of about ten samples each, for batches of 64.
    limit = 2 * (10 * per_sample + (64 << 10)) + 4096
    loader = pertload.Loader(small.db, batch_size=64, shuffle=True, seed=5, dense=dense,
                             max_ring_bytes=limit)
    seen = []
    for batch in loader:
        if not seen:
            assert segment_bytes(loader) <= limit
        assert batch.parts > 1
        assert len(batch) == min(64, small.n - batch.index * 64)
        want = expected_masks(small, batch)
        for key, m in batch.dense.items():
            stored = pertload.unpack_bits(m, want[key].shape[1]) if dense == "bits" else m
            np.testing.assert_array_equal(stored, want[key], err_msg=str(key))
        np.testing.assert_array_equal(batch.payload, small.payload[batch.row])
        seen += batch.row.tolist()
    assert seen == [r for b in plan_batches(small.n, 5, 0, True, 0, 1, 64, False) for r in b]
    # Not even one sample's masks fit.
    with pytest.raises(pertload.LoaderError, match="needs a slot of"):
        list(pertload.Loader(small.db, batch_size=64, dense=dense, max_ring_bytes=per_sample))
