"""A stand-in for pytest where it is not installed (scripts/gpu-check.sh on a
machine with torch and numpy alone): runs the tests of the given files with
the part of pytest they use (fixtures with session and function scope,
autouse and yield fixtures, tmp_path, tmp_path_factory, monkeypatch,
mark.parametrize, mark.skipif, raises, fail, skip).

usage: python3 minitest.py TEST_FILE[::TEST_NAME]... [-k [not ]SUBSTRING]
(TEST_FILE::TEST_NAME: that test of the file, every parametrisation; a file
named alone: all its tests)
Prints one line per test (PASSED, FAILED with the error, SKIPPED) and a
count; exits 1 when a test failed, 0 otherwise.
"""

import contextlib
import importlib.util
import inspect
import itertools
import re
import shutil
import sys
import tempfile
import traceback
import types
from pathlib import Path


class Skipped(Exception):
    pass


class Failed(AssertionError):
    pass


class _Mark:
    def __init__(self, name, args, kwargs):
        self.name, self.args, self.kwargs = name, args, kwargs

    def __call__(self, f):
        f.__dict__.setdefault("_marks", []).insert(0, self)
        return f


class _MarkGen:
    def __getattr__(self, name):
        return lambda *a, **kw: _Mark(name, a, kw)


def fixture(f=None, *, scope="function", autouse=False, params=None):
    def wrap(fn):
        fn._fixture = {"scope": scope, "autouse": autouse}
        return fn
    return wrap(f) if f is not None else wrap


@contextlib.contextmanager
def raises(exc, match=None):
    info = types.SimpleNamespace(value=None)
    try:
        yield info
    except exc as e:
        info.value = e
        if match is not None and not re.search(match, str(e)):
            raise Failed(f"{exc.__name__} raised, but {str(e)!r} does not match {match!r}")
        return
    raise Failed(f"DID NOT RAISE {exc.__name__}")


def fail(msg=""):
    raise Failed(msg)


def skip(msg=""):
    raise Skipped(msg)


def _install_fake():
    m = types.ModuleType("pytest")
    m.fixture, m.raises, m.fail, m.skip, m.mark = fixture, raises, fail, skip, _MarkGen()
    sys.modules["pytest"] = m


class MonkeyPatch:
    _absent = object()

    def __init__(self):
        self._undo = []

    def setattr(self, obj, name, value, raising=True):
        old = getattr(obj, name, self._absent)
        if old is self._absent and raising:
            raise AttributeError(f"{obj!r} has no attribute {name!r}")
        self._undo.append(lambda: delattr(obj, name) if old is self._absent
                          else setattr(obj, name, old))
        setattr(obj, name, value)

    def setitem(self, d, key, value):
        old = d.get(key, self._absent)
        self._undo.append(lambda: d.pop(key, None) if old is self._absent
                          else d.__setitem__(key, old))
        d[key] = value

    def setenv(self, name, value):
        import os
        self.setitem(os.environ, name, str(value))

    def delenv(self, name, raising=True):
        import os
        if name in os.environ:
            old = os.environ[name]
            self._undo.append(lambda: os.environ.__setitem__(name, old))
            del os.environ[name]
        elif raising:
            raise KeyError(name)

    def undo(self):
        while self._undo:
            self._undo.pop()()


class TmpFactory:
    def __init__(self, root):
        self.root = Path(root)
        self.n = itertools.count()

    def mktemp(self, name):
        p = self.root / f"{name}{next(self.n)}"
        p.mkdir()
        return p


