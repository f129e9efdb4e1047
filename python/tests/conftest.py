"""Fixtures: small synthetic databases, their input files, and oracles that
recompute what a batch must hold from those files alone (DESIGN section 2,
loader/plan.h), independently of the library."""

import json
import math
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import pertload

SHM = Path("/dev/shm")
# PyTorch Geometric 2.4.0 as published (shared/deps beside the checkout).
# PERTLOAD_PYG_TARBALL names another copy (the GPU check's bundle carries one).
PYG_TARBALL = Path(os.environ.get("PERTLOAD_PYG_TARBALL") or
                   Path(__file__).resolve().parents[3] / "shared" / "deps" /
                   "torch_geometric-2.4.0.tar.gz")

# The longest a test lets the detection of a dead peer or the report of a
# failure take: "at once" next to the 30 s timeouts it must beat, with a margin
# that holds on a machine at load 15 on 2 cores (the latency itself is a
# figure for the bench, not for a test).
DETECT_S = 15.0


def pertload_bin():
    return pertload.program_path()


def run_cli(*args, **kw):
    return subprocess.run([pertload_bin(), *map(str, args)], check=True, capture_output=True,
                          text=True, **kw)


def db_graph(db):
    """The Graph of database `db`, read without starting a serve."""
    database = pertload._lib.Database(db)
    try:
        return pertload.Graph(database)
    finally:
        database.close()


class Inputs:
    """A database built from `pertload synth` output, and that output read back."""

    def __init__(self, root, samples, payload_dim):
        self.dir = root / "inputs"
        self.db = root / "db"
        run_cli("synth", self.dir, "--genes", 300, "--samples", samples, "--scale", 0.02,
                "--seed", 7, "--payload-dim", payload_dim, "--quiet")
        args = (self.dir / "build-args.txt").read_text().splitlines()
        run_cli("build", "-o", self.db, *args)
        self.build_args = args
        self.genes = (self.dir / "genes.txt").read_text().split()
        gi = {g: i for i, g in enumerate(self.genes)}
        self.gene_index = gi
        self.types, self.edges = [], {}
        for a in args:
            if "=" in a and a.split("=", 1)[1].endswith(".tsv") and "/edges/" in a:
                name, path = a.split("=", 1)
                self.types.append(name)
                rows = [ln.split() for ln in Path(path).read_text().splitlines()
                        if ln.strip() and not ln.startswith("#")]
                self.edges[name] = np.array([[gi[r[0]] for r in rows], [gi[r[1]] for r in rows]],
                                            dtype=np.int64).reshape(2, -1)
        self.reactions = (self.dir / "reactions.txt").read_text().split()
        ri = {r: i for i, r in enumerate(self.reactions)}
        gpr = [ln.split() for ln in (self.dir / "gpr.tsv").read_text().splitlines() if ln.strip()]
        self.gpr = np.array([[gi[g] for g, _ in gpr], [ri[r] for _, r in gpr]], np.int64)
        # rules.tsv (`reaction<TAB>rule`, a header line first) gives the
        # rules the database removes reactions by (rule gpr).
        self.rules = {}
        for ln in (self.dir / "rules.tsv").read_text().splitlines()[1:]:
            r, rule = ln.split("\t")
            self.rules[ri[r]] = rule
        rmr = [ln.split() for ln in (self.dir / "rmr.tsv").read_text().splitlines() if ln.strip()]
        self.metabolites = list(dict.fromkeys(m for _, m, _ in rmr))
        mi = {m: i for i, m in enumerate(self.metabolites)}
        self.rmr = np.array([[ri[r] for r, _, _ in rmr], [mi[m] for _, m, _ in rmr]], np.int64)
        self.rmr_stoich = np.array([float(s) for _, _, s in rmr], np.float32)
        lines = (self.dir / "samples.tsv").read_text().splitlines()
        head = lines[0].split("\t")
        self.label_names = [h for h in head if h not in ("id", "genes")]
        self.sample_genes, self.ids, labels = [], [], []
        for ln in lines[1:]:
            f = dict(zip(head, ln.split("\t")))
            self.sample_genes.append(sorted({gi[g] for g in f["genes"].split(";") if g}))
            self.ids.append(int(f["id"]))
            labels.append([float(f[n]) if f[n] not in ("", "NA", "NaN", "nan") else math.nan
                           for n in self.label_names])
        self.labels = np.array(labels, np.float32)
        self.payload = np.load(self.dir / "payload.npy") if payload_dim else None
        self.n = len(self.ids)

    def expected(self, row):
        """Brute-force O(E) removed positions of sample `row` (DESIGN section 2):
        {"gene": P, "edges/<t>": ..., "gpr", "reaction", "rmr"}."""
        P = np.array(self.sample_genes[row], np.int64)
        out = {"gene": P}
        for t in self.types:
            src, dst = self.edges[t]
            out["edges/" + t] = np.flatnonzero(np.isin(src, P) | np.isin(dst, P))
        gpr_removed = np.isin(self.gpr[0], P)
        out["gpr"] = np.flatnonzero(gpr_removed)
        deleted = {self.genes[g] for g in P}
        out["reaction"] = np.array([r for r, rule in sorted(self.rules.items())
                                    if rule and not rule_holds(rule, deleted)], np.int64)
        out["rmr"] = np.flatnonzero(np.isin(self.rmr[0], out["reaction"]))
        return out

    def masks_json(self, row):
        """`pertload masks DB --row I --json`."""
        return json.loads(run_cli("masks", self.db, "--row", row, "--json").stdout)


