"""Perturbation neighbourhoods (DESIGN section 11) through the ring: every
sample's k-hop genes and edges equal `pertload masks --khop --json` and a
Python BFS over the input files; to_torch's khop masks equal the lists; the
cap flags the samples it cut."""

import json

import numpy as np
import pytest

import pertload
from conftest import run_cli


def bfs(inputs, P, k, types, cap):
    """The set (ball of the largest radius <= k within the cap, P whatever
    its size) and per walked type the edges with both ends in it."""
    adj = {}
    for t in types:
        src, dst = inputs.edges[t]
        for a, b in zip(src.tolist(), dst.tolist()):
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
    ball, capped = set(P), False
    for _ in range(k):
        nxt = ball | {v for g in ball for v in adj.get(g, ())}
        if len(nxt) > cap and nxt != ball:
            capped = True
            break
        ball = nxt
    inside = np.zeros(len(inputs.genes), bool)
    inside[list(ball)] = True
    edges = {}
    for t in types:
        src, dst = inputs.edges[t]
        edges[t] = np.flatnonzero(inside[src] & inside[dst])
    return sorted(ball), edges, capped


def masks_khop(inputs, row, k, types, cap=None):
    args = ["masks", inputs.db, "--row", row, "--json", "--khop", k, "--types", ",".join(types)]
    if cap is not None:
        args += ["--khop-max-genes", cap]
    return json.loads(run_cli(*args).stdout)["khop"]


@pytest.mark.parametrize("k,types,cap", [
    (0, None, None),
    (1, ["physical", "regulatory"], None),
    (2, ["regulatory"], None),
    (1, ["physical", "regulatory"], 40),
    (2, ["physical", "regulatory"], 290),
])
def test_khop_lists_equal_the_masks_command_and_a_bfs(small, k, types, cap):
    kw = {"khop": k, "batch_size": 32, "shuffle": True, "seed": 5}
    if types is not None:
        kw["khop_types"] = types
    if cap is not None:
        kw["khop_max_genes"] = cap
    walked = types or small.types
    seen = capped = 0
    for batch in pertload.Loader(small.db, **kw):
        genes, gptr = batch.khop["genes"]
        assert sorted(batch.khop["edges"]) == sorted(walked)
        for i, row in enumerate(batch.row.tolist()):
            want_g, want_e, want_cap = bfs(small, small.sample_genes[row], k, walked,
                                           cap if cap is not None else 1024)
            assert genes[gptr[i]:gptr[i + 1]].tolist() == want_g, f"row {row}"
            assert bool(batch.khop["capped"][i]) == want_cap, f"row {row}"
            capped += want_cap
            for t in walked:
                pos, ptr = batch.khop["edges"][t]
                np.testing.assert_array_equal(pos[ptr[i]:ptr[i + 1]], want_e[t],
                                              err_msg=f"row {row} {t}")
            if seen % 37 == 0:  # the command, on a sample of rows
                j = masks_khop(small, row, k, walked, cap)
                assert j["genes"] == want_g and j["capped"] == int(want_cap)
                for t in walked:
                    assert j["edges"][t] == want_e[t].tolist()
            seen += 1
    assert seen == small.n
    if cap is not None:
        assert 0 < capped < seen  # the cap cut some samples and not others


def test_khop_masks_in_to_torch_equal_the_lists(small):
    loader = pertload.Loader(small.db, batch_size=16, khop=1, khop_types="physical")
    for n, batch in enumerate(loader):
        t = batch.to_torch("cpu")
        genes, gptr = batch.khop["genes"]
        pos, ptr = batch.khop["edges"]["physical"]
        gm = t["gene"]["khop_mask"].numpy()
        em = t[("gene", "physical", "gene")]["khop_mask"].numpy()
        assert gm.shape == (len(batch), len(small.genes))
        assert em.shape == (len(batch), small.edges["physical"].shape[1])
        assert ("khop_mask" not in t[("gene", "regulatory", "gene")])
        for i in range(len(batch)):
            np.testing.assert_array_equal(np.flatnonzero(gm[i]), genes[gptr[i]:gptr[i + 1]])
            np.testing.assert_array_equal(np.flatnonzero(em[i]), pos[ptr[i]:ptr[i + 1]])
        assert t["gene"]["khop_capped"].dtype.is_floating_point is False
        if n == 3:
            break


def test_without_khop_batches_have_none(small):
    for batch in pertload.Loader(small.db, batch_size=64):
        assert batch.khop is None
        assert not any(name.startswith("khop/") for name in batch.arrays)
        assert "khop_mask" not in batch.to_torch("cpu")["gene"]
        break


@pytest.mark.parametrize("kw,reason", [
    ({"khop_types": ["physical"]}, "need khop"),
    ({"khop": 1, "khop_types": ["nosuchtype"]}, "no edge type 'nosuchtype'"),
    ({"khop": 1, "khop_types": ["physical", "physical"]}, "named twice"),
])
def test_khop_option_errors(small, kw, reason):
    with pytest.raises((ValueError, pertload.LoaderError), match=reason):
        for _ in pertload.Loader(small.db, **kw):
            pass


def test_khop_lists_of_batches_split_in_parts(small):
    """Slots too small for a whole batch: its parts' lists are merged with
    their ptr arrays shifted, and equal the BFS."""
    types = ["physical", "regulatory"]
    loader = pertload.Loader(small.db, batch_size=64, khop=1, khop_types=types,
                             max_ring_bytes=1 << 20, slots=2)
    seen = split = 0
    for batch in loader:
        split += batch.parts > 1
        genes, gptr = batch.khop["genes"]
        for i, row in enumerate(batch.row.tolist()):
            want_g, want_e, want_cap = bfs(small, small.sample_genes[row], 1, types, 1024)
            assert genes[gptr[i]:gptr[i + 1]].tolist() == want_g, f"row {row}"
            assert bool(batch.khop["capped"][i]) == want_cap
            for t in types:
                pos, ptr = batch.khop["edges"][t]
                np.testing.assert_array_equal(pos[ptr[i]:ptr[i + 1]], want_e[t])
            seen += 1
    assert seen == small.n
    assert split > 0
