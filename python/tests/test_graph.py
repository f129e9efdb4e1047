"""The parts that need no producer: locating the library and program, the
shared graph, plan lengths, argument defaults, slot validation."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import pertload
from pertload import _lib
from pertload import batch as pbatch
from conftest import plan_batches


def test_paths_from_environment_and_generated_module(tmp_path):
    assert os.path.isfile(pertload.library_path())
    assert os.access(pertload.program_path(), os.X_OK)
    # Without the environment variables, the _paths module meson generated
    # beside the package names the library and program of its build.
    from pertload import _paths

    env = {k: v for k, v in os.environ.items() if k not in ("PERTLOAD_LIB", "PERTLOAD_BIN")}
    code = "import pertload; print(pertload.library_path()); print(pertload.program_path())"
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
    assert out == [_paths.LIBRARY, _paths.PROGRAM]
    assert os.path.isfile(out[0]) and os.access(out[1], os.X_OK)
    # The environment wins.
    env["PERTLOAD_BIN"] = str(tmp_path / "elsewhere")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout.split()
    assert out[1] == str(tmp_path / "elsewhere")


def test_graph_equals_input_files(small):
    g = pertload.Loader(small.db).graph
    assert g.gene_names == small.genes
    assert g.type_names == small.types
    assert g.label_names == small.label_names
    assert g.reaction_names == small.reactions
    assert g.metabolite_names == small.metabolites
    assert (g.n_genes, g.n_samples, g.n_labels) == (300, 300, len(small.label_names))
    assert g.has_metabolism
    for t in small.types:
        ei = g.edge_index[t]
        assert ei.dtype == np.int64 and ei.shape == small.edges[t].shape
        np.testing.assert_array_equal(ei, small.edges[t])
        assert g.n_edges[t] == ei.shape[1]
    np.testing.assert_array_equal(g.gpr, small.gpr)
    np.testing.assert_array_equal(g.rmr, small.rmr)
    assert g.rmr_stoich.dtype == np.float32
    np.testing.assert_array_equal(g.rmr_stoich, small.rmr_stoich)
    assert (g.n_gpr, g.n_rmr) == (small.gpr.shape[1], small.rmr.shape[1])
    assert (g.n_reactions, g.n_metabolites) == (len(small.reactions), len(small.metabolites))
    assert g.payload_dtype == "<f4" and g.payload_shape == (8,)


def test_graph_to_torch(small):
    g = pertload.Loader(small.db).graph
    t = g.to_torch("cpu")
    assert t["gene"]["num_nodes"] == 300
    for name in small.types:
        ei = t[("gene", name, "gene")]["edge_index"]
        assert ei.dtype == torch.int64
        assert torch.equal(ei, torch.from_numpy(small.edges[name]))
    assert torch.equal(t[("gene", "gpr", "reaction")]["edge_index"], torch.from_numpy(small.gpr))
    rmr = t[("reaction", "rmr", "metabolite")]
    assert torch.equal(rmr["edge_index"], torch.from_numpy(small.rmr))
    assert torch.equal(rmr["stoichiometry"], torch.from_numpy(small.rmr_stoich))
    assert t["reaction"]["num_nodes"] == len(small.reactions)
    assert t["metabolite"]["num_nodes"] == len(small.metabolites)


@pytest.mark.parametrize("world", [1, 2, 3, 7])
@pytest.mark.parametrize("batch_size", [1, 64, 301])
@pytest.mark.parametrize("drop_last", [False, True])
def test_len_is_the_plan_length(small, world, batch_size, drop_last):
    for rank in range(world):
        loader = pertload.Loader(small.db, batch_size=batch_size, rank=rank, world_size=world,
                                 drop_last=drop_last)
        want = plan_batches(300, 0, 0, False, rank, world, batch_size, drop_last)
        assert len(loader) == len(want)


def test_len_after_load_state_dict(small):
    loader = pertload.Loader(small.db, batch_size=32)
    assert len(loader) == 10
    sd = loader.state_dict()
    sd["batches_consumed"] = 4
    loader.load_state_dict(sd)
    assert len(loader) == 6
    loader.set_epoch(1)
    assert len(loader) == 10


def test_state_dict_checks_the_plan(small):
    loader = pertload.Loader(small.db, batch_size=32)
    sd = loader.state_dict()
    assert sd == {"epoch": 0, "seed": 0, "batches_consumed": 0, "batch_size": 32,
                  "shuffle": False, "drop_last": False, "rank": 0, "world_size": 1,
                  "n_samples": 300, "subset": None,
                  "database": "%016x" % loader.graph.db_fingerprint}
    with pytest.raises(ValueError, match="batch_size"):
        pertload.Loader(small.db, batch_size=16).load_state_dict(sd)
    with pytest.raises(ValueError, match="batches_consumed"):
        loader.load_state_dict(dict(sd, batches_consumed=11))


def test_rank_and_world_size_default_to_torchrun_environment(small, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    loader = pertload.Loader(small.db, batch_size=10)
    assert (loader.rank, loader.world_size) == (2, 3)
    assert len(loader) == 10  # ceil(300 / 3) = 100 samples
    explicit = pertload.Loader(small.db, batch_size=10, rank=0, world_size=2)
    assert (explicit.rank, explicit.world_size) == (0, 2)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    loader = pertload.Loader(small.db, batch_size=10)
    assert (loader.rank, loader.world_size) == (0, 1)
    assert len(loader) == 30


def test_bad_arguments(small, tmp_path):
    with pytest.raises(ValueError):
        pertload.Loader(small.db, rank=2, world_size=2)
    with pytest.raises(ValueError):
        pertload.Loader(small.db, batch_size=0)
    with pytest.raises(ValueError):
        pertload.Loader(small.db, dense="sparse")
    with pytest.raises(ValueError):
        pertload.Loader(small.db, ring="no/slash")
    with pytest.raises(pertload.LoaderError, match="nothing-here"):
        pertload.Loader(tmp_path / "nothing-here")


def fake_slot(arrays):
    """A slot as collate writes one: header, descriptors, 64-aligned arrays."""
    at = (64 + 240 * len(arrays) + 63) // 64 * 64
    placed = []
    for name, a in arrays:
        placed.append((name, a, at))
        at = (at + a.nbytes + 63) // 64 * 64
    buf = bytearray(at + 4096)
    pbatch.HEADER.pack_into(buf, 0, pbatch.SLOT_MAGIC, pbatch.SLOT_VERSION, len(arrays), 5, 0, 2,
                            0, at, 0, 1, 0)
    for k, (name, a, off) in enumerate(placed):
        shape = list(a.shape) + [0] * (10 - a.ndim)
        pbatch.ARRAY.pack_into(buf, 64 + 240 * k, name.encode(), a.dtype.str.encode(), a.ndim,
                               0, off, a.nbytes, *shape)
        buf[off:off + a.nbytes] = a.tobytes()
    return buf


HEADER_FIELDS = ["magic", "version", "n_arrays", "batch", "epoch", "n_samples", "dense", "used",
                 "part", "n_parts", "first"]
ARRAY_FIELDS = ["name", "dtype", "ndim", "reserved", "offset", "nbytes"]


def test_parse_slot_maps_arrays_without_copy():
    ids = np.array([7, 9], np.uint64)
    labels = np.array([[1.5], [np.nan]], np.float32)
    buf = fake_slot([("sample_id", ids), ("labels", labels)])
    head, arrays = pbatch.parse_slot(buf, len(buf))
    assert head["batch"] == 5 and head["n_samples"] == 2
    np.testing.assert_array_equal(arrays["sample_id"], ids)
    np.testing.assert_array_equal(arrays["labels"], labels)
    assert arrays["labels"].shape == (2, 1)
    # A view: writing the slot changes the array.
    off = pbatch.ARRAY.unpack_from(buf, 64)[4]
    buf[off] = 8
    assert arrays["sample_id"][0] == 8


@pytest.mark.parametrize("field,value,match", [
    ("magic", b"PLBATCH2", "bad magic"),
    ("version", 1, "layout version 1"),
    ("n_arrays", 10 ** 6, "1000000 arrays"),
    ("n_arrays", 2, "descriptors end at"),
    ("dense", 7, "unknown dense format 7"),
    ("used", 1 << 40, "bytes in use, the slot has"),
    ("n_parts", 0, "part 0 of 0"),
    ("part", 1, "part 1 of 1"),
])
def test_parse_slot_rejects_bad_headers(field, value, match):
    buf = fake_slot([("sample_id", np.zeros(2, np.uint64))])
    head = list(pbatch.HEADER.unpack_from(buf))
    head[HEADER_FIELDS.index(field)] = value
    pbatch.HEADER.pack_into(buf, 0, *head)
    with pytest.raises(pertload.LoaderError, match=match):
        pbatch.parse_slot(buf, len(buf))


@pytest.mark.parametrize("field,value,match", [
    ("offset", 1 << 20, "lies outside"),
    ("offset", 65, "not a multiple of 64"),
    ("offset", 0, "overlaps the header"),
    ("nbytes", 24, "does not make 24 bytes"),
    ("dtype", b"<c16", "unknown dtype"),
    ("ndim", 11, "11 dimensions"),
    ("name", b"x" * 128, "not NUL-terminated"),
])
def test_parse_slot_rejects_bad_descriptors(field, value, match):
    buf = fake_slot([("sample_id", np.zeros(2, np.uint64))])
    d = list(pbatch.ARRAY.unpack_from(buf, 64))
    d[ARRAY_FIELDS.index(field)] = value
    pbatch.ARRAY.pack_into(buf, 64, *d)
    with pytest.raises(pertload.LoaderError, match=match):
        pbatch.parse_slot(buf, len(buf))


def test_parse_slot_rejects_duplicate_and_overlapping_arrays():
    ids = np.zeros(2, np.uint64)
    buf = fake_slot([("sample_id", ids), ("sample_id", ids)])
    with pytest.raises(pertload.LoaderError, match="'sample_id' appears twice"):
        pbatch.parse_slot(buf, len(buf))
    buf = fake_slot([("sample_id", ids), ("row", ids)])
    d = list(pbatch.ARRAY.unpack_from(buf, 64 + 240))
    d[ARRAY_FIELDS.index("offset")] = pbatch.ARRAY.unpack_from(buf, 64)[4]
    pbatch.ARRAY.pack_into(buf, 64 + 240, *d)
    with pytest.raises(pertload.LoaderError, match="share byte"):
        pbatch.parse_slot(buf, len(buf))


def test_unpack_bits():
    rng = np.random.default_rng(1)
    dense = rng.random((3, 130)) < 0.5
    words = np.zeros((3, 3), np.uint64)
    for i, j in zip(*np.nonzero(dense)):
        words[i, j // 64] |= np.uint64(1) << np.uint64(j % 64)
    np.testing.assert_array_equal(pertload.unpack_bits(words, 130), dense)


def test_long_path_keeps_the_reason(tmp_path):
    """pl_err holds a path of PATH_MAX bytes and its reason (it held 1,024
    bytes, and the reason after a long path was lost)."""
    d = tmp_path
    while len(os.fsencode(d)) < 3800:
        d = d / ("d" * 200)
    d.mkdir(parents=True)
    with pytest.raises(pertload.LoaderError) as e:
        _lib.Database(d)
    want = f"{d}/samples.pls: No such file or directory"
    assert str(e.value).endswith(want)
def test_graph_rules_are_the_rules_file(small):
    """graph.rules (the compiled programs) evaluate as the rules' text does."""
    from conftest import bench_module, rule_holds

    rule_stack = bench_module("peers")._rule_stack
    g = pertload.Loader(small.db).graph
    assert g.reaction_rule == "gpr"
    off, code = g.rules
    assert off.shape == (g.n_reactions + 1,) and off[0] == 0 and off[-1] == len(code)
    rng = np.random.default_rng(5)
    for _ in range(20):
        gone = set(rng.choice(g.n_genes, 3, replace=False).tolist())
        names = {g.gene_names[i] for i in gone}
        for r in range(g.n_reactions):
            stack = rule_stack(code[off[r]:off[r + 1]], gone)
            assert len(stack) <= 1
            text = small.rules.get(r, "")
            assert (stack[0] if stack else True) == (rule_holds(text, names) if text else True)
