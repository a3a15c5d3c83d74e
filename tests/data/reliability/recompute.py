"""An independent check of a seal reliability report (docs/VERIFYING.md §10), no seal code.

Usage: recompute.py STORE_DIR REPORT.dsse.json SEAL_PUB.pem

1. The DSSE envelope verifies under the seal public key (securesystemslib).
2. Every subject's digest is the sha256 of that file in the store; each judge policy the
   predicate names is a subject and registered at the log leaf it names; the report itself
   is stored at reports/<sha256>.json and a log leaf names it.
3. Every figure of the predicate's `reliability` section (all and per obligation), and the
   kappa of each judge and of the consensus against people, is recomputed from the stored
   evidence, consensus, normalized judge results and reviews of the subject runs, with the
   formulas of docs/DESIGN.md §14; each 95% interval by the same seeded percentile bootstrap
   (SplitMix64, key_seed). Prints "ok N figures" or fails with the first difference.
"""
import base64, hashlib, json, math, sys

from cryptography.hazmat.primitives.serialization import load_pem_public_key, Encoding, PublicFormat
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

store, env_file, pub_file = sys.argv[1], sys.argv[2], sys.argv[3]
public = load_pem_public_key(open(pub_file, "rb").read())
raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
key = SSlibKey.from_crypto(public, keyid=hashlib.sha256(raw).hexdigest())
env = Envelope.from_dict(json.load(open(env_file)))
assert env.payload_type == "application/vnd.in-toto+json", env.payload_type
env.verify([key], 1)
statement = json.loads(env.payload)
assert statement["predicateType"] == "https://wanxiang.ai/seal/reliability/v1"
pred = statement["predicate"]
assert pred["schemaVersion"] == "seal.reliability/1"

for s in statement["subject"]:
    got = hashlib.sha256(open(f"{store}/{s['name']}", "rb").read()).hexdigest()
    assert got == s["digest"]["sha256"], s["name"]

# Each judge policy the runs were judged under is a subject (its stored bytes), and the log
# leaf the predicate names registers it.
for p in pred["policies"]:
    name = f"policies/{p['sha256']}.json"
    assert any(s["name"] == name and s["digest"]["sha256"] == p["sha256"] for s in statement["subject"]), name
    leaf = json.load(open(f"{store}/log/entries/{p['leafIndex']:020d}"))
    assert leaf["kind"] == "judge-policy" and leaf["policySha256"] == p["sha256"], leaf

# The report is published: stored under its digest, and a log leaf names it (the leaves are
# read as stored; `seal log verify` authenticates them).
import os
env_bytes = open(env_file, "rb").read()
env_sha = hashlib.sha256(env_bytes).hexdigest()
assert open(f"{store}/reports/{env_sha}.json", "rb").read() == env_bytes, "stored report"
published = [
    n for n in os.listdir(f"{store}/log/entries")
    if json.load(open(f"{store}/log/entries/{n}")).get("reportSha256") == env_sha
]
assert published, f"no log leaf names report {env_sha}"

M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def key_seed(seed, key):
    d = hashlib.sha256(seed.to_bytes(8, "big") + key.encode()).digest()
    return int.from_bytes(d[:8], "big")


def nearest_rank(xs, q):
    rank = max(math.ceil(q * len(xs)), 1)
    return xs[min(rank, len(xs)) - 1]


def bootstrap(counts, seed, resamples, stat):
    n = sum(counts)
    if n == 0:
        return None
    cum, acc = [], 0
    for k, c in enumerate(counts):
        if c > 0:
            acc += c
            cum.append((acc, k))
    rng = SplitMix64(seed)
    vals = []
    for _ in range(resamples):
        drawn = [0] * len(counts)
        for _ in range(n):
            u = rng.below(n)
            lo, hi = 0, len(cum)
            while lo < hi:
                mid = (lo + hi) // 2
                if cum[mid][0] <= u:
                    lo = mid + 1
                else:
                    hi = mid
            drawn[cum[min(lo, len(cum) - 1)][1]] += 1
        v = stat(drawn)
        if v is not None:
            vals.append(v)
    if len(vals) * 2 < resamples:
        return None
    vals.sort()
    return [nearest_rank(vals, 0.025), nearest_rank(vals, 0.975)]


def rnd(x):
    if x is None:
        return None
    r = math.floor(abs(x) * 1e6 + 0.5) / 1e6
    return math.copysign(r, x) if r != 0 else 0.0


def errors(c):
    t = [[0, 0], [0, 0]]
    for k, v in enumerate(c):
        t[k & 1][(k >> 1) & 1] += v
    return t


def phi(c):
    [[t00, t01], [t10, t11]] = errors(c)
    m = (t10 + t11) * (t00 + t01) * (t01 + t11) * (t00 + t10)
    return (t11 * t00 - t10 * t01) / math.sqrt(m) if m > 0 else None


def votes(c):
    p = phi(c)
    return None if p is None or p <= -1 else 2 / (1 + p)


def accuracy(bit):
    return lambda c: (sum(v for k, v in enumerate(c) if not k & bit) / sum(c)) if sum(c) else None


