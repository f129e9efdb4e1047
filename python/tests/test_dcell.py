"""The DCell kit (docs/dcell.md): graph.ontology.schedule() against a layout
recomputed here from graph.ontology's children and annotations; per batch
the affected-term schedule (C, pl_schedule_affected) against the brute-force
closure of test_ontology_batches; examples/dcell.py's model (grouped bmm,
variable widths, affected terms only) against a per-term reference written
here (forward, auxiliary outputs and gradients, in float64), and the terms
whose state leaves the wild type's equal to the batch's affected terms."""

import ctypes
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

import pertload
from pertload import _lib
from pertload.schedule import PAD
from conftest import run_cli
from test_ontology import write_ontology
from test_ontology_batches import Onto, random_onto  # noqa: F401 (a fixture)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import dcell  # noqa: E402  (examples/dcell.py)


def width_rule(n):
    return max(2, math.ceil(0.5 * n))


@pytest.fixture(scope="module")
def onto(random_onto):
    """The random DAG of test_ontology_batches over the small database."""
    return random_onto


def term_inputs(o, offset, width, t):
    """State columns of term t's input from graph.ontology alone: its
    children's output columns, then its annotation positions."""
    cptr, cidx = o.children
    cols = [c for ch in cidx[cptr[t]:cptr[t + 1]].tolist()
            for c in range(offset[ch], offset[ch] + width[ch])]
    return cols + np.flatnonzero(o.annotation_index[1] == t).tolist()


@pytest.mark.parametrize("width", [3, "array", "rule"])
def test_schedule_layout(onto, width):
    o = onto.o
    T = o.n_terms
    want_w = {3: [3] * T, "array": [1 + t % 4 for t in range(T)],
              "rule": [width_rule(int(n)) for n in o.n_term_genes]}[width]
    arg = {3: 3, "array": np.array(want_w), "rule": width_rule}[width]
    s = o.schedule(width=arg)
    assert s.width.tolist() == want_w
    # the state: annotations, then every term's columns, disjoint, in slot order
    cols = np.zeros(s.state_size, int)
    cols[:o.n_annotations] += 1
    for t in range(T):
        cols[s.term_offset[t]:s.term_offset[t] + want_w[t]] += 1
    assert (cols == 1).all() and s.state_size == o.n_annotations + sum(want_w)
    assert sorted(s.slot_term.tolist()) == list(range(T))
    assert (s.term_slot[s.slot_term] == np.arange(T)).all()
    assert np.all(np.diff(s.term_offset[s.slot_term]) == s.width[s.slot_term][:-1])
    # groups: every term once, each of one stratum and one (input, output) size,
    # strata ascending, children in earlier strata, distinct keys per stratum
    seen, keys = [], set()
    cptr, cidx = o.children
    for st_i, st in enumerate(s.strata):
        assert np.array_equal(st.gather, np.concatenate([g.input.ravel() for g in st.groups]))
        for k, g in enumerate(st.groups):
            assert g.stratum == s.strata[st_i].groups[0].stratum
            assert (g.stratum, g.n_inputs, g.width) not in keys
            keys.add((g.stratum, g.n_inputs, g.width))
            assert st.gather_ptr[k + 1] - st.gather_ptr[k] == g.input.size
            assert g.out_hi - g.out_lo == len(g.terms) * g.width
            for j, t in enumerate(g.terms.tolist()):
                seen.append(t)
                assert o.stratum[t] == g.stratum and want_w[t] == g.width
                assert s.term_offset[t] == g.out_lo + j * g.width
                assert s.term_slot[t] == g.slot_lo + j
                want = term_inputs(o, s.term_offset, want_w, t)
                assert g.input[j].tolist() == want
                ch, an = g.child_rows[j], g.annotations[j]
                assert ch[g.child_mask[j]].tolist() + an[g.annotation_mask[j]].tolist() == want
                assert (ch[~g.child_mask[j]] == PAD).all() and (an[~g.annotation_mask[j]]
                                                                == PAD).all()
                for c in cidx[cptr[t]:cptr[t + 1]]:
                    assert o.stratum[c] < g.stratum
    assert sorted(seen) == list(range(T)) and seen == s.slot_term.tolist()
    has_parent = set(cidx.tolist())
    assert s.roots.tolist() == [t for t in range(T) if t not in has_parent]
    d = s.to("cpu")
    assert torch.equal(d.groups[1].input, torch.from_numpy(s.groups[1].input))
    assert d.strata[0].gather.dtype == torch.int64 and isinstance(s.groups[0].input, np.ndarray)


def test_schedule_rejects_bad_widths(onto):
    with pytest.raises(ValueError, match="width must be >= 1"):
        onto.o.schedule(width=0)
    with pytest.raises(ValueError, match="one per term"):
        onto.o.schedule(width=np.ones(3, np.int64))


