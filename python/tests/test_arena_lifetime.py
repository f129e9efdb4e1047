"""A worker's arena lives until the main process has mapped it and is
mapped only after the checks the ring gets (DESIGN section 20,
docs/threat-model.md): a batch queued behind a larger one still finds its
arena, another user's or a forged file under an arena's name is refused,
and a full /dev/shm sends batches through shared tensors instead of
faulting."""

import gc
import multiprocessing
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import pertload
from pertload import arena, packed


def mine():
    """This process's arena files in /dev/shm."""
    return sorted(Path("/dev/shm").glob(f"pertload-arena-{os.getpid()}-*"))


def first_batch(db, rows):
    """The first batch of `rows` rows of `db`, in memory of its own."""
    lo = pertload.Loader(db, batch_size=rows, rows=range(rows))
    try:
        return next(iter(lo)).copy()
    finally:
        lo.close()


def assert_same(got, want):
    assert got.arrays.keys() == want.arrays.keys()
    for name, a in want.arrays.items():
        np.testing.assert_array_equal(np.asarray(got.arrays[name]), a, err_msg=name)


def test_a_batch_behind_a_larger_one_finds_its_arena(medium, monkeypatch):
    """A batch more than twice the arena's regions retires the arena; the
    batches put in it before are received after that, as the DataLoader's
    prefetch does (this process plays the worker, then the main process)."""
    monkeypatch.setattr(arena, "_main_pid", os.getpid, raising=False)
    monkeypatch.setitem(arena._OWN, os.getpid(), None)
    small, big = first_batch(medium.db, 1), first_batch(medium.db, 1000)
    assert packed.table(big.arrays)[1] > 2 * arena._MIN_REGION  # the arena is replaced
    sent = [pickle.dumps(arena.ship(b, None, light=True)) for b in (small, small, big)]
    gc.collect()  # the retired arena's object is gone; its name is not
    got = [pickle.loads(s) for s in sent]
    assert all(g._arena is not None for g in got)
    assert got[0]._arena[0] != got[2]._arena[0]  # two arenas
    for g, want in zip(got, (small, small, big)):
        assert_same(g, want)
    assert mine() == []  # each name removed once mapped


class Growing(torch.utils.data.IterableDataset):
    """Two small batches then a large one (which retires the worker's first
    arena), shipped as pertload.Dataset's worker does; `shipped` is set once
    the large one was shipped, before the main process received anything."""

    def __init__(self, db):
        self.db = db
        self.shipped = multiprocessing.get_context("fork").Event()
        self.batches = [first_batch(db, 1), first_batch(db, 1), first_batch(db, 1000)]

    def __iter__(self):
        for b in self.batches:
            yield arena.ship(b, None, light=True)
        self.shipped.set()  # the large one was put in the queue's pipe
        yield arena.ship(self.batches[0], None, light=True)


def test_a_worker_never_removes_an_arena_a_queued_batch_names(medium):
    ds = Growing(medium.db)
    it = iter(DataLoader(ds, batch_size=None, num_workers=1, prefetch_factor=4,
                         multiprocessing_context="fork"))
    assert ds.shipped.wait(60)  # every batch shipped before the first is received
    got = list(it)
    assert len(got) == 4
    for g, want in zip(got, ds.batches + ds.batches[:1]):
        assert g._arena is not None
        assert_same(g, want)
    del it
    gc.collect()
    assert mine() == []


def forged_arena(region=1 << 16, **change):
    """A file under an arena name of this process as a worker would make it
    (identity naming this process, a forged slot's bytes), with `change`
    applied: mode, size, named (the main process's pid in its name), main
    and start (the main process's pid and start time in its header),
    header_region (the region size in its header)."""
    a = arena._Arena(region, main=change.get("named", os.getpid()))
    a.data[:] = 7
    if "main" in change or "start" in change:
        me = os.getpid()
        arena._ID.pack_into(a.map, 0, arena._MAGIC, change.get("main", me), me,
                            change.get("start", arena._start_time(me)), arena._start_time(me))
    if "header_region" in change:
        arena._REGION.pack_into(a.map, arena._REGION_AT, change["header_region"])
    a.map.flush()
    if "size" in change:
        os.truncate(a.path, change["size"])
    if "mode" in change:
        os.chmod(a.path, change["mode"])
    return a


