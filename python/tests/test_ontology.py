"""The ontology layers in Python: graph.ontology (term table, children and
direct genes in CSR form, strata and groups, the annotation edges) and the
graph's torch dictionary, against a closure computed here from the same
three-column file; `masks --json` lists against the same closure."""

import json
import random

import numpy as np
import torch

import pertload
from conftest import run_cli


def write_ontology(path, genes, rng):
    """A random DAG of 40 terms (diamonds, several roots) over the genes."""
    lines, parents, direct = [], {}, {}
    for t in range(40):
        parents[t] = sorted({rng.randrange(t) for _ in range(rng.randrange(3))}) if t else []
        for p in parents[t]:
            lines.append(f"T{p}\tT{t}\tis_a")
        direct[t] = sorted({rng.randrange(len(genes)) for _ in range(rng.randrange(4))})
        for g in direct[t]:
            lines.append(f"T{t}\t{genes[g]}\tgene")
    path.write_text("\n".join(lines) + "\n")
    return parents, direct


def test_graph_ontology_and_masks(small, tmp_path):
    rng = random.Random(3)
    onto = tmp_path / "onto.txt"
    parents, direct = write_ontology(onto, small.genes, rng)
    db = tmp_path / "db"
    run_cli("build", "-o", db, *small.build_args, "--ontology-dcell", onto, "--quiet")
    # the oracle: terms in order of first mention, genes(T) over descendants
    order = []
    for line in onto.read_text().splitlines():
        p, c, kind = line.split("\t")
        for x in ([p] if kind == "gene" else [p, c]):
            if x not in order:
                order.append(x)
    children = {t: [c for c in parents if t in parents[c]] for t in parents}
    memo = {}

    def genes_of(t):
        if t not in memo:
            memo[t] = set(direct[t]).union(*[genes_of(c) for c in children[t]])
        return memo[t]

    kept = [int(x[1:]) for x in order if genes_of(int(x[1:]))]
    idx = {t: k for k, t in enumerate(kept)}
    g = pertload.Loader(db).graph
    o = g.ontology
    assert o.term_names == [f"T{t}" for t in kept]
    ptr, cidx = o.children
    strat = {}

    def stratum(t):
        if t not in strat:
            strat[t] = 1 + max((stratum(c) for c in children[t] if c in idx), default=-1)
        return strat[t]

    for t in kept:
        k = idx[t]
        assert list(cidx[ptr[k]:ptr[k + 1]]) == sorted(idx[c] for c in children[t] if c in idx)
        gp, gi = o.genes
        assert list(gi[gp[k]:gp[k + 1]]) == direct[t]
        assert o.n_term_genes[k] == len(genes_of(t))
        assert o.stratum[k] == stratum(t)
    seen = []
    for s, groups in enumerate(o.strata):
        keys = [(grp["n_genes"], grp["n_children"]) for grp in groups]
        assert keys == sorted(set(keys))
        for grp in groups:
            for k in grp["terms"]:
                assert o.stratum[k] == s
                assert (gp[k + 1] - gp[k], ptr[k + 1] - ptr[k]) == (grp["n_genes"],
                                                                   grp["n_children"])
                seen.append(int(k))
    assert sorted(seen) == list(range(len(kept)))
    want_ann = []
    for line in onto.read_text().splitlines():
        p, c, kind = line.split("\t")
        if kind == "gene":
            pair = (small.gene_index[c], idx[int(p[1:])])
            if pair not in want_ann:
                want_ann.append(pair)
    np.testing.assert_array_equal(o.annotation_index, np.array(want_ann, np.int64).T)
    tg = g.to_torch()
    assert tg["term"]["num_nodes"] == len(kept)
    assert torch.equal(tg[("gene", "annotated", "term")]["edge_index"],
                       torch.from_numpy(o.annotation_index))
    for row in range(0, 300, 37):
        got = json.loads(run_cli("masks", db, "--row", row, "--json").stdout)
        P = set(small.sample_genes[row])
        assert got["ontology/term"] == [idx[t] for t in kept if genes_of(t) & P]
        assert got["ontology/annotation"] == [i for i, (gg, _) in enumerate(want_ann) if gg in P]
