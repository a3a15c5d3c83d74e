#!/usr/bin/env python3
"""A copy of an example run folder as another run, with frames of its own.

Usage: tools/unique_run.py SRC DEST RUN_ID [--same-frames]

The copy's header names RUN_ID; each frame becomes the same image with the run id appended (the
media check reads the PNG signature), renamed to its sha256, and every document naming it is
updated: real runs do not share frames, and a count of store requests per run over copies that
share them would hide one upload per frame. `--same-frames` keeps the example's frames.
Used by tools/s3_requests_per_run.sh and clients/python/tests/test_s3_requests.py.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path


def unique_run(src: Path, dest: Path, run: str, same_frames: bool = False) -> Path:
    shutil.copytree(src, dest)
    header = dest / "header.json"
    h = json.loads(header.read_text())
    h["runId"] = run
    header.write_text(json.dumps(h))
    if same_frames:
        return dest
    renamed = {}
    for blob in sorted((dest / "blobs").iterdir()):
        data = blob.read_bytes() + run.encode()
        new = hashlib.sha256(data).hexdigest()
        renamed[blob.name.split(".")[0]] = new
        (dest / "blobs" / (new + blob.suffix)).write_bytes(data)
        blob.unlink()
    for doc in dest.rglob("*"):
        if doc.is_file() and doc.suffix in (".json", ".md"):
            text = doc.read_text()
            for old, new in renamed.items():
                text = text.replace(f"{old[:2]}/{old}", f"{new[:2]}/{new}").replace(old, new)
            doc.write_text(text)
    return dest


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--same-frames"]
    if len(args) != 3:
        sys.exit(__doc__)
    unique_run(Path(args[0]), Path(args[1]), args[2], "--same-frames" in sys.argv)
