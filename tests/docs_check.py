#!/usr/bin/env python3
"""Run every example of the documentation and check every relative link.

The pages are README.md and every docs/**/*.md. Each fenced block whose
language is `sh` or `python` runs, in page order, in a working directory of
the page's own that looks like the source tree (every top-level entry of the
tree linked in, `build` linking the build directory, `demo/db` a small
database built once by this script), with the built `pertload` first on PATH
and the build tree's Python package on PYTHONPATH. A block preceded by the
line `<!-- not run: REASON -->` is skipped and listed with its reason (a
block that needs a GPU, several machines, or runs this suite itself). Any
block that exits non-zero fails the check, naming the page and line.

A block preceded by `<!-- pertload CMD --help -->` must hold exactly what
`pertload CMD --help` prints (`--fix-help` rewrites such blocks), so the
command-line page cannot drift from the program.

Relative links ([text](path), ![alt](path)) must name an existing file or
folder of the tree; a link with #anchor must name a heading of that page.

    docs_check.py SOURCE_ROOT BUILD_DIR [--only PAGE] [--list] [--fix-help]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

FENCE = re.compile(r"^(`{3,})\s*([A-Za-z0-9_+-]*)\s*(.*)$")
HELP = re.compile(r"^<!--\s*pertload\s+([a-z]+)\s+--help\s*-->\s*$")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
RUN_LANGS = {"sh": "sh", "bash": "sh", "console": None, "python": "python", "py": "python"}
BLOCK_TIMEOUT = 600


def pages(root):
    out = [os.path.join(root, "README.md")]
    for d, _, files in os.walk(os.path.join(root, "docs")):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md")]
    return out


def blocks(path):
    """(line, lang, text, skip_reason) for every fenced block of a page."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i + 1
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        if j == len(lines):
            raise SystemExit("%s:%d: code block never closed" % (path, start))
        prev = i - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        skip = None
        if prev >= 0:
            s = NOT_RUN.match(lines[prev].strip())
            if s:
                skip = s.group(1)
                if not skip:
                    raise SystemExit("%s:%d: 'not run' without a reason" % (path, prev + 1))
        out.append((start, lang, "\n".join(lines[i + 1:j]) + "\n", skip))
        i = j + 1
    return out


