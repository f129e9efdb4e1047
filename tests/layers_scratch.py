"""check-layers.py --self-test leaves nothing in the temporary folder: it
runs with TMPDIR set to a folder of its own, which must be empty after it.

usage: layers_scratch.py CHECK_LAYERS_PY"""
import os
import subprocess
import sys
import tempfile


def main():
    with tempfile.TemporaryDirectory(prefix='layers-scratch-') as tmp:
        r = subprocess.run([sys.executable, sys.argv[1], '--self-test'],
                           env={**os.environ, 'TMPDIR': tmp}, capture_output=True, text=True)
        left = sorted(os.listdir(tmp))
    print(r.stdout + r.stderr, end='')
    if r.returncode != 0:
        print(f'layers_scratch: the self-test failed (exit {r.returncode})')
        return 1
    if left:
        print(f'layers_scratch: the self-test left {len(left)} entries in TMPDIR: '
              f'{", ".join(left[:5])}')
        return 1
    print('layers_scratch: the self-test left nothing in TMPDIR')
    return 0


if __name__ == '__main__':
    sys.exit(main())
