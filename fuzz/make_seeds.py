"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Seeds are small, real inputs: lines of each text input kind, .npy headers,
values extracted from a small database that `pertload synth` + `pertload
build` make, blocks of its sample store, and real ring slots taken from the
Python client. Run from a build directory's environment:

    PYTHONPATH=BUILD/python PERTLOAD_BIN=BUILD/cli/pertload \\
    PERTLOAD_LIB=BUILD/libpertload.so python3 fuzz/make_seeds.py fuzz/corpus

It needs numpy and mdb_dump (Debian's lmdb-utils). Existing seeds of the same
names are overwritten; crash inputs (crash-*) are left alone.
"""

import io
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def write(corpus, target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def head(path, n):
    with open(path, "rb") as f:
        return b"".join(f.readline() for _ in range(n))


def npy(a, version=None):
    buf = io.BytesIO()
    if version:
        np.lib.format.write_array(buf, a, version=version)
    else:
        np.save(buf, a)
    return buf.getvalue()


def mdb_values(db, sub):
    """(key, value) pairs of one sub-database, values with their trailer."""
    out = subprocess.run(["mdb_dump", "-s", sub, db], check=True, capture_output=True,
                         text=True).stdout.splitlines()
    lines = out[out.index("HEADER=END") + 1:out.index("DATA=END")]
    return [(bytes.fromhex(k.strip()), bytes.fromhex(v.strip()))
            for k, v in zip(lines[0::2], lines[1::2])]


def text_seeds(corpus, src):
    kinds = {"genes": "genes.txt", "reactions": "reactions.txt", "gpr": "gpr.tsv",
             "rmr": "rmr.tsv", "samples": "samples.tsv",
             "edges": "edges/physical.tsv", "edges-score": "edges/string12_0_experimental.tsv"}
    for name, rel in kinds.items():
        write(corpus, "text", name, head(os.path.join(src, rel), 5))
    write(corpus, "text", "mixed",
          "# comment\n\n  YAL001C   YAL002W  \r\nYAL002W\t YBR003W \t0.5\n\t\n"
          "g\u00e8ne\t\u00c5\t1e308\nx\ty\t-inf\n"
          "id\tgenes\n18446744073709551615\tA;B\n")


def build_seeds(corpus, src):
    """Small consistent inputs of pl_build from the synthetic set."""
    genes = open(os.path.join(src, "genes.txt")).read().split()[:12]
    keep = set(genes)

    def lines(rel, pick):
        with open(os.path.join(src, rel)) as f:
            return "".join(ln for ln in f if pick(ln.split()))

    a = lines("edges/physical.tsv", lambda f: f[0] in keep and f[1] in keep)
    b = lines("edges/string12_0_experimental.tsv", lambda f: f[0] in keep and f[1] in keep)
    b = b or "%s\t%s\t0.7\n" % (genes[0], genes[1])
    gpr = lines("gpr.tsv", lambda f: f[0] in keep)
    rxns = {ln.split()[1] for ln in gpr.splitlines()}
    rmr = lines("rmr.tsv", lambda f: f[0] in rxns)
    reactions = "".join(r + "\n" for r in sorted(rxns | {"r_none"}))
    with open(os.path.join(src, "samples.tsv")) as f:
        header = f.readline()
        rows = [ln for ln in f if set(ln.split("\t")[1].split(";")) <= keep][:6]
    rows = rows or ["1\t%s;%s\t0.5\t\n" % (genes[0], genes[2])]
    samples = header + "".join(rows)
    gene_txt = "".join(g + "\n" for g in genes)
    edge_index = np.array([[0, 1, 2, 3], [1, 2, 3, 0]], np.int32)
    payload = np.arange(len(rows) * 2, dtype=np.float32).reshape(len(rows), 2)

    def pack(flags, sections):
        parts = [s if isinstance(s, bytes) else s.encode() for s in sections]
        return bytes([flags]) + b"\n%%\n".join(parts)

    full = [gene_txt, a or "%s %s\n" % (genes[0], genes[3]), npy(edge_index), reactions, gpr,
            rmr, samples, npy(payload)]
    write(corpus, "build", "metabolism-npy-payload", pack(8 | 16 | 32 | 4 | 64, full))
    write(corpus, "build", "tsv-only", pack(0, [gene_txt, full[1], b, "", "", "", samples]))
    write(corpus, "build", "min-score", pack(2, [gene_txt, b, full[1], "", "", "", samples]))
    write(corpus, "build", "drop-unknown",
          pack(1 | 16, [gene_txt, full[1] + "NOPE\t%s\n" % genes[0], b, "",
                        gpr + "NOPE\tr_x\n", "", samples + "9\tNOPE;%s\t1\t2\n" % genes[0]]))
    write(corpus, "build", "gpr-rmr-no-list", pack(16 | 32, [gene_txt, full[1], b, "", gpr, rmr,
                                                             samples]))


def npy_seeds(corpus, src):
    write(corpus, "npy", "edge-index-i4", npy(np.array([[0, 1], [1, 2]], np.int32)))
    write(corpus, "npy", "edge-index-i8", npy(np.array([[0, 5, 7], [1, 2, 3]], np.int64)))
    write(corpus, "npy", "payload-f2", npy(np.ones((3, 2, 2), np.float16)))
    write(corpus, "npy", "u1-v2", npy(np.arange(6, dtype=np.uint8), version=(2, 0)))
    write(corpus, "npy", "empty-f4", npy(np.zeros((0, 4), np.float32)))
    with open(os.path.join(src, "payload.npy"), "rb") as f:
        real = f.read()
    hlen = 10 + struct.unpack_from("<H", real, 8)[0]
    rows = np.load(io.BytesIO(real))[:2]
    write(corpus, "npy", "payload-real-2rows", npy(rows))
    write(corpus, "npy", "payload-real-header", real[:hlen])


def db_seeds(corpus, db):
    """Values of the database, trailer removed, as fuzz_dbvalue and
    fuzz_block take them."""
    meta = dict(mdb_values(db, "meta"))
    write(corpus, "dbvalue", "meta", b"\0" + meta[b"meta"][:-8])
    m = meta[b"meta"][:-8]
    n_types, n_genes = struct.unpack_from("<IQ", m, 12)
    n_samples = struct.unpack_from("<Q", m, 56)[0]
    n_labels = struct.unpack_from("<I", m, 64)[0]
    samples_bytes = struct.unpack_from("<Q", m, len(m) - 16)[0]
    counts = {b"genes": n_genes, b"types": n_types, b"labels": n_labels}
    for k, v in mdb_values(db, "names"):
        if k in counts:
            write(corpus, "dbvalue", "names-" + k.decode(),
                  b"\1" + struct.pack("<H", counts[k]) + v[:-8])
    for i, (k, v) in enumerate(mdb_values(db, "inc")[:40:8]):
        write(corpus, "dbvalue", "inc-%d" % i, b"\2" + struct.pack("<I", 2000) + v[:-8])
    edges = dict(mdb_values(db, "edges"))
    n_edges0 = struct.unpack_from("<Q", m, 88)[0]
    write(corpus, "dbvalue", "zstd-edges", b"\3" + struct.pack("<I", 8 * n_edges0)[:3]
          + edges[b"e\0"][:-8])
    write(corpus, "dbvalue", "blocks", b"\4" + struct.pack("<IBI", n_samples, n_labels,
                                                            samples_bytes) + meta[b"blocks"][:-8])
    write(corpus, "dbvalue", "trailer", b"\5\1\5genes" + dict(mdb_values(db, "names"))[b"genes"])
    # Sample-store blocks with their index entries (n_refs lives there).
    blocks = meta[b"blocks"][:-8]
    with open(os.path.join(db, "samples.pls"), "rb") as f:
        store = f.read()
    for b in range(min(2, len(blocks) // 40)):
        off, comp, raw, first, n_rows, n_refs, _ = struct.unpack_from("<QIIQIIQ", blocks, 40 * b)
        frame = store[off + 32:off + 32 + comp]
        write(corpus, "block", "real-%d" % b, bytes([0, n_labels]) +
              struct.pack("<HIII", n_genes - 1, raw, n_rows, n_refs) + frame)
    # A raw block (mode 1) of three rows: ids, gene offsets, genes, labels.
    raw = struct.pack("<II", 3, 5) + struct.pack("<3Q", 11, 12, 13) + \
        struct.pack("<4I", 0, 1, 3, 5) + struct.pack("<5i", 4, 1, 9, 2, 3) + \
        struct.pack("<6f", 0.5, float("nan"), 1.0, 2.0, -1.0, 0.0)
    write(corpus, "block", "raw-3rows", bytes([1, 2]) + struct.pack("<H", 39) + raw)


def slot_seeds(corpus, db):
    import pertload
    from pertload import batch, loader

    grabbed = []
    parse = batch.parse_slot

    def grab(buf, n):
        head, arrays = parse(buf, n)
        if not grabbed:
            grabbed.append(bytes(memoryview(buf).cast("B")[:head["used"]]))
        return head, arrays

    loader.parse_slot = grab
    try:
        for dense in (None, "bits"):
            grabbed.clear()
            for _ in pertload.Loader(db, batch_size=4, dense=dense):
                break
            write(corpus, "slot", "real-" + (dense or "sparse"), grabbed[0])
    finally:
        loader.parse_slot = parse


def schedule_seeds(corpus):
    """Schedule maps in fuzz_schedule's byte layout: terms, samples,
    annotations (a u32 after a byte with the top bit set), per term its
    width and input count (bit 6 a new group, bit 7 a new stratum), the
    permutation's picks, per sample its terms, then the spoiled entry."""

    def seed(n_terms, widths, ann=b"\x03", samples=(), spoil=b"\x00\x00\x00"):
        b = bytes([n_terms, len(samples)]) + ann
        b += b"".join(bytes([w, k]) for w, k in widths)
        b += bytes(range(n_terms - 1, 0, -1))
        b += b"".join(bytes([len(t), *t]) for t in samples)
        return b + spoil

    small = [(2, 0x01), (1, 0x42), (3, 0x03), (2, 0xc2), (1, 0x44), (4, 0x05)]
    write(corpus, "schedule", "small", seed(6, small, samples=([0, 2], [5, 1, 1])))
    # widths of 2^62: the sum of four wraps to 0 (the overflow of issue 36)
    write(corpus, "schedule", "wrap", seed(4, [(0xf5, 0x41)] * 4, samples=([0, 3],)))
    write(corpus, "schedule", "columns",
          seed(3, small[:3], ann=b"\x80" + struct.pack("<I", 2**31 - 4), samples=([1],)))
    write(corpus, "schedule", "spoiled-ptr",
          seed(6, small, samples=([0, 2], [3]), spoil=b"\x05\x02\x01"))
    write(corpus, "schedule", "spoiled-group",
          seed(6, small, samples=([4],), spoil=b"\x02\x04\x07"))
    write(corpus, "schedule", "spoiled-slot",
          seed(6, small, samples=([0],), spoil=b"\x01\x00\x06"))


def main():
    corpus = sys.argv[1]
    prog = os.environ["PERTLOAD_BIN"]
    with tempfile.TemporaryDirectory() as tmp:
        src, db = os.path.join(tmp, "in"), os.path.join(tmp, "db")
        subprocess.run([prog, "synth", src, "--genes", "40", "--samples", "1500", "--scale",
                        "0.002", "--payload-dim", "3", "--quiet"], check=True)
        with open(os.path.join(src, "build-args.txt")) as f:
            args = f.read().splitlines()
        subprocess.run([prog, "build", "-o", db, "--quiet"] + args, check=True)
        text_seeds(corpus, src)
        build_seeds(corpus, src)
        npy_seeds(corpus, src)
        db_seeds(corpus, db)
        slot_seeds(corpus, db)
    schedule_seeds(corpus)


if __name__ == "__main__":
    main()
