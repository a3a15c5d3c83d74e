"""`seal-submit RUN_DIR…`: submits run folders to `seal serve`, for shell users.

Prints one JSON line per folder, in the order given: `{"runDir", "status": "sealed", …the
finalize answer…, "rolls"}` or `{"runDir", "status": "refused" | "failed", "error": {code,
message, object, status}}`. Exit 0 when every run is sealed, 1 when some folder or document was
refused (the caller's fault: fix it), 2 when some run could not be judged (daemon, store or
judges unavailable, corrupt store: retry later or page an operator). Folders are submitted one
after another; one that fails does not stop the others.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from .client import SealClient
from .errors import SealError
from .transport import RetryPolicy

DEFAULT_URL = "http://127.0.0.1:7878"


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="seal-submit",
        description="Submit run folders (seal judge's layout) to seal serve; one JSON line each.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument(
        "--url",
        default=os.environ.get("SEAL_URL", DEFAULT_URL),
        help=f"the daemon (default: $SEAL_URL, else {DEFAULT_URL})",
    )
    p.add_argument(
        "--token-env",
        default="SEAL_API_TOKEN",
        metavar="NAME",
        help="environment variable holding the bearer token (default SEAL_API_TOKEN)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=960.0,
        metavar="S",
        help="longest wait for one answer, seconds (default 960)",
    )
    p.add_argument(
        "--attempts",
        type=int,
        default=RetryPolicy.attempts,
        metavar="N",
        help="tries per request on 503/429/408/502/504 and lost connections"
        f" (default {RetryPolicy.attempts})",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log retries on stderr")
    return p.parse_args(argv)


def submit_one(client: SealClient, run_dir: str) -> tuple[int, dict[str, Any]]:
    """The exit code and the JSON line of one folder."""
    try:
        result = client.submit_run(run_dir)
    except SealError as e:
        status = "refused" if e.fault == "caller" else "failed"
        return (1 if e.fault == "caller" else 2), {
            "runDir": run_dir,
            "status": status,
            "error": e.as_json(),
        }
    return 0, {"runDir": run_dir, "status": "sealed", **result.as_json()}


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.verbose else logging.ERROR, format="seal-submit: %(message)s"
    )
    if args.attempts < 1:
        print("seal-submit: --attempts must be at least 1", file=sys.stderr)
        return 2
    try:
        client = SealClient(
            args.url,
            os.environ.get(args.token_env) or None,
            args.timeout,
            retry=RetryPolicy(attempts=args.attempts),
        )
    except ValueError as e:
        print(f"seal-submit: {e}", file=sys.stderr)
        return 2
    worst = 0
    for run_dir in args.run_dirs:
        code, line = submit_one(client, run_dir)
        print(json.dumps(line, ensure_ascii=False, sort_keys=True), flush=True)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main())