def coverage(c):
    return sum(c[4:]) / sum(c) if sum(c) else None


def decided_agreement(c):
    return sum(c[4:8]) / sum(c[4:]) if sum(c[4:]) else None


def kappa(m):
    n = sum(map(sum, m))
    if n == 0:
        return None
    po = sum(m[i][i] for i in range(4)) / n
    pe = sum(sum(m[k]) / n * sum(m[i][k] for i in range(4)) / n for k in range(4))
    return None if abs(1 - pe) < 1e-12 else (po - pe) / (1 - pe)


def payload(path):
    return json.loads(base64.b64decode(json.load(open(path))["payload"]))


HCAT = {"satisfied": 0, "failed": 1, "missing": 2}
CCAT = {"satisfied": 0, "failed": 1, "missing": 2, "disputed": 3, "contradicted": 3}
cells, human_m = {}, {}
runs = sorted({s["name"].split("/")[1] for s in statement["subject"] if s["name"].startswith("runs/")})
for run in runs:
    names = [s["name"] for s in statement["subject"] if s["name"].startswith(f"runs/{run}/reviews/")]
    names.sort(key=lambda n: int(n.rsplit("/", 1)[1].split(".")[0]))
    human = {}
    for name in names:
        for d in payload(f"{store}/{name}")["predicate"]["decisions"]:
            human[d["obligationId"]] = d["status"]
    ev = json.load(open(f"{store}/runs/{run}/evidence.json"))
    for roll in ev["rolls"]:
        if roll["rollGuard"]["status"] != "pass":
            continue
        cons = json.load(open(f"{store}/{roll['judgeConsensusRef']}"))
        res = [json.load(open(f"{store}/{roll[k]['normalizedRef']}")) for k in ("judgeARef", "judgeBRef")]

        def status(r, i):
            return next((o["status"] for o in r["obligations"] if o["id"] == i), "missing")

        for o in cons["obligationResults"]:
            h = human.get(o["id"])
            if h is None:
                continue
            a, b = status(res[0], o["id"]), status(res[1], o["id"])
            ea, eb = int(a != h), int(b != h)
            c = 0 if o["status"] in ("disputed", "contradicted") else (1 if o["status"] == h else 2)
            for key in ("all", o["id"]):
                cells.setdefault(key, [0] * 12)[ea + 2 * eb + 4 * c] += 1
                m = human_m.setdefault(key, [[[0] * 4 for _ in range(4)] for _ in range(3)])
                m[0][HCAT[h]][HCAT[a]] += 1
                m[1][HCAT[h]][HCAT[b]] += 1
                m[2][HCAT[h]][CCAT[o["status"]]] += 1

seed = int(pred["seed"], 16)
resamples = pred["bootstrapResamples"]
rel = pred["reliability"]
checked = 0


def close(what, got, want):
    global checked
    checked += 1
    if want is None or got is None:
        assert got == want, f"{what}: {got} vs {want}"
    elif isinstance(want, list):
        assert all(abs(g - w) < 1e-6 for g, w in zip(got, want)), f"{what}: {got} vs {want}"
    else:
        assert abs(got - want) < 1e-6, f"{what}: {got} vs {want}"


keys = ["all"] + sorted(k for k in cells if k != "all")
assert sorted(rel["byObligation"]) == keys[1:], (sorted(rel["byObligation"]), keys)
for key in keys:
    c = cells[key]
    got = rel["all"] if key == "all" else rel["byObligation"][key]
    assert got["counts"]["n"] == sum(c), key
    assert got["counts"]["errors"] == errors(c), key
    assert got["counts"]["decided"] == sum(c[4:]), key
    assert got["counts"]["decidedAgree"] == sum(c[4:8]), key
    h = pred["human"]["all"] if key == "all" else pred["human"]["byObligation"][key]
    for i, who in enumerate(["judgeA", "judgeB", "consensus"]):
        assert h[who]["matrix"] == human_m[key][i], (key, who)
        close(f"{key} human kappa {who}", h[who]["kappa"], rnd(kappa(human_m[key][i])))
    few = sum(c) < rel["minReviewed"]
    assert got["tooFewReviews"] == few, key
    if few:
        assert got["figures"] is None, key
        continue
    stream = "reliability:all" if key == "all" else f"reliability:obligation:{key}"
    for field, name, stat in [
        ("accuracyA", "accuracy:a", accuracy(1)),
        ("accuracyB", "accuracy:b", accuracy(2)),
        ("errorPhi", "phi", phi),
        ("effectiveVotes", "votes", votes),
        ("consensusCoverage", "coverage", coverage),
        ("consensusAgreement", "decided", decided_agreement),
    ]:
        fig = got["figures"][field]
        close(f"{key} {field}", fig["value"], rnd(stat(c)))
        ci = bootstrap(c, key_seed(seed, f"{stream}:{name}"), resamples, stat)
        close(f"{key} {field} ci95", fig["ci95"], None if ci is None else [rnd(x) for x in ci])
print(f"ok {checked} figures")
