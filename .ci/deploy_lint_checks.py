"""The checks of .ci/deploy-lint that need parsing: the deployment config against the code, and
the RENDERED kustomize output (what `kubectl apply -k` would send) against the config, the
Dockerfile, docs/openapi.yaml, the metrics the code exports and itself.

Usage: deploy_lint_checks.py CONFIG LABEL=RENDERED.yaml...   (one rendered file per overlay; the
LABEL is the overlay's folder under deploy/kubernetes, e.g. overlays/production)

Each check prints `ok`, `FAIL` or `pend`; the last line is `PYRESULT <ok> <failed> <pending>`,
which .ci/deploy-lint counts. `pend` is a route the manifests probe that the server does not
serve yet (PENDING_ROUTES): named on every run, never silently passed.

Decision: the manifests are checked after rendering, never as sources, because what matters is
what reaches the cluster: the hashed ConfigMap names, the image the overlay set, the patches
applied. kubernetes-validate has no schema for the CRDs (PodMonitor, PrometheusRule,
ExternalSecret, SecretStore), so their fields that seal depends on are checked here; the
PrometheusRule's expressions are parsed with promql-parser and every metric they read must be
one the code registers (or, named below, one of kube-state-metrics or node_exporter).

Overlays: every overlay but DEV_OVERLAYS is an environment (staging, production, a site copied
from them), held to more: the image by digest, the secrets from the External Secrets Operator,
the monitoring component, a log.origin of its own.
"""
import glob
import math
import os
import re
import sys
import tomllib

import promql_parser
import yaml

# Routes the manifests may probe before the server serves them (reported `pend`, not failed).
# None now: /livez and /readyz are served (crates/seal-server/src/routes/health.rs) and checked like
# any other route of docs/openapi.yaml.
PENDING_ROUTES: set = set()
# What every long-running container must carry (docs/DEPLOYING.md §3).
SECRET_ENV = ("SEAL_SEED_SALT", "SEAL_API_TOKEN", "SEAL_JUDGE_A_KEY", "SEAL_JUDGE_B_KEY", "SEAL_METRICS_TOKEN")

# Overlays for development: the image may be a tag, the Secrets are made by hand, no operator.
DEV_OVERLAYS = {"overlays/example"}
# The keys an environment overlay's copy of seal.toml may set otherwise than the base's.
PER_ENVIRONMENT_KEYS = {"log.origin", "judges.a.base_url", "judges.b.base_url"}
# Metrics of other exporters that the rules may read (group seal-kubernetes), by exporter.
EXTERNAL_METRICS = {
    "kube-state-metrics": {"kube_deployment_status_replicas_available", "kube_pod_container_status_restarts_total",
                           "kube_job_status_failed", "kube_cronjob_status_last_successful_time"},
    "node_exporter": {"node_timex_offset_seconds"},
}
ALERT_SEVERITIES = {"page", "ticket"}

results = {"ok": 0, "FAIL": 0, "pend": 0}


def check(name, cond, detail=""):
    status = "ok" if cond else "FAIL"
    results[status] += 1
    print(f"{status:<6}{name}" + ("" if cond or not detail else f"\n      {detail}"))


def pending(name, detail):
    results["pend"] += 1
    print(f"pend  {name}\n      {detail}")


# --- The keys the binary accepts, read from the Raw* structs and enums of the config module
# (serde, deny_unknown_fields), wherever the crates keep it.
def config_source():
    for path in sorted(glob.glob("crates/*/src/**/*.rs", recursive=True)):
        text = open(path, encoding="utf-8").read()
        if re.search(r"\bstruct RawConfig\b", text):
            return path, text
    return None, ""


def rename(variant, rule):
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", variant).lower()
    return {"lowercase": variant.lower(), "snake_case": snake, "kebab-case": snake.replace("_", "-"),
            "UPPERCASE": variant.upper()}.get(rule, variant)


def parse_config_types(src):
    """Raw* structs: {name: {field: (type, optional)}}; Raw* unit enums: {name: {accepted strings}}."""
    structs, enums = {}, {}
    for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([\w:]+\))?\s+)?enum (Raw\w+)\s*\{(.*?)\n\}", src, re.S):
        rule = re.search(r'rename_all\s*=\s*"([^"]+)"', m.group(1))
        names, explicit = set(), None
        for line in m.group(3).splitlines():
            line = line.strip()
            r = re.match(r'#\[serde\(rename\s*=\s*"([^"]+)"\)\]', line)
            if r:
                explicit = r.group(1)
                continue
            v = re.match(r"(\w+)\s*,?$", line)
            if v:
                names.add(explicit or rename(v.group(1), rule.group(1) if rule else ""))
                explicit = None
        enums[m.group(2)] = names
    for m in re.finditer(r"struct (Raw\w+)\s*\{(.*?)\n\}", src, re.S):
        fields, optional_next = {}, False
        for line in m.group(2).splitlines():
            line = line.strip()
            if line.startswith("#[serde(") and "default" in line:
                optional_next = True
                continue
            # The type runs to the line's last comma, so generics with commas are whole.
            f = re.match(r"(?:pub(?:\([\w:]+\))?\s+)?(\w+)\s*:\s*(.+?)\s*,\s*(//.*)?$", line)
            if f:
                name, ty = f.group(1), re.sub(r"\s+", "", f.group(2))
                inner = re.sub(r"^Option<(.*)>$", r"\1", ty)
                fields[name] = (inner, optional_next or ty.startswith("Option<"))
                optional_next = False
        structs[m.group(1)] = fields
    return structs, enums


def is_int(v, lo=0, hi=None):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v < hi)


SCALARS = {
    "u64": lambda v: is_int(v),
    "u32": lambda v: is_int(v, 0, 2**32),
    "u16": lambda v: is_int(v, 0, 2**16),
    "usize": lambda v: is_int(v),
    "f64": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "String": lambda v: isinstance(v, str),
    "Vec<String>": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "BTreeMap<String,String>": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "HashMap<String,String>": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
}


