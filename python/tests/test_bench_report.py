"""`pertload bench --quick`: the whole benchmark report runs end to end.

The figures of a quick run on tiny data mean little and are not asserted;
what is checked is that every part ran, that the peer pipelines' outputs
matched pertload's (the driver aborts otherwise), that the report holds
every figure, finite and positive, in both forms, and that its figures are
there as PNG files, linked from report.md. The multi-rank part is checked
for what does not depend on timing: every rank of a job ran the same steps,
the samples/s over time add up to the samples each rank consumed, and the
budget evened out the removed positions of the steps.
"""
import json
import math
import struct
import subprocess

import numpy as np
import pytest

from pertload import program_path
from conftest import bench_module


def test_quick_report(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    run = subprocess.run([program_path(), "bench", "--quick", "--out", str(out),
                          "--work", str(work)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "outputs of the first 100 rows match pertload's" in run.stderr
    md = (out / "report.md").read_text()
    assert md == run.stdout
    r = json.loads((out / "report.json").read_text())
    for part in ("memory", "masks", "collate", "peers", "gpu"):
        for key, value in r[part].items():
            if isinstance(value, float):
                assert math.isfinite(value) and value >= 0, (part, key, value)
    assert r["peers"]["checked_rows"] == 100
    for key in ("engine_samples_per_s", "plain_merge_samples_per_s", "roaring_or_samples_per_s",
                "roaring_or_many_samples_per_s"):
        assert r["masks"][key] > 0, key
    for out_kind in ("sparse", "bits", "bool"):
        assert r["collate"][out_kind + "_samples_per_s"] > 0
        assert r["collate"][out_kind + "_memset_samples_per_s"] > 0
    for name in ("pertload", "pertload_dense", "lazy", "indices_only"):
        assert r["peers"][name + "_samples_per_s"] > 0, name
    assert r["gpu"]["h2d_bytes_per_batch"] > 0
    for plan in ("in-order", "shuffled"):
        assert r["payload"][plan]["producer_bytes_per_s"] > 0
        assert r["payload"][plan]["sequential_bytes_per_s"] > 0
        pay = r["payload"][plan]
        assert pay["rounds"] == 3
        assert 0 < pay["producer_share_least"] <= pay["producer_share_of_sequential"] \
            <= pay["producer_share_most"]
    genes = [s["genes_per_sample"] for s in r["scaling_genes"]]
    assert genes == [1, 2, 3, 8, 32]
    removed = [s["removed_per_sample"] for s in r["scaling_genes"]]
    assert removed == sorted(removed) and removed[0] > 0
    edges = [s["edges"] for s in r["scaling_graph"]]
    assert len(edges) == 4 and edges == sorted(edges) and edges[0] > 0
    for row in ("masks engine, sparse, one core", "masks + collation, dense bits",
                "ring into Python", "lazy mask pipeline", "indices-only pipeline",
                "host-to-device bytes", "payload streaming, in-order plan",
                "database: graph part", "Scaling with the deleted genes",
                "Scaling with the graph"):
        assert row in md, row
    # The table's figures are the JSON's (a heading is printed whatever the
    # run measured: its value is what tells that the part ran).
    eng, p, g = r["masks"]["engine_samples_per_s"], r["peers"], r["gpu"]
    for want in (f"| masks engine, sparse, one core | {eng:,.0f} samples/s "
                 f"({1e6 / eng:.2f} us/sample) |",
                 f"| masks + collation, sparse, one core | "
                 f"{r['collate']['sparse_samples_per_s']:,.0f} samples/s, ",
                 f"worker threads | {p['pertload_samples_per_s']:,.0f} samples/s "
                 f"({p['pertload_samples']:,} samples in ",
                 f"| {g['h2d_bytes_per_batch'] / 1e6:.3f} MB mean "
                 f"({g['h2d_bytes_least'] / 1e6:.3f} - {g['h2d_bytes_most'] / 1e6:.3f}) |"):
        assert want in md, want
    assert p["pertload_samples"] > 0 and g["h2d_bytes_least"] <= g["h2d_bytes_per_batch"] \
        <= g["h2d_bytes_most"], g
    assert r["figures"] == ["scaling.png", "ranks.png", "step-spread.png"]
    for name in r["figures"]:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert data[12:16] == b"IHDR", name
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 600 and height >= 250, (name, width, height)
        assert len(data) > 20000, (name, len(data))
        assert data[-8:-4] == b"IEND", name
        assert f"]({name})" in md, name
    _check_ranks(r["ranks"])


def test_quick_human_preset_beside_yeast(tmp_path):
    """`pertload bench --preset human --quick`: both presets measured in one
    run (build, database, masks engine, ring, serve start), human with its
    4.81 times the yeast edges, every figure finite and positive and in the
    table; the build's peak memory is the build's alone."""
    out = tmp_path / "out"
    run = subprocess.run([program_path(), "bench", "--preset", "human", "--quick", "--out",
                          str(out), "--work", str(tmp_path / "work")], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    md = (out / "report.md").read_text()
    assert md == run.stdout
    r = json.loads((out / "report.json").read_text())["presets"]
    y, h = r["yeast"], r["human"]
    assert h["edges"] / y["edges"] == pytest.approx(12e6 / 2495908, rel=1e-3)
    for p in (y, h):
        assert p["build"]["samples"] == 20000
        for key in ("engine_samples_per_s", "removed_per_sample", "ring_start_seconds",
                    "ring_samples_per_s", "ring_removed_per_sample"):
            assert math.isfinite(p[key]) and p[key] > 0, key
        assert p["build"]["build_seconds"] > 0 and p["build"]["build_peak_rss_bytes"] > 0
        assert p["build"]["files"]["data.mdb"] > 0
    assert h["removed_per_sample"] > y["removed_per_sample"]
    # The build's own peak (about 25 MiB here), not the driver's memory (torch
    # imported: about 250 MiB) that a child holds until its exec.
    assert y["build"]["build_peak_rss_bytes"] < 128 * 2**20, y["build"]
    for want in (f"| edges | {y['edges']:,} | {h['edges']:,} | 4.81 |",
                 f"| masks engine, one core | {y['engine_samples_per_s']:,.0f} samples/s | "
                 f"{h['engine_samples_per_s']:,.0f} samples/s |",
                 "| build peak memory |", "| serve start (Loader() to the first batch) |",
                 "| ring into Python, 2 worker threads |"):
        assert want in md, want


def _check_ranks(k):
    """The multi-rank run of the quick report (2,400 samples, 4 ranks)."""
    assert k["world_size"] == 4 and k["samples"] == 2400
    assert k["budget"] == f"removed={round(k['fixed']['removed_mean'])}"
    for job in ("fixed", "budgeted", "fixed_alone", "budgeted_alone"):
        s = k[job]
        steps = s["steps"]
        assert len(steps) == 4 and len(set(steps)) == 1 and steps[0] >= 10, steps
        bins = len(s["bin_edges"]) - 1
        assert bins == 8 and s["bin_edges"][-1] == s["seconds"] > 0
        consumed = 0
        for rate, stall in zip(s["rate"], s["stall"]):
            assert len(rate) == len(stall) == bins
            assert all(x >= 0 for x in rate) and all(0 <= x <= 1 for x in stall)
            consumed += sum(x * s["seconds"] / bins for x in rate)
        # Each sample once (the budgeted plan may repeat a batch as padding).
        if job.startswith("fixed"):
            assert consumed == pytest.approx(2400, rel=1e-6)
        else:
            assert 2400 <= consumed + 1e-6 and consumed <= 2400 + 4 * 256
        for col in ("removed", "samples", "pyg_cpu", "pyg_wall", "embed_cpu", "embed_wall"):
            assert len(s[col + "_spread"]) == steps[0]
            assert 0 <= s[col + "_spread_median"] <= s[col + "_spread_p90"], (job, col)
        assert len(s["step_rows"]) == 4 and len(s["pyg_types"]) == 2
    # The ranks see the same batches at once and one after another.
    for job in ("fixed", "budgeted"):
        for a, b in zip(k[job]["step_rows"], k[job + "_alone"]["step_rows"]):
            assert [(x["samples"], x["removed"]) for x in a] == \
                [(x["samples"], x["removed"]) for x in b]
    assert k["fixed"]["samples_spread_p90"] == 0  # fixed batches of 64 (600 = 9 * 64 + 24)
    # The budget evens out what the steps remove (a property of the batches).
    assert k["budgeted"]["removed_spread_median"] < k["fixed"]["removed_spread_median"] / 2


def _peers():
    """bench/peers.py of this source tree."""
    return bench_module("peers")


def test_lazy_peer_matches_oracle(small):
    """The lazy peer pipeline computes the masks DESIGN section 2 defines,
    checked against the brute-force oracle, so its timing is of real work."""
    peers = _peers()
    graph, samples, lists = peers.rows_of(str(small.db), small.n, 64, small.n)
    lazy = peers.Lazy(graph)
    assert len(samples) == small.n
    for row in range(small.n):
        masks = lazy.sample(samples[row][0])
        want = small.expected(row)
        for key, pos in want.items():
            k = key[6:] if key.startswith("edges/") else key
            got = np.flatnonzero(~masks[k].numpy())
            assert np.array_equal(got, pos), (row, key)
        idx, ptr, labels = peers.indices_batch([samples[row]])
        assert np.array_equal(idx.numpy(), want["gene"])
        assert np.array_equal(labels.numpy()[0], small.labels[row], equal_nan=True)
    # A collated batch concatenates each key's masks.
    masks, labels = lazy.batch(samples[:5])
    assert masks["gene"].shape == (5 * len(small.genes),)
    assert labels.shape == (5, len(small.label_names))


def test_peer_check_catches_a_difference(small):
    """check_peers aborts the benchmark when a peer's output differs."""
    peers = _peers()
    graph, samples, lists = peers.rows_of(str(small.db), 50, 64, 50)
    lazy = peers.Lazy(graph)
    peers.check_peers(lazy, samples, lists)
    row = next(r for r, d in enumerate(lists) if any(len(v) for k, v in d.items() if k != "gene"))
    key = next(k for k, v in lists[row].items() if k != "gene" and len(v))
    lists[row][key] = lists[row][key][1:]
    with pytest.raises(SystemExit, match=f"row {row}, {key}"):
        peers.check_peers(lazy, samples, lists)
