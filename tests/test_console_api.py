"""The console's API additions: sessions searched by text and date, retrieval tests with per-request
settings, step timings and citations on streamed events, and a malformed body said precisely."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from persistence import repository as repo
from persistence.db import Database
from runs.timing import StepTimer
from tests.support.payloads import sse_events

QUERY = "database connection pool timeout"


def _err(r: httpx.Response, status: int, *needles: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "message"}
    for needle in needles:
        assert needle in body["message"], body["message"]
    return body["message"]


# ---- sessions: text and date range ---------------------------------------------------------------


async def test_sessions_found_by_text_in_question_or_answer_and_by_day(db_url: str) -> None:
    """On SQLite and MariaDB alike: case-insensitive text over question and answer, ``%`` taken
    literally, and an inclusive created_at range."""
    db = Database(db_url)
    day = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    rows = [
        ("s-old", "Redis maxmemory?", "evict keys", day - timedelta(days=2)),
        ("s-mid", "支付超时 ERR_TIMEOUT", "see api/payment-errors.md", day),
        ("s-new", "disk 100% full", "clean /var/log", day + timedelta(days=1)),
    ]
    try:
        async with db.session() as s:
            for sid, q, answer, created in rows:
                await repo.create_session(s, session_id=sid, query=q, answer=answer)
                await repo.update_session(s, sid, created_at=created)

            async def ids(**kw) -> list[str]:  # noqa: ANN003
                return [r.session_id for r in (await repo.list_sessions(s, **kw)).items]

            assert await ids(text="err_timeout") == ["s-mid"]  # question, any case
            assert await ids(text="PAYMENT-ERRORS") == ["s-mid"]  # answer
            assert await ids(text="100%") == ["s-new"]  # % is a character, not a wildcard
            assert await ids(text="0%") == ["s-new"]
            assert await ids(text="nothing like it") == []
            assert await ids(created_from=day, created_to=day) == ["s-mid"]  # inclusive
            assert await ids(created_from=day - timedelta(hours=1)) == ["s-new", "s-mid"]
            assert await ids(created_to=day - timedelta(seconds=1)) == ["s-old"]
            tz8 = datetime(2026, 3, 10, 20, 0, tzinfo=UTC).astimezone()  # any offset: same instant
            assert await ids(created_from=tz8) == ["s-new"]
    finally:
        await db.dispose()


async def test_sessions_api_search_and_range(client) -> None:  # noqa: ANN001
    token = "ZQ_SEARCH_TOKEN_41"
    asked = (
        await client.post("/api/chat", json={"question": f"{token} ERR_TIMEOUT 是什么"})
    ).json()
    other = (await client.post("/api/chat", json={"question": "Redis 内存告警如何处理"})).json()
    page = (await client.get("/api/sessions", params={"q": token.lower()})).json()
    assert [i["sessionId"] for i in page["items"]] == [asked["sessionId"]] and page["total"] == 1
    in_answer = (await client.get("/api/sessions", params={"q": "payment-errors.md"})).json()
    found = {i["sessionId"] for i in in_answer["items"]}
    assert asked["sessionId"] in found and other["sessionId"] not in found

    today = datetime.now(UTC).date().isoformat()
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    both = {asked["sessionId"], other["sessionId"]}
    whole_day = (await client.get("/api/sessions", params={"from": today, "to": today})).json()
    assert both <= {i["sessionId"] for i in whole_day["items"]}  # a bare date = the whole day
    later = (await client.get("/api/sessions", params={"from": tomorrow})).json()
    assert later["items"] == [] and later["total"] == 0
    instant = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert (await client.get("/api/sessions", params={"to": instant, "q": token})).json()[
        "total"
    ] == 1

    _err(
        await client.get("/api/sessions", params={"from": tomorrow, "to": today}),
        400,
        "is after to",
    )
    _err(await client.get("/api/sessions", params={"from": "last tuesday"}), 422, "from")
    _err(await client.get("/api/sessions", params={"q": "x" * 201}), 422, "q")


# ---- retrieval test: per-request settings --------------------------------------------------------


async def test_lookup_overrides_apply_to_that_request_only(client) -> None:  # noqa: ANN001
    base = (await client.post("/api/knowledge/lookup", json={"query": QUERY})).json()
    assert base["settings"]["overridden"] == []
    assert base["settings"]["judge"] == "calibrated" and base["settings"]["topK"] == 4
    shown = [s for s in base["scores"]["l1Scores"] if s["valid"]]
    # the primary; supplements only with evidence of their own (on the six fixture runbooks the
    # judge finds none for this question)
    assert base["result"]["primary"]["source"] in {s["source"] for s in shown}

    one = (await client.post("/api/knowledge/lookup", json={"query": QUERY, "topK": 1})).json()
    assert {s["source"] for s in one["scores"]["l1Scores"] if s["valid"]} == {
        base["result"]["primary"]["source"]
    }
    assert one["result"].get("supplement") in (None, [])
    assert one["settings"]["topK"] == 1 and one["settings"]["overridden"] == ["topK"]

    dense = (
        await client.post(
            "/api/knowledge/lookup",
            json={"query": QUERY, "judge": "dense", "denseWeight": 0, "bm25Weight": 2.5},
        )
    ).json()
    assert dense["scores"]["judge"] == "dense"
    assert dense["scores"]["routeWeights"]["dense"] == 0
    assert dense["scores"]["routeWeights"]["bm25"] == 2.5
    assert set(dense["settings"]["overridden"]) == {"judge", "denseWeight", "bm25Weight"}

    # A threshold nothing reaches turns a found result into not found, for this request only.
    strict = {"query": QUERY, "highlyRelevantThreshold": 1, "referenceThreshold": 1}
    none = (await client.post("/api/knowledge/lookup", json=strict)).json()
    assert none["result"]["found"] is False and none["scores"]["relevanceLevel"] == "NONE"
    again = (await client.post("/api/knowledge/lookup", json={"query": QUERY})).json()
    assert again["result"]["found"] and again["scores"] == {
        **base["scores"],
        "timingsMs": again["scores"]["timingsMs"],
    }


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"topK": 0}, "topK"),
        ({"topK": 11}, "topK"),
        ({"highlyRelevantThreshold": 1.5}, "highlyRelevantThreshold"),
        ({"referenceThreshold": -0.1}, "referenceThreshold"),
        ({"denseWeight": -1}, "denseWeight"),
        ({"bm25Weight": 11}, "bm25Weight"),
        ({"judge": "llm"}, "judge"),
        ({"highlyRelevantThreshold": 0.4, "referenceThreshold": 0.6}, "must not exceed"),
        ({"highlyRelevantThreshold": 0.3}, "must not exceed"),  # below the configured 0.5
        ({"topk": 2}, "topk"),  # a misspelt field is named, not ignored
    ],
)
async def test_lookup_overrides_out_of_range_are_422(client, extra, needle) -> None:  # noqa: ANN001
    r = await client.post("/api/knowledge/lookup", json={"query": QUERY, **extra})
    _err(r, 422, needle)


async def test_each_listed_knob_is_a_request_field_that_changes_that_lookup(client) -> None:  # noqa: ANN001
    """The retrieval page draws its controls from this list: every knob it names is accepted by the
    lookup, reported back as chosen, and shown with the value the server runs with."""
    listed = (await client.get("/api/knowledge/lookup/knobs")).json()
    base = (await client.post("/api/knowledge/lookup", json={"query": QUERY})).json()
    names = [k["name"] for k in listed]
    assert {"topK", "judge", "maxL2Distance"} <= set(names)  # maxL2Distance: before, runs only
    assert set(base["settings"]) == {*names, "overridden"}
    assert {k["name"]: k["value"] for k in listed} == {n: base["settings"][n] for n in names}
    for k in listed:
        value = k["enum"][-1] if k.get("enum") else k.get("maximum") or k["value"] + 1
        if k["name"] == "referenceThreshold":  # may not exceed the configured highly-relevant one
            value = next(o["value"] for o in listed if o["name"] == "highlyRelevantThreshold")
        r = await client.post("/api/knowledge/lookup", json={"query": QUERY, k["name"]: value})
        assert r.status_code == 200, (k, r.text)
        assert r.json()["settings"]["overridden"] == [k["name"]]
        assert r.json()["settings"][k["name"]] == value
    # a run's knob that a single lookup has no use for is neither listed nor accepted
    assert "lookupBudget" not in names
    _err(
        await client.post("/api/knowledge/lookup", json={"query": QUERY, "lookupBudget": 0}),
        422,
        "lookupBudget",
    )


async def test_a_supplement_floor_chosen_for_one_lookup_shows_what_the_setting_drops(
    client,
) -> None:  # noqa: ANN001
    """The floor (0.05 by default) keeps supplements without evidence of their own out; a retrieval
    test may lower it to see what it dropped, or raise it, for that lookup only."""

    async def look(**extra: float) -> dict:
        return (await client.post("/api/knowledge/lookup", json={"query": QUERY, **extra})).json()

    def supplements(body: dict) -> list[str]:
        return [s["source"] for s in body["result"].get("supplement") or []]

    base = await look()
    conf = {d["source"]: d["confidence"] for d in base["scores"]["documents"]}
    assert base["settings"]["supplementFloor"] == 0.05
    assert all(conf[s] >= 0.05 for s in supplements(base))
    lowered = await look(supplementFloor=0)
    dropped = [s for s in supplements(lowered) if s not in supplements(base)]
    assert dropped and all(conf[s] < 0.05 for s in dropped)  # what the setting kept out
    assert len(supplements(lowered)) == base["settings"]["topK"] - 1
    assert supplements(base)
    above = round(min(conf[s] for s in supplements(base)) + 0.01, 6)  # the weakest one goes
    raised = await look(supplementFloor=above)
    assert supplements(raised) == [s for s in supplements(base) if conf[s] >= above]
    assert len(supplements(raised)) < len(supplements(base))
    assert raised["settings"]["overridden"] == ["supplementFloor"]
    assert supplements(await look()) == supplements(base)


# ---- malformed JSON ------------------------------------------------------------------------------


async def test_malformed_json_says_where(client) -> None:  # noqa: ANN001
    r = await client.post(
        "/api/knowledge/lookup",
        content=b'{"query": "x"\n "topK": 2}',
        headers={"content-type": "application/json"},
    )
    message = _err(r, 422, "body: invalid JSON at line 2 column 2", "Expecting ','")
    assert not message.startswith("0:")


# ---- step timing and citations on the stream -----------------------------------------------------


async def test_stream_carries_step_durations_and_citations(client) -> None:  # noqa: ANN001
    r = await client.post("/api/chat_stream", json={"question": QUERY})
    events = sse_events(r.text)
    starts = {d["task_id"]: d["node"] for e, d in events if e == "node"}
    ends = [d for e, d in events if e == "node_end"]
    assert ends and all(d["task_id"] in starts and d["durationMs"] >= 0 for d in ends)
    assert {d["node"] for d in ends} == set(starts.values())
    result = next(d for e, d in events if e == "tool_result")
    assert result["durationMs"] >= 0
    cited = result["citations"]
    assert cited[0]["source"] == result["source"]
    assert all(isinstance(c["chunkIndex"], int) and c["breadcrumb"] for c in cited)
    answer = events[-1][1]["answer"]
    assert result["source"] in answer  # the answer names what the UI links


def test_step_timer_pairs_by_id() -> None:
    ticks = iter([0.0, 0.5, 1.0, 1.25, 3.0, 4.0])
    timer = StepTimer(clock=lambda: next(ticks))
    events = [
        {"type": "node", "task_id": "a"},
        {"type": "tool_call", "call_id": "c"},
        {"type": "node", "task_id": "b"},
        {"type": "tool_result", "call_id": "c"},
        {"type": "node_end", "task_id": "a"},
        {"type": "node_end", "task_id": "zz"},  # never started: no duration, not a crash
    ]
    out = list(timer.stamp(json.loads(json.dumps(events))))
    assert out[3]["durationMs"] == 750.0 and out[4]["durationMs"] == 3000.0
    assert "durationMs" not in out[5]