def shape_errors(table, struct, types, where_src, path=""):
    structs, enums = types
    errs = []
    fields = structs.get(struct, {})
    for key, value in table.items():
        where = f"{path}{key}"
        if key not in fields:
            errs.append(f"{where}: unknown key ({where_src} {struct} refuses it)")
            continue
        ty, _ = fields[key]
        vec = re.match(r"^Vec<(Raw\w+)>$", ty)
        if ty in structs:
            errs += shape_errors(value, ty, types, where_src, where + ".") if isinstance(value, dict) else [
                f"{where}: must be a table"]
        elif vec and vec.group(1) in structs:
            if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
                errs.append(f"{where}: must be an array of tables")
            else:
                for i, x in enumerate(value):
                    errs += shape_errors(x, vec.group(1), types, where_src, f"{where}[{i}].")
        elif ty in enums:
            if value not in enums[ty]:
                errs.append(f"{where}: {value!r} is not one of {sorted(enums[ty])}")
        elif ty in SCALARS and not SCALARS[ty](value):
            errs.append(f"{where}: {value!r} is not a {ty}")
        elif ty not in SCALARS:
            errs.append(f"{where}: type {ty} of {struct}.{key} is unknown to deploy-lint (teach it)")
    for key, (ty, optional) in fields.items():
        if not optional and key not in table:
            errs.append(f"{path}{key}: missing (required by {where_src} {struct})")
    return errs


def paths(table, prefix=""):
    for k, v in table.items():
        if isinstance(v, dict):
            yield from paths(v, prefix + k + ".")
        else:
            yield prefix + k


def check_config(config_path):
    src_path, src = config_source()
    types = parse_config_types(src)
    if config_path.endswith("base/seal.toml"):
        check(f"{src_path or 'crates/'}: found RawConfig and its tables",
              "RawConfig" in types[0] and len(types[0]) >= 5, f"structs found: {sorted(types[0])}")
    try:
        with open(config_path, "rb") as fh:
            cfg = tomllib.load(fh)
        check(f"{config_path} parses (tomllib)", True)
    except (OSError, tomllib.TOMLDecodeError) as e:
        check(f"{config_path} parses (tomllib)", False, str(e))
        return None
    errs = shape_errors(cfg, "RawConfig", types, src_path)
    check(f"{config_path}: keys and types are the ones {src_path} accepts", not errs, "; ".join(errs))
    with open("config/seal.toml", "rb") as fh:
        default = tomllib.load(fh)
    missing = sorted(set(paths(default)) - set(paths(cfg)))
    check(f"{config_path}: sets every key of config/seal.toml (no silent defaults)", not missing,
          "missing: " + ", ".join(missing))

    server, judges = cfg.get("server", {}), cfg.get("judges", {})
    listen = str(server.get("listen", ""))
    host, _, port = listen.rpartition(":")
    check(f"{config_path}: server.listen is on all interfaces (0.0.0.0 or [::])",
          host in ("0.0.0.0", "[::]") and port.isdigit(), f"listen = {listen!r}")
    check(f"{config_path}: store is s3:// (replicas share one bucket)", str(cfg.get("store", "")).startswith("s3://"),
          f"store = {cfg.get('store')!r}")
    check(f"{config_path}: keys.signing_key is an absolute path",
          str(cfg.get("keys", {}).get("signing_key", "")).startswith("/"))
    origin = str(cfg.get("log", {}).get("origin", ""))
    check(f"{config_path}: log.origin is a valid origin (no spaces, no '+')",
          origin and not re.search(r"[\s+]", origin), f"origin = {origin!r}")
    a, b = judges.get("a", {}), judges.get("b", {})
    check(f"{config_path}: judge prompts differ, max_retries <= 2",
          a.get("prompt") != b.get("prompt") and a.get("max_retries", 0) <= 2 and b.get("max_retries", 0) <= 2)
    slowest = max(a.get("timeout_ms", 0), b.get("timeout_ms", 0))
    margin = cfg.get("leases", {}).get("margin_ms", 5000)
    check(f"{config_path}: shutdown_grace_ms covers one judge attempt (timeout_ms + leases.margin_ms)",
          server.get("shutdown_grace_ms", 0) >= slowest + margin,
          f"shutdown_grace_ms = {server.get('shutdown_grace_ms')}, needs >= {slowest + margin}")
    # Each roll request costs 16x its size against request_memory_bytes (the server's ROLL_AMPLIFICATION).
    check(f"{config_path}: request_memory_bytes is set", isinstance(cfg.get("limits", {}).get("request_memory_bytes"), int))
    return cfg


# --- Helpers over the rendered documents.
def pod_spec(doc):
    spec = doc.get("spec", {})
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    return spec.get("template", {}).get("spec", {})


def pod_labels(doc):
    spec = doc.get("spec", {})
    if doc.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    return spec.get("template", {}).get("metadata", {}).get("labels", {})


def selects(selector, labels):
    """A matchLabels selector (non-empty) that the labels satisfy."""
    ml = (selector or {}).get("matchLabels", selector or {})
    return bool(ml) and all(labels.get(k) == v for k, v in ml.items())


def configmap_refs(pod):
    """The ConfigMap names a pod spec uses: volumes, env valueFrom and envFrom of every container."""
    refs = {v["configMap"].get("name") for v in pod.get("volumes", []) if "configMap" in v}
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        refs |= {e["valueFrom"]["configMapKeyRef"].get("name") for e in c.get("env", [])
                 if "configMapKeyRef" in e.get("valueFrom", {})}
        refs |= {e["configMapRef"].get("name") for e in c.get("envFrom", []) if "configMapRef" in e}
    return refs


def generated(name, base):
    """A kustomize-generated name: base-<10 hash characters>."""
    return re.fullmatch(re.escape(base) + r"-[a-z0-9]{10}", name or "") is not None


def rust_env_names():
    """Patterns of the upper-case names the Rust sources spell in string literals: `"SEAL_LOG"`,
    and `format!("SEAL_JUDGE_{up}_KEY")` read as SEAL_JUDGE_<anything>_KEY."""
    pats = set()
    for path in glob.glob("crates/*/src/**/*.rs", recursive=True) + glob.glob("src/**/*.rs", recursive=True):
        for lit in re.findall(r'"([A-Z][A-Z0-9_]*(?:\{\w*\}[A-Z0-9_]*)*)"', open(path, encoding="utf-8").read()):
            pats.add("".join("[A-Z0-9_]+" if part.startswith("{") else re.escape(part)
                             for part in re.split(r"(\{\w*\})", lit)))
    return pats


def read_by_code(name, pats):
    return any(re.fullmatch(p, name) for p in pats)


def openapi_paths():
    with open("docs/openapi.yaml", encoding="utf-8") as fh:
        return set(yaml.safe_load(fh).get("paths", {}))


def check_route(where, path):
    known = openapi_paths()
    if path in known:
        check(f"{where}: {path} is a route of docs/openapi.yaml", True)
    elif path in PENDING_ROUTES:
        pending(f"{where}: {path} is not served yet",
                "issue 24's server change adds it (docs/openapi.yaml); until then this probe answers 404")
    else:
        check(f"{where}: {path} is a route of docs/openapi.yaml", False, f"routes: {sorted(known)}")


