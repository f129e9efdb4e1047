"""Loader(shared_table=...): serve's sample table in shared memory or its own
(serve --no-shared-table), for users whose /dev/shm is not to be shared."""

from pathlib import Path

import pertload

SHM = Path("/dev/shm")


def _tables():
    return {p.name for p in SHM.glob("pertload-table-*")}


def _tables_seen(small, **kw):
    """The table segments that appear while an epoch runs, and its rows."""
    before = _tables()
    seen, rows = set(), []
    with pertload.Loader(small.db, batch_size=64, threads=1, **kw) as loader:
        for batch in loader:
            seen |= _tables() - before
            rows += batch.row.tolist()
    return seen, rows


def test_shared_table_option(small):
    seen, rows = _tables_seen(small)
    assert rows == list(range(small.n))
    assert len(seen) == 1, seen
    seen, rows = _tables_seen(small, shared_table=False)
    assert rows == list(range(small.n))
    assert seen == set()
    # the Dataset hands its options to the Loader of each worker
    ds = pertload.Dataset(small.db, batch_size=64, shared_table=False)
    assert ds.loader().shared_table is False
