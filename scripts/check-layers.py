#!/usr/bin/env python3
"""Fail when a source file includes a header of a stage above its own.

The stages, bottom to top (docs/architecture.md):

    src/core, include  <  preprocess  <  masks  <  collate  <  ring  <  loader  <  cli, bench

A file may include headers of its own stage and of the stages below it. bench/
sits with cli/ at the top (`pertload bench` links it); tests/, fuzz/ and
python/ are not checked, and no stage may include them. Only quoted includes
are followed: each is resolved as the compiler does, beside the file, then
from the source root, then from include/; one that names no file of the tree
(pl_config.h, generated) is left alone.

Circles between files: a C unit (foo.c with its foo.h) depends on the units
that define the pl_ functions it calls or names (static inline ones in a
header included); a Python module of python/pertload on the modules it
imports, at the top or inside a function. No two units may depend on each
other, directly or round a longer circle. The Python modules have stages of
their own, bottom to top (PY_STAGES): a module imports only its own stage and
those below it (the package's __init__ and generated files excepted).

usage: check-layers.py [SOURCE_ROOT]   check the tree (default: this script's)
       check-layers.py --self-test     plant violations (includes, circles, Python
                                       stages) in scratch trees; check each is found
"""
import os
import re
import sys
import tempfile

STAGES = [  # (folder, rank); the longest folder that holds a file decides
    ('include', 0), ('src/core', 0), ('preprocess', 1), ('masks', 2), ('collate', 3),
    ('ring', 4), ('loader', 5), ('cli', 6), ('bench', 6),
    ('tests', 7), ('fuzz', 7), ('python', 7),
]
CHECKED = ('include', 'src', 'preprocess', 'masks', 'collate', 'loader', 'ring', 'cli')
NAMES = {0: 'the core', 1: 'preprocess', 2: 'masks', 3: 'collate', 4: 'ring',
         5: 'loader', 6: 'the command line', 7: 'tests'}
SOURCES = ('.c', '.h', '.cu')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def rank(path):
    best = None
    for folder, r in STAGES:
        if (path == folder or path.startswith(folder + '/')) and \
                (best is None or len(folder) > len(best[0])):
            best = (folder, r)
    return best[1] if best else None


def resolve(root, src, name):
    for base in (os.path.dirname(src), '', 'include'):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def violations(root):
    found = []
    for top in CHECKED:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                src = os.path.relpath(os.path.join(d, f), root)
                r = rank(src)
                if r is None:
                    found.append(f'{src}: in no stage (add its folder to check-layers.py)')
                    continue
                with open(os.path.join(root, src), encoding='utf-8', errors='replace') as fh:
                    for line_no, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        hdr = resolve(root, src, m.group(1))
                        if hdr is None:
                            continue
                        hr = rank(hdr)
                        if hr is not None and hr > r:
                            found.append(f'{src}:{line_no}: includes {hdr}: '
                                         f'{NAMES[r]} may not include {NAMES[hr]} (a stage above it)')
    return found


PY_PACKAGE = 'python/pertload'
PY_STAGES = [  # bottom to top (docs/architecture.md, "The Python client")
    ('the ctypes bindings', ('_lib', '_paths')),
    ('the ring and its slots', ('_slots',)),
    ('the layouts', ('kernels', '_layouts', 'pyg', 'lazy')),
    ('the graph and the batch', ('_identity', 'graph', 'schedule', 'subset', 'batch')),
    ('the transport between processes', ('packed', 'arena', 'prefetch')),
    ('the loader', ('_epochs', '_service', 'resume', 'loader')),
    ('the torch.utils.data forms', ('data',)),
]
PY_IMPORT = re.compile(r'^\s*(?:from\s+(\.+\w*(?:\.\w+)*)\s+import\s+([\w\s,()]+?)\s*$|'
                       r'import\s+pertload\.(\w+))')
C_DEF = re.compile(r'^(?!static\b(?!\s+inline))[A-Za-z_][\w\s\*]*?\b(pl_\w+)\s*\([^;]*$')
C_DEF_INLINE = re.compile(r'^static\s+inline\b[\w\s\*]*?\b(pl_\w+)\s*\(')
C_NAME = re.compile(r'\bpl_\w+\b')
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)  # and strings


def c_unit(path):
    return os.path.splitext(path)[0]


def c_graph(root):
    """{unit: {unit it depends on: a line that shows it}} over the checked C
    files: a .c file depends on the unit defining a pl_ function it names; a
    header on the unit of a static inline function it names."""
    files, defs = {}, {}
    for top in CHECKED:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(names):
                if f.endswith(SOURCES):
                    src = os.path.relpath(os.path.join(d, f), root)
                    with open(os.path.join(root, src), encoding='utf-8', errors='replace') as fh:
                        files[src] = fh.read()
    for src, text in files.items():
        header = src.endswith('.h')
        for line in C_COMMENT.sub(lambda m: '\n' * m.group(0).count('\n'), text).split('\n'):
            m = (C_DEF_INLINE if header else C_DEF).match(line)
            if m:
                defs.setdefault(m.group(1), c_unit(src))
    graph = {}
    for src, text in files.items():
        unit = c_unit(src)
        edges = graph.setdefault(unit, {})
        code = C_COMMENT.sub(lambda m: '\n' * m.group(0).count('\n'), text)
        for line_no, line in enumerate(code.split('\n'), 1):
            if src.endswith('.h') and not line.startswith((' ', '\t', '}')):
                continue  # a header's declarations; only inline bodies call
            for name in C_NAME.findall(line):
                to = defs.get(name)
                if to is not None and to != unit and to not in edges:
                    edges[to] = f'{src}:{line_no}: names {name}'
    return graph


