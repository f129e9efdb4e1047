"""examples/train.py: two epochs of training on the CPU, from the synthetic
yeast-scale default, on a database with a split column and, with --gnn
(layout="pyg"), on a small database."""

import math
import re
import subprocess
import sys
from pathlib import Path

from conftest import N_SPLIT_ROWS

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
    assert "12000 samples (9600 train, 2400 test; rows 80/20), 6607 genes, 9 edge types" in out
    # It learns: the held-out error falls and the held-out correlation is positive.
    assert epochs[1][1] < epochs[0][1]
    assert epochs[1][2] > 0.1


def test_train_example_on_a_split_column(split_db):
    """A database with a split column: its train and test levels (those of
    --split-column fold with it); a column it lacks: 80/20 of the rows."""
    r = split_db.rows
    out, epochs = train(split_db.db, "--workers", 2)
    assert (f"{N_SPLIT_ROWS} samples ({len(r['split', 'train'])} train, "
            f"{len(r['split', 'test'])} test; split column 'split': 'train' and 'test')") in out
    assert all(math.isfinite(mse) for _, mse, _ in epochs)
    out, _ = train(split_db.db, "--workers", 0, "--split-column", "fold")
    assert (f"({len(r['fold', 'train'])} train, {len(r['fold', 'test'])} test; split column "
            "'fold': 'train' and 'test')") in out
    out, _ = train(split_db.db, "--workers", 0, "--split-column", "batch")
    assert f"({N_SPLIT_ROWS * 8 // 10} train, {N_SPLIT_ROWS - N_SPLIT_ROWS * 8 // 10} test; " \
        "rows 80/20)" in out


def test_train_example_gnn_on_the_pyg_layout(small):
    out, epochs = train(small.db, "--gnn", small.types[0], "--batch-size", 32,
                        "--workers", 0)
    assert "model GNNModel, layout 'pyg'" in out
    assert all(math.isfinite(mse) for _, mse, _ in epochs)
