"""The serve process of one epoch and the consumer's mapping of its ring:
names, start-up (the ready line, taken names retried), liveness, stopping,
and the checks of the mapped segment."""

import ctypes
import errno
import os
import re
import secrets
import select
import signal
import stat
import subprocess
import tempfile
import time
import weakref

from . import _lib
from ._lib import LoaderError
from ._slots import Windows

_SHM_DIR = "/dev/shm"
_READY = re.compile(rb"^ring (\S+): (\d+) slots x (\d+) bytes, (\d+) batches, "
                    rb"(\d+) deliveries$")
# Fresh names a Loader tries when serve finds its ring's name taken.
_NAME_TRIES = 8
_PR_SET_PDEATHSIG = 1
_EINTR = -errno.EINTR
# Loaded before any fork: the child only calls it.
_prctl = ctypes.CDLL(None, use_errno=True).prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def _ring_name():
    """A fresh ring name: the pid for people reading `pertload top`, and 64
    random bits, so another user cannot guess it and create it first."""
    return f"py{os.getpid()}-{secrets.token_hex(8)}"


def _segment_path(name):
    return os.path.join(_SHM_DIR, "pertload-" + name)


class _Mapping:
    """The consumer's attachment to a ring (pl_ring *).

    Batch views keep it alive through their buffers, so the segment stays
    mapped while any view of it exists; it is detached when the last reference
    goes (or at interpreter exit). Device registrations are undone first.
    Slots are read through windows of their own (_slots.Windows), so that a
    kept batch's pages can become a private copy in place.

    It keeps a descriptor of its own on the mapped segment: a segment cut
    short (ftruncate) under a mapping faults with SIGBUS where the missing
    pages are touched, so check_size() compares its size with the mapping's
    before the ring is touched, and a short segment is grown back (the lost
    pages read as zeros) before the mapping is detached."""

    def __init__(self, name, timeout_ms):
        self.name = name
        self.handle = ctypes.c_void_p()
        err = _lib.PlErr()
        _lib.check(_lib.lib().pl_ring_attach(name.encode("ascii"), timeout_ms,
                                             ctypes.byref(self.handle), ctypes.byref(err)),
                   err, f"attaching ring '{name}'")
        self._registered = []
        self._segment = [-1, 0]  # our descriptor on the mapped file, the mapping's size
        self._cut = None  # why the segment is unusable, once it was found truncated
        self._finalizer = _lib.finalize(self, _detach, self.handle.value, self._registered,
                                           self._segment)
        try:
            fd, self.total_bytes, base = _open_mapped(name)
            self._segment[:] = fd, self.total_bytes
            st = self.stats()
            if st["total_bytes"] != self.total_bytes:
                raise LoaderError(f"ring '{name}': header says {st['total_bytes']} bytes, "
                                  f"{self.total_bytes} are mapped")
        except BaseException:
            self._finalizer()
            raise
        self.slot_bytes = st["slot_bytes"]
        self.windows = Windows(fd, base, self.slot_bytes)

    def check_size(self):
        """Raise LoaderError when the segment is, or once was, shorter than the
        mapping (it is grown back, so that nothing faults on what is still
        mapped). A process of this user can still truncate it between this
        check and the access."""
        if self._cut is None:
            fd, total = self._segment
            size = os.fstat(fd).st_size
            if size >= total:
                return
            _restore_size(fd, total)
            self._cut = (f"ring '{self.name}': its segment was truncated to {size} of its "
                         f"{total} bytes while in use")
        raise LoaderError(self._cut)

    def stats(self):
        self.check_size()
        st = _lib.RingStats()
        _lib.lib().pl_ring_stats_get(self.handle, ctypes.byref(st))
        return st.as_dict()

    def source(self):
        """The fingerprints of the database the producer opened, as (gene
        fingerprint, [edge fingerprints in type order], database
        fingerprint), copied from the header at attach; None when the
        producer recorded none."""
        src = _lib.RingSource()
        _lib.lib().pl_ring_source_get(self.handle, ctypes.byref(src))
        if not src.known:
            return None
        return (int(src.gene_fingerprint),
                [int(src.edge_fingerprint[k]) for k in range(src.n_types)],
                int(src.db_fingerprint))

    def buffer(self, addr):
        """The slot the ring's mapping has at `addr`, as a ctypes array over
        its window that keeps this mapping alive (numpy views made from it
        hold it): the owner of one delivery's arrays (_slots.Windows)."""
        return self.windows.owner(addr, self)

    def hand_back(self, batch):
        """Before the slot of `batch` (a Batch of this ring) is handed back:
        a private copy in place of what the user still holds of it
        (_slots.Windows.hand_back); returns the bytes copied."""
        return self.windows.hand_back(batch, self.cuda_unregister)

    def cuda_register(self, addr, nbytes):
        """Page-lock one slot for asynchronous device copies (once per slot)."""
        if any(a == addr for a, _ in self._registered):
            return
        import torch

        # Portable (1): page-locked for every device's context, not only the
        # current one's (a loader may feed batches to several devices).
        rc = torch.cuda.cudart().cudaHostRegister(addr, nbytes, 1)
        if int(rc) != 0:
            raise LoaderError(f"cudaHostRegister of a ring slot failed ({rc})")
        self._registered.append((addr, torch))

    def cuda_unregister(self, addr):
        """Undo cuda_register() of the slot at `addr` (no copy from it may
        still be in flight: the loader waited for them)."""
        for k, (a, torch) in enumerate(self._registered):
            if a == addr:
                torch.cuda.cudart().cudaHostUnregister(addr)
                del self._registered[k]
                return