class Runner:
    def __init__(self, root):
        self.tmp = TmpFactory(root)
        self.fixtures = {}
        self.session = {}
        self.session_teardown = []

    def add_fixtures(self, module):
        for name, f in vars(module).items():
            if callable(f) and hasattr(f, "_fixture"):
                self.fixtures[name] = f

    def value(self, name, scope_cache, teardown):
        if name in scope_cache:
            return scope_cache[name]
        if name == "tmp_path_factory":
            return self.tmp
        if name == "tmp_path":
            v = self.tmp.mktemp("tmp")
        elif name == "monkeypatch":
            v = MonkeyPatch()
            teardown.append(v.undo)
        elif name in self.fixtures:
            f = self.fixtures[name]
            session = f._fixture["scope"] == "session"
            cache, td = (self.session, self.session_teardown) if session else (scope_cache,
                                                                               teardown)
            if name in cache:
                return cache[name]
            args = [self.value(a, cache, td) for a in inspect.signature(f).parameters]
            v = f(*args)
            if inspect.isgenerator(v):
                gen, v = v, next(v)
                td.append(lambda: next(gen, None))
            cache[name] = v
            return v
        else:
            raise Failed(f"fixture {name!r} not found")
        scope_cache[name] = v
        return v

    def run(self, name, f, params):
        cache, teardown = dict(params), []
        try:
            for fname, fx in self.fixtures.items():
                if fx._fixture["autouse"]:
                    self.value(fname, cache, teardown)
            args = [self.value(a, cache, teardown) for a in inspect.signature(f).parameters]
            f(*args)
            return "PASSED", ""
        except Skipped as e:
            return "SKIPPED", str(e)
        except BaseException as e:  # noqa: BLE001 - every failure is reported
            if isinstance(e, KeyboardInterrupt):
                raise
            return "FAILED", "".join(traceback.format_exception(type(e), e, e.__traceback__))
        finally:
            for t in reversed(teardown):
                try:
                    t()
                except BaseException as e:  # noqa: BLE001
                    print(f"  teardown of {name}: {e!r}")


def cases(f):
    """(id, params) of every parametrisation of test function f."""
    marks = getattr(f, "_marks", [])
    for m in marks:
        if m.name == "skipif" and m.args and m.args[0]:
            yield None, m.kwargs.get("reason", "skipped")
            return
    combos = [("", {})]
    for m in (m for m in marks if m.name == "parametrize"):
        names = [n.strip() for n in (m.args[0].split(",") if isinstance(m.args[0], str)
                                     else m.args[0])]
        nxt = []
        for cid, params in combos:
            for i, v in enumerate(m.args[1]):
                vals = v if len(names) > 1 else (v,)
                p = dict(params)
                p.update(zip(names, vals))
                nxt.append((f"{cid}-{i}" if cid else str(i), p))
        combos = nxt
    for cid, params in combos:
        yield cid, params


def main(argv):
    k = None
    if "-k" in argv:
        i = argv.index("-k")
        k, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    _install_fake()
    chosen = {}  # file -> the test names asked for (empty: all)
    for a in argv:
        path, _, name = a.partition("::")
        names = chosen.setdefault(Path(path).resolve(), set())
        if name:
            names.add(name)
        elif names:
            names.clear()
    files = list(chosen)
    if not files:
        print(__doc__)
        return 2
    root = tempfile.mkdtemp(prefix="minitest-")
    runner = Runner(root)
    counts = {"PASSED": 0, "FAILED": 0, "SKIPPED": 0}
    try:
        sys.path.insert(0, str(files[0].parent))
        conftest = files[0].parent / "conftest.py"
        if conftest.exists():
            import conftest as c  # noqa: F401 - its fixtures
            runner.add_fixtures(c)
        for path in files:
            spec = importlib.util.spec_from_file_location(path.stem, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            runner.add_fixtures(mod)
            for name, f in list(vars(mod).items()):
                if not name.startswith("test_") or not callable(f):
                    continue
                if chosen[path] and name not in chosen[path]:
                    continue
                for cid, params in cases(f):
                    node = f"{path.name}::{name}" + (f"[{cid}]" if cid else "")
                    if k and (k[4:] in node if k.startswith("not ") else k not in node):
                        continue
                    if cid is None:
                        status, why = "SKIPPED", params
                    else:
                        status, why = runner.run(node, f, params)
                    counts[status] += 1
                    print(f"{node} {status}" + (f" ({why})" if status == "SKIPPED" else ""))
                    if status == "FAILED":
                        print(why)
                    sys.stdout.flush()
    finally:
        for t in reversed(runner.session_teardown):
            t()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{counts['PASSED']} passed, {counts['FAILED']} failed, {counts['SKIPPED']} skipped")
    return 1 if counts["FAILED"] or not counts["PASSED"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
