"""Node features stored in the database (DESIGN section 16): `build
--node-features TYPE=F.npy` and the recipe key `features:`, checked against
the .npy files themselves (their bytes after the header) and against x
recomputed here as features[n_id]."""

import re
import subprocess

import numpy as np
import pytest
import torch
from conftest import db_graph, pertload_bin, run_cli

import pertload


def build(small, out, *features, check=True):
    args = [a for f in features for a in ("--node-features", f)]
    return subprocess.run([pertload_bin(), "build", "-o", out, *small.build_args, *args,
                           "--quiet"], check=check, capture_output=True, text=True)


def npy_data(path, nbytes):
    """The data bytes of a .npy: the last `nbytes` bytes of the file (its
    header before them, read by nothing here)."""
    raw = path.read_bytes()
    return raw[len(raw) - nbytes:]


@pytest.fixture(scope="module")
def featured(small, tmp_path_factory):
    """`small` rebuilt with float32 gene and float16 reaction features."""
    d = tmp_path_factory.mktemp("featured")
    rng = np.random.default_rng(11)
    fg = rng.standard_normal((len(small.genes), 7)).astype(np.float32)
    fr = rng.standard_normal((len(small.reactions), 5)).astype(np.float16)
    np.save(d / "gene.npy", fg)
    np.save(d / "reaction.npy", fr)
    build(small, d / "db", f"gene={d / 'gene.npy'}", f"reaction={d / 'reaction.npy'}")
    return d, fg, fr


def test_stored_byte_for_byte_and_inspected(featured):
    d, fg, fr = featured
    g = db_graph(d / "db")
    assert set(g.stored_features) == set(g.features) == {"gene", "reaction"}
    for node, want in (("gene", fg), ("reaction", fr)):
        got = g.node_features(node)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == npy_data(d / f"{node}.npy", want.nbytes), node
    with pytest.raises(KeyError, match="no features for node type 'metabolite'"):
        g.node_features("metabolite")
    text = run_cli("inspect", d / "db").stdout
    assert f"node features: gene [{fg.shape[0]}, 7] float32 (<f4)" in text
    assert f"node features: reaction [{fr.shape[0]}, 5] float16 (<f2)" in text
    run_cli("verify", d / "db")


def test_inspect_without_features(small):
    assert "node features: none\n" in run_cli("inspect", small.db).stdout


def expected_x(feat, n_id):
    return torch.from_numpy(feat[n_id.numpy()])


@pytest.mark.parametrize("layout", ["pyg", "lazy"])
def test_x_is_features_of_n_id(featured, torch_geometric, layout):
    d, fg, fr = featured
    with pertload.Loader(d / "db", batch_size=9) as loader:
        for k, batch in enumerate(loader):
            b = batch.to_torch("cpu", layout=layout)
            for node, feat in (("gene", fg), ("reaction", fr)):
                assert b[node]["x"].dtype == torch.from_numpy(feat).dtype
                assert torch.equal(b[node]["x"], expected_x(feat, b[node]["n_id"])), (k, node)
            assert "x" not in b["metabolite"]
            if k == 2:
                break


def test_user_features_replace_the_stored_per_type(featured, torch_geometric):
    d, fg, fr = featured
    mine = np.arange(len(fg) * 3, dtype=np.float32).reshape(len(fg), 3)
    with pertload.Loader(d / "db", batch_size=5, features={"gene": mine}) as loader:
        b = next(iter(loader)).to_torch("cpu", layout="pyg")
    assert torch.equal(b["gene"].x, expected_x(mine, b["gene"].n_id))
    assert torch.equal(b["reaction"].x, expected_x(fr, b["reaction"].n_id))