def _open_mapped(name):
    """Open the segment the library mapped for ring `name`; return (fd, size of
    the mapping, its address). The name is opened again, so the file is matched with the
    mapping by device and inode in /proc/self/maps (it may have been replaced
    in between)."""
    path = _segment_path(name)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise LoaderError(f"ring '{name}': cannot open {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        key = ("/pertload-" + name).encode()
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
        for line in maps.splitlines():
            if key not in line:
                continue
            addr, _, _, dev, inode = line.split(None, 5)[:5]
            major, minor = dev.split(b":")
            if (stat.S_ISREG(st.st_mode) and int(inode) == st.st_ino
                    and os.makedev(int(major, 16), int(minor, 16)) == st.st_dev):
                lo, hi = addr.split(b"-")
                return fd, int(hi, 16) - int(lo, 16), int(lo, 16)
        raise LoaderError(f"ring '{name}': {path} is not the segment that was mapped (it "
                          "was replaced meanwhile)")
    except BaseException:
        os.close(fd)
        raise


def _restore_size(fd, total):
    """Grow a truncated segment back to `total` bytes; True when it has them."""
    try:
        if os.fstat(fd).st_size < total:
            os.ftruncate(fd, total)
        return os.fstat(fd).st_size >= total
    except OSError:
        return False


def _detach(handle, registered, segment):
    if registered:
        torch = registered[0][1]
        # No copy from the mapping may still be in flight on any device (a
        # batch may have gone to another device than the current one).
        for d in range(torch.cuda.device_count()):
            torch.cuda.synchronize(d)
    for addr, torch in registered:
        torch.cuda.cudart().cudaHostUnregister(addr)
    fd, total = segment
    intact = True
    if fd >= 0:
        intact = _restore_size(fd, total)
        os.close(fd)
        segment[0] = -1
    # Detaching writes to the header: a segment that stays short is left mapped.
    if intact:
        _lib.lib().pl_ring_detach(handle)


class _NameTaken(LoaderError):
    """serve found its ring's name held by another segment."""


class _Producer:
    """One `pertload serve` process and the consumer's side of its ring."""

    def __init__(self, args, name, owns_name, timeout, more_epochs=False):
        self.name = name
        # With serve --more-epochs: stdin asks for the next epoch (next_epoch).
        self.more_epochs = more_epochs
        self.first = 0  # the epoch's first delivery in the ring's numbering
        # A name of our own making is ours to clean up even before serve
        # created the segment; a name the user chose only once serve did.
        self._owns_name = owns_name
        self.stderr = tempfile.TemporaryFile()
        parent = os.getpid()
        try:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                         stdin=subprocess.PIPE if more_epochs
                                         else subprocess.DEVNULL,
                                         stderr=self.stderr, close_fds=True,
                                         preexec_fn=lambda: _child_setup(parent))
        except OSError as e:
            self.stderr.close()
            raise LoaderError(f"cannot run {args[0]}: {e}") from e
        self.mapping = None
        self._stopped = False
        try:
            self.n_batches, self.n_deliveries = self._wait_ready(timeout)
            self._owns_name = True
            self.mapping = self._attach()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout):
        """Wait for serve's ready line; return the batches and the deliveries
        (batches and the parts of split batches) it announces."""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        line = b""
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LoaderError(f"pertload serve did not open ring '{self.name}' within "
                                  f"{timeout:g} s{self.stderr_tail()}")
            ready, _, _ = select.select([fd], [], [], min(left, 0.1))
            chunk = os.read(fd, 4096) if ready else b""
            if ready and not chunk:
                self.proc.wait()
                if self.proc.returncode == 1 and self._name_taken():
                    # Another process's segment: not ours to remove.
                    self._owns_name = False
                    raise _NameTaken(self.exit_message())
                raise LoaderError(self.exit_message())
            line += chunk
        m = _READY.match(line.split(b"\n", 1)[0])
        if not m or m.group(1).decode() != self.name:
            raise LoaderError(f"pertload serve: unexpected first line {line!r}")
        return int(m.group(4)), int(m.group(5))

    def alive(self):
        """Whether the process runs (False once it exited or was stopped)."""
        return not self._stopped and self.proc.poll() is None

    def next_epoch(self, epoch, start, timeout):
        """serve --more-epochs, after the consumer took every delivery of the
        last epoch: ask for epoch `epoch` from plan batch `start` in the same
        ring and wait for its ready line. Its deliveries go on from the last
        epoch's (self.first). LoaderError when serve died or refused."""
        first = self.first + self.n_deliveries
        try:
            self.proc.stdin.write(f"epoch {epoch} {start}\n".encode())
            self.proc.stdin.flush()
        except OSError:  # a dead serve's pipe (EPIPE)
            self.proc.wait()
            raise LoaderError(self.exit_message()) from None
        self.n_batches, self.n_deliveries = self._wait_ready(timeout)
        self.first = first

    def _attach(self):
        """Map the ring serve announced. It was complete before the ready line,
        so it is looked for once: gone, its producer died or removed it, and
        waiting for it to appear would wait for a dead process."""
        try:
            return _Mapping(self.name, 0)
        except LoaderError as e:
            state = self.exit_message() if self.proc.poll() is not None else "still running"
            raise LoaderError(f"pertload serve (pid {self.proc.pid}, {state}) announced ring "
                              f"'{self.name}', then it was gone: {e}") from None

    def reason(self):
        """What serve said on stderr about its failure, or "": its last
        "pertload serve: " line (the info line comes before any error) and what
        follows, without the usage text of a usage error; else its last lines."""
        self.stderr.seek(0)
        lines = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        for k, line in enumerate(lines):
            if line.startswith("usage: pertload serve"):
                del lines[k:]
                break
        said = [k for k, line in enumerate(lines) if line.startswith("pertload serve: ")]
        lines = lines[said[-1]:][:3] if said else lines[-3:]
        return "\n".join(lines)[-2000:]

    def stderr_tail(self):
        text = self.reason()
        return f": {text}" if text else ""

    def _name_taken(self):
        """Did serve fail because the ring's name is held by a segment not
        its own (another user's, a live ring, something else planted)?"""
        path, name = re.escape(_segment_path(self.name)), re.escape(self.name)
        return re.match(rf"pertload serve: (?:{path} (?:belongs to uid|is not a regular "
                        rf"file|has mode|keeps reappearing)|cannot open {path}: |ring "
                        rf"'{name}' is (?:in use by|being created by))", self.reason()) is not None

    def exit_message(self):
        rc = self.proc.returncode
        if rc < 0:
            return f"pertload serve (pid {self.proc.pid}) was killed by signal {-rc}"
        return f"pertload serve (pid {self.proc.pid}) exited with status {rc}{self.stderr_tail()}"

    def finish(self, timeout=10.0):
        """After the end of the epoch: the producer exits by itself."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise LoaderError(f"pertload serve (pid {self.proc.pid}) did not exit after the "
                              "end of the epoch")
        ok = self.proc.returncode == 0
        msg = None if ok else self.exit_message()
        self.stop()
        if msg:
            raise LoaderError(msg)

    def stop(self):
        """Stop the process (if running), reap it, drop the ring; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        _stop(self.proc, self.name if self._owns_name else None)
        self.mapping = None
        self.proc.stdout.close()
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:  # what was left to flush to a dead serve (EPIPE)
                pass
        self.stderr.close()