def check_container_basics(m, c, env_sources):
    """What every container of every pod must have; `env_sources` are config values naming env vars."""
    sc = c.get("securityContext", {})
    check(f"{m}: container {c.get('name')}: readOnlyRootFilesystem, no privilege escalation, drops ALL",
          sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
          and "ALL" in sc.get("capabilities", {}).get("drop", []))
    image = str(c.get("image", ""))
    tag = image.rsplit("/", 1)[-1]
    check(f"{m}: container {c.get('name')}: image pinned (a tag or digest, not latest)",
          ("@sha256:" in image or ":" in tag) and not tag.endswith(":latest"), f"image = {image!r}")
    check(f"{m}: container {c.get('name')}: memory limit set", "memory" in c.get("resources", {}).get("limits", {}))
    env = {e.get("name"): e for e in c.get("env", [])}
    args = " ".join(map(str, c.get("command", []) + c.get("args", [])))
    used = set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", args))
    check(f"{m}: container {c.get('name')}: every $(VAR) of its args is in its env", used <= set(env),
          f"undefined: {sorted(used - set(env))}")
    pats = rust_env_names()
    unread = [n for n in env if n.startswith("SEAL_") and n not in env_sources and n not in used
              and not read_by_code(n, pats)]
    check(f"{m}: container {c.get('name')}: every SEAL_* variable it sets is read by seal (a literal in the "
          f"Rust sources, a *_env value of the config) or used in its args", not unread, f"unread: {unread}")


