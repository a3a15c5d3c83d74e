#!/usr/bin/env python3
"""Verify a sealed seal run with nothing but the public key (see docs/VERIFYING.md).

usage: verify_sealed_run.py --store DIR --run RUNID --pub PEM
Exit 0 verified, 1 not verified (each failed check printed with its object key), 2 could not run.
Standard library plus `cryptography` (Ed25519); shares no code with seal.
"""
import argparse, base64, hashlib, json, os, re, sys

SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://wanxiang.ai/seal/playtest-decision/v1"
MIRRORED = ["actions", "events", "floor", "firstPlay", "briefRuleMatches"]
CONSENSUS = ("judgeConsensusRef", "judgeConsensusHash")
MALFORMED = (KeyError, TypeError, AttributeError, IndexError, ValueError)


def loads(data):
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity (parser differentials are holes)."""
    def pairs(kv):
        if len({k for k, _ in kv}) != len(kv):
            raise ValueError("duplicate key in a JSON object")
        return dict(kv)
    def constant(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)


class Verifier:
    def __init__(self, store, run):
        self.store, self.run, self.failures, self.hashed = store, run, [], 0

    def fail(self, obj, msg, expected=None, actual=None):
        diff = f" (expected {expected}, actual {actual})" if (expected, actual) != (None, None) else ""
        self.failures.append(f"FAIL {obj}: {msg}{diff}")

    def open(self, key):
        parts = key.split("/") if isinstance(key, str) else []
        if not parts or len(parts) > 8 or not all(SEGMENT.match(p) and p != ".." for p in parts):
            raise ValueError("not a valid object key")  # a ref never climbs out of the store
        return open(os.path.join(self.store, *parts), "rb")

    def check(self, key, want, keep=False):
        """Re-hashes the exact stored bytes (streaming). Returns the bytes if keep, else True;
        None (with a failure) if missing, unreadable or different."""
        h, kept = hashlib.sha256(), []
        try:
            with self.open(key) as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                    if keep:
                        kept.append(chunk)
        except FileNotFoundError:
            return self.fail(key, "object is missing")
        except (OSError, ValueError) as e:
            return self.fail(key, f"cannot read: {e}")
        self.hashed += 1
        if h.hexdigest() != want:
            return self.fail(key, "stored bytes do not hash to the recorded sha256", want, h.hexdigest())
        return b"".join(kept) if keep else True

    def doc(self, key, want):
        """Re-hashes, then parses a JSON document; None (with a failure) if unusable."""
        data = self.check(key, want, keep=True)
        try:
            return loads(data) if isinstance(data, bytes) else None
        except ValueError as e:
            self.fail(key, f"not strict JSON: {e}")


def verify_envelope(v, key, env, pub, keyid):
    """DSSE: ed25519 over PAE(payloadType, payload bytes); returns the decoded statement."""
    if env["payloadType"] != PAYLOAD_TYPE:
        v.fail(key, "wrong payloadType", PAYLOAD_TYPE, env["payloadType"])
    payload, ptype = base64.b64decode(env["payload"], validate=True), env["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    ours = [s for s in env["signatures"] if s["keyid"] == keyid]
    if not ours:
        v.fail(key, "no signature by the trusted key", keyid,
               ", ".join(s["keyid"] for s in env["signatures"]) or "nobody")
    for s in ours:
        try:
            pub.verify(base64.b64decode(s["sig"], validate=True), pae)
            break
        except Exception:  # InvalidSignature, or a sig that is not base64 of 64 bytes
            v.fail(key, f"signature by the trusted key {keyid} does not verify over the DSSE PAE")
    st = loads(payload)
    if (st["_type"], st["predicateType"]) != (STATEMENT_TYPE, PREDICATE_TYPE):
        v.fail(key, "not an in-toto Statement v1 of seal", PREDICATE_TYPE, st["predicateType"])
    return st


def verify_roll(v, i, r):
    rid = r["rollId"]
    base, slots = f"runs/{v.run}/{rid}", {s: r[f"judge{s.upper()}Ref"] for s in "ab"}
    if (rid, r["roll"]) != (f"roll-{i + 1}", i + 1):
        v.fail(f"runs/{v.run}/evidence.json rolls[{i}]", "roll out of order", f"roll-{i + 1}", rid)
    refs = [r[f] for f in ("proofPackageRef", "judgePackageRef", "judgeConsensusRef", "costReservationRef")]
    for ref in refs + [s[f] for s in slots.values() for f in ("rawRef", "parsedRef", "normalizedRef")]:
        if not ref.startswith(base + "/"):
            v.fail(ref, "ref lies outside its roll's folder", base + "/...", ref)
    proof = v.doc(r["proofPackageRef"], r["proofPackageHash"])
    package = v.doc(r["judgePackageRef"], r["judgePackageHash"])
    consensus = v.doc(r["judgeConsensusRef"], r["judgeConsensusHash"])
    v.doc(r["costReservationRef"], r["costReservationHash"])
    for f in proof["frames"] if proof else []:
        if f["ref"] != f"cas/sha256/{f['hash'][:2]}/{f['hash']}":
            v.fail(r["proofPackageRef"], "a frame ref is not the CAS key of its hash", f["hash"], f["ref"])
    frames = sorted({f["hash"] for f in proof["frames"]}) if proof else []
    for h in frames:
        v.check(f"cas/sha256/{h[:2]}/{h}", h)
    manifest = package and v.doc(f"{base}/image-manifest.json", package["imageManifestHash"])
    if manifest and proof and sorted(e["hash"] for e in manifest["frames"]) != frames:
        v.fail(f"{base}/image-manifest.json", "does not list exactly the proof package's frames")
    for slot, s in slots.items():
        dup = f"judge{slot.upper()}Hash"  # a second copy of judge<X>Ref.resultHash
        if r[dup] != s["resultHash"]:
            v.fail(f"{base} {dup}", "is not the slot's resultHash", s["resultHash"], r[dup])
        v.doc(s["parsedRef"], s["parsedHash"])
        v.check(s["rawRef"], s["rawHash"])
        result = v.doc(s["normalizedRef"], s["resultHash"])
        if not result:
            continue
        if (result["slot"], result["packageHash"]) != (slot, r["judgePackageHash"]):
            v.fail(s["normalizedRef"], "not this slot's result on this roll's judge package",
                   (slot, r["judgePackageHash"]), (result["slot"], result["packageHash"]))
        raw_bound = False
        for a in result["attempts"]:
            d = f"{base}/judge-{slot}/attempt-{a['attempt']}"
            if a["requestHash"] is not None:
                v.check(f"{d}/request.json", a["requestHash"])
            v.check(f"{d}/raw.json", a["rawHash"])
            meta = v.doc(f"{d}/meta.json", a["metaHash"])
            want = (slot, a["attempt"], a["rawHash"], a["requestHash"])
            got = meta and (meta["slot"], meta["attempt"], meta["rawHash"], meta["requestHash"])
            if meta and got != want:
                v.fail(f"{d}/meta.json", "describes another attempt", want, got)
            if meta and meta.get("policy") is not None:
                verify_policy(v, f"{d}/meta.json", meta)
            raw_bound |= (f"{d}/raw.json", a["rawHash"]) == (s["rawRef"], s["rawHash"])
        if not raw_bound:
            v.fail(s["rawRef"], f"rawRef/rawHash is not an attempt listed in {s['normalizedRef']}")
    return r, proof, consensus


def verify_policy(v, meta_key, meta):
    """The judge policy an attempt names (docs/VERIFYING.md §4): stored under its sha256, and
    describing the attempt's endpoint, model and prompt artifact for its slot."""
    sha = meta["policy"]["sha256"]
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        return v.fail(meta_key, "policy.sha256 is not a sha256")
    policy = v.doc(f"policies/{sha}.json", sha)
    if not policy:
        return
    slot = policy.get(meta["slot"].lower()) or {}
    want = (slot.get("endpointHost"), slot.get("modelRequested"), slot.get("promptArtifact"))
    got = (meta["endpointHost"], meta["modelRequested"], meta["promptArtifact"])
    if want != got:
        v.fail(meta_key, f"not made under the judge policy it names ({sha})", want, got)


