#!/usr/bin/env python3
"""Make tests/data/witness/cosignature.json: a C2SP tlog-cosignature (Ed25519, cosignature/v1)
vector computed without seal, from the spec's text alone, so that seal's witness code is checked
against another implementation (Python `cryptography`), not against itself.

  cosignature_vector.py > tests/data/witness/cosignature.json

The key is derived from a fixed seed, Ed25519 is deterministic: the output never changes.
"""
import base64
import hashlib
import json

from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SEED = bytes(range(32))
NAME = "witness.seal.test/w1"
TIMESTAMP = 1767225600
BODY = "seal.local/log\n7\n" + base64.b64encode(hashlib.sha256(b"seal").digest()).decode() + "\n"


def main():
    key = Ed25519PrivateKey.from_private_bytes(SEED)
    public = key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
    key_id = hashlib.sha256(NAME.encode() + b"\n" + b"\x04" + public).digest()[:4]
    message = ("cosignature/v1\ntime %d\n" % TIMESTAMP).encode() + BODY.encode()
    sig = key.sign(message)
    line = "\u2014 %s %s\n" % (NAME, base64.b64encode(key_id + TIMESTAMP.to_bytes(8, "big") + sig).decode())
    vkey = "%s+%s+%s" % (NAME, key_id.hex(), base64.b64encode(b"\x04" + public).decode())
    spki = key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode()
    print(json.dumps({
        "made_by": "tools/cosignature_vector.py (Python cryptography, independent of seal)",
        "seed_hex": SEED.hex(),
        "name": NAME,
        "public_hex": public.hex(),
        "public_pem": spki,
        "key_id_hex": key_id.hex(),
        "verifier_key": vkey,
        "timestamp": TIMESTAMP,
        "body": BODY,
        "signed_message": message.decode(),
        "line": line,
    }, indent=2))


if __name__ == "__main__":
    main()
