"""Run folders in `seal judge`'s layout (docs/DESIGN.md §8 "Run folder"), read and checked
before any request, so that a broken folder costs no upload and no judge call:

    <run-dir>/header.json                 playtest/3, phase JUDGING, rolls []
    <run-dir>/brief.md                    sha256 must equal header.briefHash
    <run-dir>/play-spec.json              optional
    <run-dir>/roll-<n>/proof-package.json ProofPackage/1, n = 1 (required) and 2 (optional)
    <run-dir>/blobs/<hex>.<ext>           frame bytes, one for every frame a package references

The checks are those of the daemon's `runfolder` that need no schema: files are regular files
read without following links, JSON parses, the run id is one the API takes, the brief hashes to
`briefHash`, each package's `rollId` is its folder's, there is no `roll-3`, every entry of
`blobs/` is named by a sha256, every frame has its blob. Schemas, invariants and a stale
play-spec are the daemon's to judge (422 `invalid_document`, `mismatch`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SealFolderError

# docs/openapi.yaml, parameter RunId.
RUN_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# limits.max_document_bytes of the daemon's default configuration.
DEFAULT_DOCUMENT_LIMIT = 64 * 1024 * 1024


def _bad(path: Path, reason: str) -> SealFolderError:
    return SealFolderError("bad_folder", reason, str(path))


def _kind(path: Path) -> str | None:
    """'file', 'folder', 'link', 'other', or None when absent (links are not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _bad(path, e.strerror or str(e)) from None
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


def _present(path: Path, want: str) -> bool:
    kind = _kind(path)
    if kind is None:
        return False
    if kind != want:
        raise _bad(path, f"is a {kind}, not a {want}")
    return True


def _read(path: Path, limit: int) -> bytes:
    """A whole regular file of at most `limit` bytes, opened without following a link."""
    if not _present(path, "file"):
        raise _bad(path, "missing")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise _bad(path, e.strerror or str(e)) from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise _bad(path, f"over {limit} bytes")
    return data


def _json(path: Path, data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise _bad(path, f"not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise _bad(path, "not a JSON object")
    return doc


@dataclass(frozen=True)
class Roll:
    """One roll of a folder: its number, the package bytes as written, its frames' sha256."""

    number: int
    body: bytes
    frames: tuple[str, ...]

    @property
    def roll_id(self) -> str:
        return f"roll-{self.number}"


@dataclass(frozen=True)
class RunFolder:
    """A checked run folder; `blobs` maps each referenced frame's sha256 to its file."""

    path: Path
    run_id: str
    header: bytes
    brief: bytes
    play_spec: bytes | None
    rolls: tuple[Roll, ...]
    blobs: dict[str, Path]

    @classmethod
    def read(cls, path: str | os.PathLike[str], limit: int = DEFAULT_DOCUMENT_LIMIT) -> RunFolder:
        """Reads and checks a run folder; `SealFolderError` names the path and the reason."""
        dir_ = Path(path)
        if _kind(dir_) != "folder":
            raise _bad(dir_, "not a folder (or a link to one)")
        header_path = dir_ / "header.json"
        header = _read(header_path, limit)
        doc = _json(header_path, header)
        run_id = doc.get("runId")
        if not isinstance(run_id, str) or not RUN_ID.match(run_id):
            raise _bad(header_path, f"runId {run_id!r} is not a run id the API takes")
        brief_path = dir_ / "brief.md"
        brief = _read(brief_path, limit)
        actual = hashlib.sha256(brief).hexdigest()
        if actual != doc.get("briefHash"):
            raise _bad(
                brief_path, f"hashes to {actual}, the header's briefHash is {doc.get('briefHash')}"
            )
        spec_path = dir_ / "play-spec.json"
        play_spec = None
        if _present(spec_path, "file"):
            play_spec = _read(spec_path, limit)
            _json(spec_path, play_spec)
        rolls = _rolls(dir_, limit)
        blobs = _blobs(dir_, rolls)
        return cls(dir_, run_id, header, brief, play_spec, rolls, blobs)


def _rolls(dir_: Path, limit: int) -> tuple[Roll, ...]:
    rolls: list[Roll] = []
    for n in (1, 2):
        roll_dir = dir_ / f"roll-{n}"
        if not _present(roll_dir, "folder"):
            break
        p = roll_dir / "proof-package.json"
        body = _read(p, limit)
        doc = _json(p, body)
        if doc.get("rollId") != f"roll-{n}":
            raise _bad(p, f"rollId is {doc.get('rollId')!r}, the folder is roll-{n}")
        frames: list[str] = []
        for f in doc.get("frames") or []:
            h = f.get("hash") if isinstance(f, dict) else None
            if not isinstance(h, str) or not SHA256.match(h):
                raise _bad(p, f"a frame's hash {h!r} is not a sha256")
            if h not in frames:
                frames.append(h)
        rolls.append(Roll(n, body, tuple(frames)))
    if not rolls:
        raise _bad(dir_, "no roll-1/proof-package.json")
    if _kind(dir_ / "roll-3") is not None:
        raise _bad(dir_ / "roll-3", "a run has at most two rolls")
    return tuple(rolls)


def _blobs(dir_: Path, rolls: tuple[Roll, ...]) -> dict[str, Path]:
    """The blobs the packages reference, each a regular file `blobs/<sha256>.<ext>`; files
    nothing references are left alone (never uploaded)."""
    blob_dir = dir_ / "blobs"
    found: dict[str, Path] = {}
    if _present(blob_dir, "folder"):
        for entry in sorted(blob_dir.iterdir()):
            stem = entry.name.split(".", 1)[0]
            if not SHA256.match(stem):
                raise _bad(entry, "a blob is named <sha256>.<ext>")
            found.setdefault(stem, entry)
    wanted: dict[str, Path] = {}
    for roll in rolls:
        for h in roll.frames:
            if h not in found:
                raise _bad(blob_dir, f"frame {h} of {roll.roll_id} has no blob")
            if _kind(found[h]) != "file":
                raise _bad(found[h], "a blob must be a regular file (no link)")
            wanted[h] = found[h]
    return wanted
