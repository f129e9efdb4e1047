"""An epoch's ring has one consumer: the process and thread that iterate
it. A next() from a second thread or from a forked child is refused with
what happened, and the epoch goes on in its own thread and process with
every row once."""

import os
import threading

import pertload


def test_a_second_thread_is_refused_and_the_epoch_goes_on(small):
    loader = pertload.Loader(small.db, batch_size=16)
    it = iter(loader)
    rows = [int(r) for r in next(it).row]
    got = []

    def other():
        try:
            got.append(next(it))
        except pertload.LoaderError as e:
            got.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(got) == 1 and isinstance(got[0], pertload.LoaderError), got
    assert "one Loader iterated from two threads" in str(got[0])
    rows += [int(r) for b in it for r in b.row]
    assert sorted(rows) == list(range(300))
    loader.close()


def test_a_forked_child_is_refused_and_the_parents_epoch_goes_on(small):
    loader = pertload.Loader(small.db, batch_size=16)
    it = iter(loader)
    rows = [int(r) for r in next(it).row]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            try:
                next(it)
                msg = "no error"
            except pertload.LoaderError as e:
                msg = str(e)
            # An epoch of its own, as the message advises: the parent's goes on.
            msg += f"|child rows {sum(len(b) for b in loader)}"
            os.write(w, msg.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        msg = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert "iterated in a forked child" in msg and f"pid {os.getpid()}" in msg, msg
    assert msg.endswith("|child rows 300"), msg
    rows += [int(r) for b in it for r in b.row]
    assert sorted(rows) == list(range(300))
    loader.close()
