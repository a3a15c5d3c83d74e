#!/usr/bin/env python3
"""Verify seal's transparency log without seal: signed checkpoints (C2SP tlog-checkpoint in a
C2SP signed note, ed25519), inclusion proofs and consistency proofs (RFC 6962 / RFC 9162).

Standard library plus `cryptography` only; imports nothing from seal. See docs/VERIFYING.md §8.

  verify_log.py checkpoint NOTE_FILE --pub seal.pub.pem
  verify_log.py inclusion PROOF_JSON --pub seal.pub.pem       (output of `seal log prove --json`)
  verify_log.py consistency OLD_NOTE REPORT_JSON --pub seal.pub.pem
                                              (REPORT_JSON: `seal log verify --checkpoint OLD_NOTE --json`)
  verify_log.py tree STORE_DIR --pub seal.pub.pem             (recompute the whole tree of a file store)
  verify_log.py vectors tests/data/tlog/vectors.json          (RFC 6962 and C2SP test vectors)

Exit 0 verified, 1 not verified (one FAIL line per problem), 2 could not run.
"""
import base64
import hashlib
import json
import re
import os
import sys

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
except ImportError:  # pragma: no cover
    print("verify_log.py needs the cryptography package (pip install cryptography)", file=sys.stderr)
    sys.exit(2)


class Fail(Exception):
    pass


def sha256(b):
    return hashlib.sha256(b).digest()


def leaf_hash(data):
    return sha256(b"\x00" + data)


def node_hash(left, right):
    return sha256(b"\x01" + left + right)


def mth(leaves):
    """RFC 6962 §2.1 Merkle Tree Hash of a list of leaf data."""
    n = len(leaves)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def verify_inclusion(index, size, leaf, path, root):
    """RFC 9162 §2.1.3.2."""
    if index >= size:
        raise Fail(f"leaf {index} is not in a tree of size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Fail("audit path too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0 or r != root:
        raise Fail(f"inclusion proof of leaf {index} does not lead to the root of size {size}")


def verify_consistency(first, second, first_hash, second_hash, proof):
    """RFC 9162 §2.1.4.2."""
    if first > second:
        raise Fail(f"old size {first} above new size {second}")
    if first == second:
        if proof or first_hash != second_hash:
            raise Fail("equal sizes need an empty proof and equal roots")
        return
    if first == 0:
        if proof:
            raise Fail("a proof from the empty tree must be empty")
        return
    if not proof:
        raise Fail("empty consistency proof")
    if first & (first - 1) == 0:
        proof = [first_hash] + list(proof)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            raise Fail("consistency proof too long")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0 or fr != first_hash or sr != second_hash:
        raise Fail(f"the tree of size {second} is not an append-only extension of size {first}")


def raw_public(pem_path):
    with open(pem_path, "rb") as f:
        pub = ser.load_pem_public_key(f.read())
    return pub.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)


def note_key_id(name, raw):
    """C2SP signed-note: first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key)."""
    return sha256(name.encode() + b"\n" + b"\x01" + raw)[:4]


def open_note(note, name_and_keys):
    """Verify a signed note: returns its text. name_and_keys: [(key name, raw public key)].
    Needs one valid signature by a listed key; signatures by other keys are ignored."""
    if not note.endswith(b"\n"):
        raise Fail("a signed note ends with a newline")
    cut = note.rfind(b"\n\n")
    if cut < 0:
        raise Fail("no blank line between the note text and its signatures")
    text, sigs = note[: cut + 1], note[cut + 2 :]
    ok = False
    for line in sigs.decode("utf-8").split("\n")[:-1]:
        if not line.startswith("\u2014 "):
            raise Fail(f"malformed signature line {line!r}")
        name, b64 = line[2:].rsplit(" ", 1)
        blob = base64.b64decode(b64, validate=True)
        for kname, raw in name_and_keys:
            if kname == name and blob[:4] == note_key_id(name, raw):
                try:
                    Ed25519PublicKey.from_public_bytes(raw).verify(blob[4:], text)
                except InvalidSignature:
                    raise Fail(f"bad signature by {name}")
                ok = True
    if not ok:
        raise Fail("no signature by the trusted key")
    return text