def test_dataset_workers_use_the_stored_features(featured, torch_geometric):
    d, fg, _ = featured
    ds = pertload.Dataset(d / "db", batch_size=6)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1)
    n = 0
    for batch in dl:
        b = batch.to_torch("cpu", layout="lazy")
        assert torch.equal(b["gene"]["x"], expected_x(fg, b["gene"]["n_id"]))
        n += 1
    assert n == len(ds) and np.array_equal(ds.graph.node_features("gene"), fg)
    mine = np.ones((len(fg), 2), np.float16)
    ds = pertload.Dataset(d / "db", batch_size=6, features={"gene": mine})
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1)))
    b = batch.to_torch("cpu", layout="lazy")
    assert torch.equal(b["gene"]["x"], expected_x(mine, b["gene"]["n_id"]))


def test_fingerprint_follows_the_features(small, featured, tmp_path):
    d, fg, _ = featured
    np.save(tmp_path / "same.npy", fg)
    changed = fg.copy()
    changed[3, 2] += 1
    np.save(tmp_path / "changed.npy", changed)
    build(small, tmp_path / "same", f"gene={tmp_path / 'same.npy'}",
          f"reaction={d / 'reaction.npy'}")
    build(small, tmp_path / "changed", f"gene={tmp_path / 'changed.npy'}",
          f"reaction={d / 'reaction.npy'}")
    fp = {k: db_graph(p).db_fingerprint for k, p in
          (("first", d / "db"), ("same", tmp_path / "same"), ("changed", tmp_path / "changed"),
           ("none", small.db))}
    assert fp["first"] == fp["same"]
    assert len({fp["first"], fp["changed"], fp["none"]}) == 3, fp


def test_recipe_features(tmp_path):
    genes = [f"G{i}" for i in range(6)]
    (tmp_path / "genes.txt").write_text("".join(g + "\n" for g in genes))
    (tmp_path / "e.tsv").write_text("G0\tG1\nG2\tG3\nG4\tG5\n")
    (tmp_path / "samples.tsv").write_text("genes\tid\ty\nG0\t1\t0.5\nG1;G2\t2\t1\n")
    emb = np.linspace(0, 1, 6 * 4, dtype=np.float16).reshape(6, 4)
    np.save(tmp_path / "emb.npy", emb)
    recipe = ("version: 1\ngenes: {file: genes.txt}\nedges:\n"
              "  - {name: e, format: delim, file: e.tsv, source: 1, target: 2}\n"
              "samples: {format: tsv, file: samples.tsv}\nfeatures: {gene: emb.npy}\n")
    (tmp_path / "recipe.yaml").write_text(recipe)
    run_cli("build", "--recipe", tmp_path / "recipe.yaml", "-o", tmp_path / "db", "--quiet")
    g = db_graph(tmp_path / "db")
    assert g.node_features("gene").tobytes() == npy_data(tmp_path / "emb.npy", emb.nbytes)
    assert "emb.npy" in run_cli("inspect", tmp_path / "db").stdout  # a recipe input
    check = run_cli("recipe", "check", tmp_path / "recipe.yaml").stdout
    assert f"features gene file={tmp_path / 'emb.npy'} (read by build)" in check, check
    (tmp_path / "recipe.yaml").write_text(recipe.replace("{gene:", "{cell:"))
    r = subprocess.run([pertload_bin(), "build", "--recipe", tmp_path / "recipe.yaml", "-o",
                        tmp_path / "db2", "--quiet"], capture_output=True, text=True)
    assert r.returncode != 0
    assert "recipe.yaml:6:12: unknown node type 'cell' in 'features'" in r.stderr, r.stderr
    assert not (tmp_path / "db2").exists()


