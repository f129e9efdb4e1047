"""`build --recipe` digests its inputs as they are read: a symbolic link, a
FIFO and standard input ("-") are accepted as `recipe check` accepts them,
and "-" is never taken for a file "./-"; a STRING actions file split by mode
is read once by `recipe check` as by the build. Names with control
characters are refused, and the messages and lists that quote names escape
them."""

import os
import re
import subprocess
import threading

import pertload
from conftest import pertload_bin, run_cli
from test_recipe_build import GENES, PHYS, REG, write_inputs, xxh64


def _inputs(db):
    text = run_cli("inspect", db).stdout
    return {p: (int(s), int(d, 16))
            for s, d, p in re.findall(r"^recipe input: (\d+)\t([0-9a-f]{16})\t(.*)$", text,
                                      re.M)}


def test_link_fifo_and_stdin_digested_as_read(tmp_path, monkeypatch):
    d = write_inputs(tmp_path / "in")
    genes = (d / "genes.txt").read_bytes()
    phys = (d / "phys.tsv").read_bytes()
    reg = (d / "reg.tsv").read_bytes()
    (tmp_path / "elsewhere").mkdir()
    (d / "genes.txt").rename(tmp_path / "elsewhere" / "genes.txt")
    (d / "genes.txt").symlink_to(tmp_path / "elsewhere" / "genes.txt")
    (d / "phys.tsv").unlink()
    os.mkfifo(d / "phys.tsv")
    recipe = d / "recipe.yaml"
    recipe.write_text(recipe.read_text().replace("file: reg.tsv", "file: '-'"))
    # a file named "-" in the working directory is not standard input
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("decoy\tfile\n")

    def feed():
        with open(d / "phys.tsv", "wb") as f:
            f.write(phys)

    writer = threading.Thread(target=feed)
    writer.start()
    db = tmp_path / "db"
    p = subprocess.run([pertload_bin(), "build", "--recipe", recipe, "-o", db, "--quiet"],
                       input=reg, capture_output=True, timeout=120)
    writer.join(timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    got = _inputs(db)
    assert got[str(d / "genes.txt")] == (len(genes), xxh64(genes))
    assert got[str(d / "phys.tsv")] == (len(phys), xxh64(phys))
    assert got["-"] == (len(reg), xxh64(reg))
    g = pertload.Graph(pertload._lib.Database(db))
    assert g.n_edges == {"physical": len(PHYS), "regulatory": len(REG)}
    assert g.gene_names == GENES


def test_control_characters_refused_and_escaped(tmp_path):
    d = write_inputs(tmp_path / "in")
    # in the gene list: refused at input
    (d / "genes.txt").write_text("".join(g + "\n" for g in GENES) + "YAL\x1b[2J008W\n")
    p = subprocess.run([pertload_bin(), "recipe", "check", d / "recipe.yaml"],
                       capture_output=True)
    err = p.stderr.decode()
    assert p.returncode == 1
    assert f"{d / 'genes.txt'}:7:4: a gene name holds the control character 0x1b" in err
    assert "\x1b" not in err
    # in an edge file: unresolved, listed and reported escaped
    (d / "genes.txt").write_text("".join(g + "\n" for g in GENES))
    (d / "reg.tsv").write_text((d / "reg.tsv").read_text() + "YAL\x07\x08X\tYAL001C\n")
    unres = tmp_path / "unresolved.tsv"
    out = run_cli("recipe", "check", d / "recipe.yaml", "--unresolved", unres).stdout
    assert "\x07" not in out and "\x08" not in out
    listed = unres.read_text()
    assert "YAL\\x07\\x08X" in listed and "\x07" not in listed
    p = subprocess.run([pertload_bin(), "recipe", "check", "--strict", d / "recipe.yaml"],
                       capture_output=True)
    err = p.stderr.decode()
    assert p.returncode == 1
    assert "unresolved gene name 'YAL\\x07\\x08X' (strict mode)" in err, err
    assert "\x07" not in err


ACTIONS = [("YAL001C", "YAL002W", "binding", "f", 900),
           ("YAL002W", "YAL003W", "activation", "t", 700),
           ("YAL003W", "YAL004W", "binding", "f", 500),
           ("YAL005C", "YAL007C", "catalysis", "t", 400),
           ("YAL001C", "YAL007C", "activation", "t", 300),
           ("YAL004W", "YAL005C", "ptmod", "f", 800)]


def _served_once(fifo, data, args):
    """Run the program with `args` while `fifo` serves `data` to one reader:
    a second open of it for reading would wait for a writer that never
    comes, so a program reading it twice does not end (killed after 60 s:
    None). Else the completed process."""
    def feed():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the reader left early (a failed run)
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        return subprocess.run([pertload_bin(), *map(str, args)], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None
    finally:
        writer.join(timeout=1)
        if writer.is_alive():  # never opened: unblock the writer
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))


def test_actions_split_by_mode_read_once(tmp_path):
    """A STRING actions file split by mode (`types: {MODE: TYPE}`) is read
    once, in one pass, by `recipe check` as by `build --recipe`: served
    through a FIFO that gives its bytes to a single reader. Both report the
    counts of each type."""
    d = write_inputs(tmp_path / "in")
    text = "item_id_a\titem_id_b\tmode\taction\tis_directional\ta_is_acting\tscore\n" + "".join(
        f"4932.{a}\t4932.{b}\t{m}\t\t{t}\t{t}\t{s}\n" for a, b, m, t, s in ACTIONS)
    os.mkfifo(d / "actions.txt")
    recipe = d / "actions.yaml"
    recipe.write_text("version: 1\ngenes: {file: genes.txt}\nsamples: {format: tsv, file: "
                      "samples.tsv}\nedges:\n  - {format: string_actions, file: actions.txt, "
                      "types: {binding: bind, activation: act, catalysis: cat}}\n")
    want = {"bind": 2, "act": 2, "cat": 1}
    p = _served_once(d / "actions.txt", text.encode(), ["recipe", "check", recipe])
    assert p is not None, "recipe check opened the actions file more than once"
    assert p.returncode == 0, p.stderr
    for name, n in want.items():
        assert re.search(rf"^source {name} format=string_actions rows=6 filtered={6 - n} "
                         rf"unresolved=0 .* kept={n} ", p.stdout, re.M), p.stdout
    db = tmp_path / "db"
    p = _served_once(d / "actions.txt", text.encode(),
                     ["build", "--recipe", recipe, "-o", db, "--quiet"])
    assert p is not None, "build --recipe opened the actions file more than once"
    assert p.returncode == 0, p.stderr
    g = pertload.Graph(pertload._lib.Database(db))
    assert g.n_edges == want
    assert _inputs(db)[str(d / "actions.txt")] == (len(text), xxh64(text.encode()))