def open_checkpoint(note, raw):
    """C2SP tlog-checkpoint in a signed note whose key name is the origin."""
    origin = note.split(b"\n", 1)[0].decode("utf-8")
    text = open_note(note, [(origin, raw)])
    lines = text.decode("utf-8").split("\n")
    if len(lines) < 4 or lines[-1] != "":
        raise Fail("a checkpoint has an origin, a size and a root hash line")
    size = lines[1]
    if not size.isdigit() or str(int(size)) != size:
        raise Fail(f"tree size {size!r} is not a decimal number")
    root = base64.b64decode(lines[2], validate=True)
    if len(root) != 32:
        raise Fail("root hash is not 32 bytes")
    return origin, int(size), root


def unhex(hs):
    return [bytes.fromhex(h) for h in hs]


def cmd_checkpoint(args, raw):
    with open(args[0], "rb") as f:
        origin, size, root = open_checkpoint(f.read(), raw)
    print(f"verified checkpoint {origin} size {size} root {root.hex()}")


def cmd_inclusion(args, raw):
    with open(args[0], "rb") as f:
        p = json.load(f)
    origin, size, root = open_checkpoint(p["checkpoint"].encode("utf-8"), raw)
    entry = p["entry"].encode("utf-8")
    if json.loads(entry)["runId"] != p["runId"]:
        raise Fail("the entry is about another run")
    if p["treeSize"] != size:
        raise Fail(f"proof for size {p['treeSize']}, checkpoint of size {size}")
    verify_inclusion(p["leafIndex"], size, leaf_hash(entry), unhex(p["auditPath"]), root)
    print(f"verified inclusion of {p['runId']} at leaf {p['leafIndex']} of {origin} size {size} "
          f"(seal sha256 {json.loads(entry)['sealSha256']})")


def cmd_consistency(args, raw):
    with open(args[0], "rb") as f:
        o_origin, o_size, o_root = open_checkpoint(f.read(), raw)
    with open(args[1], "rb") as f:
        report = json.load(f)
    n_origin, n_size, n_root = open_checkpoint(report["checkpoint"].encode("utf-8"), raw)
    if o_origin != n_origin:
        raise Fail(f"origins differ: {o_origin} / {n_origin}")
    c = report.get("consistency")
    if c is None:
        raise Fail("the report has no consistency proof")
    if (c["oldSize"], c["newSize"]) != (o_size, n_size):
        raise Fail("the proof is for other tree sizes")
    verify_consistency(o_size, n_size, o_root, n_root, unhex(c["proof"]))
    print(f"verified {n_origin}: size {n_size} is an append-only extension of size {o_size}")


AUTH = re.compile(rb'("auth":"([A-Za-z0-9+/=]+)",?)|(,"auth":"([A-Za-z0-9+/=]+)")')


def prefix_roots(leaves):
    """The RFC 6962 root of the first i leaves for i = 0..len(leaves) (SHA-256 of no bytes for
    the empty tree), from a right edge of perfect subtrees: O(n log n)."""
    roots = [sha256(b"")]
    peaks = []
    for leaf in leaves:
        h, size = leaf_hash(leaf), 1
        while peaks and peaks[-1][0] == size:
            _, left = peaks.pop()
            h, size = node_hash(left, h), size * 2
        peaks.append((size, h))
        acc = peaks[-1][1]
        for _, left in reversed(peaks[:-1]):
            acc = node_hash(left, acc)
        roots.append(acc)
    return roots


