"""bench/pyg_layout.py, bench/model_layouts.py and bench/layout_host.py run
end to end on the small database: their shared options (DB, --batch-size,
--batches, --types, pyg_layout.options) and batches
(pyg_layout.first_batches), and what each adds."""

import os
import subprocess
import sys

import pytest

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


def test_layout_host_bench_times_both_layouts_with_and_without_launches(small, pyg_dir):
    r = bench("layout_host.py", small.db, "--batch-size", 8, "--batches", 2,
              "--types", "physical", "--repeat", 1, pythonpath=[pyg_dir])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "2 batches of 8, 1 edge types, on cpu", r.stdout
    for layout, line in zip(("pyg", "lazy"), lines[1:]):
        assert line.startswith(f"layout={layout!r}: ") and "us a batch with the kernels" in line
        assert "with their launches left out (the host's share " in line, r.stdout


def test_layout_benches_refuse_an_option_they_do_not_share(small):
    r = bench("pyg_layout.py", small.db, "--epoch-batches", 1)
    assert r.returncode == 2 and "unrecognized arguments: --epoch-batches 1" in r.stderr



# Each case with options that keep the old run short where it ran at all.
SHORT = {"pyg_layout.py": ["--types", "physical"],
         "model_layouts.py": ["--types", "physical", "--no-per-sample", "--epoch-batches", 0]}


@pytest.mark.parametrize("script, args, why", [
    ("pyg_layout.py", ["--batches", 0], "argument --batches: must be at least 1, not 0"),
    ("pyg_layout.py", ["--batches", -2], "argument --batches: must be at least 1, not -2"),
    ("pyg_layout.py", ["--batches", "x"], "argument --batches: 'x' is not an integer"),
    ("pyg_layout.py", ["--batch-size", 0], "argument --batch-size: must be at least 1, not 0"),
    ("pyg_layout.py", ["--python-batches", -1],
     "argument --python-batches: must be at least 0, not -1"),
    ("model_layouts.py", ["--batches", -1], "argument --batches: must be at least 0, not -1"),
    ("model_layouts.py", ["--epoch-batches", -1],
     "argument --epoch-batches: must be at least 0, not -1"),
    ("model_layouts.py", ["--switch-interval", "nan"],
     "argument --switch-interval: must be at least 0, not nan"),
])
def test_layout_benches_refuse_counts_they_cannot_time(small, pyg_dir, script, args, why):
    """A count under what a bench divides by or loops over is a usage error
    (exit 2) naming the option, before any batch is read: --batches 0 of
    pyg_layout.py divided by zero, a negative --batches read the whole
    epoch, a negative --epoch-batches failed in the step's floor."""
    r = bench(script, small.db, *SHORT[script], *args, pythonpath=[pyg_dir])
    assert r.returncode == 2 and why in r.stderr, (r.returncode, r.stderr[-2000:])
