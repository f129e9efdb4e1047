"""The client against other users (README "Threat model"): its clean-up of a
ring name leaves other users' segments alone, attaching to another user's
segment is refused, and default ring names cannot be guessed and a taken one
is retried."""

import os
import re
import subprocess

import pytest

import pertload
from pertload import loader as loader_mod

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
        loader_mod._stop(done, name)
        assert os.path.exists(path), "another user's segment was removed"
        os.chown(path, os.geteuid(), os.getegid())
        loader_mod._stop(done, name)
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
            loader_mod._Mapping(name, 100)
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
            os.close(r)
            os.write(w, loader_mod._ring_name().encode())
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
    seen += [loader_mod._ring_name() for _ in range(100)]
    for name in seen:
        assert re.fullmatch(rf"py{pid}-[0-9a-f]{{16}}", name), name
    children = _names_of_children(4)
    for child, name in children:
        assert re.fullmatch(rf"py{child}-[0-9a-f]{{16}}", name), name
    suffixes = [n.split("-")[1] for n in seen] + [n.split("-")[1] for _, n in children]
    assert len(set(suffixes)) == len(suffixes)


def _names(*first):
    """A stand-in for loader._ring_name: the given names, then fresh ones."""
    real = loader_mod._ring_name
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
        monkeypatch.setattr(loader_mod, "_ring_name", gen)
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
        monkeypatch.setattr(loader_mod, "_ring_name", lambda: made.append(busy.ring) or busy.ring)
        loader = pertload.Loader(small.db, batch_size=16)
        with pytest.raises(pertload.LoaderError,
                           match=r"8 ring names in a row were taken .*pertload serve: ring "
                                 rf"'{busy.ring}' is in use by producer process \d+$"):
            iter(loader)
        assert len(made) == loader_mod._NAME_TRIES == 8
        assert len(list(busy_it)) == 18
