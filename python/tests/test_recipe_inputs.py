"""`build --recipe` digests its inputs as they are read: a symbolic link, a
FIFO and standard input ("-") are accepted as `recipe check` accepts them,
and "-" is never taken for a file "./-". Names with control characters are
refused, and the messages and lists that quote names escape them."""

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
