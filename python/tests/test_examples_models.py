"""examples/pyg_train.py (HeteroConv over layout="pyg", real PyG 2.4.0) and
examples/lazy_train.py (masked message passing over layout="lazy"): two
small epochs each through pertload.DataModule, in worker processes for one
of them."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EPOCH = re.compile(r"^epoch (\d): train loss \(MSE\) (\S+), r \S+; held-out MSE (\S+), "
                   r"r \S+ \(\S+ s, data stall (\d+)%\)$")


def run(script, *args, pyg_dir=None):
    env = dict(os.environ)
    if pyg_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pyg_dir), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    epochs = [m for m in map(EPOCH.match, r.stdout.splitlines()) if m]
    assert [int(m.group(1)) for m in epochs] == [0, 1], r.stdout
    for m in epochs:
        assert math.isfinite(float(m.group(2))) and math.isfinite(float(m.group(3))), r.stdout
        assert 0 <= int(m.group(4)) <= 100
    return r.stdout


def test_pyg_heteroconv_example(small, pyg_dir):
    out = run("pyg_train.py", small.db, "--epochs", 2, "--workers", 2, pyg_dir=pyg_dir)
    assert f"{small.n} samples, {len(small.genes)} genes, {len(small.types) + 2} edge " \
        "types; HeteroConv(SAGEConv) x 2, layout 'pyg'" in out


def test_pyg_example_needs_torch_geometric(small):
    r = subprocess.run([sys.executable, str(EXAMPLES / "pyg_train.py"), str(small.db)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "No module named 'torch_geometric'" in r.stderr


def test_lazy_masked_example(small, pyg_dir):
    out = run("lazy_train.py", small.db, "--epochs", 2, "--workers", 0, pyg_dir=pyg_dir)
    assert "masked message passing, layout 'lazy'" in out
    run("lazy_train.py", small.db, "--epochs", 2, "--workers", 0)  # without PyG: the mapping
