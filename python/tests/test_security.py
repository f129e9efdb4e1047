"""The client's clean-up of a ring name leaves other users' segments alone,
and attaching to another user's segment is refused (README "Threat model")."""

import os
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
