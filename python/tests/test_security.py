"""The client against other users and hostile processes (README "Threat
model"): its clean-up of a ring name leaves other users' segments alone,
attaching to another user's segment is refused, default ring names cannot be
guessed and a taken one is retried, and slots rewritten or a segment cut
short under a live consumer give LoaderErrors, never wrong views or SIGBUS."""

import ctypes
import os
import re
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import pertload
from pertload import _lib
from pertload import batch as pbatch
from pertload import _service as service

NOBODY = 65534


def _segment(name, uid):
    path = f"/dev/shm/pertload-{name}"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    os.ftruncate(fd, 8192)
    os.close(fd)
    os.chown(path, uid, uid)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's segment")
def test_stop_removes_only_this_users_segment():
    name = f"sec{os.getpid()}"
    path = _segment(name, NOBODY)
    try:
        done = subprocess.Popen(["true"])
        done.wait()
        service._stop(done, name)
        assert os.path.exists(path), "another user's segment was removed"
        os.chown(path, os.geteuid(), os.getegid())
        service._stop(done, name)
        assert not os.path.exists(path), "this user's leftover segment was kept"
    finally:
        if os.path.exists(path):
            os.unlink(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's segment")
def test_attach_refuses_another_users_segment():
    name = f"sec{os.getpid()}-attach"
    path = _segment(name, NOBODY)
    try:
        with pytest.raises(pertload.LoaderError, match="belongs to uid 65534"):
            service._Mapping(name, 100)
    finally:
        os.unlink(path)


def _as_nobody(fn):
    """Run fn() in a forked child that became uid/gid 65534."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fn()
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def _plant(name):
    """Another user's segment under ring name `name`, created by that user."""
    path = f"/dev/shm/pertload-{name}"

    def create():
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.ftruncate(fd, 8192)

    _as_nobody(create)
    assert os.stat(path).st_uid == NOBODY
    return path


def _names_of_children(n):
    """Ring names made by n forked children, each reporting its first."""
    names = []
    for _ in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.write(w, service._ring_name().encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            names.append((pid, f.read().decode()))
        os.waitpid(pid, 0)
    return names


def test_default_ring_names_are_unguessable(small):
    """Default names carry 64 random bits: neither the pid nor a count
    predicts them, for loaders of one process, its epochs and its children."""
    pid = os.getpid()
    a = pertload.Loader(small.db, batch_size=16)
    b = pertload.Loader(small.db, batch_size=16)
    seen = []
    for loader in (a, a, b):  # two epochs of one loader, then another loader
        it = iter(loader)
        next(it)
        seen.append(loader.stats()["name"])
        loader.close()
    seen += [service._ring_name() for _ in range(100)]
    for name in seen:
        assert re.fullmatch(rf"py{pid}-[0-9a-f]{{16}}", name), name
    children = _names_of_children(4)
    for child, name in children:
        assert re.fullmatch(rf"py{child}-[0-9a-f]{{16}}", name), name
    suffixes = [n.split("-")[1] for n in seen] + [n.split("-")[1] for _, n in children]
    assert len(set(suffixes)) == len(suffixes)


def _names(*first):
    """A stand-in for _service._ring_name: the given names, then fresh ones."""
    real = service._ring_name
    queue = list(first)
    made = []

    def name():
        made.append(queue.pop(0) if queue else real())
        return made[-1]

    return name, made


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_taken_ring_names_are_retried(small, monkeypatch):
    """A name held by another user's segment, then one held by a live ring of
    this user: the loader runs on the third name and leaves both alone."""
    pid = os.getpid()
    planted = f"py{pid}-{'a' * 16}"
    path = _plant(planted)
    busy = pertload.Loader(small.db, batch_size=16, ring=f"py{pid}-busy")
    try:
        busy_it = iter(busy)
        next(busy_it)
        gen, made = _names(planted, busy.ring)
        monkeypatch.setattr(service, "_ring_name", gen)
        loader = pertload.Loader(small.db, batch_size=16)
        rows = []
        for batch in loader:
            rows += batch.row.tolist()
            assert loader.stats()["name"] == made[2]
        assert rows == list(range(small.n))
        assert len(made) == 3 and made[2] not in (planted, busy.ring)
        # Neither the other user's segment nor the live ring was touched.
        assert os.stat(path).st_uid == NOBODY
        assert len(list(busy_it)) == 18
    finally:
        busy.close()
        os.unlink(path)


def test_ring_names_taken_again_and_again_give_up(small, monkeypatch):
    """A bounded number of fresh names, then a LoaderError with serve's reason."""
    pid = os.getpid()
    with pertload.Loader(small.db, batch_size=16, ring=f"py{pid}-busy") as busy:
        busy_it = iter(busy)
        next(busy_it)
        made = []
        monkeypatch.setattr(service, "_ring_name", lambda: made.append(busy.ring) or busy.ring)
        loader = pertload.Loader(small.db, batch_size=16)
        with pytest.raises(pertload.LoaderError,
                           match=r"8 ring names in a row were taken .*pertload serve: ring "
                                 rf"'{busy.ring}' is in use by producer process \d+$"):
            iter(loader)
        assert len(made) == service._NAME_TRIES == 8
        assert len(list(busy_it)) == 18


class _TamperAfterCheck:
    """The library, except that right after each successful pl_slot_check
    `tamper(slot)` rewrites the live slot the consumer was handed (as another
    process of this user could, between the check and the views); the slot's
    first bytes are put back before it is released to the producer."""

    def __init__(self, real, tamper):
        self._real, self._tamper = real, tamper
        self._slot, self._saved, self.hits = None, None, 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def pl_ring_next_within(self, handle, batch, max_ns, slot, err):
        rc = self._real.pl_ring_next_within(handle, batch, max_ns, slot, err)
        self._slot = slot._obj.value if rc == 0 else None
        return rc

    def pl_slot_check(self, *args):
        rc = self._real.pl_slot_check(*args)
        if rc == 0 and self._slot:
            live = (ctypes.c_char * 1024).from_address(self._slot)  # descriptors 0-3
            self._saved = (live, bytes(live))
            self._tamper(live)
            self.hits += 1
        return rc

    def pl_ring_release(self, *args):
        if self._saved:
            live, data = self._saved
            live[:] = data
            self._saved = None
        return self._real.pl_ring_release(*args)


def _descriptor(buf, k, field, value):
    d = list(pbatch.ARRAY.unpack_from(buf, 64 + 240 * k))
    i = {"dtype": 1, "ndim": 2, "offset": 4, "shape0": 6}[field]
    d[i] = value(d[i])
    pbatch.ARRAY.pack_into(buf, 64 + 240 * k, *d)


TAMPERS = {
    "offset": lambda buf: _descriptor(buf, 0, "offset", lambda v: 1 << 40),
    "dtype": lambda buf: _descriptor(buf, 1, "dtype", lambda v: b"<c16"),
    "shape": lambda buf: _descriptor(buf, 2, "shape0", lambda v: v * 1000),
    "ndim": lambda buf: _descriptor(buf, 0, "ndim", lambda v: 10),
    "n_arrays": lambda buf: struct.pack_into("<I", buf, 12, 1000),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_descriptors_rewritten_after_the_check_are_not_used(small, monkeypatch, tamper):
    """The views come from the copy of the descriptors that was checked: a
    rewrite of the shared slot after the check changes nothing."""
    lib = _TamperAfterCheck(_lib.lib(), TAMPERS[tamper])
    monkeypatch.setattr(_lib, "_lib", lib)
    ids, rows = [], []
    for batch in pertload.Loader(small.db, batch_size=16):
        ids += batch.sample_id.tolist()
        rows += batch.row.tolist()
    assert lib.hits == len(rows) // 16 + 1 == 19
    assert rows == list(range(small.n))
    assert ids == small.ids


def test_bytes_after_the_nul_of_a_dtype_are_ignored():
    """pl_slot_check reads the dtype up to its NUL; bytes after it do not
    change the array's type."""
    from test_graph import fake_slot

    ids = np.array([7, 9], np.uint64)
    buf = fake_slot([("sample_id", ids)])
    _descriptor(buf, 0, "dtype", lambda v: b"<u8\0junk")
    head, arrays = pbatch.parse_slot(buf, len(buf))
    np.testing.assert_array_equal(arrays["sample_id"], ids)


TAMPERER = r"""
import mmap, os, random, struct, sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
rng = random.Random(int(sys.argv[3]))
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        time.sleep(0.001)
        continue
    try:
        m = mmap.mmap(fd, 0)
    except (OSError, ValueError):
        os.close(fd)
        continue
    os.close(fd)
    n_slots, = struct.unpack_from("<I", m, 12)
    stride, first = struct.unpack_from("<QQ", m, 24)
    if not (n_slots and stride and first) or first + n_slots * stride != len(m):
        m.close()  # not complete yet: its creator still writes the header
        time.sleep(0.001)
        continue
    try:
        for _ in range(20000):
            base = first + rng.randrange(n_slots) * stride
            n, = struct.unpack_from("<I", m, base + 12)
            # dtype, ndim, offset, nbytes or a dimension of one descriptor
            field = rng.choice([(128, 8), (136, 4), (144, 8), (152, 8), (160, 8), (168, 8)])
            at, size = base + 64 + 240 * rng.randrange(max(min(n, 64), 1)) + field[0], field[1]
            old = m[at:at + size]
            m[at:at + size] = rng.randbytes(size)
            if rng.random() < 0.999:              # most often only for a moment
                m[at:at + size] = old
    except (IndexError, ValueError, struct.error):
        pass
    m.close()
"""


def test_descriptors_rewritten_under_a_live_consumer_give_loader_errors_only(small, tmp_path):
    """Another process of this user rewrites descriptor fields of the live
    ring's slots while the consumer takes its batches, epoch after epoch:
    every failure is a LoaderError that closed its epoch (serve reaped, the
    segment removed). The slot headers' array counts are left alone: serve
    reads that count back while it collates (test
    test_descriptors_rewritten_after_the_check_are_not_used covers it on the
    consumer's side)."""
    name = f"py{os.getpid()}-tampered"
    path = f"/dev/shm/pertload-{name}"
    script = tmp_path / "tamper.py"
    script.write_text(TAMPERER)
    tamperer = subprocess.Popen([sys.executable, str(script), path, "75", "1"])
    errors = batches = epochs = 0
    try:
        # 10 s of hammering, longer until enough tampering bit and enough
        # batches came: a loaded machine or a sanitizer build takes longer to
        # reach the counts, never fewer of them (the deadline only ends a
        # test that would never get there).
        start = time.monotonic()
        while time.monotonic() < start + 10 or (
                (errors < 5 or batches < 50) and time.monotonic() < start + 300):
            loader = pertload.Loader(small.db, batch_size=4, slots=2, ring=name)
            epochs += 1
            proc = None
            try:
                it = iter(loader)
                proc = loader._proc
                for _ in it:
                    batches += 1
            except pertload.LoaderError:
                errors += 1
                assert loader._proc is None and (proc is None or proc.poll() is not None)
                assert not os.path.exists(path)
    finally:
        tamperer.kill()
        tamperer.wait()
    # The tampering bit and batches still came.
    assert errors >= 5 and batches >= 50, (epochs, errors, batches)


TRUNCATE = r"""
import os, sys
import pertload
db, keep = sys.argv[1], sys.argv[2]
loader = pertload.Loader(db, batch_size=4, slots=4)
try:
    for i, batch in enumerate(loader):
        if i == 2:
            st = loader.stats()
            path, proc = "/dev/shm/pertload-" + st["name"], loader._proc
            stride = -(-st["slot_bytes"] // 4096) * 4096
            header = st["total_bytes"] - st["n_slots"] * stride
            os.truncate(path, {"nothing": 0, "header": header}[keep])
            del batch  # no view of the lost pages is read again
            try:
                loader.stats()  # finds it cut and grows it back
            except pertload.LoaderError as e:
                print("stats:", e)
except pertload.LoaderError as e:
    print("LoaderError:", e)
print("closed:", loader._proc is None, proc.poll() is not None, os.path.exists(path))
"""


@pytest.mark.parametrize("keep", ["nothing", "header"])
def test_segment_truncated_under_the_consumer_is_a_loader_error(small, keep):
    """A segment cut short while the consumer holds a batch: stats() and the
    next batch raise LoaderError (no SIGBUS), serve is stopped and the segment
    removed."""
    out = subprocess.run([sys.executable, "-c", TRUNCATE, str(small.db), keep],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stderr)
    lines = out.stdout.splitlines()
    assert len(lines) == 3, out.stdout
    cut = (r"ring 'py\d+-[0-9a-f]{16}': its segment was truncated to \d+ of its \d+ bytes "
           r"while in use")
    assert re.fullmatch("stats: " + cut, lines[0]), lines[0]
    assert lines[1] == "LoaderError: " + lines[0][len("stats: "):]
    assert lines[2] == "closed: True True False"


def test_lists_rewritten_after_their_check_do_not_reach_to_torch(small, monkeypatch):
    """to_torch("cpu") checks the copies of the removed lists it indexes
    with, so a position rewritten in the slot after the check changes nothing."""
    loader = pertload.Loader(small.db, batch_size=64)
    batch = next(iter(loader))
    want = batch.to_torch("cpu")
    pos = batch.perturbation_indices
    saved = pos.copy()
    real = pbatch._check_positions

    def check_then_rewrite(kind, p, ptr, n):
        real(kind, p, ptr, n)
        pos[:] = 1 << 30  # far outside the genes

    monkeypatch.setattr(pbatch, "_check_positions", check_then_rewrite)
    try:
        got = batch.to_torch("cpu")
    finally:
        pos[:] = saved
        loader.close()
    for key, v in want.items():
        for k, x in (v.items() if isinstance(v, dict) else [(None, v)]):
            y = got[key][k] if k else got[key]
            assert torch.equal(y, x) or torch.equal(y.isnan(), x.isnan()) and torch.equal(
                y.nan_to_num(), x.nan_to_num()), (key, k)


def test_a_segment_that_is_not_the_mapped_one_is_refused():
    """The loader's own descriptor on a ring must be the mapped file: a
    segment under the name that this process has not mapped is refused."""
    name = f"py{os.getpid()}-unmapped"
    path = f"/dev/shm/pertload-{name}"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, 8192)
        with pytest.raises(pertload.LoaderError, match="is not the segment that was mapped"):
            service._open_mapped(name)
    finally:
        os.close(fd)
        os.unlink(path)
