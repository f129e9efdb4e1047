"""bench/pyg_layout.py and bench/model_layouts.py run end to end on the
small database: their shared options (DB, --batch-size, --batches, --types,
pyg_layout.options) and batches (pyg_layout.first_batches), and what each
adds."""

import os
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")


def bench(script, *args, pythonpath=()):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, os.path.join(BENCH, script), *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=600)


def test_pyg_layout_bench_runs_on_the_types_asked(small):
    r = bench("pyg_layout.py", small.db, "--batch-size", 32, "--batches", 2,
              "--types", "physical", "--python-batches", 1)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("2 batches of 32, 1 edge types"), r.stdout
    assert "Python loop over samples" in r.stdout


def test_model_layouts_bench_runs_with_the_shared_options(small, pyg_dir):
    r = bench("model_layouts.py", small.db, "--batch-size", 16, "--batches", 1,
              "--types", "physical", "--epoch-batches", 0, "--no-per-sample",
              pythonpath=[pyg_dir])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("1 batches of 16, 1 edge types"), r.stdout
    assert "| pyg |" in r.stdout and "| lazy |" in r.stdout


def test_layout_benches_refuse_an_option_they_do_not_share(small):
    r = bench("pyg_layout.py", small.db, "--epoch-batches", 1)
    assert r.returncode == 2 and "unrecognized arguments: --epoch-batches 1" in r.stderr
