"""A forked child (a DataLoader worker, a subprocess made with fork) inherits
the parent's loader objects; collecting them there must not stop the
parent's serve, detach its ring, close its database or remove its files."""

import gc
import os

import pertload
from pertload import _lib


def _in_child(drop):
    """Fork; the child drops `drop`'s references, collects, and exits with
    0. Returns the child's exit status."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            drop()
            gc.collect()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_child_collecting_the_parents_epoch_leaves_it_running(small):
    loader = pertload.Loader(small.db, batch_size=16, rows=range(0, 160))
    state = {"loader": loader, "it": iter(loader)}
    rows = list(next(state["it"]).row)
    assert _in_child(state.clear) == 0
    for batch in state["it"]:  # the parent's epoch goes on to its end
        rows += list(batch.row)
    assert sorted(int(r) for r in rows) == list(range(160))
    # The loader's rows and database are still usable for another epoch.
    assert sorted(int(r) for b in loader for r in b.row) == list(range(160))


def test_child_collecting_a_database_leaves_the_parents_open(small):
    db = _lib.Database(small.db)
    loader = pertload.Loader(small.db, batch_size=50)
    graph = loader.graph
    held = {"graph": graph, "loader": loader, "db": db}
    assert _in_child(held.clear) == 0
    assert sum(len(b) for b in loader) == loader.n_samples
    assert db.gene_index(small.genes[3]) == 3
