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

usage: check-layers.py [SOURCE_ROOT]   check the tree (default: this script's)
       check-layers.py --self-test     plant a violation in a scratch tree and
                                       check that it is found
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


def self_test():
    def tree(files):
        root = tempfile.mkdtemp(prefix='check-layers-')
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
    }
    planted = {  # each a violation that must be found, with the line it names
        'masks/graph.c': ('#include "masks.h"\n#include "loader/plan.h"\n', 'masks/graph.c:2: includes loader/plan.h'),
        'src/core/db.c': ('#include "preprocess/text.h"\n', 'src/core/db.c:1: includes preprocess/text.h'),
        'ring/ring.c': ('#include "../loader/plan.h"\n', 'ring/ring.c:1: includes loader/plan.h'),
        'collate/slot.c': ('#include "cli/cli.h"\n', 'collate/slot.c:1: includes cli/cli.h'),
        'loader/io.c': ('#include "tests/testutil.h"\n', 'loader/io.c:1: includes tests/testutil.h'),
        'preprocess/import/x/y.c': ('#include "bench/bench.h"\n', 'preprocess/import/x/y.c:1: includes bench/bench.h'),
    }
    ok = True
    got = violations(tree(clean))
    if got:
        print('self-test: a clean tree reported', got)
        ok = False
    extra = {'preprocess/text.h': '', 'tests/testutil.h': ''}
    for path, (text, expect) in planted.items():
        got = violations(tree({**clean, **extra, path: text}))
        if len(got) != 1 or not got[0].startswith(expect):
            print(f'self-test: planting {path} reported {got}, expected one "{expect}..."')
            ok = False
    print('self-test:', 'passed' if ok else 'FAILED')
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    found = violations(os.path.abspath(root))
    for v in found:
        print(v)
    if found:
        print(f'check-layers: {len(found)} problem(s); the stages: docs/architecture.md')
        return 1
    print('check-layers: every include runs down or within its stage')
    return 0


if __name__ == '__main__':
    sys.exit(main())