def find(docs, kind, name=None):
    return [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"].get("name") == name)]


def check_manifest(m, docs, cfg, config_text):
    """The rendered output of one overlay."""
    kinds = sorted({d.get("kind") for d in docs})
    for kind in ("Namespace", "Deployment", "Service", "ConfigMap", "CronJob", "NetworkPolicy",
                 "PodDisruptionBudget", "ServiceAccount"):
        check(f"{m}: has a {kind}", kind in kinds, f"kinds: {kinds}")
    dep = next(iter(find(docs, "Deployment")), {})
    job = next(iter(find(docs, "CronJob")), {})
    svc = next(iter(find(docs, "Service")), {})
    pod, jpod = pod_spec(dep), pod_spec(job)
    labels, jlabels = pod_labels(dep), pod_labels(job)
    containers, inits = pod.get("containers", []), pod.get("initContainers", [])
    main = next((c for c in containers if c.get("name") == "seal"), containers[0] if containers else {})
    cms = {d["metadata"]["name"]: d for d in find(docs, "ConfigMap")}
    server = cfg.get("server", {})
    env_sources = {v for k, v in list(server.items()) + list(cfg.get("policy", {}).items())
                   if k.endswith("_env") and isinstance(v, str)}
    env_sources |= {s.get("api_key_env") for s in cfg.get("judges", {}).values() if isinstance(s, dict)}

    # The generated config: one hashed ConfigMap, byte for byte seal.toml, used by both pods.
    config_maps = [n for n in cms if generated(n, "seal-config")]
    check(f"{m}: one generated ConfigMap seal-config-<hash>", len(config_maps) == 1, f"ConfigMaps: {sorted(cms)}")
    cm_name = config_maps[0] if config_maps else None
    check(f"{m}: ConfigMap {cm_name} holds seal.toml byte for byte",
          cm_name and cms[cm_name].get("data", {}).get("seal.toml") == config_text)
    for what, spec in (("Deployment", pod), ("CronJob", jpod)):
        vol_cms = [v["configMap"]["name"] for v in spec.get("volumes", []) if "configMap" in v]
        check(f"{m}: the {what} mounts the hashed config ConfigMap ({cm_name})", cm_name in vol_cms,
              f"configMap volumes: {vol_cms}")
    text = yaml.safe_dump_all(docs)
    check(f"{m}: no hand-bumped seal/config-revision annotation (the hash rolls the pods)",
          "seal/config-revision" not in text)
    site = [n for n in cms if generated(n, "seal-site")]
    site_data = cms[site[0]].get("data", {}) if site else {}
    check(f"{m}: a generated seal-site ConfigMap whose SEAL_STORE is s3:// (replicas share one bucket)",
          str(site_data.get("SEAL_STORE", "")).startswith("s3://"), f"seal-site: {site_data}")
    refs = configmap_refs(pod) | configmap_refs(jpod)
    check(f"{m}: every ConfigMap the pods reference exists (rendered names)", refs and refs <= set(cms),
          f"missing: {sorted(refs - set(cms))}")

    check_replicas_and_drain(m, docs, dep, labels)
    check_spread(m, dep, pod, labels)
    check_namespace(m, docs)
    check_environment(m, docs, containers + inits + jpod.get("containers", []))
    for what, spec in (("Deployment", pod), ("CronJob", jpod)):
        psc = spec.get("securityContext", {})
        check(f"{m}: {what} pod runAsNonRoot with a fixed non-root uid",
              psc.get("runAsNonRoot") is True and isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0)
    for c in containers + inits + jpod.get("containers", []):
        check_container_basics(m, c, env_sources)

    listen = str(server.get("listen", ""))
    port = int(listen.rpartition(":")[2]) if listen.rpartition(":")[2].isdigit() else -1
    cports = {p.get("name"): p.get("containerPort") for p in main.get("ports", [])}
    check(f"{m}: containerPort is server.listen's port ({port})", port in cports.values(), f"ports {cports}")
    want = {"livenessProbe": "/livez", "readinessProbe": "/readyz", "startupProbe": "/livez"}
    for probe, path in want.items():
        g = main.get(probe, {}).get("httpGet", {})
        p = g.get("port")
        check(f"{m}: {probe} GET {path} on the server port",
              g.get("path") == path and (p == port or cports.get(p) == port), f"{probe} = {main.get(probe)}")
        check_route(f"{m}: {probe}", path)
    tps = [p.get("targetPort") for p in svc.get("spec", {}).get("ports", [])]
    check(f"{m}: Service targets the server port", any(t == port or cports.get(t) == port for t in tps))
    check(f"{m}: Service selector matches the pod labels", selects(svc.get("spec", {}).get("selector"), labels))

    env = {e.get("name"): e for e in main.get("env", [])}
    for name in SECRET_ENV:
        ref = env.get(name, {}).get("valueFrom", {}).get("secretKeyRef")
        check(f"{m}: {name} comes from a Secret", bool(ref) and not ref.get("optional", False))
    literal = [n for n, e in env.items() if "value" in e and re.search(r"KEY|TOKEN|SALT|SECRET|PASSWORD", n or "")]
    check(f"{m}: no secret-looking env var has a literal value", not literal, f"literal: {literal}")
    check(f"{m}: SEAL_REPLICA_ID is set per pod (the pod name)",
          env.get("SEAL_REPLICA_ID", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name")
    serve_args = [str(a) for a in main.get("args", [])]
    check(f"{m}: the server runs `serve --store $(SEAL_STORE)`",
          serve_args[:1] == ["serve"] and "--store" in serve_args
          and serve_args[serve_args.index("--store") + 1:][:1] == ["$(SEAL_STORE)"], f"args {serve_args}")

    mounts = {mt.get("mountPath"): mt for mt in main.get("volumeMounts", [])}
    check(f"{m}: config mounted at /etc/seal/seal.toml with subPath (a real file, not a symlink)",
          mounts.get("/etc/seal/seal.toml", {}).get("subPath") == "seal.toml")
    key_path = cfg.get("keys", {}).get("signing_key", "")
    key_dir = key_path.rsplit("/", 1)[0]
    check(f"{m}: keys.signing_key's folder ({key_dir}) is mounted", key_dir in mounts)
    installs = [" ".join(map(str, c.get("command", []) + c.get("args", []))) for c in inits]
    check(f"{m}: an init container writes keys.signing_key with mode 0600",
          any(key_path in s and "0600" in s for s in installs), f"init commands: {installs}")
    secret_vols = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    check(f"{m}: the signing key comes from a Secret volume", bool(secret_vols))
    check(f"{m}: the Secret volume is not mounted in the serving container",
          not any(mt.get("name") in secret_vols for mt in main.get("volumeMounts", [])))
    pre = main.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pre_s = int(pre[1]) if len(pre) == 2 and pre[0] == "sleep" and str(pre[1]).isdigit() else 0
    grace_s = server.get("shutdown_grace_ms", 0) / 1000
    tgps = pod.get("terminationGracePeriodSeconds", 30)
    check(f"{m}: terminationGracePeriodSeconds ({tgps}) > preStop ({pre_s}) + shutdown_grace_ms ({grace_s:g} s)",
          tgps > pre_s + grace_s)

    if find(docs, "PodMonitor") or m not in DEV_OVERLAYS:
        check_podmonitor(m, docs, labels, jlabels, main, cports)
    if find(docs, "PrometheusRule") or m not in DEV_OVERLAYS:
        check_prometheusrule(m, docs, cfg)
    if find(docs, "ExternalSecret") or m not in DEV_OVERLAYS:
        check_external_secrets(m, docs, pod, jpod)
    for ing in find(docs, "Ingress"):
        check_ingress(m, ing, svc, cfg)
    check_networkpolicies(m, docs, labels, jlabels, port, cports)
    check_cronjob(m, docs, dep, job, cms)


def check_podmonitor(m, docs, labels, jlabels, main, cports):
    pm = next(iter(find(docs, "PodMonitor")), {})
    check(f"{m}: PodMonitor is monitoring.coreos.com/v1", pm.get("apiVersion") == "monitoring.coreos.com/v1")
    spec = pm.get("spec", {})
    check(f"{m}: PodMonitor selects the serving pods and not the verify job's",
          selects(spec.get("selector"), labels) and not selects(spec.get("selector"), jlabels))
    eps = spec.get("podMetricsEndpoints", [])
    check(f"{m}: PodMonitor has exactly one endpoint", len(eps) == 1, f"podMetricsEndpoints: {eps}")
    ep = eps[0] if eps else {}
    check(f"{m}: PodMonitor scrapes the named container port ({ep.get('port')!r})", ep.get("port") in cports,
          f"container ports: {sorted(cports)}")
    check(f"{m}: PodMonitor path is /metrics", ep.get("path") == "/metrics")
    check_route(f"{m}: PodMonitor", ep.get("path"))
    auth = ep.get("authorization", {})
    cred = auth.get("credentials", {})
    env = {e.get("name"): e for e in main.get("env", [])}
    token = env.get("SEAL_METRICS_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(f"{m}: PodMonitor sends a Bearer token from a Secret", auth.get("type") == "Bearer" and cred.get("name")
          and cred.get("key"), f"authorization: {auth}")
    check(f"{m}: PodMonitor's token is the pods' SEAL_METRICS_TOKEN (same Secret and key), not the API token",
          (cred.get("name"), cred.get("key")) == (token.get("name"), token.get("key"))
          and cred.get("name") != env.get("SEAL_API_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {}).get("name"),
          f"PodMonitor {cred}, SEAL_METRICS_TOKEN {token}")
    interval = str(ep.get("interval", ""))
    check(f"{m}: PodMonitor interval is a duration ({interval!r})", re.fullmatch(r"\d+(ms|s|m|h)", interval))
    known = {"port", "path", "interval", "scrapeTimeout", "authorization", "scheme", "relabelings",
             "metricRelabelings", "honorLabels", "tlsConfig"}
    check(f"{m}: PodMonitor endpoint has only fields of the Prometheus Operator's v1 schema",
          set(ep) <= known, f"unknown: {sorted(set(ep) - known)}")


def check_replicas_and_drain(m, docs, dep, labels):
    """At the overlay's replica count a node drain can evict a pod, and never all of them."""
    replicas = dep.get("spec", {}).get("replicas", 1)
    check(f"{m}: at least 2 replicas ({replicas})", is_int(replicas) and replicas >= 2)
    pdbs = [d for d in find(docs, "PodDisruptionBudget") if selects(d.get("spec", {}).get("selector"), labels)]
    check(f"{m}: one PodDisruptionBudget selects the serving pods", len(pdbs) == 1, f"{len(pdbs)} do")
    if not pdbs or not is_int(replicas):
        return
    spec = pdbs[0]["spec"]

    def count(v, round_up):
        if isinstance(v, str) and v.endswith("%"):
            frac = int(v[:-1]) * replicas / 100
            return math.ceil(frac) if round_up else math.floor(frac)
        return v
    if "maxUnavailable" in spec:
        # The disruption controller rounds a percentage up for maxUnavailable and minAvailable.
        allowed = count(spec["maxUnavailable"], True)
    else:
        allowed = replicas - count(spec.get("minAvailable", replicas), True)
    check(f"{m}: a node drain can evict a serving pod at {replicas} replicas "
          f"(the PodDisruptionBudget allows {allowed} disruption(s))", is_int(allowed, 1),
          f"PodDisruptionBudget spec: {spec}")
    check(f"{m}: a drain keeps at least one serving pod at {replicas} replicas", is_int(allowed) and allowed < replicas,
          f"allows {allowed} of {replicas}")
    check(f"{m}: the PodDisruptionBudget lets a drain evict pods that are not ready (unhealthyPodEvictionPolicy)",
          spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow")


def check_spread(m, dep, pod, labels):
    """Spread over zones and over nodes; the zone required in an environment."""
    tsc = {c.get("topologyKey"): c for c in pod.get("topologySpreadConstraints", [])}
    for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname"):
        c = tsc.get(key, {})
        check(f"{m}: the serving pods spread over {key} (maxSkew 1, selecting them, per ReplicaSet)",
              c.get("maxSkew") == 1 and selects(c.get("labelSelector"), labels)
              and "pod-template-hash" in c.get("matchLabelKeys", []), f"constraint: {c}")
    if m not in DEV_OVERLAYS:
        when = tsc.get("topology.kubernetes.io/zone", {}).get("whenUnsatisfiable")
        check(f"{m}: the zone spread is required (DoNotSchedule)", when == "DoNotSchedule", f"{when}")


NAMESPACED_CLUSTER_KINDS = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                            "ClusterSecretStore", "PriorityClass", "StorageClass"}


def check_namespace(m, docs):
    nss = find(docs, "Namespace")
    check(f"{m}: one Namespace", len(nss) == 1, f"{len(nss)}")
    if not nss:
        return
    ns = nss[0]["metadata"]
    name, nl = ns.get("name"), ns.get("labels", {})
    outside = [f"{d['kind']}/{d['metadata'].get('name')}" for d in docs if d.get("kind") not in NAMESPACED_CLUSTER_KINDS
               and d["metadata"].get("namespace") != name]
    check(f"{m}: every namespaced resource is in the Namespace {name}", not outside, f"outside: {outside}")
    check(f"{m}: the Namespace enforces the restricted Pod Security Standard",
          nl.get("pod-security.kubernetes.io/enforce") == "restricted", f"labels: {nl}")
    check(f"{m}: no Secret is rendered (secrets never live in git)", not find(docs, "Secret"))


DIGEST = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def check_environment(m, docs, containers):
    """An environment overlay: every image by digest."""
    if m in DEV_OVERLAYS:
        return
    images = sorted({str(c.get("image", "")) for c in containers})
    bad = [i for i in images if not DIGEST.match(i)]
    check(f"{m}: every image is pinned by digest (name@sha256:<64 hex>), not a tag (kustomize edit set image)",
          not bad, f"not by digest: {bad}")


# --- The metrics the code registers (prometheus-client), with the names the encoder exposes.
def exported_metrics():
    """{exposed name: source file}: counters get `_total`, histograms `_bucket`, `_sum` and
    `_count`, info metrics `_info`, gauges their name. The type comes from the field or the
    variable registered (`Family<_, Counter>`, a `type Counters = ...` alias, `Info::new`)."""
    names = {}
    for path in sorted(glob.glob("crates/*/src/**/*.rs", recursive=True)):
        if "/tests" in path or path.endswith("tests.rs"):
            continue
        text = open(path, encoding="utf-8").read()
        if "prometheus_client" not in text:
            continue
        aliases = dict(re.findall(r"\btype (\w+)\s*=\s*([^;]+);", text))
        fields = {}
        for name, ty in re.findall(r"^\s*(?:pub(?:\([\w:]+\))?\s+)?(\w+):\s*([A-Z][^\n]*?),?\s*$", text, re.M):
            if not re.match(r"\w+(<[^>]*>)?::", ty):  # not an initializer (`Family::default()`)
                fields.setdefault(name, aliases.get(ty.split("<")[0].strip(), ty))
        calls = re.finditer(r'(?:\.register|\bc)\(\s*"((?:seal|process)_\w+)",\s*"(?:[^"\\]|\\.)*",\s*'
                            r'&?(?:self\.|m\.)?(\w+)', text)
        for call in calls:
            base, arg = call.group(1), call.group(2)
            ty = fields.get(arg, "")
            if re.search(r"\bc\($", text[:call.start() + 2]):
                ty = aliases.get("Counters", ty)
            if arg == "info" or "Info" in ty:
                exposed = [base + "_info"]
            elif "Histogram" in ty:
                exposed = [base + s for s in ("_bucket", "_sum", "_count")]
            elif "Counter" in ty:
                exposed = [base + "_total"]
            elif "Gauge" in ty:
                exposed = [base]
            else:
                exposed = [base + "?unknown-type"]
            for e in exposed:
                names[e] = path
    return names


def selectors(expr):
    """The vector selectors' metric names of a parsed expression (None: a selector without one)."""
    out = []
    promql_parser.walk(expr, lambda n: out.append(n.name) if isinstance(n, promql_parser.VectorSelector) else None)
    return out


def aggregations_without_namespace(expr):
    bad = []

    def visit(n):
        if isinstance(n, promql_parser.AggregateExpr):
            mod = n.modifier
            by = mod is not None and str(mod.type).endswith("By") and "namespace" in mod.labels
            without = mod is not None and str(mod.type).endswith("Without") and "namespace" not in mod.labels
            if not (by or without):
                bad.append(str(n))
    promql_parser.walk(expr, visit)
    return bad


def check_prometheusrule(m, docs, cfg):
    rules_docs = find(docs, "PrometheusRule")
    check(f"{m}: has a PrometheusRule (components/monitoring)", len(rules_docs) >= 1)
    exported = exported_metrics()
    table = set(re.findall(r"^\| `((?:seal|process)_\w+)` \|", open("docs/DEPLOYING.md", encoding="utf-8").read(), re.M))
    unfound = sorted(n for n in table if n not in exported and n + "_bucket" not in exported)
    check(f"{m}: deploy-lint finds in the code each of the {len(table)} metrics of docs/DEPLOYING.md §6's table",
          len(table) >= 20 and not unfound and not any("?" in n for n in exported),
          f"not found: {unfound}; found: {sorted(exported)}")
    external = set().union(*EXTERNAL_METRICS.values())
    server = cfg.get("server", {})
    for pr in rules_docs:
        name = pr["metadata"].get("name")
        where = f"{m}: PrometheusRule {name}"
        check(f"{where} is monitoring.coreos.com/v1", pr.get("apiVersion") == "monitoring.coreos.com/v1")
        groups = pr.get("spec", {}).get("groups", [])
        gnames = [g.get("name") for g in groups]
        check(f"{where}: has rule groups, each named once", groups and len(set(gnames)) == len(gnames), f"{gnames}")
        recorded = {r["record"] for g in groups for r in g.get("rules", []) if "record" in r}
        alerts = [r.get("alert") for g in groups for r in g.get("rules", []) if "alert" in r]
        check(f"{where}: alert names unique", len(alerts) == len(set(alerts)), f"{alerts}")
        for g in groups:
            for r in g.get("rules", []):
                rname = r.get("alert") or r.get("record")
                rw = f"{where}: {g.get('name')}/{rname}"
                known = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
                check(f"{rw}: one of alert or record, an expr, only fields of the v1 schema",
                      ("alert" in r) != ("record" in r) and r.get("expr") and set(r) <= known, f"fields: {sorted(r)}")
                try:
                    expr = promql_parser.parse(str(r.get("expr", "")))
                except ValueError as e:
                    check(f"{rw}: expr is PromQL", False, f"{e}: {r.get('expr')!r}")
                    continue
                names = selectors(expr)
                if g.get("name") == "seal":
                    allowed, whose = set(exported) | recorded, "the code registers (or this rule records)"
                else:
                    allowed = set(exported) | recorded | external
                    whose = f"the code registers, or {', '.join(sorted(EXTERNAL_METRICS))} export"
                unknown = sorted({str(n) for n in names if n not in allowed})
                check(f"{rw}: reads only metrics {whose}", names and not unknown,
                      f"unknown: {unknown} (a selector without a metric name is None)")
                loose = aggregations_without_namespace(expr)
                check(f"{rw}: every aggregation keeps namespace (one alert per deployment)", not loose, f"{loose}")
                if "record" in r:
                    check(f"{rw}: a valid recorded name (level:metric:operations)",
                          re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*:[a-zA-Z0-9_:]+", r["record"]))
                    continue
                if "for" in r:
                    try:
                        promql_parser.parse_duration(str(r["for"]))
                        ok_dur = True
                    except ValueError:
                        ok_dur = False
                    check(f"{rw}: for is a duration ({r['for']})", ok_dur)
                check(f"{rw}: severity in {sorted(ALERT_SEVERITIES)}, a summary and a description",
                      r.get("labels", {}).get("severity") in ALERT_SEVERITIES
                      and r.get("annotations", {}).get("summary") and r.get("annotations", {}).get("description"),
                      f"labels {r.get('labels')}, annotations {sorted(r.get('annotations', {}))}")
                if "seal_rolls_admitted" in names:
                    bound = f"({server.get('max_rolls_in_progress')} + {server.get('queue_bound')})"
                    check(f"{rw}: its bound is seal.toml's max_rolls_in_progress + queue_bound {bound}",
                          bound in " ".join(str(r["expr"]).split()), f"expr {r['expr']!r}")
        docs_rules = set(re.findall(r"^\s+- (?:alert|record): (\S+)", open(
            "deploy/kubernetes/components/monitoring/prometheusrule.yaml", encoding="utf-8").read(), re.M))
        deploying = open("docs/DEPLOYING.md", encoding="utf-8").read()
        missing = sorted(n for n in docs_rules if f"`{n}`" not in deploying)
        check(f"{where}: docs/DEPLOYING.md §6 names every alert and recording rule", not missing,
              f"not in DEPLOYING.md: {missing}")


def secrets_read(pod):
    """(Secret, key) pairs a pod spec needs: non-optional secretKeyRefs, Secret volume items."""
    need = set()
    for c in pod.get("containers", []) + pod.get("initContainers", []):
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref and not ref.get("optional", False):
                need.add((ref.get("name"), ref.get("key")))
    for v in pod.get("volumes", []):
        sec = v.get("secret")
        if sec and not sec.get("optional", False):
            for it in sec.get("items", []) or [{"key": "*"}]:
                need.add((sec.get("secretName"), it.get("key")))
    return need


def check_external_secrets(m, docs, pod, jpod):
    ess = find(docs, "ExternalSecret")
    check(f"{m}: has ExternalSecrets (components/external-secrets)", bool(ess))
    stores = {d["metadata"]["name"]: d for d in find(docs, "SecretStore")}
    sas = {d["metadata"]["name"]: d for d in find(docs, "ServiceAccount")}
    provided = set()
    for es in ess:
        name = es["metadata"].get("name")
        spec = es.get("spec", {})
        where = f"{m}: ExternalSecret {name}"
        check(f"{where} is external-secrets.io/v1", es.get("apiVersion") == "external-secrets.io/v1")
        ref = spec.get("secretStoreRef", {})
        check(f"{where}: its SecretStore ({ref.get('name')}) is in the overlay",
              ref.get("kind", "SecretStore") == "SecretStore" and ref.get("name") in stores)
        target = spec.get("target", {}).get("name", name)
        data = spec.get("data", [])
        check(f"{where}: explicit data (secretKey, remoteRef.key), no dataFrom (the keys stay checkable)",
              data and "dataFrom" not in spec and all(d.get("secretKey") and d.get("remoteRef", {}).get("key")
                                                       for d in data))
        check(f"{where}: refreshInterval set, the Secret kept if the ExternalSecret is deleted",
              spec.get("refreshInterval") and spec.get("target", {}).get("deletionPolicy") == "Retain")
        provided |= {(target, d.get("secretKey")) for d in data}
    need = secrets_read(pod) | secrets_read(jpod)
    missing = sorted(need - provided, key=str)
    check(f"{m}: every Secret key the pods need comes from an ExternalSecret", not missing, f"missing: {missing}")
    for sname, st in stores.items():
        aws = st.get("spec", {}).get("provider", {}).get("aws", {})
        sa = aws.get("auth", {}).get("jwt", {}).get("serviceAccountRef", {}).get("name")
        role = sas.get(sa, {}).get("metadata", {}).get("annotations", {}).get("eks.amazonaws.com/role-arn")
        serving = {sas.get(n, {}).get("metadata", {}).get("annotations", {}).get("eks.amazonaws.com/role-arn")
                   for n in (pod.get("serviceAccountName"), jpod.get("serviceAccountName"))}
        check(f"{m}: SecretStore {sname} reads with a ServiceAccount of its own ({sa}) whose role no pod has",
              sa in sas and sa not in (pod.get("serviceAccountName"), jpod.get("serviceAccountName"))
              and role and role not in serving, f"role {role}, the pods' {serving}")


def size_bytes(v):
    mm = re.fullmatch(r"(\d+)([kKmMgG]?)", str(v))
    return int(mm.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[mm.group(2).lower()] if mm else -1


def check_ingress(m, ing, svc, cfg):
    name = ing["metadata"].get("name")
    ann = ing["metadata"].get("annotations", {})
    where = f"{m}: Ingress {name}"
    server, limits = cfg.get("server", {}), cfg.get("limits", {})
    need_s = server.get("request_timeout_ms", 0) / 1000
    for a in ("proxy-read-timeout", "proxy-send-timeout"):
        v = ann.get(f"nginx.ingress.kubernetes.io/{a}", "")
        check(f"{where}: {a} ({v} s) >= server.request_timeout_ms ({need_s:g} s)",
              str(v).isdigit() and int(v) >= need_s)
    body = ann.get("nginx.ingress.kubernetes.io/proxy-body-size", "")
    need_b = max(limits.get("max_blob_bytes", 0), limits.get("max_document_bytes", 0))
    check(f"{where}: proxy-body-size ({body}) >= limits.max_blob_bytes ({need_b} bytes)", size_bytes(body) >= need_b)
    check(f"{where}: request buffering off (blobs stream to seal)",
          ann.get("nginx.ingress.kubernetes.io/proxy-request-buffering") == "off")
    ports = {p.get("name") for p in svc.get("spec", {}).get("ports", [])} | {
        p.get("port") for p in svc.get("spec", {}).get("ports", [])}
    backends = [p.get("backend", {}).get("service", {}) for r in ing.get("spec", {}).get("rules", [])
                for p in r.get("http", {}).get("paths", [])]
    check(f"{where}: every path goes to the Service {svc.get('metadata', {}).get('name')} on one of its ports",
          backends and all(b.get("name") == svc.get("metadata", {}).get("name")
                           and (b.get("port", {}).get("name") in ports or b.get("port", {}).get("number") in ports)
                           for b in backends), f"backends: {backends}")
    hosts = {r.get("host") for r in ing.get("spec", {}).get("rules", [])}
    tls_hosts = {h for t in ing.get("spec", {}).get("tls", []) for h in t.get("hosts", [])}
    check(f"{where}: TLS for every host ({sorted(hosts, key=str)})", hosts and None not in hosts and hosts <= tls_hosts)


def allows_port(rule, port, cports, proto="TCP"):
    for p in rule.get("ports", []):
        val = p.get("port")
        if p.get("protocol", "TCP") == proto and (val == port or cports.get(val) == port):
            return True
    return False


def check_networkpolicies(m, docs, labels, jlabels, port, cports):
    nps = find(docs, "NetworkPolicy")
    serving = [n for n in nps if selects(n["spec"].get("podSelector"), labels)]
    verifying = [n for n in nps if selects(n["spec"].get("podSelector"), jlabels)]
    check(f"{m}: a NetworkPolicy selects the serving pods", len(serving) == 1, f"{len(serving)} do")
    check(f"{m}: a NetworkPolicy selects the verify job's pods", len(verifying) == 1, f"{len(verifying)} do")
    for who, pols in (("serving", serving), ("verify", verifying)):
        if not pols:
            continue
        spec = pols[0]["spec"]
        check(f"{m}: the {who} pods' NetworkPolicy governs Ingress and Egress",
              set(spec.get("policyTypes", [])) == {"Ingress", "Egress"})
        egress = spec.get("egress", [])
        for proto in ("UDP", "TCP"):
            check(f"{m}: the {who} pods may reach DNS ({proto} 53)", any(allows_port(r, 53, {}, proto) for r in egress))
        open443 = [r for r in egress if allows_port(r, 443, {})
                   and any(t.get("ipBlock", {}).get("cidr") in ("0.0.0.0/0", "::/0") for t in r.get("to", []))]
        check(f"{m}: the {who} pods may reach HTTPS (443) outside the cluster (S3, STS, judges, witnesses)",
              bool(open443))
        # The serving pods also export traces: OTLP/HTTP (4318) to the monitoring namespace only.
        def otlp(r):
            return who == "serving" and all(
                t.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name") == "monitoring"
                and "ipBlock" not in t for t in r.get("to", [{}])) and r.get("to")
        if who == "serving":
            check(f"{m}: the serving pods may reach an OTLP collector (TCP 4318) in the monitoring namespace",
                  any(allows_port(r, 4318, {}) and otlp(r) for r in egress))
        widest = [p for r in egress for p in r.get("ports", [{}])
                  if p.get("port") not in (53, 443) and not (p.get("port") == 4318 and otlp(r))]
        check(f"{m}: the {who} pods' egress opens no port but 53 and 443 (and 4318 to monitoring) in the base",
              not widest, f"{widest}")
    if serving:
        ingress = serving[0]["spec"].get("ingress", [])
        check(f"{m}: the serving pods accept the API port ({port}) and only it",
              ingress and all(allows_port(r, port, cports) and len(r.get("ports", [])) == 1 for r in ingress))
        check(f"{m}: ingress only from selected peers (no rule open to every source)",
              all(r.get("from") for r in ingress))
    if verifying:
        check(f"{m}: the verify job's pods accept no ingress", not verifying[0]["spec"].get("ingress"))


def check_cronjob(m, docs, dep, job, cms):
    spec = job.get("spec", {})
    jspec = spec.get("jobTemplate", {}).get("spec", {})
    pod = pod_spec(job)
    check(f"{m}: CronJob concurrencyPolicy Forbid (one verification at a time)", spec.get("concurrencyPolicy") == "Forbid")
    check(f"{m}: CronJob has a schedule, a starting deadline and an active deadline",
          spec.get("schedule") and spec.get("startingDeadlineSeconds") and jspec.get("activeDeadlineSeconds"))
    containers = pod.get("containers", [])
    c = containers[0] if containers else {}
    args = [str(a) for a in c.get("args", [])]
    check(f"{m}: CronJob runs `verify --all --trust PEM`", args[:1] == ["verify"] and "--all" in args and "--trust" in args,
          f"args {args}")
    trust = args[args.index("--trust") + 1] if "--trust" in args[:-1] else ""
    mounts = {mt.get("mountPath"): mt for mt in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    tm = mounts.get(trust, {})
    tvol = vols.get(tm.get("name"), {}).get("configMap", {}).get("name")
    check(f"{m}: CronJob's --trust key ({trust}) is a subPath mount of the generated seal-trust ConfigMap",
          tm.get("subPath") and generated(tvol, "seal-trust") and tvol in cms, f"mount {tm}, ConfigMap {tvol}")
    if tvol in cms:
        pem = cms[tvol].get("data", {}).get(tm.get("subPath"), "")
        check(f"{m}: seal-trust's key is an SPKI PEM public key", pem.startswith("-----BEGIN PUBLIC KEY-----\n")
              and pem.rstrip().endswith("-----END PUBLIC KEY-----"))
    check(f"{m}: CronJob passes --store $(SEAL_STORE) like the Deployment",
          "--store" in args and args[args.index("--store") + 1:][:1] == ["$(SEAL_STORE)"])
    check(f"{m}: CronJob mounts the config at /etc/seal/seal.toml with subPath",
          mounts.get("/etc/seal/seal.toml", {}).get("subPath") == "seal.toml")
    dimg = {x.get("image") for x in pod_spec(dep).get("containers", [])}
    check(f"{m}: CronJob uses the serving image", c.get("image") in dimg, f"{c.get('image')} vs {dimg}")
    sa, dsa = pod.get("serviceAccountName"), pod_spec(dep).get("serviceAccountName")
    sas = {d["metadata"]["name"]: d for d in find(docs, "ServiceAccount")}
    check(f"{m}: CronJob runs as its own ServiceAccount ({sa}), not the serving one ({dsa})",
          sa and sa != dsa and sa in sas)
    role = lambda n: sas.get(n, {}).get("metadata", {}).get("annotations", {})
    check(f"{m}: the verify ServiceAccount carries another cloud role than the serving one (read-only)",
          role(sa) != role(dsa) or not role(sa), f"{sa}: {role(sa)}, {dsa}: {role(dsa)}")
    text = yaml.safe_dump(pod)
    check(f"{m}: CronJob's pod reads no Secret (no secretKeyRef, no Secret volume, no envFrom secret)",
          "secretKeyRef" not in text and "secretRef" not in text and not any("secret" in v for v in vols.values()))
    check(f"{m}: CronJob's pod mounts no API token", pod.get("automountServiceAccountToken") is False)
    check(f"{m}: CronJob restartPolicy Never", pod.get("restartPolicy") == "Never")


def check_dockerfile(config_path, manifests):
    dockerfile = open("Dockerfile", encoding="utf-8").read()
    lines = [l.strip() for l in dockerfile.splitlines() if l.strip() and not l.strip().startswith("#")]
    froms = [l.split() for l in lines if l.upper().startswith("FROM ")]
    images = [f[1] for f in froms]
    check("Dockerfile: rust:1-bookworm builder, a debuginfo stage, debian:bookworm-slim runtime last",
          len(images) >= 3 and images[0] == "rust:1-bookworm" and images[-1] == "debian:bookworm-slim"
          and any(f[1] == "scratch" and f[-1] == "debuginfo" for f in froms), f"FROM {froms}")
    check("Dockerfile: no base image is untagged or :latest (scratch aside)",
          all(i == "scratch" or ((":" in i.rsplit("/", 1)[-1] or "@sha256:" in i) and not i.endswith(":latest"))
              for i in images))
    users = [l.split()[1] for l in lines if l.upper().startswith("USER ")]
    uid = users[-1].split(":")[0] if users else ""
    check("Dockerfile: the last USER is a fixed non-root uid", uid.isdigit() and int(uid) > 0, f"USER {users}")
    for m, docs in manifests:
        dep = next(iter(find(docs, "Deployment")), {})
        check(f"Dockerfile: the image's uid is {m}'s runAsUser",
              uid.isdigit() and int(uid) == pod_spec(dep).get("securityContext", {}).get("runAsUser"))
    check("Dockerfile: cargo build --release --locked --bin seal", re.search(r"cargo build --release --locked --bin seal", dockerfile))
    check("Dockerfile: ARG SEAL_GIT_COMMIT in the build stage, refused unless 40 hex digits",
          re.search(r"^ARG SEAL_GIT_COMMIT$", dockerfile, re.M) and '"${#SEAL_GIT_COMMIT}" -eq 40' in dockerfile
          and "*[!0-9a-f]*" in dockerfile)
    check("Dockerfile: debug info split off (objcopy --only-keep-debug, --strip-debug --add-gnu-debuglink)",
          "objcopy --only-keep-debug target/release/seal /out/seal.debug" in dockerfile
          and "objcopy --strip-debug --add-gnu-debuglink=/out/seal.debug target/release/seal /out/seal" in dockerfile)
    check("Dockerfile: the runtime gets the stripped binary, the debuginfo stage the debug file",
          "COPY --from=build /out/seal /usr/local/bin/seal" in dockerfile
          and "COPY --from=build /out/seal.debug /seal.debug" in dockerfile)
    check("Dockerfile: runtime installs ca-certificates only",
          re.search(r"apt-get install -y --no-install-recommends ca-certificates\s*\\?\s*\n\s*&&", dockerfile))
    check("Dockerfile: ENTRYPOINT passes --config /etc/seal/seal.toml",
          re.search(r'ENTRYPOINT \[.*"--config", "/etc/seal/seal.toml"', dockerfile))
    check(f"Dockerfile: copies {config_path} to /etc/seal/seal.toml", f"COPY {config_path} /etc/seal/seal.toml" in dockerfile)
    check("Dockerfile: EXPOSE 7878", "EXPOSE 7878" in dockerfile)
    ignore = open(".dockerignore", encoding="utf-8").read().split()
    check(".dockerignore: keeps target/, .git and private keys out of the context",
          {"target", ".git", "**/*.key.pem"} <= set(ignore))


def config_diff(a, b, prefix=""):
    """The dotted keys whose values differ between two parsed configs."""
    out = set()
    for k in set(a) | set(b):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out |= config_diff(va, vb, prefix + k + ".")
        elif va != vb:
            out.add(prefix + k)
    return out


def overlay_config(label, docs, base_path, base_cfg, base_text):
    """The config an overlay ships (its seal-config ConfigMap): the base's seal.toml, or the
    overlay's own copy, which may differ from the base's only in PER_ENVIRONMENT_KEYS."""
    own = os.path.join("deploy/kubernetes", label, "seal.toml")
    if not os.path.exists(own):
        return base_cfg, base_text
    cfg = check_config(own)
    if cfg is None:
        return base_cfg, base_text
    extra = sorted(config_diff(base_cfg, cfg) - PER_ENVIRONMENT_KEYS)
    check(f"{own}: differs from {base_path} only in {', '.join(sorted(PER_ENVIRONMENT_KEYS))}", not extra,
          f"also differs in: {extra} (change the base and every copy alike)")
    return cfg, open(own, encoding="utf-8").read()


def main(argv):
    config_path, rendered = argv[1], argv[2:]
    cfg = check_config(config_path)
    if cfg is None:
        return
    config_text = open(config_path, encoding="utf-8").read()
    manifests, origins = [], {}
    for arg in rendered:
        label, _, path = arg.partition("=")
        with open(path, encoding="utf-8") as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d]
        manifests.append((label, docs))
        ocfg, otext = overlay_config(label, docs, config_path, cfg, config_text)
        origins[label] = ocfg.get("log", {}).get("origin")
        check_manifest(label, docs, ocfg, otext)
    check("rendered at least one overlay", bool(manifests))
    check("the environments' log.origin are all different (one log per deployment)",
          len(set(origins.values())) == len(origins), f"{origins}")
    check_dockerfile(config_path, manifests)


if __name__ == "__main__":
    try:
        main(sys.argv)
    finally:
        print(f"PYRESULT {results['ok']} {results['FAIL']} {results['pend']}")