@pytest.fixture(scope="session")
def small(tmp_path_factory):
    """300 samples with an 8-float payload."""
    return Inputs(tmp_path_factory.mktemp("small"), 300, 8)


@pytest.fixture(scope="session")
def medium(tmp_path_factory):
    """2000 samples with an 8-float payload."""
    return Inputs(tmp_path_factory.mktemp("medium"), 2000, 8)


N_SPLIT_ROWS = 2500
SPLIT = ("train", "val", "test")
FOLD = ("train", "validation", "test")


class SplitDb:
    """A database built by `pertload build --recipe` from a sample table with
    text columns split (train/val/test) and fold (train/validation/test),
    stored as categories, and rows[(column, level)]: the rows of each level
    read from the table itself."""

    def __init__(self, root):
        rnd = random.Random(5)
        genes = [f"G{i:03d}" for i in range(60)]
        root.mkdir()
        (root / "genes.txt").write_text("".join(g + "\n" for g in genes))
        (root / "phys.tsv").write_text("".join(f"{rnd.choice(genes)}\t{rnd.choice(genes)}\n"
                                               for _ in range(150)))
        lines = ["genes,fitness,split,fold"]
        for i in range(N_SPLIT_ROWS):
            g = ";".join(rnd.sample(genes, rnd.randint(1, 3)))
            s = SPLIT[i] if i < 3 else rnd.choice(("train",) * 7 + ("val",) * 2 + ("test",))
            f = FOLD[i] if i < 3 else rnd.choice(FOLD)
            lines.append(f"{g},{rnd.random():.3f},{s},{f}")
            if i == N_SPLIT_ROWS // 3:  # dropped at build (unknown gene); its level is kept
                lines.append("NOPE,1,holdout,test")
        (root / "s.csv").write_text("\n".join(lines) + "\n")
        (root / "recipe.yaml").write_text(
            "version: 1\ngenes: {file: genes.txt}\nedges:\n"
            "  - {name: physical, format: delim, file: phys.tsv, source: 1, target: 2}\n"
            "samples: {format: table, file: s.csv, sep: ',', categories: [split, fold]}\n")
        self.db = root / "db"
        run_cli("build", "--recipe", root / "recipe.yaml", "-o", self.db, "--quiet")
        # the table read back: the database's rows are its kept lines in order
        head, *body = (root / "s.csv").read_text().splitlines()
        cols = head.split(",")
        kept = [dict(zip(cols, ln.split(","))) for ln in body if not ln.startswith("NOPE,")]
        assert len(kept) == N_SPLIT_ROWS
        self.rows = {(c, lv): [r for r, f in enumerate(kept) if f[c] == lv]
                     for c, levels in (("split", SPLIT), ("fold", FOLD)) for lv in levels}
        self.fitness = np.array([float(f["fitness"]) for f in kept], np.float32)


@pytest.fixture(scope="session")
def split_db(tmp_path_factory):
    """2500 samples of a recipe build with text columns split and fold."""
    return SplitDb(tmp_path_factory.mktemp("split") / "in")