def batches(db, **kw):
    return [b.copy() for b in pertload.Loader(db, batch_size=kw.pop("batch_size", 32), **kw)]


def test_affected_schedule_equals_the_closure(small, onto):
    s = onto.o.schedule(width=width_rule)
    n_aff = 0
    for b in batches(onto.db, shuffle=True, seed=5):
        per = [onto.lists(small.sample_genes[r])[0] for r in b.row.tolist()]
        union = set().union(*per)
        a = s.affected(b)
        n_aff += len(union)
        everything = set(range(onto.o.n_terms))
        for pre, part in (("", union), ("rest_", everything - union)):
            for k, g in enumerate(s.groups):
                p = [j for j, t in enumerate(g.terms.tolist()) if t in part]
                gp = getattr(a, pre + "group_ptr")
                assert getattr(a, pre + "positions")[gp[k]:gp[k + 1]].tolist() == p
                assert getattr(a, pre + "counts")[k] == len(p)
            assert sorted(getattr(a, pre + "terms").tolist()) == sorted(part)
            for si, st in enumerate(s.strata):
                gather, scatter = [], []
                for g in st.groups:
                    for j, t in enumerate(g.terms.tolist()):
                        if t in part:
                            gather += g.input[j].tolist()
                            scatter += range(s.term_offset[t], s.term_offset[t] + g.width)
                ga, gptr = getattr(a, pre + "gather"), getattr(a, pre + "gather_ptr")
                sc, sptr = getattr(a, pre + "scatter"), getattr(a, pre + "scatter_ptr")
                assert ga[gptr[si]:gptr[si + 1]].tolist() == gather
                assert sc[sptr[si]:sptr[si + 1]].tolist() == scatter
        for i, terms in enumerate(per):
            got = a.sample_slots[a.sample_ptr[i]:a.sample_ptr[i + 1]].tolist()
            assert got == sorted(s.term_slot[terms].tolist())
        t = s.to("cpu").affected(b)
        assert t.gather.dtype == torch.int64 and t.gather.tolist() == a.gather.tolist()
    assert n_aff > 0


def test_affected_schedule_rejects_bad_lists(onto):
    s = onto.o.schedule(width=2)
    with pytest.raises(_lib.LoaderError, match="names term 999999"):
        pertload.schedule.AffectedSchedule(s, np.array([0, 999999], np.int32),
                                           np.array([0, 2], np.int64))
    with pytest.raises(_lib.LoaderError, match="is below"):
        pertload.schedule.AffectedSchedule(s, np.array([0, 1], np.int32),
                                           np.array([0, 2, 1], np.int64))
    b = next(iter(pertload.Loader(onto.db, batch_size=4, ontology=False)))
    with pytest.raises(_lib.LoaderError, match="no ontology lists"):
        s.affected(b)
    assert ctypes.sizeof(_lib.ScheduleMap) == 4 * 4 + 6 * 8  # three uint32, padding, pointers


def reference(model, o, kept):
    """Per-term DCell in topological order, from graph.ontology's children and
    annotations and model.term_parameters: (root-head prediction, {term:
    output}, {term: aux})."""
    cptr, cidx = o.children
    ann_term = o.annotation_index[1]
    out, aux = {}, {}
    for t in np.argsort(o.stratum, kind="stable").tolist():
        parts = [out[c] for c in cidx[cptr[t]:cptr[t + 1]].tolist()]
        parts.append(kept[:, np.flatnonzero(ann_term == t)])
        w, b, aw, ab = model.term_parameters(t)
        out[t] = torch.tanh(torch.cat(parts, 1) @ w + b)
        aux[t] = out[t] @ aw + ab
    root = torch.cat([out[int(r)] for r in model.s.roots], 1)
    return model.head(root)[:, 0], out, aux


