"""One database fingerprint over everything a database serves (DESIGN section
18): a database replaced by one with the same genes and edges but other
reactions was served, its reaction ids applied to the old graph (the
replacement under a live Loader: test_loader.py)."""

import pytest

import pertload
from conftest import db_graph, run_cli
from test_loader import _rebuild


def test_fingerprint_covers_reactions_not_paths(small, tmp_path):
    again = tmp_path / "again"
    run_cli("build", "-o", again, *small.build_args)
    other = _rebuild(small, tmp_path, "reactions")
    a, b, c = db_graph(small.db), db_graph(again), db_graph(other)
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
