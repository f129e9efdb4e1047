"""examples/train.py: two epochs of training on the CPU, from the synthetic
yeast-scale default and, with --gnn (layout="pyg"), on a small database."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train.py"
EPOCH = re.compile(r"^epoch (\d): train loss \(MSE\) (\S+), r \S+; held-out MSE (\S+), "
                   r"r (\S+) \(")


def train(*args, timeout=300):
    r = subprocess.run([sys.executable, str(EXAMPLE), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    epochs = [EPOCH.match(ln) for ln in r.stdout.splitlines()]
    epochs = [m for m in epochs if m]
    assert [int(m.group(1)) for m in epochs] == [0, 1], r.stdout
    return r.stdout, [(float(m.group(2)), float(m.group(3)), float(m.group(4)))
                      for m in epochs]


def test_train_example_on_the_synthetic_default():
    out, epochs = train("--samples", 12000, "--workers", 2)
    assert "12000 samples (9600 train, 2400 test), 6607 genes, 9 edge types" in out
    # It learns: the held-out error falls and the held-out correlation is positive.
    assert epochs[1][1] < epochs[0][1]
    assert epochs[1][2] > 0.1


def test_train_example_gnn_on_the_pyg_layout(small):
    out, epochs = train(small.db, "--gnn", small.types[0], "--batch-size", 32,
                        "--workers", 0)
    assert "model GNNModel, layout 'pyg'" in out
    assert all(mse == mse for _, mse, _ in epochs)  # finite, not NaN
