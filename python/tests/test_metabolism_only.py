"""A database with metabolism and no gene-gene edge type (build without
--edges): built, inspected, served, and its masks equal the oracle."""

import numpy as np
import pytest

import pertload
from conftest import KINDS, run_cli


@pytest.fixture(scope="module")
def metab(small, tmp_path_factory):
    args, skip = [], False
    for a in small.build_args:
        if skip:
            skip = False
        elif a == "--edges":
            skip = True
        else:
            args.append(a)
    assert "--edges" not in args and "--rules" in args
    db = tmp_path_factory.mktemp("metab") / "db"
    run_cli("build", "-o", db, *args)
    return db


def test_metabolism_only_database(small, metab):
    info = run_cli("inspect", metab).stdout
    assert "genes: 300" in info
    graph = pertload.Loader(metab).graph
    assert graph.type_names == [] and graph.has_metabolism
    assert graph.n_reactions == len(small.reactions)
    seen = 0
    for batch in pertload.Loader(metab, batch_size=64, shuffle=True):
        assert batch.removed == {}
        masks = batch.to_torch("cpu")
        pyg = batch.to_torch("cpu", layout="pyg")
        for i, row in enumerate(batch.row.tolist()):
            want = small.expected(row)
            for k in KINDS:
                pos, ptr = getattr(batch, k)
                np.testing.assert_array_equal(pos[ptr[i]:ptr[i + 1]], want[k], err_msg=k)
            kept = np.ones(len(small.reactions), bool)
            kept[want["reaction"].astype(np.int64)] = False
            np.testing.assert_array_equal(masks["reaction"]["mask"][i].numpy(), kept)
            n = len(small.reactions)
            np.testing.assert_array_equal(pyg["reaction"]["mask"][i * n:(i + 1) * n].numpy(),
                                          kept)
            seen += 1
    assert seen == small.n
    out = run_cli("masks", metab, "--row", 3, "--json").stdout
    assert '"edges":{}' in out.replace(" ", "")


def test_no_edges_and_no_metabolism_is_refused(small, tmp_path):
    import subprocess

    r = subprocess.run([pertload.program_path(), "build", "-o", tmp_path / "db", "--genes",
                        small.dir / "genes.txt", "--samples", small.dir / "samples.tsv"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--edges unless the database has metabolism" in r.stderr