def check_leaf_auth(leaf, origin, index, prefix_root, raw, required):
    """A leaf's `auth`: ed25519 by the seal key over b"seal.log-leaf/1\\n" + origin + b"\\n" +
    decimal index + b"\\n" + hex root of the leaves before it + b"\\n" + the canonical leaf
    without `auth` (removing the member from the canonical bytes gives exactly those).
    `required`: the leaf is past every checkpoint."""
    found = [m for m in AUTH.finditer(leaf) if m.start() == 1 or m.group(3)]
    if not found:
        if required:
            raise Fail(f"leaf {index} is past every checkpoint and carries no auth: planted")
        return
    m = found[0]
    sig = base64.b64decode(m.group(2) or m.group(4), validate=True)
    unsigned = leaf[: m.start()] + leaf[m.end():]
    msg = (b"seal.log-leaf/1\n" + origin.encode() + b"\n" + str(index).encode() + b"\n"
           + prefix_root.hex().encode() + b"\n" + unsigned)
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, msg)
    except InvalidSignature:
        raise Fail(f"leaf {index}: its auth does not verify for {origin} at this index after the "
                   f"leaves before it: planted")


def cmd_tree(args, raw):
    root_dir = args[0]
    edir = os.path.join(root_dir, "log", "entries")
    names = sorted(os.listdir(edir)) if os.path.isdir(edir) else []
    for i, n in enumerate(names):
        if n != "%020d" % i:
            raise Fail(f"log/entries/{'%020d' % i} missing (found {n})")
    leaves = []
    for n in names:
        with open(os.path.join(edir, n), "rb") as f:
            leaves.append(f.read())
    cdir = os.path.join(root_dir, "log", "checkpoints")
    sizes = sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []
    if not sizes:
        raise Fail("no checkpoint")
    for s in sizes:
        with open(os.path.join(cdir, s), "rb") as f:
            origin, size, root = open_checkpoint(f.read(), raw)
        if size != int(s):
            raise Fail(f"log/checkpoints/{s} holds size {size}")
        if size > len(leaves):
            raise Fail(f"checkpoint {size} commits to more entries than the {len(leaves)} stored")
        if mth(leaves[:size]) != root:
            raise Fail(f"the stored entries do not hash to the signed root of size {size}")
    covered = max(int(s) for s in sizes)
    roots = prefix_roots(leaves)
    for i, leaf in enumerate(leaves):
        check_leaf_auth(leaf, origin, i, roots[i], raw, required=i >= covered)
    print(f"verified {origin}: {len(leaves)} entries, {len(sizes)} checkpoints agree with them, "
          f"{len(leaves) - covered} past the latest authenticated by their own auth")


def cmd_vectors(args):
    with open(args[0]) as f:
        v = json.load(f)
    leaves = [bytes.fromhex(h) for h in v["leaves"]]
    for size, root in v["roots"].items():
        if mth(leaves[: int(size)]).hex() != root:
            raise Fail(f"root of size {size}")
    for t in v["inclusion"]:
        root = mth(leaves[: t["size"]])
        verify_inclusion(t["index"], t["size"], leaf_hash(leaves[t["index"]]), unhex(t["path"]), root)
    for t in v["consistency"]:
        verify_consistency(t["old"], t["new"], mth(leaves[: t["old"]]), mth(leaves[: t["new"]]),
                           unhex(t["proof"]))
    name, key_id, key = v["signed_note"]["verifier_key"].split("+")
    raw = base64.b64decode(key)[1:]
    if note_key_id(name, raw).hex() != key_id:
        raise Fail("signed-note key id")
    open_note(v["signed_note"]["note"].encode("utf-8"), [(name, raw)])
    print(f"verified {len(v['roots'])} roots, {len(v['inclusion'])} inclusion and "
          f"{len(v['consistency'])} consistency vectors, and the signed-note example")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, rest = argv[1], argv[2:]
    pub = None
    if "--pub" in rest:
        i = rest.index("--pub")
        pub, rest = rest[i + 1], rest[:i] + rest[i + 2 :]
    try:
        if cmd == "vectors":
            cmd_vectors(rest)
            return 0
        if pub is None:
            print("--pub PEM is required", file=sys.stderr)
            return 2
        raw = raw_public(pub)
        {"checkpoint": cmd_checkpoint, "inclusion": cmd_inclusion,
         "consistency": cmd_consistency, "tree": cmd_tree}[cmd](rest, raw)
        return 0
    except Fail as e:
        print(f"FAIL {e}")
        return 1
    except (OSError, KeyError, ValueError, IndexError) as e:
        print(f"cannot verify: {e!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