REFUSED = [
    ({"mode": 0o666}, "mode 0666"),
    ({"mode": 0o640}, "mode 0640"),
    ({"size": arena._HEADER + (4 << 16)}, "bytes, 528384 expected"),
    ({"named": 1}, "name is of main process 1"),
    ({"main": 1}, "header names process 1 "),
    ({"start": 5}, r"started at 5\)"),
    ({"header_region": 1 << 20}, "regions of 1048576 bytes"),
]


@pytest.mark.parametrize("change,why", REFUSED, ids=[w for _, w in REFUSED])
def test_an_arena_file_failing_a_check_is_refused(change, why):
    a = forged_arena(**change)
    try:
        with pytest.raises(pertload.LoaderError, match=why) as e:
            arena._Mapped(a.path, a.region)
        assert a.path in str(e.value)
        assert Path(a.path).exists()  # not removed: not taken as ours
    finally:
        arena._unlink(a.path)


def test_links_to_an_arena_are_refused():
    a = arena._Arena(1 << 16, main=os.getpid())
    try:
        name = a.path + "0"  # an arena name too
        os.symlink(a.path, name)
        try:
            with pytest.raises(pertload.LoaderError, match="symbolic link"):
                arena._Mapped(name, a.region)
        finally:
            os.unlink(name)
        os.link(a.path, name)
        try:
            with pytest.raises(pertload.LoaderError, match="2 links"):
                arena._Mapped(a.path, a.region)
        finally:
            os.unlink(name)
        m = arena._Mapped(a.path, a.region)  # the file itself, one link again: mapped
        assert not Path(a.path).exists()
        del m
    finally:
        arena._unlink(a.path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's file")
def test_another_users_file_under_an_arena_name_is_never_read(medium, monkeypatch):
    """A file another user (nobody) put under an arena name, mode 0666 with
    a forged slot, reached through a worker's pickled batch: refused."""
    b = first_batch(medium.db, 4)
    a = arena._Arena(1 << 16, main=os.getpid())
    monkeypatch.setitem(arena._OWN, os.getpid(), a)
    try:
        sent = pickle.dumps(arena.ship(b, None, light=True))
        os.chmod(a.path, 0o666)
        os.chown(a.path, 65534, 65534)
        with pytest.raises(pertload.LoaderError, match="belongs to uid 65534") as e:
            pickle.loads(sent)
        assert a.path in str(e.value) and "refusing" in str(e.value)
    finally:
        arena._unlink(a.path)


FULL_SHM = """
import logging, os, sys
import numpy as np
import pertload
from pertload import arena, packed

logging.basicConfig()
lo = pertload.Loader(sys.argv[1], batch_size=400, rows=range(400), max_ring_bytes=1 << 20)
b = next(iter(lo)).copy()
lo.close()
nbytes = packed.table(b.arrays)[1]
assert nbytes > 8 * 4096, nbytes
# Room for three batches, not for an arena of eight regions twice a batch.
vfs = os.statvfs("/dev/shm")
fd = os.open("/dev/shm/filler", os.O_RDWR | os.O_CREAT, 0o600)
os.posix_fallocate(fd, 0, vfs.f_bavail * vfs.f_frsize - 3 * nbytes)
tensors = 0
for k in range(3 * arena.REGIONS):
    got = arena.ship(b, None)
    tensors += got._packed is not None and got._shipped is None
    for name, a in b.arrays.items():
        np.testing.assert_array_equal(got.arrays[name], a)
    del got
print("shipped", k + 1, "in shared tensors", tensors)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a private /dev/shm")
def test_a_full_dev_shm_sends_batches_in_shared_tensors(medium):
    """/dev/shm (a small private tmpfs) with room for a few batches but not
    for a worker's arena: every batch ships in a shared tensor of its own,
    and the shortage is said once; nothing faults (SIGBUS) on a page of the
    arena that /dev/shm cannot hold."""
    script = ("mount -t tmpfs -o size=16m,mode=1777 pertload-test /dev/shm && "
              'exec "$0" -c "$1" "$2"')
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                        sys.executable, FULL_SHM, str(medium.db)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    assert "shipped 24 in shared tensors 24" in r.stdout
    said = [ln for ln in r.stderr.splitlines() if "cannot reserve" in ln]
    assert len(said) == 1 and "/dev/shm" in said[0] and "No space left" in said[0], r.stderr