def help_text(bin_path, cmd):
    r = subprocess.run([bin_path, cmd, "--help"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    return r.stdout.decode("utf-8", "replace").rstrip("\n") + "\n"


def check_help(root, page, bin_path, fix):
    """Blocks marked <!-- pertload CMD --help --> against the program's help."""
    lines = open(page, encoding="utf-8").read().split("\n")
    errors, changed, i = [], False, 0
    while i < len(lines):
        m = HELP.match(lines[i].strip())
        if not m:
            i += 1
            continue
        j = i + 1
        if j >= len(lines) or not FENCE.match(lines[j]):
            errors.append("%s:%d: help marker without a code block after it" % (
                os.path.relpath(page, root), i + 1))
            i += 1
            continue
        fence = FENCE.match(lines[j]).group(1)
        k = j + 1
        while k < len(lines) and not lines[k].startswith(fence):
            k += 1
        want = help_text(bin_path, m.group(1))
        have = "\n".join(lines[j + 1:k]) + "\n"
        if have != want:
            if fix:
                lines[j + 1:k] = want.rstrip("\n").split("\n")
                changed = True
                k = j + 1 + len(want.rstrip("\n").split("\n"))
            else:
                errors.append("%s:%d: block differs from 'pertload %s --help' "
                              "(tests/docs_check.py --fix-help rewrites it)" % (
                                  os.path.relpath(page, root), j + 1, m.group(1)))
        i = k + 1
    if changed:
        open(page, "w", encoding="utf-8").write("\n".join(lines))
    return errors


def anchors(path):
    """GitHub-style anchors of a page's headings."""
    out = set()
    in_code = False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line.rstrip("\n")):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        title = re.sub(r"[^\w\- ]", "", title)
        out.add(title.replace(" ", "-"))
    return out


def check_links(root, page):
    errors = []
    text = open(page, encoding="utf-8").read()
    # Links inside code blocks are code, not links.
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for n, line in enumerate(text.split("\n"), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, root)
            if not full.startswith(os.path.abspath(root)):
                errors.append("%s:%d: link '%s' leaves the source tree" % (rel, n, target))
            elif not os.path.exists(full):
                errors.append("%s:%d: link '%s': no such file" % (rel, n, target))
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                errors.append("%s:%d: link '%s': no heading with that anchor" % (rel, n, target))
    return errors


def make_db(build, bin_path, where):
    """The small database every page's `demo/db` names."""
    data, db = os.path.join(where, "data"), os.path.join(where, "db")
    subprocess.run([bin_path, "synth", data, "--samples", "3000", "--seed", "7"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(data, "build-args.txt")) as f:
        args = [a for a in f.read().split("\n") if a]
    subprocess.run([bin_path, "build", "-o", db, "--quiet"] + args, check=True,
                   stdout=subprocess.DEVNULL)
    return data, db


def unpack_pyg(root, base):
    """PyTorch Geometric 2.4.0 as published (shared/deps beside the checkout,
    or the copy PERTLOAD_PYG_TARBALL names), unpacked for the pages' PyG
    examples; missing, the check fails."""
    tarball = os.environ.get("PERTLOAD_PYG_TARBALL") or os.path.join(
        os.path.dirname(root), "shared", "deps", "torch_geometric-2.4.0.tar.gz")
    if not os.path.isfile(tarball):
        raise SystemExit("docs_check: PyTorch Geometric 2.4.0 is missing: %s (shared/deps "
                         "beside the checkout)" % tarball)
    d = os.path.join(base, "pyg")
    with tarfile.open(tarball) as t:
        t.extractall(d)
    return d


def workdir(root, build, demo, base):
    w = tempfile.mkdtemp(prefix="page-", dir=base)
    for e in os.listdir(root):
        if e.startswith(".") or e.startswith("build") or e == "demo":
            continue
        os.symlink(os.path.join(root, e), os.path.join(w, e))
    os.symlink(build, os.path.join(w, "build"))
    os.makedirs(os.path.join(w, "demo"))
    os.symlink(demo[0], os.path.join(w, "demo", "data"))
    os.symlink(demo[1], os.path.join(w, "demo", "db"))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("build")
    ap.add_argument("--only", help="run one page (path relative to the root)")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    ap.add_argument("--fix-help", action="store_true",
                    help="rewrite the help blocks from the program's --help, run nothing")
    a = ap.parse_args()
    root, build = os.path.abspath(a.root), os.path.abspath(a.build)
    bin_path = os.environ.get("PERTLOAD_BIN") or shutil.which("pertload")
    if not bin_path:
        raise SystemExit("docs_check: PERTLOAD_BIN is not set and no pertload on PATH")

    failures, skipped, ran = [], [], 0
    all_pages = pages(root)
    for p in all_pages:
        failures += check_links(root, p)
        failures += check_help(root, p, bin_path, a.fix_help)
    if a.fix_help:
        for f in failures:
            print(f, file=sys.stderr)
        return 1 if failures else 0
    todo = [p for p in all_pages if not a.only or os.path.relpath(p, root) == a.only]
    if a.only and not todo:
        raise SystemExit("docs_check: no page %s" % a.only)
    if a.list:
        for p in todo:
            for line, lang, _, skip in blocks(p):
                print("%s:%d %s%s" % (os.path.relpath(p, root), line, lang,
                                      " (not run: %s)" % skip if skip else ""))
        return 0

    base = tempfile.mkdtemp(prefix="pertload-docs-")
    try:
        demo = make_db(build, bin_path, base)
        env = dict(os.environ)
        # The pages are written for Debian, where python3 is /usr/bin/python3.
        shims = os.path.join(base, "bin")
        os.makedirs(shims)
        os.symlink("/usr/bin/python3", os.path.join(shims, "python3"))
        env["PATH"] = os.pathsep.join([os.path.dirname(os.path.abspath(bin_path)), shims,
                                       env["PATH"]])
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(build, "python"),
                                             unpack_pyg(root, base)])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PERTLOAD_DEMO_SAMPLES"] = "3000"
        for p in todo:
            rel = os.path.relpath(p, root)
            w = None
            for line, lang, text, skip in blocks(p):
                kind = RUN_LANGS.get(lang)
                if kind is None:
                    continue
                if skip:
                    skipped.append("%s:%d: %s" % (rel, line, skip))
                    continue
                if w is None:
                    w = workdir(root, build, demo, base)
                cmd = (["bash", "-eu", "-c", text] if kind == "sh"
                       else ["/usr/bin/python3", "-c", text])
                t0 = time.monotonic()
                try:
                    r = subprocess.run(cmd, cwd=w, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT)
                    rc, out = r.returncode, r.stdout.decode("utf-8", "replace")
                except subprocess.TimeoutExpired as e:
                    rc, out = "timeout", (e.stdout or b"").decode("utf-8", "replace")
                ran += 1
                took = time.monotonic() - t0
                if rc != 0:
                    failures.append("%s:%d: %s block failed (%s):\n%s\n--- output ---\n%s" % (
                        rel, line, lang, rc, text, out[-4000:]))
                    print("FAIL %s:%d (%.1f s)" % (rel, line, took), flush=True)
                else:
                    print("ok   %s:%d (%.1f s)" % (rel, line, took), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for s in skipped:
        print("not run: " + s)
    for f in failures:
        print(f, file=sys.stderr)
    print("docs_check: %d blocks ran, %d not run, %d failures" % (ran, len(skipped), len(failures)))
    if ran == 0 and not a.only:
        print("docs_check: no block ran", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