def bench_module(name):
    """bench/NAME.py of this source tree, imported."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / (name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rule_holds(rule, deleted):
    """A gene-reaction rule with the genes of `deleted` false and every other
    true, evaluated by Python itself (as COBRApy does): `and` binds tighter
    than `or`."""
    text = rule.replace("(", " ( ").replace(")", " ) ")
    words = []
    for w in text.split():
        if w.lower() in ("and", "or") or w in "()":
            words.append(w.lower())
        else:
            words.append(str(w not in deleted))
    return eval(" ".join(words), {"__builtins__": {}})
KINDS = ("gpr", "reaction", "rmr")


def sample_lists(batch, i):
    """Sample i of a batch as {"gene": P, "edges/<t>": ..., "gpr", ...}."""
    def cut(pos, ptr):
        return pos[ptr[i]:ptr[i + 1]]

    out = {"gene": cut(batch.perturbation_indices, batch.perturbation_ptr)}
    for t, (pos, ptr) in batch.removed.items():
        out["edges/" + t] = cut(pos, ptr)
    for k in KINDS:
        out[k] = cut(*getattr(batch, k))
    return out


def assert_lists_equal(got, want, where):
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"{where}: {k}")


def expected_masks(inputs, batch):
    """Dense kept-masks of a batch from the brute-force oracle, by PyG key."""
    n = {"gene": len(inputs.genes), "gpr": inputs.gpr.shape[1],
         "reaction": len(inputs.reactions), "rmr": inputs.rmr.shape[1]}
    keys = {"gene": "gene", "gpr": ("gene", "gpr", "reaction"), "reaction": "reaction",
            "rmr": ("reaction", "rmr", "metabolite")}
    for t in inputs.types:
        n["edges/" + t] = inputs.edges[t].shape[1]
        keys["edges/" + t] = ("gene", t, "gene")
    out = {key: np.ones((len(batch), n[kind]), bool) for kind, key in keys.items()}
    for i, row in enumerate(batch.row.tolist()):
        for kind, removed in inputs.expected(row).items():
            out[keys[kind]][i, removed] = False
    return out


def splitmix64(s):
    M = (1 << 64) - 1
    s = (s + 0x9E3779B97F4A7C15) & M
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return s, z ^ (z >> 31)


def plan_batches(n, seed, epoch, shuffle, rank, world, batch_size, drop_last):
    """The batches (lists of rows) of one rank's epoch, re-derived from the
    algorithm documented in loader/plan.h."""
    order = list(range(n))
    if shuffle:
        s = (seed + epoch * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
        for i in range(n - 1, 0, -1):
            s, x = splitmix64(s)
            j = (x * (i + 1)) >> 64
            order[i], order[j] = order[j], order[i]
    m = n // world if drop_last else -(-n // world)
    mine = [order[(rank + k * world) % n] for k in range(m)]
    batches = [mine[i:i + batch_size] for i in range(0, m, batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    return batches


def fisher_yates(a, s):
    """Fisher-Yates of list a from the top (step 1 of loader/plan.h) drawing
    from splitmix64 state s; returns the state after."""
    for i in range(len(a) - 1, 0, -1):
        s, x = splitmix64(s)
        j = (x * (i + 1)) >> 64
        a[i], a[j] = a[j], a[i]
    return s


def block_plan_batches(n, seed, epoch, rank, world, batch_size, drop_last, block_rows=None,
                       block_window=None):
    """The batches of one rank's epoch in the block-shuffled order (steps
    1b-3b of loader/plan.h), re-derived independently of the library."""
    K = block_rows or 16
    w = block_window or -(-batch_size // K)
    nb = -(-n // K)
    s = (seed + epoch * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
    blocks = list(range(nb))
    s = fisher_yates(blocks, s)
    windows = [blocks[i:i + w] for i in range(0, nb, w)]
    order = []
    for win in windows:
        rows = [r for b in win for r in range(b * K, min(n, (b + 1) * K))]
        s = fisher_yates(rows, s)
        order += rows
    g = batch_size * world
    steps = n // g if drop_last else -(-n // g)
    return [sorted(order[((k * world + rank) * batch_size + i) % n] for i in range(batch_size))
            for k in range(steps)]


def unique(tag):
    """A name for something machine-wide (a ring, a job id) that no other test
    run on this machine uses: the tag, this process's pid and random hex."""
    return f"{tag}-{os.getpid()}-{os.urandom(4).hex()}"


def rings():
    """Names of the ring segments in /dev/shm."""
    return {p.name for p in SHM.glob("pertload-*")}


def reaped(pid):
    """True when `pid` is neither running nor a zombie (it was waited for)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test leaves no ring segment of this process behind."""
    mine = f"pertload-py{os.getpid()}-"
    yield
    left = [r for r in rings() if r.startswith(mine)]
    assert not left, f"ring segments left in /dev/shm: {left}"


@pytest.fixture(scope="session")
def pyg_dir(tmp_path_factory):
    """PyTorch Geometric 2.4.0 unpacked into the test run's tmp dir (the
    tests that use it fail, not skip, without it)."""
    if not PYG_TARBALL.is_file():
        pytest.fail(f"PyTorch Geometric 2.4.0 is missing: {PYG_TARBALL} (shared/deps "
                    "beside the checkout)")
    d = tmp_path_factory.mktemp("pyg")
    with tarfile.open(PYG_TARBALL) as t:
        t.extractall(d)
    return d


_PYG_MODULES = {}


@pytest.fixture(scope="module")
def torch_geometric(pyg_dir):
    """torch_geometric importable for one test module, then hidden again
    (the other modules see pertload without PyG). Its modules are kept
    aside and put back, not imported twice: PyG registers names with torch
    once per process."""
    sys.path.insert(0, str(pyg_dir))
    sys.modules.update(_PYG_MODULES)
    import torch_geometric as tg

    assert tg.__version__ == "2.4.0" and Path(tg.__file__).is_relative_to(pyg_dir)
    yield tg
    sys.path.remove(str(pyg_dir))
    for name in [m for m in sys.modules if m.split(".")[0] == "torch_geometric"]:
        _PYG_MODULES[name] = sys.modules.pop(name)


@pytest.fixture(scope="module")
def without_pyg():
    """torch_geometric not importable for one test module, also where it is
    installed: the module checks the mapping pertload gives without PyG."""
    saved = {m: sys.modules.pop(m) for m in list(sys.modules)
             if m.split(".")[0] == "torch_geometric"}
    sys.modules["torch_geometric"] = None  # import raises ImportError
    yield
    del sys.modules["torch_geometric"]
    sys.modules.update(saved)