def verify(v, pub, keyid):
    run, absent = v.run, "<absent>"
    ev_key, seal_key = f"runs/{run}/evidence.json", f"runs/{run}/seal.dsse.json"
    try:
        with v.open(seal_key) as f:
            st = verify_envelope(v, seal_key, loads(f.read()), pub, keyid)
        subject, pred = st["subject"], st["predicate"]
        want_hash = subject[0]["digest"]["sha256"]
    except FileNotFoundError:
        return v.fail(seal_key, "object is missing")
    except MALFORMED as e:
        return v.fail(seal_key, f"not a DSSE envelope over an in-toto statement: {e!r}")
    if len(subject) != 1 or subject[0]["name"] != ev_key:
        v.fail(seal_key, "the subject is not this run's evidence", ev_key, subject)
    ev = v.doc(ev_key, want_hash)  # the subject digest: sha256 of the stored evidence bytes
    if ev is None:
        return
    judge, src = ev["judge"], ev["sourceRollId"]
    want = {"runId": run, "outcome": ev.get("outcome", ""),
            "decision": (ev.get("decision") or {}).get("action", ""), "sourceRollId": src,
            "consensusHash": judge and judge["consensusHash"],
            "strategyVersion": judge and judge["strategyVersion"], "acceptanceMode": ev["acceptanceMode"],
            "decidedAt": (ev.get("finalPostguard") or {}).get("decidedAt", "")}
    for k in sorted(set(want) | set(pred)):
        if pred.get(k, absent) != want.get(k, absent):
            v.fail(f"{seal_key} predicate.{k}", "differs from the evidence",
                   want.get(k, absent), pred.get(k, absent))
    for field, exp, got in [("runId", run, ev["runId"]), ("phase", "DECIDED", ev["phase"]),
                            ("merge.sourceRollId", src, (ev["merge"] or {}).get("sourceRollId")),
                            ("compatibility.sourceRollId", src, ev["compatibility"]["sourceRollId"])]:
        if exp != got:
            v.fail(f"{ev_key} {field}", "is inconsistent", exp, got)
    v.check(f"runs/{run}/brief.md", ev["briefHash"])
    v.check(f"runs/{run}/judging.json", ev["finalPostguard"]["judgingSnapshotHash"])
    rolls = {}
    for i, r in enumerate(ev["rolls"]):
        try:
            rolls[r["rollId"]] = verify_roll(v, i, r)
        except MALFORMED as e:
            v.fail(f"runs/{run}/{r.get('rollId', i)}", f"malformed document: {e!r}")
    if src is not None and src not in rolls:
        return v.fail(f"{ev_key} sourceRollId", "names no verifiable roll", list(rolls), src)
    r, proof, consensus = rolls[src] if src else (None, None, None)
    for field in MIRRORED if proof else []:
        if ev[field] != proof[field]:
            v.fail(f"{ev_key} {field}", "top level differs from the source roll's proof package")
    if judge is None:
        return
    if r is None or [judge[k] for k in ("consensusRef", "consensusHash")] != [r[k] for k in CONSENSUS]:
        v.fail(f"{ev_key} judge.consensusHash", "is not the source roll's judgeConsensusHash",
               r and r["judgeConsensusHash"], judge["consensusHash"])
    elif consensus is not None:
        projection = {k: x for k, x in consensus.items() if k not in ("rollId", "floorPassed")}
        projection.update(sourceRollId=consensus["rollId"], consensusRef=r["judgeConsensusRef"],
                          consensusHash=r["judgeConsensusHash"])
        if judge != projection:
            v.fail(f"{ev_key} judge", f"is not the projection of {r['judgeConsensusRef']}")
    failed = [n for n, ok in judge["independenceChecks"].items() if n != "sameModel" and ok is not True]
    if failed:
        v.fail(f"{ev_key} judge.independenceChecks", "the projection of a void roll", "all true", failed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="the store folder (the file:// root)")
    ap.add_argument("--run", required=True, help="the run id")
    ap.add_argument("--pub", required=True, help="the trusted SPKI PEM ed25519 public key")
    args = ap.parse_args()
    try:
        from cryptography.hazmat.primitives import serialization as ser
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as e:
        print(f"cannot run: `cryptography` is needed (pip install cryptography): {e}")
        return 2
    try:
        with open(args.pub, "rb") as f:
            pub = ser.load_pem_public_key(f.read())
        if not isinstance(pub, Ed25519PublicKey):
            raise ValueError(f"a {type(pub).__name__}, not an ed25519 key")
    except (OSError, ValueError) as e:
        print(f"cannot run: {args.pub}: not a readable SPKI PEM ed25519 public key: {e}")
        return 2
    if not os.path.isdir(args.store) or not SEGMENT.match(args.run):
        print(f"cannot run: no store folder {args.store!r}, or a bad run id {args.run!r}")
        return 2
    # keyid: sha256 of the raw 32-byte public key (= the last 32 bytes of the SPKI DER)
    keyid = hashlib.sha256(pub.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)).hexdigest()
    v = Verifier(args.store, args.run)
    try:
        verify(v, pub, keyid)
    except MALFORMED as e:
        v.fail(f"runs/{args.run}/evidence.json", f"malformed document: {e!r}")
    failures = list(dict.fromkeys(v.failures))  # one line per distinct failure
    print("\n".join(failures) or f"verified runs/{args.run}: signed by {keyid}, {v.hashed} objects re-hashed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
