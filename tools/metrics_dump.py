#!/usr/bin/env python3
"""Parses a Prometheus text exposition (0.0.4) from stdin with the reference parser of the
`prometheus-client` package and prints it as JSON for tests/it/operable.rs:
    {"<family>": {"type": ..., "help": ..., "samples": [[name, {labels}, value], ...]}, ...}
Exit 1 when the text does not parse. Usage: curl …/metrics | tools/metrics_dump.py
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = sys.stdin.read()
    out = {}
    try:
        for fam in text_string_to_metric_families(text):
            out[fam.name] = {
                "type": fam.type,
                "help": fam.documentation,
                "samples": [[s.name, dict(s.labels), s.value] for s in fam.samples],
            }
    except Exception as e:  # the parser raises ValueError and others on bad input
        print(f"not a Prometheus text exposition: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
