"""The ontology lists in served batches (DESIGN section 10): through the real
ring, every sample's affected terms and removed annotations equal a
brute-force closure over graph.ontology (children and direct genes) and
`pertload masks --json`, on a random DAG and on GO biological process (the
real ontology and SGD annotations of tests/data, the i-th ORF mapped to the
i-th gene of the synthetic database); split batches merge; to_torch's masks,
dense masks and the PyG layout; a database without an ontology, or
Loader(ontology=False), has none of it."""

import gzip
import json
import os
import random
import sys

import numpy as np
import pytest
import torch

import pertload
from conftest import run_cli
from test_ontology import write_ontology

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import ontology_real as ref  # noqa: E402  (the readers of the real-data test)

ONTO_NAMES = ("ontology/term/removed", "ontology/term/ptr", "ontology/annotation/removed",
              "ontology/annotation/ptr")


def go_bp_dcell(path, genes):
    """GO biological process (is_a) with the SGD annotations as a three-column
    file over `genes`: the i-th ORF of SGD_features is genes[i]."""
    data = os.environ.get("PERTLOAD_REAL_DATA") or os.path.join(ROOT, "tests", "data")
    go = os.path.join(data, "real-raw", "go")
    with gzip.open(os.path.join(data, "real-raw", "sgd_features", "SGD_features.tab.gz"),
                   "rt") as f:
        orfs = sorted({c[3] for c in (ln.rstrip("\n").split("\t") for ln in f)
                       if len(c) > 3 and c[1] == "ORF" and c[3]})
    terms, ids, alt = ref.read_obo(os.path.join(go, "gene_ontology.1_2.obo.gz"))
    rows, _ = ref.read_gaf(os.path.join(go, "gene_association.sgd.gz"), ids, alt,
                           {n: i for i, n in enumerate(orfs)}, set())
    ref.write_bp_dcell(path, terms, rows, genes)


class Onto:
    """A database with an ontology and the brute-force oracle of its lists."""

    def __init__(self, db):
        self.db = db
        self.o = pertload.Loader(db).graph.ontology
        cptr, cidx = self.o.children
        gptr, gidx = self.o.genes
        self.genes_of = [None] * self.o.n_terms
        for groups in self.o.strata:  # children first: strata ascending
            for grp in groups:
                for t in grp["terms"].tolist():
                    s = set(gidx[gptr[t]:gptr[t + 1]].tolist())
                    for c in cidx[cptr[t]:cptr[t + 1]].tolist():
                        s |= self.genes_of[c]
                    self.genes_of[t] = frozenset(s)
        assert [len(s) for s in self.genes_of] == self.o.n_term_genes.tolist()
        self.ann_gene = self.o.annotation_index[0]

    def lists(self, P):
        """(affected terms, removed annotation positions) of deleted set P."""
        P = set(P)
        terms = [t for t, s in enumerate(self.genes_of) if not s.isdisjoint(P)]
        ann = np.flatnonzero(np.isin(self.ann_gene, list(P))).tolist()
        return terms, ann