def malformed(d, n):
    """{case: (file, reason in the message)} of bad feature files for n genes."""
    good = np.ones((n, 3), np.float32)
    np.save(d / "ok.npy", good)
    raw = (d / "ok.npy").read_bytes()
    cases = {}

    def put(name, data, why):
        p = d / f"{name}.npy"
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            np.save(p, data)
        cases[name] = (p, why)

    put("magic", b"\x93NUMPZ" + raw[6:], r"not a \.npy file \(bad magic\)")
    put("fortran", np.asfortranarray(good), "Fortran-ordered arrays are not supported")
    put("float64", good.astype(np.float64), r"dtype '<f8'; float32 \('<f4'\) or float16")
    put("int32", good.astype(np.int32), r"dtype '<i4'; float32")
    put("bigendian", good.astype(">f4"), "unsupported dtype '>f4'")
    put("rows", np.ones((n - 1, 3), np.float32), f"{n - 1} rows; the database has {n} gene")
    put("one_d", np.ones(n, np.float32), r"1 dimension; a matrix \[%d, F\]" % n)
    put("truncated", raw[:-5], "does not match the shape in its header")
    put("no_columns", np.ones((n, 0), np.float32), "0 columns")
    nan = good.copy()
    nan[n - 1, 2] = np.nan
    put("nan", nan, f"features of 'gene': row {n - 1}, column 2 is NaN; node features must "
        "be finite")
    inf = np.ones((n, 3), np.float16)
    inf[4, 0] = np.inf
    put("inf16", inf, "row 4, column 0 is inf; node features must be finite")
    neg = good.copy()
    neg[0, 1] = -np.inf
    put("neginf", neg, "row 0, column 1 is -inf")
    return cases


def test_user_features_must_be_finite(featured):
    d, fg, fr = featured
    g = db_graph(d / "db")
    for dtype, value, what in ((np.float32, np.nan, "NaN"), (np.float16, -np.inf, "-inf")):
        bad = fg.astype(dtype)
        bad[3, 5] = value
        with pytest.raises(ValueError, match=f"features of 'gene': row 3, column 5 is {what}; "
                           "node features must be finite"):
            g.set_features({"gene": bad})
    np.save(d / "bad.npy", bad)
    with pytest.raises(ValueError, match="bad.npy.*row 3, column 5 is -inf"):
        pertload.Loader(d / "db", features={"gene": str(d / "bad.npy")})


def test_malformed_files_name_file_and_reason(small, tmp_path):
    n = len(small.genes)
    for case, (path, why) in malformed(tmp_path, n).items():
        out = tmp_path / f"db-{case}"
        r = build(small, out, f"gene={path}", check=False)
        assert r.returncode != 0, case
        assert re.search(re.escape(str(path)) + ": .*" + why, r.stderr), (case, r.stderr)
        assert not out.exists() and not list(tmp_path.glob(f"db-{case}*")), case
    ok = tmp_path / "ok.npy"
    for spec, why in ((f"cell={ok}", "features of 'cell': not a node type"),
                      (f"term={ok}", "features of 'term': the database has no term nodes"),
                      (f"gene={tmp_path / 'missing.npy'}", "cannot open")):
        r = build(small, tmp_path / "db-type", spec, check=False)
        assert r.returncode != 0 and why in r.stderr, (spec, r.stderr)
        assert not list(tmp_path.glob("db-type*"))
    r = build(small, tmp_path / "db-twice", f"gene={ok}", f"gene={ok}", check=False)
    assert "features of 'gene' given twice" in r.stderr and not (tmp_path / "db-twice").exists()


def test_gpu_features_check_runs_on_the_cpu():
    """scripts/gpu-features-check.py --device cpu: every check passes."""
    import os
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "gpu-features-check.py"
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--batches", "2"],
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "gpu-features-check: ok"
    assert sum(ln.startswith("ok   ") for ln in lines) >= 1 + 2 * 2 * 5, r.stdout
    assert not any(ln.startswith("FAIL") for ln in lines)


def test_large_matrix(small, tmp_path):
    """34 MB in one value (the size of ESM2 embeddings of 6,607 genes in
    float32): stored and read back whole."""
    n = len(small.genes)
    big = np.random.default_rng(2).standard_normal((n, 34_000_000 // 4 // n)).astype(np.float32)
    np.save(tmp_path / "big.npy", big)
    build(small, tmp_path / "db", f"gene={tmp_path / 'big.npy'}")
    got = db_graph(tmp_path / "db").node_features("gene")
    assert got.nbytes >= 33_000_000
    assert got.tobytes() == npy_data(tmp_path / "big.npy", big.nbytes)
    run_cli("verify", tmp_path / "db")
