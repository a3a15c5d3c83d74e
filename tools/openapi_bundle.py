#!/usr/bin/env python3
"""Bundles docs/openapi.yaml into one self-contained JSON document (crates/seal-server/src/openapi.json).

`x-schema-file: PATH` in components/schemas is replaced by that JSON Schema, and every schema it
references (`game-event.schema.json`, `other.json#/$defs/x`) becomes a component too, with its
references rewritten to `#/components/schemas/<Name>…`; `$id` and `$schema` are dropped.
`x-example-file: PATH` in a media type becomes its `example`. Usage:
    tools/openapi_bundle.py            write crates/seal-server/src/openapi.json
    tools/openapi_bundle.py --check    exit 1 if it is not up to date
"""
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA_DIRS = [
    ROOT / "crates/seal-core/src/contracts/schemas",
    ROOT / "crates/seal-core/src/contracts/upstream",
]
OUT = ROOT / "crates/seal-server/src/openapi.json"


def find_schema(name):
    for d in SCHEMA_DIRS:
        if (d / name).is_file():
            return d / name
    sys.exit(f"schema {name} not found under crates/seal-core/src/contracts")


def camel(stem):
    return "".join(p[:1].upper() + p[1:] for p in stem.replace(".schema", "").split("-"))


def rewrite(node, own, names, queue):
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ("$id", "$schema"):
                continue
            if k == "$ref" and isinstance(v, str):
                target, _, frag = v.partition("#")
                if target:
                    path = find_schema(pathlib.Path(target).name)
                    if path.name not in names:
                        names[path.name] = camel(path.stem)
                        queue.append(path)
                    name = names[path.name]
                else:
                    name = own
                out[k] = f"#/components/schemas/{name}{frag}"
            else:
                out[k] = rewrite(v, own, names, queue)
        return out
    if isinstance(node, list):
        return [rewrite(v, own, names, queue) for v in node]
    return node


def bundle_schemas(schemas):
    names, queue = {}, []
    for name, s in schemas.items():
        if isinstance(s, dict) and "x-schema-file" in s:
            path = ROOT / s["x-schema-file"]
            names[path.name] = name
            queue.append(path)
    done = set()
    while queue:
        path = queue.pop(0)
        if path.name in done:
            continue
        done.add(path.name)
        name = names[path.name]
        loaded = rewrite(json.loads(path.read_text()), name, names, queue)
        extra = {k: v for k, v in schemas.get(name, {}).items() if k != "x-schema-file"}
        schemas[name] = {**loaded, **extra}


def examples(node):
    if isinstance(node, dict):
        if "x-example-file" in node:
            path = ROOT / node.pop("x-example-file")
            text = path.read_text()
            node["example"] = json.loads(text) if path.suffix == ".json" else text
        for v in node.values():
            examples(v)
    elif isinstance(node, list):
        for v in node:
            examples(v)


def main():
    doc = yaml.safe_load((ROOT / "docs/openapi.yaml").read_text())
    bundle_schemas(doc["components"]["schemas"])
    examples(doc["paths"])
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        if OUT.read_text() != text:
            sys.exit("crates/seal-server/src/openapi.json is stale: run tools/openapi_bundle.py")
        return
    OUT.write_text(text)


main()
