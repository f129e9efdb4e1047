"""The subset of rows a Loader runs over: a range or a list of rows (serve
--rows), or the rows of a split column's level (serve --split)."""

import hashlib
import os
import tempfile

import numpy as np


def subset(rows, n_db, split=None):
    """The subset of rows a loader runs over: (serve's --rows spec or None, a
    digest of the rows or None, the subset's size, a private directory
    holding the rows file or None). rows: None (every row), a range of step
    1, or a sequence of distinct row indices (any order: the order of the
    subset, which the plan's shuffle permutes); with `split`, the split's
    rows (serve computes them itself: no spec, no file)."""
    if rows is None:
        return None, None, n_db, None
    if split is not None:
        digest = hashlib.sha256(np.asarray(rows, np.int64).tobytes()).hexdigest()[:32]
        return None, digest, len(rows), None
    if isinstance(rows, range) and rows.step == 1:
        if not 0 <= rows.start < rows.stop <= n_db:
            raise ValueError(f"rows {rows}: need 0 <= start < stop <= {n_db} (the database's "
                             "samples)")
        spec = f"{rows.start}:{rows.stop}"
        return spec, f"range:{spec}", len(rows), None
    a = np.asarray(rows)
    if a.ndim != 1 or not (np.issubdtype(a.dtype, np.integer) or a.size == 0):
        raise ValueError("rows: a range or a one-dimensional sequence of row indices is "
                         "expected")
    a = a.astype(np.int64)
    if a.size == 0:
        raise ValueError("rows: the subset is empty")
    if a.min() < 0 or a.max() >= n_db:
        bad = a[(a < 0) | (a >= n_db)][0]
        raise ValueError(f"rows: {bad} is not a row of the database's {n_db}")
    if len(np.unique(a)) != len(a):
        u, c = np.unique(a, return_counts=True)
        raise ValueError(f"rows: row {u[c > 1][0]} is given twice")
    d = tempfile.mkdtemp(prefix="pertload-rows-")
    path = os.path.join(d, "rows.npy")
    np.save(path, a)
    digest = hashlib.sha256(a.tobytes()).hexdigest()[:32]
    return path, digest, len(a), d


# The rows of splits this process computed, by database files and level: a
# Dataset's worker processes (forked) and its Loader of every epoch reuse the
# rows its first Loader read instead of reading the category store again.
_cache = {}


def split_spec(split):
    """(column, level) of a split: "LEVEL" of the column "split", or a
    (column, level) pair."""
    if isinstance(split, str):
        split = ("split", split)
    if (not isinstance(split, (tuple, list)) or len(split) != 2 or
            not all(isinstance(s, str) for s in split)):
        raise ValueError(f"split {split!r}: a level name (of the column 'split') or a "
                         "(column, level) pair of names is expected")
    column, level = split
    if "=" in column or "\0" in column + level:
        raise ValueError(f"split column {column!r}: a name without '=' or NUL characters is "
                         "expected")
    return column, level


def split_rows(database, column, level):
    """The rows of a split (ascending, uint32), read once per process."""
    st = os.stat(os.path.join(database.path, "samples.pls"))
    key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size, column, level)
    rows = _cache.get(key)
    if rows is None:
        rows = database.level_rows(column, level)
        if len(rows) == 0:
            raise ValueError(f"split {column}={level}: no row of the database holds level "
                             f"{level!r}")
        _cache[key] = rows
    return rows
