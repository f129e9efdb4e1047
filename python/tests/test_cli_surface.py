"""The command line's text outputs against oracles: `pertload masks` without
--json (the summary per list) equals the brute-force masks of the input files
and the JSON; `masks --all` (with --khop too) reports the mean the oracle
gives; every command's --help and the program's --version; `serve --io`
and `--order rows` give the batches of the default; `inspect --recipe` of a
database built without one; `top`'s continuous mode and its MASTER_ADDR grouping; `build
--reaction-rule any` and `--drop-unknown-genes` on the command line; `bench
khop` against `masks --khop` and `bench memory --table` against its JSON; `bench
gpu --depth` against the buffers it runs with;
`top` and a dead producer's segment; `build --evidence` and
`--exclude-evidence` against the GAF rows they keep; `masks` of an ontology
database (text, --all, --khop, --genes) against its JSON."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import pertload
from conftest import pertload_bin, run_cli, unique

COMMANDS = ("synth", "build", "masks", "inspect", "verify", "serve", "top", "clean", "bench",
            "recipe")


def lists_of(inputs):
    """(name in the text, key of Inputs.expected, positions in the list)."""
    out = [(t, "edges/" + t, inputs.edges[t].shape[1]) for t in inputs.types]
    return out + [("gpr", "gpr", inputs.gpr.shape[1]),
                  ("reaction", "reaction", len(inputs.reactions)),
                  ("rmr", "rmr", inputs.rmr.shape[1])]


@pytest.mark.parametrize("row", [0, 3, 117])
def test_masks_text_equals_the_oracle_and_the_json(small, row):
    text = run_cli("masks", small.db, "--row", row).stdout
    js = small.masks_json(row)
    want = small.expected(row)
    head = text.splitlines()
    assert head[0] == f"row {row}: id {small.ids[row]}", text
    genes = small.sample_genes[row]
    listed = ", ".join(f"{small.genes[g]} ({g})" for g in genes)
    assert f"deleted genes: {len(genes)}" + (f" - {listed}" if genes else "") in text, text
    assert js["perturbation_indices"] == genes
    for name, key, total in lists_of(small):
        m = re.search(rf"^  {re.escape(name)} +(\d+) of (\d+)$", text, re.M)
        assert m, (name, text)
        got = js["edges"][name] if key.startswith("edges/") else js[key]
        assert int(m.group(1)) == len(want[key]) == len(got), (name, m.group(0))
        assert int(m.group(2)) == total, (name, m.group(0))
    edges = sum(len(want["edges/" + t]) for t in small.types)
    m = re.search(r"^  \(all edge types\) +(\d+) of (\d+)$", text, re.M)
    assert m and int(m.group(1)) == edges, text
    assert int(m.group(2)) == sum(small.edges[t].shape[1] for t in small.types), text
    for name, value in js["labels"].items():
        assert f"{name}={value}" in text or value is None, (name, value, text)


def test_masks_khop_text_equals_the_json(small):
    text = run_cli("masks", small.db, "--row", 5, "--khop", 1).stdout
    k = json.loads(run_cli("masks", small.db, "--row", 5, "--khop", 1, "--json").stdout)["khop"]
    assert f"1-hop neighbourhood: {len(k['genes'])} genes" in text, text
    # The genes within one hop of the deleted ones, from the edge lists.
    P = set(small.sample_genes[5])
    near = set(P)
    for t in small.types:
        src, dst = small.edges[t]
        near |= {int(b) for a, b in zip(src, dst) if a in P} | \
            {int(a) for a, b in zip(src, dst) if b in P}
    assert k["capped"] == 0 and sorted(k["genes"]) == sorted(near)
    for t, e in k["edges"].items():
        assert re.search(rf"^  {re.escape(t)} +{len(e)}$", text, re.M), (t, text)


def test_masks_all_reports_the_oracles_mean(small):
    out = run_cli("masks", small.db, "--all").stdout
    m = re.search(r"masks of (\d+) samples \((\d+) lists each\) in [\d.]+ s on one core: "
                  r"[\d.]+ samples/s, (\d+) removed positions per sample \(digest ([0-9a-f]+)\)",
                  out)
    assert m, out
    removed = [sum(len(v) for k, v in small.expected(r).items() if k != "gene")
               for r in range(small.n)]
    assert int(m.group(1)) == small.n and int(m.group(2)) == len(lists_of(small))
    assert int(m.group(3)) == round(np.mean(removed)), (out, np.mean(removed))
    again = run_cli("masks", small.db, "--all", "--khop", 1).stdout
    assert m.group(4) in again, "the same masks, the same digest"
    k = re.search(r"with the 1-hop neighbourhoods: (\d+) genes and (\d+) edges per sample, "
                  r"(\d+) capped", again)
    assert k, again
    rows = [json.loads(run_cli("masks", small.db, "--row", r, "--khop", 1, "--json").stdout)
            ["khop"] for r in range(0, small.n, 30)]
    assert int(k.group(3)) == 0 and all(not r["capped"] for r in rows)
    # The mean over every row lies within the sampled rows' range.
    genes = [len(r["genes"]) for r in rows]
    assert min(genes) - 1 <= int(k.group(1)) <= max(genes) + 1 or len(rows) < small.n


def test_every_command_has_help_and_the_program_a_version():
    top = subprocess.run([pertload_bin(), "--help"], capture_output=True, text=True, timeout=60)
    assert top.returncode == 0
    listed = re.findall(r"^  (\w+) ", top.stdout.split("commands:")[1], re.M)
    assert sorted(listed) == sorted(COMMANDS), top.stdout
    for cmd in COMMANDS:
        r = subprocess.run([pertload_bin(), cmd, "--help"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, (cmd, r.stderr)
        assert r.stdout.startswith(f"usage: pertload {cmd}"), (cmd, r.stdout[:200])
    v = subprocess.run([pertload_bin(), "--version"], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0 and re.fullmatch(r"pertload \d+\.\d+\.\d+\n", v.stdout), v.stdout
    assert top.stdout.startswith(v.stdout.strip() + ": "), (v.stdout, top.stdout[:80])


WITH_OPTS = """#!/bin/sh
cmd=$1
shift
exec "$PERTLOAD_REAL_BIN" "$cmd" $PERTLOAD_TEST_OPTS "$@"
"""


@pytest.mark.parametrize("opts", ["--io auto", "--io uring", "--io pread", "--order rows"])
def test_serve_io_modes_give_the_batches_of_the_default(small, tmp_path, monkeypatch, opts):
    """`serve --io MODE` and `serve --order rows` (the Loader's serve given
    the options by a wrapper): every batch's rows and payload equal those of
    the default serve."""
    def batches():
        loader = pertload.Loader(small.db, batch_size=32, shuffle=True, seed=3,
                                 ring=unique("io"))
        return [(b.row.tolist(), np.array(b.payload).tolist()) for b in loader]

    default = batches()
    wrapper = tmp_path / "serve-with-opts"
    wrapper.write_text(WITH_OPTS)
    wrapper.chmod(0o755)
    monkeypatch.setenv("PERTLOAD_REAL_BIN", pertload_bin())
    monkeypatch.setenv("PERTLOAD_BIN", str(wrapper))
    monkeypatch.setenv("PERTLOAD_TEST_OPTS", opts)
    got = batches()
    assert len(got) == len(default) == -(-small.n // 32)
    assert got == default
    rows = sorted(r for b, _ in got for r in b)
    assert rows == list(range(small.n))
    assert np.allclose([p for _, ps in got for p in ps],
                       [small.payload[r].tolist() for b, _ in got for r in b])
    option = opts.split()[0]
    monkeypatch.setenv("PERTLOAD_TEST_OPTS", option + " bogus")
    with pytest.raises(pertload.LoaderError, match=option):
        batches()


def test_inspect_recipe_of_a_database_built_without_one(small):
    r = subprocess.run([pertload_bin(), "inspect", "--recipe", str(small.db)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip() == f"pertload inspect: {small.db} was not built from a recipe"


CONSUMER = """
import sys, time, pertload
loader = pertload.Loader(sys.argv[1], batch_size=8, ring=sys.argv[2])
it = iter(loader)
next(it)
print("ready", flush=True)
for batch in it:
    time.sleep(0.02)
