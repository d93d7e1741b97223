"""The bf16 probe's verdict, remembered across starts.

A local model on a CPU with native bf16 embeds probe texts in fp32 and in bf16 and compares them
(``e5_local.py``): ~1–2 CPU-seconds of every start, for an answer that only changes with the model
file, torch, the encoder's code, the probe texts or the CPU. So the answer (the min cosine, not the
decision: the threshold may change) is kept in the user's cache folder under a key made of all of
those, one small JSON file per key. Whatever is wrong with a file (unreadable, not JSON, another
key, a value that is no cosine) makes it a miss: the caller probes again and writes it anew.

Folder: ``$SUPERBIZ_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/superbiz-agent`` (default
``~/.cache/superbiz-agent``). Failing to write there is not an error: the next start probes again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

APP_DIR = "superbiz-agent"
_CPU_FIELDS = ("vendor_id", "model name", "flags")


def cache_dir() -> Path:
    if os.environ.get("SUPERBIZ_CACHE_DIR"):
        return Path(os.environ["SUPERBIZ_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / APP_DIR


def cpu_identity(cpuinfo: str) -> str:
    """The first processor's vendor, model and flags from ``/proc/cpuinfo`` text."""
    seen: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name in _CPU_FIELDS and name not in seen:
            seen[name] = " ".join(value.split())
        if not line.strip() and seen:  # the first processor's block ended
            break
    return "|".join(seen.get(f, "") for f in _CPU_FIELDS)


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return ""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def probe_key(
    model_file: Path, *, code: list[Path], probe_texts: list[str], versions: dict[str, str]
) -> dict[str, Any]:
    """What the verdict depends on: the model file (path, size, mtime), the code that computes
    the vectors, the probe texts, the libraries' versions (torch, …) and the CPU."""
    st = model_file.stat()
    return {
        "model": str(model_file.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "code": _digest(b"".join(p.read_bytes() for p in code)),
        "probe": _digest("\n".join(probe_texts).encode()),
        "versions": dict(sorted(versions.items())),
        "cpu": _digest(cpu_identity(_read_cpuinfo()).encode()),
    }


def _path(key: dict[str, Any], folder: Path) -> Path:
    return folder / f"bf16-probe-{_digest(json.dumps(key, sort_keys=True).encode())}.json"


def parse(text: str, key: dict[str, Any]) -> float | None:
    """The agreement stored in ``text`` for ``key``, or None (another key, or no cosine)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    value = data.get("min_cosine")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    # A cosine of unit vectors; a little above 1 is rounding.
    return value if math.isfinite(value) and -1.0 <= value <= 1.001 else None


def load(key: dict[str, Any], folder: Path | None = None) -> float | None:
    path = _path(key, folder or cache_dir())
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    value = parse(text, key)
    if value is None:
        log.warning("ignoring the bf16 probe cache %s (unreadable or stale); probing again", path)
    return value


def store(key: dict[str, Any], min_cosine: float, folder: Path | None = None) -> None:
    """Written whole or not at all (a temporary file renamed): a reader never sees half a file."""
    folder = folder or cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bf16-probe-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "min_cosine": min_cosine}, f, sort_keys=True)
            os.replace(tmp, _path(key, folder))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.info("could not keep the bf16 probe's verdict in %s: %s", folder, exc)
