"""Installing pertload: `pip install .` (PEP 517 through meson-python, from
Debian's packages) into a fresh virtual environment, and `meson install`,
each then running a short epoch with nothing of the build tree around."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]

EPOCH = """
import os, sys, pertload
lib, prog = pertload.library_path(), pertload.program_path()
loader = pertload.Loader(sys.argv[1], batch_size=64, shuffle=True, rows=range(0, 250))
n = 0
for b in loader:
    t = b.to_torch("cpu", layout="pyg")
    n += len(t["row"])
print(n, lib, prog, pertload.__file__)
"""


def copy_source(dst):
    """The source tree without build outputs (the build runs in the copy)."""
    skip = shutil.ignore_patterns(".git", "__pycache__", ".mesonpy*", "*.pyc")

    def ignore(d, names):
        top = {n for n in names if n.startswith("build")} if Path(d) == SRC else set()
        return top | skip(d, names)

    shutil.copytree(SRC, dst, ignore=ignore)


def clean_env(sanitizers=True, **extra):
    """The environment without the build tree's overrides (and, unless
    `sanitizers`, without a sanitizer run's preloaded runtime: a wheel is an
    uninstrumented build)."""
    drop = {"PERTLOAD_LIB", "PERTLOAD_BIN", "PYTHONPATH"}
    if not sanitizers:
        drop |= {"LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def run(*args, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{args}: {r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_pip_install_into_a_fresh_venv(small, tmp_path):
    src, venv = tmp_path / "src", tmp_path / "venv"
    copy_source(src)
    assert not (src / "build-test").exists()
    env = clean_env(sanitizers=False)
    run(sys.executable, "-m", "venv", "--system-site-packages", venv, env=env)
    run(venv / "bin" / "pip", "install", "--no-build-isolation", "--no-index", "-q", src,
        env=env, timeout=600, cwd=tmp_path)
    site = Path(run(venv / "bin" / "python", "-c",
                    "import sysconfig; print(sysconfig.get_path('purelib'))", env=env).strip())
    out = run(venv / "bin" / "python", "-c", EPOCH, small.db, env=env, cwd=tmp_path,
              timeout=120).split()
    assert out[0] == "250"
    assert Path(out[1]).parent == site / ".pertload.mesonpy.libs"
    assert out[2] == str(venv / "bin" / "pertload")
    assert Path(out[3]).is_relative_to(site)
    # The program alone, from the environment's bin.
    assert "genes: 300" in run(venv / "bin" / "pertload", "inspect", small.db, env=env)


def test_meson_install(small, tmp_path):
    """`meson install` of the build tree these tests run from."""
    import pertload

    build = Path(pertload.library_path()).resolve().parent
    assert (build / "meson-info" / "intro-buildoptions.json").exists(), build
    dest = tmp_path / "dest"
    opts = json.loads((build / "meson-info" / "intro-buildoptions.json").read_text())
    prefix = next(o["value"] for o in opts if o["name"] == "prefix")
    run("meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet",
        timeout=300)
    root = dest / prefix.lstrip("/")
    pys = list(root.rglob("pertload/__init__.py"))
    assert len(pys) == 1
    prog = root / "bin" / "pertload"
    libs = list(root.rglob("libpertload.so"))
    assert prog.exists() and len(libs) == 1
    # Installed under a destdir, the package's recorded paths point at the
    # prefix: the environment names where they are now.
    env = clean_env(PYTHONPATH=str(pys[0].parent.parent), PERTLOAD_LIB=str(libs[0]),
                    PERTLOAD_BIN=str(prog))
    out = run(sys.executable, "-c", EPOCH, small.db, env=env, cwd=tmp_path, timeout=120).split()
    assert out[0] == "250" and out[2] == str(prog)
    assert (root / "include" / "pertload.h").exists()
    assert list(root.rglob("pertload.pc"))
