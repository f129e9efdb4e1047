"""What the fault soak (soak.py) and its faults (soak_faults.py) share: files
replaced atomically, a consumer's log read as it grows, processes seen
through /proc, the ring segments in /dev/shm."""

import json
import os
import re

SHM = "/dev/shm"
NOSPACE = re.compile(r"No space left|ENOSPC|bytes free in /dev/shm")


def write_atomic(path, obj):
    """Replace `path` by the JSON of `obj` in one step (rename), so that a kill
    at any moment leaves either the old or the new content."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


class LogTail:
    """The entries appended to a consumer's log since the last look."""

    def __init__(self, path):
        self.path, self.pos, self.part = path, 0, b""

    def new(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return []
        self.pos += len(data)
        lines = (self.part + data).split(b"\n")
        self.part = lines.pop()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # cut short by a kill
        return out


def proc_stat(pid):
    """(state letter, ppid, comm) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[1]), comm


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def alive(pid):
    st = proc_stat(pid)
    return st is not None and st[0] not in "ZXx"


def ring_segments():
    return sorted(n for n in os.listdir(SHM) if n.startswith("pertload-"))