"""


def test_top_continuous_mode_and_a_master_addr_job(small):
    """`top` without --once redraws every interval until SIGINT; a consumer
    started with MASTER_ADDR and MASTER_PORT (no torchrun or Slurm id) is
    grouped under ADDR:PORT."""
    ring, port = unique("topc"), str(20000 + int.from_bytes(os.urandom(2), "big") % 40000)
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHELASTIC_RUN_ID",
                                                            "SLURM_JOB_ID")}
    env.update(MASTER_ADDR="10.9.8.7", MASTER_PORT=port, RANK="1", WORLD_SIZE="2")
    c = subprocess.Popen([sys.executable, "-c", CONSUMER, str(small.db), ring], env=env,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert c.stdout.readline().strip() == "ready"
        top = subprocess.Popen([pertload_bin(), "top", "--interval", "0.2"],
                               stdout=subprocess.PIPE, text=True)
        out = ""
        deadline = time.monotonic() + 60
        while out.count("pertload top - ") < 3 and time.monotonic() < deadline:
            line = top.stdout.readline()
            if not line:
                break
            out += line
        top.send_signal(signal.SIGINT)
        rest, _ = top.communicate(timeout=60)
        out += rest
    finally:
        c.kill()
        c.wait()
    assert top.returncode == 0, out
    assert out.count("pertload top - ") >= 3 and "every 0.2 s (Ctrl-C quits)" in out, out
    assert re.search(rf"^{re.escape(ring)} +\d+ +{c.pid} ", out, re.M), out
    assert f"job 10.9.8.7:{port}: 1 ring" in out, out
    block = out.split(f"job 10.9.8.7:{port}")[1].split("\njob ")[0]
    assert re.search(rf"^ +1 +{re.escape(ring)} ", block, re.M), block


def build_with(inputs, out, *extra, replace=None):
    """`pertload build` of `inputs`' files plus `extra` options; `replace`
    maps an argument (a file) to another. The completed process."""
    args = [replace.get(a, a) if replace else a for a in inputs.build_args]
    return subprocess.run([pertload_bin(), "build", "-o", str(out), *args, *extra, "--quiet"],
                          capture_output=True, text=True, timeout=600)


def test_build_reaction_rule_any_and_drop_unknown_genes(small, tmp_path):
    # --reaction-rule any: a reaction goes with any of its GPR genes.
    r = build_with(small, tmp_path / "any", "--reaction-rule", "any")
    assert r.returncode == 0, r.stderr
    for row in (0, 7, 150):
        js = json.loads(run_cli("masks", tmp_path / "any", "--row", row, "--json").stdout)
        P = set(small.sample_genes[row])
        gone = sorted({int(rx) for g, rx in zip(*small.gpr) if int(g) in P})
        assert js["reaction_rule"] == "any"
        assert js["reaction"] == gone, row
        assert js["rmr"] == [i for i, rx in enumerate(small.rmr[0]) if int(rx) in gone], row
    # A gene outside the genes file in a rule: an error naming the file and
    # line; with --drop-unknown-genes the gene is always present (`R and X`
    # is R): the masks of the original database.
    lines = (small.dir / "rules.tsv").read_text().splitlines()
    k = next(i for i, ln in enumerate(lines[1:], 1) if ln.split("\t")[1].strip())
    rx, rule = lines[k].split("\t")
    lines[k] = f"{rx}\t({rule}) and YZZ999UNKNOWN"
    rules = tmp_path / "rules.tsv"
    rules.write_text("\n".join(lines) + "\n")
    swap = {str(small.dir / "rules.tsv"): str(rules)}
    r = build_with(small, tmp_path / "strict", replace=swap)
    assert r.returncode != 0 and f"rules.tsv:{k + 1}:" in r.stderr and "YZZ999UNKNOWN" in \
        r.stderr, r.stderr
    r = build_with(small, tmp_path / "dropped", "--drop-unknown-genes", replace=swap)
    assert r.returncode == 0, r.stderr
    for row in range(0, small.n, 37):
        got = json.loads(run_cli("masks", tmp_path / "dropped", "--row", row, "--json").stdout)
        assert got["reaction"] == small.masks_json(row)["reaction"], row


def test_bench_khop_dump_equals_masks_and_its_means(small, tmp_path):
    """`bench khop --dump`: each sample's neighbourhood and edges equal
    `masks --row I --khop K --json`; the reported means are the dump's."""
    types = ",".join(small.types[:2])
    js, dump = tmp_path / "khop.json", tmp_path / "khop.dump"
    run_cli("bench", "khop", small.db, "--k", 1, "--types", types, "--samples", 12,
            "--json", js, "--dump", dump)
    d, r = json.loads(dump.read_text()), json.loads(js.read_text())
    assert d["k"] == 1 and d["types"] == types and len(d["samples"]) == 12
    for row, (capped, genes, *edges) in enumerate(d["samples"]):
        k = json.loads(run_cli("masks", small.db, "--row", row, "--khop", 1, "--types", types,
                               "--json").stdout)["khop"]
        assert capped == k["capped"] and genes == k["genes"], row
        assert edges == [k["edges"][t] for t in small.types[:2]], row
    assert r["khop_samples"] == 12 and r["khop_types"] == types
    assert r["khop_k1_genes"] == pytest.approx(np.mean([len(s[1]) for s in d["samples"]]))
    assert r["khop_k1_edges"] == pytest.approx(
        np.mean([sum(map(len, s[2:])) for s in d["samples"]]))
    assert r["khop_k1_capped"] == sum(s[0] for s in d["samples"])


