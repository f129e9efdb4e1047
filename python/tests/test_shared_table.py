"""Loader(shared_table=...): serve's sample table in shared memory or its own
(serve --no-shared-table), for users whose /dev/shm is not to be shared."""

from pathlib import Path

import pertload


def _serve_maps_a_table(small, **kw):
    """Whether the serve process of an epoch maps a shared table segment
    (its own /proc/PID/maps: other processes' tables do not count), and the
    epoch's rows."""
    mapped, rows = False, []
    with pertload.Loader(small.db, batch_size=64, threads=1, slots=1, **kw) as loader:
        for batch in loader:
            if batch.index == 0:
                maps = Path(f"/proc/{loader._proc.pid}/maps").read_text()
                mapped = "/dev/shm/pertload-table-" in maps
            rows += batch.row.tolist()
    return mapped, rows


def test_shared_table_option(small):
    mapped, rows = _serve_maps_a_table(small)
    assert rows == list(range(small.n))
    assert mapped
    mapped, rows = _serve_maps_a_table(small, shared_table=False)
    assert rows == list(range(small.n))
    assert not mapped
    # the Dataset hands its options to the Loader of each worker
    ds = pertload.Dataset(small.db, batch_size=64, shared_table=False)
    assert ds.loader().shared_table is False