def _child_setup(parent):
    # Die with the parent, even if it is killed before serve watches it.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _stop(proc, name):
    if proc.poll() is None:
        proc.terminate()
        # A stopped producer (SIGSTOP, a debugger) acts on SIGTERM only once
        # continued.
        proc.send_signal(signal.SIGCONT)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # A producer that was killed could not remove its segment. Only ours:
    # another user's segment under the name is not ours to remove.
    if name is not None:
        path = _segment_path(name)
        try:
            if os.lstat(path).st_uid == os.geteuid():
                os.unlink(path)
        except FileNotFoundError:
            pass


def _start_producer(loader, start):
    """Run serve for `loader`'s epoch from batch `start` on a ring of the
    loader's name, else of a fresh name (a fresh one again while serve finds
    it taken, up to _NAME_TRIES names)."""
    if loader.ring is not None:
        try:
            return _Producer(loader._serve_args(start, loader.ring), loader.ring, False,
                             loader.timeout, loader.persistent)
        except _NameTaken as e:
            raise LoaderError(str(e)) from None
    for _ in range(_NAME_TRIES):
        name = _ring_name()
        try:
            return _Producer(loader._serve_args(start, name), name, True, loader.timeout,
                             loader.persistent)
        except _NameTaken as e:
            # Its text only: the exception's traceback would hold this frame
            # (a cycle keeping the loader, and its kept serve, until a collection).
            taken = str(e)
    raise LoaderError(f"{_NAME_TRIES} ring names in a row were taken by other segments; the "
                      f"last: {taken}")
