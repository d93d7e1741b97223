"""A long conversation's checkpoints do not grow with its history (issue 20, item 3).

Every checkpoint used to carry the whole conversation (``messages``) and the run's whole tool
exchange (``scratch``), so each turn stored ~8 copies of everything said so far: 400 turns took the
checkpoint file from 14 MB to 1.7 GB. Both channels are LangGraph ``DeltaChannel``s now: a
checkpoint stores the new messages only, and a snapshot every 100 updates bounds how far a load
replays. ``bench/bench_checkpoints.py`` measures 400 turns; this checks the shape on a dozen.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from persistence.checkpoint import sqlite_checkpoint_path

QUESTIONS = ["ERR_TIMEOUT 是什么意思", "HikariCP 连接池超时怎么办", "what does ERR_TIMEOUT mean?"]


def _thread_bytes(path, thread: str) -> int:  # noqa: ANN001
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        a = con.execute(
            "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints"
            " WHERE thread_id = ?",
            (thread,),
        ).fetchone()[0]
        b = con.execute(
            "SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = ?", (thread,)
        ).fetchone()[0]
        return a + b
    finally:
        con.close()


async def test_a_turn_stores_as_much_at_turn_twelve_as_at_turn_two(services) -> None:  # noqa: ANN001
    path = sqlite_checkpoint_path(services.settings.database_url, services.settings.data_dir)
    runner, thread = services.runner(), f"long-{uuid.uuid4().hex}"
    sizes = [0]
    for i in range(12):
        result = await runner.run(QUESTIONS[i % len(QUESTIONS)], thread_id=thread)
        assert result.status == "SUCCESS", result.error
        sizes.append(_thread_bytes(path, thread))
    early = (sizes[3] - sizes[1]) / 2  # turns 2 and 3
    late = (sizes[12] - sizes[10]) / 2  # turns 11 and 12
    assert late <= 1.25 * early, (early, late, sizes)

    # The conversation is whole: every question and answer is still in the thread's state, and a
    # follow-up on it still reads the earlier turns.
    state = await services.graphs.chat.aget_state({"configurable": {"thread_id": thread}})
    humans = [m for m in state.values["messages"] if m.type == "human"]
    assert [m.content for m in humans] == [QUESTIONS[i % 3] for i in range(12)]
    assert len(state.values["messages"]) == 24
    async with services.db.session() as db:
        rows = (
            await db.execute(
                sa.text("SELECT count(*) FROM diagnosis_session WHERE thread_id = :t"),
                {"t": thread},
            )
        ).scalar()
    assert rows == 12


async def test_the_thread_keeps_a_window_of_the_conversation(services, monkeypatch) -> None:  # noqa: ANN001
    """Past the window the oldest messages leave the thread's state (so its snapshots stay
    bounded); every turn stays in the records, and a follow-up still reads the latest subject."""
    import graph.state

    monkeypatch.setattr(graph.state, "CONVERSATION_WINDOW", 4)
    runner, thread = services.runner(), f"window-{uuid.uuid4().hex}"
    for q in QUESTIONS:
        assert (await runner.run(q, thread_id=thread)).status == "SUCCESS"
    state = await services.graphs.chat.aget_state({"configurable": {"thread_id": thread}})
    kept = state.values["messages"]
    assert [m.type for m in kept] == ["human", "ai", "human", "ai"]
    assert [m.content for m in kept if m.type == "human"] == QUESTIONS[1:]
    async with services.db.session() as db:
        asked = (
            await db.execute(
                sa.text("SELECT query FROM diagnosis_session WHERE thread_id = :t ORDER BY id"),
                {"t": thread},
            )
        ).scalars()
        assert list(asked) == QUESTIONS
