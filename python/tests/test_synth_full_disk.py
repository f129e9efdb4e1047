"""`pertload synth` on a file system that fills up: every size of a small
private tmpfs (`unshare --mount`, root as in CI) from the first file to the
last, so that the write fails in each of the files in turn. Each failure
exits 1 naming the file and the reason, and leaves no temporary file behind
(every file is written to NAME.tmp and renamed into place only when whole);
the files written before it are whole."""

import os
import subprocess

import pytest

from conftest import pertload_bin

ARGS = ["--genes", "300", "--samples", "3000", "--scale", "0.05", "--payload-dim", "4",
        "--seed", "5", "--quiet"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a private tmpfs")
def test_a_full_file_system_fails_each_file_cleanly(tmp_path):
    whole = tmp_path / "whole"
    subprocess.run([pertload_bin(), "synth", str(whole), *ARGS], check=True, timeout=120)
    sizes = {p.relative_to(whole).as_posix(): p.stat().st_size
             for p in whole.rglob("*") if p.is_file()}
    pages = sum(-(-s // 4096) for s in sizes.values()) + 4
    # One mount namespace; a tmpfs of each size in turn, from 1 page to all
    # of them, each run reporting its exit status and what it left.
    script = r'''
for kib in $SIZES; do
    mount -t tmpfs -o size=${kib}k pertload-test /mnt || exit 3
    "$BIN" synth /mnt/out $ARGS 2>"$ERR"
    echo "== $kib $? $(find /mnt/out -type f 2>/dev/null | sort | tr '\n' ' ')"
    echo "-- $(cat "$ERR")"
    umount /mnt || exit 3
done
'''
    kib = sorted({4 * p for p in range(1, pages + 1, 3)} | {4 * (pages + 16)})
    env = dict(os.environ, SIZES=" ".join(map(str, kib)), BIN=pertload_bin(),
               ARGS=" ".join(ARGS), ERR=str(tmp_path / "err"))
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    runs = r.stdout.split("== ")[1:]
    assert len(runs) == len(kib)
    failed_in = set()
    for run in runs:
        head, err = run.split("\n-- ", 1)
        size, rc, *left = head.split()
        left = [p[len("/mnt/out/"):] for p in left]
        assert not [p for p in left if p.endswith(".tmp")], (size, left)
        for p in left:  # what is there is whole
            assert os.path.getsize(f"{whole}/{p}") == sizes[p] or p == "build-args.txt", p
        if rc == "0":
            assert sorted(left) == sorted(sizes), size
            continue
        assert rc == "1", (size, rc, err)
        assert "No space left on device" in err and "/mnt/out" in err, err
        failed_in.add(err.split(":")[1].strip())
    assert int(runs[-1].split()[1]) == 0, "the largest tmpfs holds the whole data set"
    # the write failed in many of the files, early and late ones
    assert len(failed_in) >= 6, failed_in
    assert any("samples" in f or "rmr" in f or "payload" in f or "gpr" in f
               for f in failed_in), failed_in
