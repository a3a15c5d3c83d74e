"""Run folders are checked before any request (folder.py): each broken layout is refused with
`SealFolderError` naming the path, and the client never connects for it."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from harness import FIXTURE_INPUTS

from seal_client import RetryPolicy, RunFolder, SealClient, SealFolderError

RUN = "run-heritage-0017-disputed-font"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE_INPUTS / RUN, tmp_path / RUN))


def refused(path: Path) -> SealFolderError:
    """Submits `path` to an address where nothing listens: a folder error proves that the
    client refused the folder before trying to connect."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = SealClient(f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=1))
    with pytest.raises(SealFolderError) as e:
        client.submit_run(path)
    assert e.value.code == "bad_folder" and e.value.fault == "caller" and e.value.status is None
    return e.value


def test_a_checked_folder_holds_its_documents_rolls_and_referenced_blobs(folder: Path) -> None:
    (folder / "blobs" / ("f" * 64 + ".png")).write_bytes(b"not referenced")
    f = RunFolder.read(folder)
    assert f.run_id == RUN and [r.roll_id for r in f.rolls] == ["roll-1", "roll-2"]
    assert f.play_spec is not None
    referenced = {
        fr["hash"]
        for n in (1, 2)
        for fr in json.loads((folder / f"roll-{n}" / "proof-package.json").read_bytes())["frames"]
    }
    assert set(f.blobs) == referenced, "blobs nothing references are never uploaded"


def test_a_folder_without_roll_1_is_refused(folder: Path) -> None:
    shutil.rmtree(folder / "roll-1")
    shutil.rmtree(folder / "roll-2")
    assert refused(folder).message == "no roll-1/proof-package.json"


def test_a_brief_that_does_not_hash_to_brief_hash_is_refused(folder: Path) -> None:
    (folder / "brief.md").write_text("another brief")
    e = refused(folder)
    assert e.object == str(folder / "brief.md") and "briefHash" in e.message


def test_a_frame_without_its_blob_is_refused(folder: Path) -> None:
    victim = sorted((folder / "blobs").iterdir())[0]
    victim.unlink()
    assert f"frame {victim.name.split('.')[0]} of roll-" in refused(folder).message


def test_a_third_roll_is_refused(folder: Path) -> None:
    shutil.copytree(folder / "roll-2", folder / "roll-3")
    assert refused(folder).message == "a run has at most two rolls"


def test_a_package_whose_roll_id_is_not_its_folders_is_refused(folder: Path) -> None:
    p = folder / "roll-2" / "proof-package.json"
    doc = json.loads(p.read_bytes())
    doc["rollId"] = "roll-1"
    p.write_text(json.dumps(doc))
    assert "the folder is roll-2" in refused(folder).message


def test_a_linked_header_is_refused(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere.json").write_bytes((folder / "header.json").read_bytes())
    (folder / "header.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", folder / "header.json")
    assert refused(folder).message == "is a link, not a file"


def test_a_blob_not_named_by_a_sha256_is_refused(folder: Path) -> None:
    (folder / "blobs" / "thumbs.db").write_bytes(b"x")
    assert refused(folder).message == "a blob is named <sha256>.<ext>"


def test_a_run_id_the_api_does_not_take_is_refused(folder: Path) -> None:
    header = json.loads((folder / "header.json").read_bytes())
    header["runId"] = "../../etc"
    (folder / "header.json").write_text(json.dumps(header))
    assert "is not a run id the API takes" in refused(folder).message


def test_a_header_that_is_not_json_is_refused(folder: Path) -> None:
    (folder / "header.json").write_text("{not json")
    assert refused(folder).message.startswith("not JSON")