def test_dcell_model_equals_the_per_term_reference(small, onto):
    o = onto.o
    s = o.schedule(width=width_rule)
    torch.manual_seed(0)
    model = dcell.DCell(s, dtype=torch.float64)
    b = batches(onto.db, shuffle=True, seed=2, batch_size=24)[0]
    B = len(b)
    removed, ptr = (torch.from_numpy(v.astype(np.int64)) for v in b.ontology["annotation"])
    kept = torch.ones(B, o.n_annotations, dtype=torch.float64)
    for i in range(B):
        kept[i, removed[ptr[i]:ptr[i + 1]]] = 0
    y = torch.linspace(-1, 1, B, dtype=torch.float64)
    y[3] = float("nan")

    def grads(loss):
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    pred_r, out_r, aux_r = reference(model, o, kept)
    aux_r_slots = torch.stack([aux_r[int(t)] for t in s.slot_term], 1)
    g_ref = grads(dcell.dcell_loss(pred_r, aux_r_slots, y))
    wt_state, _ = model.wild_type(kept)
    wt_state = wt_state.detach()
    affected = s.to("cpu").affected(b)
    checked = 0
    for aff, by in ((None, None), (affected, "group"), (affected, "term"), (affected, "pair")):
        pred, aux, state = model(removed, ptr, aff, by)
        torch.testing.assert_close(pred, pred_r, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(aux, aux_r_slots, rtol=1e-12, atol=1e-12)
        for t in range(o.n_terms):
            torch.testing.assert_close(state[:, s.term_offset[t]:s.term_offset[t] + s.width[t]],
                                       out_r[t], rtol=1e-12, atol=1e-12)
        g = grads(dcell.dcell_loss(pred, aux, y))
        for a, r in zip(g, g_ref):
            torch.testing.assert_close(a, r, rtol=1e-10, atol=1e-12)
        # the terms whose output leaves the wild type's are the affected ones
        def cols(t):
            return slice(s.term_offset[t], s.term_offset[t] + s.width[t])

        for i, row in enumerate(b.row.tolist()):
            moved = [t for t in range(o.n_terms)
                     if (state[i, cols(t)] - wt_state[0, cols(t)]).abs().max() > 1e-9]
            want = b.ontology["term"][0][b.ontology["term"][1][i]:b.ontology["term"][1][i + 1]]
            assert moved == want.tolist() == onto.lists(small.sample_genes[row])[0]
            checked += bool(moved)
    assert checked > B // 2
    assert 0 < len(affected.terms) < o.n_terms
    # by="pair" computes each (sample, affected term) pair once, in blocks of
    # a wild-type row per term then the pairs, padded with the wild type's
    # row: padding occurs here, and the pairs are fewer than the affected
    # terms on every sample
    groups = [g for part in model._pair_layout(affected, B, ptr.device)[:-1] for g in part[0]]
    pairs = sum(len(valid) for *_, valid in groups)
    blocks = sum(len(s.groups[k].terms) * rows for k, rows, _ in groups)
    assert pairs == len(affected.sample_slots) and pairs + o.n_terms < blocks
    assert pairs < len(affected.terms) * B


def test_dcell_example_trains(onto, onto_only):
    ex = os.path.join(ROOT, "examples", "dcell.py")
    for db, extra in ((onto.db, []), (onto.db, ["--all-terms"]), (onto_only.db, [])):
        r = subprocess.run([sys.executable, ex, str(db), "--steps", "6", "--batch-size",
                            "16", *extra], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        losses = [float(ln.split()[3].rstrip(",")) for ln in r.stdout.splitlines()
                  if ln.startswith("step ")]
        assert len(losses) == 6 and all(math.isfinite(v) for v in losses), r.stdout
        assert "6 steps in" in r.stdout


@pytest.fixture(scope="module")
def onto_only(small, tmp_path_factory):
    """An ontology-only database: genes, samples and the ontology, no edge
    type and no metabolism."""
    tmp = tmp_path_factory.mktemp("onto_only")
    write_ontology(tmp / "onto.txt", small.genes, random.Random(11))  # random_onto's
    run_cli("build", "-o", tmp / "db", "--genes", small.dir / "genes.txt", "--samples",
            small.dir / "samples.tsv", "--ontology-dcell", tmp / "onto.txt", "--quiet")
    return Onto(tmp / "db")


@pytest.mark.parametrize("dense", [None, "bool"])
def test_ontology_only_database(small, onto, onto_only, dense):
    g = pertload.Loader(onto_only.db).graph
    assert g.type_names == [] and not g.has_metabolism and g.edge_index == {}
    assert g.ontology.term_names == onto.o.term_names
    assert "genes: 300" in run_cli("inspect", onto_only.db).stdout
    t = g.to_torch()
    assert set(t) == {"gene", "term", ("gene", "annotated", "term")}
    seen = 0
    for b in pertload.Loader(onto_only.db, batch_size=64, dense=dense):
        assert b.removed == {}
        m = b.to_torch()
        assert not [k for k in m if isinstance(k, tuple) and k[1] != "annotated"]
        for i, row in enumerate(b.row.tolist()):
            terms, ann = onto_only.lists(small.sample_genes[row])
            tp, tptr = b.ontology["term"]
            assert tp[tptr[i]:tptr[i + 1]].tolist() == terms
            kept = np.ones(g.ontology.n_terms, bool)
            kept[terms] = False
            np.testing.assert_array_equal(m["term"]["mask"][i].numpy(), kept)
            seen += 1
    assert seen == small.n
    j = run_cli("masks", onto_only.db, "--row", 5, "--json").stdout
    assert '"ontology/term"' in j
