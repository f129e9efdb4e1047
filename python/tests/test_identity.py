"""One database fingerprint over everything a database serves (DESIGN section
18): a database replaced by one with the same genes and edges but other
reactions was served, its reaction ids applied to the old graph."""

import os
import shutil
from pathlib import Path

import pytest

import pertload
from conftest import run_cli


def _build(small, root, name, reverse_reactions):
    """`small`'s inputs built into root/name; `reverse_reactions` lists the
    reactions (reactions.txt) in reverse order: the same genes and edges,
    other reaction indices."""
    args = list(small.build_args)
    if reverse_reactions:
        k = args.index("--reactions") + 1
        names = Path(args[k]).read_text().split()
        (root / "reversed.txt").write_text("\n".join(names[::-1]) + "\n")
        args[k] = str(root / "reversed.txt")
    db = root / name
    run_cli("build", "-o", db, *args)
    return db


def _graph(db):
    database = pertload._lib.Database(db)
    try:
        return pertload.Graph(database)
    finally:
        database.close()


def test_fingerprint_covers_reactions_not_paths(small, tmp_path):
    again = _build(small, tmp_path, "again", False)
    other = _build(small, tmp_path, "other", True)
    a, b, c = _graph(small.db), _graph(again), _graph(other)
    # the same inputs built elsewhere: one identity
    assert a.db_fingerprint == b.db_fingerprint
    # other reactions: the same genes and edges, another identity
    assert c.reaction_names == a.reaction_names[::-1] != a.reaction_names
    assert (c.gene_fingerprint, c.edge_fingerprints) == (a.gene_fingerprint,
                                                         a.edge_fingerprints)
    assert c.db_fingerprint != a.db_fingerprint
    text = run_cli("inspect", other).stdout
    assert f"database fingerprint: {c.db_fingerprint:016x}" in text
    with pertload.Loader(small.db, batch_size=64, threads=1) as loader:
        for batch in loader:
            assert batch.db_fingerprint == a.db_fingerprint
            pertload.check_same_database(batch, b)
            assert batch.copy().db_fingerprint == a.db_fingerprint
            with pytest.raises(pertload.LoaderError, match="the same genes and edges, other "
                               "contents"):
                pertload.check_same_database(batch, c)
            with pytest.raises(pertload.LoaderError, match="other contents"):
                batch.to_torch(graph=c)
            break


def test_database_with_other_reactions_replaced_under_the_loader_is_refused(small, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(small.db, db)
    loader = pertload.Loader(db, batch_size=64, threads=1)
    mine = loader._fingerprints
    new = _build(small, tmp_path, "new", True)
    os.rename(db, tmp_path / "old")
    os.rename(new, db)
    got = []
    with pytest.raises(pertload.LoaderError) as e:
        for b in loader:
            got.append(b.index)
    assert got == []
    msg = str(e.value)
    assert f"database at {db} changed since the Loader opened it" in msg
    theirs = _graph(db).db_fingerprint
    assert theirs != mine[2]
    assert f"database {mine[2]:016x}" in msg and f"database {theirs:016x}" in msg