def test_bench_memory_table_reports_its_json(small, tmp_path):
    js = tmp_path / "mem.json"
    out = run_cli("bench", "memory", "--table", small.db, "--ranks", 2, "--json", js).stdout
    r = json.loads(js.read_text())
    assert r["ranks"] == 2 and out.startswith(f"2 serve ranks of {small.db}"), out
    for key in ("pss_private_bytes", "pss_shared_bytes"):
        assert r[key] > 0, key
    lines = out.splitlines()
    private = next(ln for ln in lines if "table per rank (--no-shared-table)" in ln)
    shared = next(ln for ln in lines if "shared table (default)" in ln)
    assert f" {r['pss_private_bytes'] / 2**20:.1f} MiB" in private, out
    assert f" {r['pss_shared_bytes'] / 2**20:.1f} MiB" in shared, out


@pytest.mark.parametrize("depth", [2, 5])
def test_bench_gpu_depth_sets_the_device_buffers(small, tmp_path, depth):
    """`bench gpu --depth D`: the loader runs with D device buffers (its
    stats say so) and the text names the depth; without a device the host
    backend is measured."""
    js = tmp_path / "gpu.json"
    out = run_cli("bench", "gpu", small.db, "--batch-size", 8, "--batches", 6, "--depth",
                  depth, "--json", js).stdout
    assert f"{depth} device x " in out, out
    assert f"worker threads, depth {depth}:" in out, out
    assert json.loads(js.read_text())["batch_size"] == 8