def py_graph(root):
    """{module: {module it imports: a line that shows it}} over the package."""
    pkg = os.path.join(root, PY_PACKAGE)
    graph = {}
    if not os.path.isdir(pkg):
        return graph
    mods = {os.path.splitext(f)[0] for f in os.listdir(pkg) if f.endswith(('.py', '.py.in'))}
    mods = {m.split('.')[0] for m in mods}
    for f in sorted(os.listdir(pkg)):
        if not f.endswith('.py'):
            continue
        mod = f[:-3]
        edges = graph.setdefault(mod, {})
        with open(os.path.join(pkg, f), encoding='utf-8') as fh:
            for line_no, line in enumerate(fh, 1):
                m = PY_IMPORT.match(line)
                if not m:
                    continue
                if m.group(3):
                    targets = [m.group(3)]
                elif m.group(1).strip('.'):
                    targets = [m.group(1).strip('.').split('.')[0]]
                else:  # from . import a, b
                    targets = [t.split(' as ')[0].strip() for t in
                               m.group(2).strip('()').split(',')]
                for t in targets:
                    if t in mods and t != mod and t not in edges:
                        edges[t] = f'{PY_PACKAGE}/{f}:{line_no}: imports {t}'
    return graph


def circles(graph):
    """The circles of `graph`: one line per strongly connected set of more
    than one unit, naming one dependency of each unit on the next."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):  # Tarjan, recursive (graphs of a few hundred units)
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = []
    for comp in sorted(out):
        members = set(comp)
        shown = [graph[u][w] for u in comp for w in sorted(graph[u]) if w in members]
        found.append(f'circle between {" <-> ".join(comp)}: ' + '; '.join(shown))
    return found


def py_stage_violations(root):
    rank = {m: r for r, (_, mods) in enumerate(PY_STAGES) for m in mods}
    found = []
    for mod, edges in sorted(py_graph(root).items()):
        if mod == '__init__':
            continue
        if mod not in rank:
            found.append(f'{PY_PACKAGE}/{mod}.py: in no stage (add it to PY_STAGES)')
            continue
        for t, where in sorted(edges.items()):
            if rank.get(t, -1) > rank[mod]:
                found.append(f'{where}: {PY_STAGES[rank[mod]][0]} may not import '
                             f'{PY_STAGES[rank[t]][0]} (a stage above it)')
    return found


def all_violations(root):
    py = py_graph(root)
    py.pop('__init__', None)
    return violations(root) + circles(c_graph(root)) + circles(py) + \
        py_stage_violations(root)


def self_test():
    """Plant the violations in scratch trees under one temporary folder,
    removed at the end whatever happens; check that nothing is left."""
    with tempfile.TemporaryDirectory(prefix='check-layers-') as scratch:
        ok = self_test_in(scratch)
    if os.path.exists(scratch):
        print(f'self-test: {scratch} was left behind')
        ok = False
    print('self-test:', 'passed' if ok else 'FAILED')
    return 0 if ok else 1


def self_test_in(scratch):
    """The self-test's trees, each a new folder in `scratch`. @return ok."""
    def tree(files):
        root = tempfile.mkdtemp(dir=scratch)
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as fh:
                fh.write(text)
        return root
    clean = {
        'src/core/error.h': '#include "pertload.h"\n',
        'include/pertload.h': '',
        'masks/masks.h': '#include "src/core/error.h"\n',
        'loader/plan.c': '#include "masks/masks.h"\n#include "plan.h"\n#include "pl_config.h"\n',
        'loader/plan.h': '',
        'cli/main.c': '#include "loader/plan.h"\n#include "bench/bench.h"\n',
        'bench/bench.h': '#include "cli/cli.h"\n',
        'cli/cli.h': '',
        # C units that call down, within a unit, and name others only in
        # declarations, comments and strings
        'preprocess/import/names/names.h': '#include "pertload.h"\n'
            'int pl__names_add(int g);\nint pl__alias_read(const char *p);\n',
        'preprocess/import/names/names.c': '#include "names.h"\n'
            '/* filled by pl__alias_read() */\nint pl__names_add(int g)\n{\n'
            '    return g ? pl__names_add(g - 1) : 0;\n}\n'
            'int pl__names_count(void) { return 2; }\n'
            'const char *pl__names_why(void) { return "see pl__alias_read"; }\n',
        'preprocess/import/names/aliases.c': '#include "names.h"\n'
            'int pl__alias_read(const char *p)\n{\n    return pl__names_add(p[0]);\n}\n',
        'preprocess/text.h': '#include "src/core/error.h"\n'
            'static inline int pl__utf8_len(unsigned c)\n{\n    return c < 0x80;\n}\n',
        'preprocess/text.c': '#include "text.h"\n#include "import/source/source.h"\n'
            'int pl__text_open(void)\n{\n    return pl__src_open();\n}\n',
        'preprocess/import/source/source.h': 'int pl__src_open(void);\n',
        'preprocess/import/source/source.c': '#include "source.h"\n'
            'int pl__src_open(void)\n{\n    return 0;\n}\n',
        # the Python package, its modules importing down or within a stage
        'python/pertload/__init__.py': 'from .data import Dataset\nfrom . import packed\n',
        'python/pertload/_lib.py': 'import ctypes\n',
        'python/pertload/_paths.py.in': '',
        'python/pertload/pyg.py': 'from . import _layouts, _lib, kernels\n',
        'python/pertload/lazy.py': '"""from . import batch (a docstring)"""\n'
            'from . import _layouts, kernels, pyg\n',
        'python/pertload/_layouts.py': '',
        'python/pertload/kernels.py': 'from ._lib import LoaderError\n',
        'python/pertload/batch.py': 'from . import _lib, lazy, pyg\n',
        'python/pertload/packed.py': 'import numpy as np\n\nfrom .batch import Batch\n',
        'python/pertload/arena.py': 'from . import packed\n\n\ndef f():\n'
            '    from .batch import Batch, parse_slot\n',
        'python/pertload/data.py': 'from . import (_lib,\n               arena)\n'
            'from .loader import Loader\n',
        'python/pertload/loader.py': 'from .batch import HEADER, Batch\n',
    }
    planted = {  # each a violation that must be found, with the line it names
        'masks/graph.c': ('#include "masks.h"\n#include "loader/plan.h"\n', 'masks/graph.c:2: includes loader/plan.h'),
        'src/core/db.c': ('#include "preprocess/text.h"\n', 'src/core/db.c:1: includes preprocess/text.h'),
        'ring/ring.c': ('#include "../loader/plan.h"\n', 'ring/ring.c:1: includes loader/plan.h'),
        'collate/slot.c': ('#include "cli/cli.h"\n', 'collate/slot.c:1: includes cli/cli.h'),
        'loader/io.c': ('#include "tests/testutil.h"\n', 'loader/io.c:1: includes tests/testutil.h'),
        'preprocess/import/x/y.c': ('#include "bench/bench.h"\n', 'preprocess/import/x/y.c:1: includes bench/bench.h'),
        # circles between C units: a call back up, a static inline function
        # of a header (the unit of text.h and text.c) called by what it uses
        'preprocess/import/names/names.c': (
            '#include "names.h"\nint pl__names_add(int g)\n{\n    return pl__alias_read("");\n}\n',
            'circle between preprocess/import/names/aliases <-> '
            'preprocess/import/names/names: preprocess/import/names/aliases.c:4: names '
            'pl__names_add; preprocess/import/names/names.c:4: names pl__alias_read'),
        'preprocess/import/source/source.c': (
            '#include "source.h"\nint pl__src_open(void)\n{\n    return pl__utf8_len(0);\n}\n',
            'circle between preprocess/import/source/source <-> preprocess/text: '),
        # Python: a circle within a stage (an import inside a function), one
        # through a longer round, an import up, a module in no stage
        'python/pertload/pyg.py': ('from . import _lib, kernels\n\n\ndef finish():\n'
                                   '    from . import lazy\n',
                                   'circle between lazy <-> pyg: python/pertload/lazy.py:2: '
                                   'imports pyg; python/pertload/pyg.py:5: imports lazy'),
        'python/pertload/_layouts.py': ('import pertload.kernels\nfrom .pyg import build\n',
                                        'circle between _layouts <-> pyg: '),
        'python/pertload/graph.py': ('from . import _lib\nfrom .loader import Loader\n',
                                     'python/pertload/graph.py:2: imports loader: the graph and '
                                     'the batch may not import the loader (a stage above it)'),
        'python/pertload/extra.py': ('from . import _lib\n',
                                     'python/pertload/extra.py: in no stage'),
    }
    ok = True
    got = all_violations(tree(clean))
    if got:
        print('self-test: a clean tree reported', got)
        ok = False
    extra = {'preprocess/text.h': '', 'tests/testutil.h': ''}
    for path, (text, expect) in planted.items():
        got = all_violations(tree({**extra, **clean, path: text}))
        if len(got) != 1 or not got[0].startswith(expect):
            print(f'self-test: planting {path} reported {got}, expected one "{expect}..."')
            ok = False
    return ok


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    found = all_violations(os.path.abspath(root))
    for v in found:
        print(v)
    if found:
        print(f'check-layers: {len(found)} problem(s); the stages: docs/architecture.md')
        return 1
    print('check-layers: every include and import runs down or within its stage, '
          'and no files depend on each other round a circle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
