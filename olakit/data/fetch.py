"""Download the datasets from their public upstream at pinned commits and check sha256.

The manifest (data/manifest.json) lists each file: local path, upstream repository, commit, path, size and
sha256. A file is downloaded to ``<dest>/<path>.part``, checked, then renamed into place, so a failed or
corrupt download never leaves a file that looks complete. Files already present with the right hash are
skipped.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from pathlib import Path

from olakit.data.files import RESOURCES, sha256_file
from olakit.data.loaders import FETCHED_DIR
from olakit.env import environment
from olakit.errors import DataError

log = logging.getLogger("olakit")
MANIFEST = RESOURCES / "manifest.json"
ENV_BASE_URL = "OLAKIT_DATA_BASE_URL"


def load_manifest(path: str | os.PathLike = MANIFEST) -> dict:
    """The manifest as a dict (format_version, url_template, default_base_url, files)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: manifest not found") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} line {exc.lineno}: malformed JSON ({exc.msg})") from None
    if doc.get("format_version") != 1:
        raise DataError(f"{path}: manifest format_version {doc.get('format_version')!r}, expected 1")
    return doc


def file_url(entry: dict, base_url: str, template: str) -> str:
    """The download URL of one manifest entry."""
    return template.format(base_url=base_url.rstrip("/"), **entry)


def verify(dest: str | os.PathLike = FETCHED_DIR, manifest: dict | None = None) -> list[str]:
    """Manifest paths that are missing under ``dest`` or whose sha256 differs (empty list: all good)."""
    manifest = manifest or load_manifest()
    dest = Path(dest)
    bad = []
    for entry in manifest["files"]:
        path = dest / entry["path"]
        if not path.is_file() or sha256_file(path) != entry["sha256"]:
            bad.append(entry["path"])
    return bad


def fetch(
    dest: str | os.PathLike = FETCHED_DIR,
    base_url: str | None = None,
    manifest: dict | None = None,
    timeout: float = 60.0,
) -> dict[str, str]:
    """Download every manifest file missing or wrong under ``dest``; returns {path: "fetched"|"present"}.

    ``base_url`` defaults to $OLAKIT_DATA_BASE_URL, else the manifest's (GitHub raw). Raises DataError on
    the first file that cannot be downloaded or whose sha256 differs; files fetched before it stay.
    """
    manifest = manifest or load_manifest()
    base_url = base_url or environment().data_base_url or manifest["default_base_url"]
    dest = Path(dest)
    status = {}
    for entry in manifest["files"]:
        target = dest / entry["path"]
        if target.is_file() and sha256_file(target) == entry["sha256"]:
            status[entry["path"]] = "present"
            continue
        url = file_url(entry, base_url, manifest["url_template"])
        part = target.with_name(target.name + ".part")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
                while chunk := resp.read(1 << 20):
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as exc:
            part.unlink(missing_ok=True)
            raise DataError(
                f"{entry['path']}: download from {url} failed ({exc}); nothing was written for it"
            ) from None
        got = sha256_file(part)
        if got != entry["sha256"]:
            part.unlink()
            raise DataError(
                f"{entry['path']}: sha256 {got} from {url} differs from the manifest's "
                f"{entry['sha256']}; the file was discarded"
            )
        os.replace(part, target)
        status[entry["path"]] = "fetched"
        log.info("fetched %s", entry["path"])
    return status