@pytest.mark.parametrize("depth", ["1", "0", "65", "x"])
def test_bench_gpu_refuses_a_depth_it_cannot_run(small, depth):
    r = subprocess.run([pertload_bin(), "bench", "gpu", small.db, "--depth", depth],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "--depth" in r.stderr, r.stderr


def test_top_counts_a_dead_producers_segment_as_stale(small):
    """A ring whose producer was killed is not listed as running: `top`
    counts it among the stale segments (below the table of the running
    rings: a live ring of the test's own keeps one there)."""
    rings = [unique("stale"), unique("live")]
    paths = [f"/dev/shm/pertload-{r}" for r in rings]
    procs = [subprocess.Popen([pertload_bin(), "serve", str(small.db), "--ring", r, "--quiet",
                               "--consumer-pid", str(os.getpid())]) for r in rings]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(map(os.path.exists, paths)):
            time.sleep(0.01)
        assert all(map(os.path.exists, paths)), "serve made no ring"
        running = run_cli("top", "--once", "--interval", 0.1).stdout
        procs[0].kill()
        procs[0].wait()
        out = run_cli("top", "--once", "--interval", 0.1).stdout
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)
    assert re.search(rf"^{re.escape(rings[0])} +{procs[0].pid} ", running, re.M), running
    assert rings[0] not in out and re.search(rf"^{re.escape(rings[1])} ", out, re.M), out
    assert re.search(r"^\(\d+ stale segments? of dead producers in /dev/shm\)$", out, re.M), out


def test_build_evidence_and_exclude_evidence(small, tmp_path):
    """`build --ontology --annotations` with `--evidence` keeps the GAF rows
    of those codes, `--exclude-evidence` drops them; the annotation pairs are
    those of the kept rows (an oracle reading the rows here), in row order."""
    obo = tmp_path / "go.obo"
    obo.write_text("format-version: 1.2\n\n[Term]\nid: GO:0000001\nnamespace: "
                   "biological_process\n\n[Term]\nid: GO:0000002\nnamespace: biological_process"
                   "\nis_a: GO:0000001\n\n[Term]\nid: GO:0000003\nnamespace: biological_process"
                   "\nis_a: GO:0000001\n")
    codes = ["IDA", "IEA", "IMP", "IEA", "ND", "IGI", "IDA"]
    rows = [(small.genes[5 * k + 1], f"GO:000000{2 + k % 2}", c) for k, c in enumerate(codes)]
    gaf = tmp_path / "a.gaf"
    gaf.write_text("!gaf-version: 2.1\n" + "".join(
        f"SGD\tS{k}\t{g}\t\t{t}\tPMID:1\t{c}\t\tP\tname\t\tgene\ttaxon:4932\t20111224\tSGD\n"
        for k, (g, t, c) in enumerate(rows)))
    terms = ["GO:0000001", "GO:0000002", "GO:0000003"]

    def pairs(*opts):
        db = tmp_path / ("db" + "".join(o.strip("-")[:3] for o in opts))
        r = build_with(small, db, "--ontology", obo, "--annotations", gaf, *opts)
        assert r.returncode == 0, r.stderr
        o = pertload.Loader(db).graph.ontology
        return o.term_names, [(small.genes[g], o.term_names[t])
                              for g, t in o.annotation_index.T.tolist()]

    def oracle(keep):  # a term without genes (here or below) is removed
        kept = [(g, t) for g, t, c in rows if keep(c)]
        return [t for t in terms if t == terms[0] or t in {t for _, t in kept}], kept
    assert pairs() == oracle(lambda c: True)
    assert pairs("--evidence", "IDA,IMP") == oracle(lambda c: c in ("IDA", "IMP"))
    assert pairs("--exclude-evidence", "IEA,ND") == oracle(lambda c: c not in ("IEA", "ND"))
    assert pairs("--evidence", "IGI") == oracle(lambda c: c == "IGI")
    r = build_with(small, tmp_path / "both", "--ontology", obo, "--annotations", gaf,
                   "--evidence", "IDA", "--exclude-evidence", "IEA")
    assert r.returncode == 1 and "pertload build: evidence codes to keep and to exclude " \
        "exclude each other" in r.stderr, r.stderr
    assert not (tmp_path / "both").exists()


