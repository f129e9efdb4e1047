"""The faults of the soak (soak.py), each with the checks of its own outcome
(see soak.py's description), and the file that fills /dev/shm. The driver,
Soak, takes the faults from Faults: they use its processes (consumers,
producer_of, send, wait, wait_gone), its seeded generator and the kinds it
draws from (rng, kinds), and its records (fail, say, kills, stops, fills,
counts, expect_exit, orphans, tails, filler)."""

import os
import signal
import subprocess
import time

from soak_util import NOSPACE, SHM, LogTail, ring_segments

# Faults and their weights in the random choice.
FAULTS = {
    "producer SIGKILL": 3,
    "producer SIGTERM": 2,
    "producer SIGSTOP": 2,
    "producer SIGKILL while stopped": 1,
    "consumer SIGKILL": 2,
    "consumer SIGKILL at producer start": 1,
    "consumer SIGTERM": 1,
    "consumer SIGTERM while producer stopped": 1,
    "consumer SIGKILL while producer stopped": 1,
    "consumer SIGSTOP": 1,
    "shm full": 1,
}


class Faults:
    """The driver's faults: a mixin of Soak (soak.py)."""

    def kill_producer(self, rank, sig, stopped_first=False):
        """Kill a rank's producer (stopped for a while first, when asked); its
        consumer must notice (an error naming it, or the end of the epoch when
        it had already delivered every batch) within 10 s, after which the
        ring of the dead producer is gone."""
        pid = self.producer_of(rank)
        if pid is None:
            return False
        tail = self.tails[rank]
        tail.new()
        try:
            if stopped_first:
                self.send("producer", pid, signal.SIGSTOP)
                self.stops.append(pid)
                time.sleep(self.rng.uniform(0.2, 1.0))
            t = time.time()
            self.send("producer", pid, sig)
        except ProcessLookupError:
            return False
        self.kills.append({"t": t, "rank": rank, "pid": pid, "sig": int(sig)})
        self.say(f"rank {rank}: producer {pid} <- {signal.Signals(sig).name}")
        end = time.monotonic() + 10
        while time.monotonic() < end:
            for e in tail.new():
                if e["ev"] in ("error", "epoch_ok") and (e.get("serve") == pid or
                                                        f"pid {pid}" in e.get("msg", "")):
                    return True
            self.wait(0.02)
        self.fail(f"rank {rank}: producer {pid} killed ({signal.Signals(sig).name}), its "
                  "consumer did not notice within 10 s")
        return True

    def stop_producer(self, rank):
        pid = self.producer_of(rank)
        if pid is None:
            return False
        self.send("producer", pid, signal.SIGSTOP)
        self.stops.append(pid)
        hold = self.rng.uniform(0.3, 2.0)
        self.say(f"rank {rank}: producer {pid} stopped for {hold:.2f} s")
        time.sleep(hold)
        os.kill(pid, signal.SIGCONT)
        return True

    def kill_consumer(self, rank, sig, producer_stopped=False, at_start=False):
        """Kill a consumer (with its producer stopped first, when asked: a
        consumer waiting for a stopped producer must still obey SIGTERM; or
        just as its new producer creates a ring, when asked); it must exit
        within 3 s, its producer within 5 s more, leaving no ring; then it is
        restarted."""
        c = self.consumers[rank]
        if c.poll() is not None:
            return False
        prefix = f"pertload-py{c.pid}-"
        if at_start:
            old = set(ring_segments())
            self.kill_producer(rank, signal.SIGKILL)
            end = time.monotonic() + 5
            while not [n for n in ring_segments() if n.startswith(prefix) and n not in old]:
                if time.monotonic() > end or c.poll() is not None:
                    return False
        serve = self.producer_of(rank)
        if producer_stopped:
            if serve is None:
                return False
            self.send("producer", serve, signal.SIGSTOP)
            self.stops.append(serve)
            time.sleep(self.rng.uniform(0.2, 0.6))  # the consumer drains the ring and waits
        # SIGTERM: the consumer's handler exits with 128 + 15, unless it came
        # before the handler was installed.
        self.expect_exit[c.pid] = {-sig, 128 + sig} if sig == signal.SIGTERM else {-sig}
        self.send("consumer", c.pid, sig)
        self.say(f"rank {rank}: consumer {c.pid} <- {signal.Signals(sig).name}"
                 f" (producer {serve}{' stopped' if producer_stopped else ''})")
        try:
            c.wait(3)
        except subprocess.TimeoutExpired:
            self.fail(f"rank {rank}: consumer {c.pid} still runs 3 s after "
                      f"{signal.Signals(sig).name}"
                      f"{' (its producer stopped)' if producer_stopped else ''}")
            self.expect_exit[c.pid] = {-signal.SIGKILL}
            c.kill()
            c.wait()
        if producer_stopped:
            try:
                os.kill(serve, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if serve is not None:
            if self.wait_gone(serve, 5.0):
                self.orphans += 1
            else:
                self.fail(f"rank {rank}: producer {serve} still runs 5 s after its consumer "
                          f"{c.pid} died")
        left = [n for n in ring_segments() if n.startswith(prefix)]
        if left:
            self.fail(f"rank {rank}: consumer {c.pid} and its producer {serve} gone, "
                      f"ring(s) left: {left}")
            for n in left:
                os.unlink(os.path.join(SHM, n))
        self.wait(self.rng.uniform(0.0, 0.3))
        return True

    def stop_consumer(self, rank):
        c = self.consumers[rank]
        if c.poll() is not None:
            return False
        self.send("consumer", c.pid, signal.SIGSTOP)
        hold = self.rng.uniform(0.3, 2.0)
        self.say(f"rank {rank}: consumer {c.pid} stopped for {hold:.2f} s")
        time.sleep(hold)
        os.kill(c.pid, signal.SIGCONT)
        return True

    def fill_shm(self, rank):
        """Fill /dev/shm, restart one rank's producer into it, check the error,
        free the space. The filler grows while full: rings that go away give
        their space to it, not to the next producer."""
        if self.producer_of(rank) is None:
            return False
        t_fill = time.time()
        self.filler = Filler(os.path.join(SHM, "soak-filler"),
                             self.rng.choice([0, 4096, 64 << 10]))
        tail = LogTail(os.path.join(self.d, f"rank{rank}.log"))
        tail.new()
        self.say(f"rank {rank}: /dev/shm filled ({self.filler.leave} bytes left)")
        self.kill_producer(rank, signal.SIGKILL)
        end = time.monotonic() + 10
        seen = None
        while seen is None and time.monotonic() < end:
            self.wait(0.05)
            for e in tail.new():
                if e["ev"] == "error" and NOSPACE.search(e["msg"]):
                    seen = e
        if seen is None:
            self.fail(f"rank {rank}: no 'no space' error within 10 s of filling /dev/shm")
        else:
            self.say(f"rank {rank}: {seen['msg']}")
        self.wait(self.rng.uniform(0.2, 1.5))
        self.filler.remove()
        self.filler = None
        self.fills.append((t_fill, time.time()))
        return True

    def fault(self):
        kind = self.rng.choices(self.kinds, [FAULTS[k] for k in self.kinds])[0]
        rank = self.rng.randrange(self.args.ranks)
        do = {
            "producer SIGKILL": lambda: self.kill_producer(rank, signal.SIGKILL),
            "producer SIGTERM": lambda: self.kill_producer(rank, signal.SIGTERM),
            "producer SIGSTOP": lambda: self.stop_producer(rank),
            "producer SIGKILL while stopped":
                lambda: self.kill_producer(rank, signal.SIGKILL, stopped_first=True),
            "consumer SIGKILL": lambda: self.kill_consumer(rank, signal.SIGKILL),
            "consumer SIGKILL at producer start":
                lambda: self.kill_consumer(rank, signal.SIGKILL, at_start=True),
            "consumer SIGTERM": lambda: self.kill_consumer(rank, signal.SIGTERM),
            "consumer SIGTERM while producer stopped":
                lambda: self.kill_consumer(rank, signal.SIGTERM, producer_stopped=True),
            "consumer SIGKILL while producer stopped":
                lambda: self.kill_consumer(rank, signal.SIGKILL, producer_stopped=True),
            "consumer SIGSTOP": lambda: self.stop_consumer(rank),
            "shm full": lambda: self.fill_shm(rank),
        }[kind]
        if do():
            self.counts[kind] += 1
        else:
            self.counts[kind + " (no target)"] += 1


class Filler:
    """A file that takes all the free space of /dev/shm but `leave` bytes."""

    def __init__(self, path, leave):
        self.path, self.leave, self.size = path, leave, 0
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self.top_up()

    def top_up(self):
        """Take what was freed since the last call (all of it, then give
        `leave` bytes back)."""
        for chunk in (1 << 20, 64 << 10, 4096):
            while True:
                try:
                    os.posix_fallocate(self.fd, self.size, chunk)
                except OSError:
                    break
                self.size += chunk
        if self.leave and self.size >= self.leave:
            self.size -= self.leave
            os.ftruncate(self.fd, self.size)

    def remove(self):
        os.close(self.fd)
        os.unlink(self.path)