@pytest.fixture(scope="module")
def random_onto(small, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("onto_random")
    write_ontology(tmp / "onto.txt", small.genes, random.Random(11))
    run_cli("build", "-o", tmp / "db", *small.build_args, "--ontology-dcell", tmp / "onto.txt",
            "--quiet")
    return Onto(tmp / "db")


@pytest.fixture(scope="module")
def go_onto(small, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("onto_go")
    go_bp_dcell(tmp / "go_bp.txt", small.genes)
    run_cli("build", "-o", tmp / "db", *small.build_args, "--ontology-dcell", tmp / "go_bp.txt",
            "--quiet")
    return Onto(tmp / "db")


def cut(lists, i):
    pos, ptr = lists
    return pos[ptr[i]:ptr[i + 1]].tolist()


@pytest.mark.parametrize("which", ["random_onto", "go_onto"])
def test_batches_carry_the_closure_and_equal_the_masks_command(small, which, request):
    on = request.getfixturevalue(which)
    assert on.o.n_terms > 20 and on.o.n_annotations > 20
    seen = hit = 0
    for batch in pertload.Loader(on.db, batch_size=32, shuffle=True, seed=4):
        assert set(batch.ontology) == {"term", "annotation"}
        for name in ONTO_NAMES:
            assert name in batch.arrays
        for i, row in enumerate(batch.row.tolist()):
            terms, ann = on.lists(small.sample_genes[row])
            assert cut(batch.ontology["term"], i) == terms, f"row {row}"
            assert cut(batch.ontology["annotation"], i) == ann, f"row {row}"
            hit += bool(terms)
            if seen % 23 == 0:
                j = json.loads(run_cli("masks", on.db, "--row", row, "--json").stdout)
                assert j["ontology/term"] == terms and j["ontology/annotation"] == ann
            seen += 1
    assert seen == small.n and hit > small.n // 4


def test_split_batches_merge_their_ontology_lists(small, go_onto):
    """Slots too small for a whole batch: the parts' lists merge, their ptr
    arrays shifted, into the lists of the whole batch."""
    whole = {b.index: b.copy() for b in pertload.Loader(go_onto.db, batch_size=64)}
    split = 0
    for batch in pertload.Loader(go_onto.db, batch_size=64, max_ring_bytes=1 << 18, slots=2):
        split += batch.parts > 1
        w = whole[batch.index]
        for k in ("term", "annotation"):
            for a, b in zip(batch.ontology[k], w.ontology[k]):
                np.testing.assert_array_equal(a, b)
        for i, row in enumerate(batch.row.tolist()):
            terms, ann = go_onto.lists(small.sample_genes[row])
            assert cut(batch.ontology["term"], i) == terms
            assert cut(batch.ontology["annotation"], i) == ann
    assert split > 0


def want_mask(lists, B, n):
    m = np.ones((B, n), bool)
    for i in range(B):
        m[i, cut(lists, i)] = False
    return m


@pytest.mark.parametrize("dense", [None, "bits", "bool"])
def test_to_torch_masks_of_terms_and_annotations(small, random_onto, dense):
    o = random_onto.o
    for batch in pertload.Loader(random_onto.db, batch_size=50, dense=dense):
        B = len(batch)
        if dense:
            assert set(batch.dense) >= {"term", ("gene", "annotated", "term")}
        t = batch.to_torch()
        for key, k, n in (("term", "term", o.n_terms),
                          (("gene", "annotated", "term"), "annotation", o.n_annotations)):
            want = want_mask(batch.ontology[k], B, n)
            assert t[key]["mask"].dtype == torch.bool and t[key]["mask"].shape == (B, n)
            np.testing.assert_array_equal(t[key]["mask"].numpy(), want)
            pos, ptr = batch.ontology[k]
            np.testing.assert_array_equal(t[key]["removed"].numpy(), pos)
            np.testing.assert_array_equal(t[key]["ptr"].numpy(), ptr)
            for i, row in enumerate(batch.row.tolist()):  # True = kept, from the oracle
                terms, ann = random_onto.lists(small.sample_genes[row])
                gone = terms if k == "term" else ann
                assert (~want[i]).nonzero()[0].tolist() == gone
        lists = batch.to_torch(layout="lists")
        assert torch.equal(lists["term"]["removed"], torch.from_numpy(
            batch.ontology["term"][0]).long())


def test_pyg_layout_has_term_nodes_and_kept_annotations(small, random_onto):
    o = random_onto.o
    T, N = o.n_terms, len(small.genes)
    loader = pertload.Loader(random_onto.db, batch_size=16)
    batch = next(iter(loader))
    B = len(batch)
    h = batch.to_torch(layout="pyg")
    want = want_mask(batch.ontology["term"], B, T)
    np.testing.assert_array_equal(h["term"]["mask"].numpy(), want.reshape(-1))
    assert h["term"]["num_nodes"] == B * T
    ai = o.annotation_index
    got = h[("gene", "annotated", "term")]["edge_index"].numpy()
    kept = [np.stack([ai[0] + i * N, ai[1] + i * T])[:, want_mask(
        batch.ontology["annotation"], B, o.n_annotations)[i]] for i in range(B)]
    np.testing.assert_array_equal(got, np.concatenate(kept, axis=1))
    loader.close()


def test_without_an_ontology_or_turned_off(small, random_onto):
    for batch in pertload.Loader(small.db, batch_size=100, dense="bool"):
        assert batch.ontology is None
        assert not [n for n in batch.arrays if n.startswith("ontology/")]
        t = batch.to_torch()
        assert "term" not in t and ("gene", "annotated", "term") not in t
    with pytest.raises(ValueError, match="has no ontology"):
        pertload.Loader(small.db, ontology=True)
    for batch in pertload.Loader(random_onto.db, batch_size=100, ontology=False):
        assert batch.ontology is None
        assert not [n for n in batch.arrays if n.startswith("ontology/")]
        assert "term" not in batch.to_torch()
    assert pertload.Loader(random_onto.db, ontology=True).ontology
