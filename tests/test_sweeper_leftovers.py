"""What a dead worker leaves behind is tidied: a session closed by the lease sweep gets its
total_duration_ms (until its last heartbeat), on SQLite and MariaDB; a stale upload temporary file
does not survive a restart (a fresh one, possibly another worker's upload in flight, is kept)."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

from persistence import repository as repo
from persistence.db import Database
from persistence.leases import sweep_expired
from persistence.models import utcnow


async def test_swept_sessions_get_their_duration(db_url: str) -> None:
    db = Database(db_url)
    try:
        now = utcnow()
        async with db.session() as s:
            await repo.create_session(
                s,
                session_id="dead-1",
                thread_id="t-dead-1",
                query="q",
                agent_flow="CHAT",
                lease_owner="gone:1:x",
                lease_until=now - timedelta(seconds=1),
                heartbeat_at=now - timedelta(seconds=20),
                created_at=now - timedelta(seconds=65),
                updated_at=now - timedelta(seconds=20),
            )
            assert await sweep_expired(s, 3600) == 1
            row = await repo.get_session(s, "dead-1")
        assert row.status == "FAILED"
        assert row.total_duration_ms is not None
        assert 44_000 <= row.total_duration_ms <= 46_000, (
            row.total_duration_ms
        )  # created → last beat
    finally:
        await db.dispose()


async def test_a_stale_upload_temp_does_not_survive_a_restart(tmp_path: Path, embeddings) -> None:  # noqa: ANN001
    from services import Services
    from tests.support.kb import kb_settings

    settings = kb_settings(tmp_path)
    svc = await Services.start(settings, embeddings=embeddings)
    await svc.close()
    folder = settings.knowledge_base_dir / "api"
    stale = folder / f".crashed.md.{'a' * 32}.tmp"
    fresh = folder / f".inflight.md.{'b' * 32}.tmp"
    for p in (stale, fresh):
        p.write_bytes(b"# half written")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    svc = await Services.start(settings, embeddings=embeddings)
    try:
        assert not stale.exists()
        assert fresh.exists()  # young: perhaps another worker's upload between write and rename
    finally:
        await svc.close()