def test_masks_of_an_ontology_database_text_all_and_genes(small, tmp_path):
    """On a database with ontology layers: `masks --row` prints the two
    ontology lists as its JSON gives them; `masks --all` (and with --khop)
    counts them in its mean, which equals the mean over every row of the
    JSON's lists; `--genes` takes names and refuses an unknown or empty one."""
    from test_ontology import write_ontology
    import random
    d = tmp_path / "in"
    run_cli("synth", d, "--genes", 80, "--samples", 24, "--scale", 0.05, "--seed", 11,
            "--quiet")
    genes = (d / "genes.txt").read_text().split()
    onto = tmp_path / "onto.txt"
    write_ontology(onto, genes, random.Random(5))
    db = tmp_path / "db"
    run_cli("build", "-o", db, *(d / "build-args.txt").read_text().splitlines(),
            "--ontology-dcell", onto, "--quiet")
    info = run_cli("inspect", db).stdout
    n_terms = int(re.search(r"^ontology: (\d+) terms", info, re.M).group(1))
    n_ann = int(re.search(r"(\d+) annotations;", info).group(1))
    lists = ("ontology/term", "ontology/annotation")
    removed, khop_genes = [], []
    for row in range(24):
        js = json.loads(run_cli("masks", db, "--row", row, "--json").stdout)
        text = run_cli("masks", db, "--row", row).stdout
        for name, total in zip(lists, (n_terms, n_ann)):
            m = re.search(rf"^  {re.escape(name)} +(\d+) of (\d+)$", text, re.M)
            assert m and (int(m.group(1)), int(m.group(2))) == (len(js[name]), total), text
        removed.append(sum(len(v) for k, v in js.items() if isinstance(v, list) and
                           k not in ("perturbation_indices",)) +
                       sum(len(v) for v in js["edges"].values()))
        k = json.loads(run_cli("masks", db, "--row", row, "--khop", 1, "--json").stdout)
        khop_genes.append(len(k["khop"]["genes"]))
    out = run_cli("masks", db, "--all").stdout
    m = re.search(r"masks of 24 samples \((\d+) lists each, \+ 2 ontology lists\) in [\d.]+ s "
                  r"on one core: [\d.]+ samples/s, (\d+) removed positions per sample", out)
    assert m, out
    assert int(m.group(2)) == round(np.mean(removed)), (out, np.mean(removed), removed)
    out = run_cli("masks", db, "--all", "--khop", 1).stdout
    k = re.search(r"with the 1-hop neighbourhoods: (\d+) genes and \d+ edges per sample, "
                  r"0 capped", out)
    assert k and int(k.group(1)) == round(np.mean(khop_genes)), (out, khop_genes)
    # --genes: names, as --row gives them; unknown and empty names refused
    js = json.loads(run_cli("masks", db, "--row", 3, "--json").stdout)
    names = ",".join(genes[g] for g in js["perturbation_indices"])
    got = json.loads(run_cli("masks", db, "--genes", names, "--json").stdout)
    for name in lists:
        assert got[name] == js[name]
    for bad, msg in ((names + ",NOTAGENE", "pertload masks: unknown gene 'NOTAGENE'"),
                     (names + ",", f"pertload masks: --genes: empty gene name in '{names},'")):
        r = subprocess.run([pertload_bin(), "masks", str(db), "--genes", bad],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and msg in r.stderr, r.stderr
