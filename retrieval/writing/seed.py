"""First start: the knowledge-base folder under DATA_DIR is seeded with the shipped sample runbooks.

Only the folder DATA_DIR owns is seeded, and only while it does not exist: a folder the operator
chose (``KNOWLEDGE_BASE_DIR``) or emptied on purpose is never filled behind their back. The copy
is made beside the target and renamed into place, so a crash mid-copy leaves no half-seeded folder
that would never be completed. Blocking (file copies): call it off the event loop.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

log = logging.getLogger(__name__)


def seed_knowledge(target: Path, samples: Path, owned_by_data_dir: bool) -> bool:
    """Copy ``samples`` to ``target`` when ``target`` is DATA_DIR's own folder and is missing.
    Returns whether it copied."""
    if not owned_by_data_dir or target.exists() or not samples.is_dir():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.seeding-{uuid.uuid4().hex[:8]}")
    try:
        # Hidden files (editor swap files, .gitkeep) are not runbooks.
        shutil.copytree(samples, staging, ignore=shutil.ignore_patterns(".*", "__pycache__"))
        try:
            staging.rename(target)
        except OSError:  # another worker seeded it first (workers share DATA_DIR)
            if not target.exists():
                raise
            return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("seeded %s with the shipped sample runbooks from %s", target, samples)
    return True
