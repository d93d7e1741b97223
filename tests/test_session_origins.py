"""Who started a run is on every session and filters the list: replays and eval runs are kept
apart from user traffic; a Studio run sent by ``langgraph dev`` beside the server is ``studio``."""

from __future__ import annotations

TOKEN = "ZQ_ORIGIN_TOKEN_7"


async def test_sessions_list_filters_by_origin(client) -> None:  # noqa: ANN001
    asked = (
        await client.post("/api/chat", json={"question": f"{TOKEN} ERR_TIMEOUT 是什么"})
    ).json()
    studio = await client.post(
        "/api/chat",
        json={"question": f"{TOKEN} Redis 内存满"},
        headers={"X-Session-Origin": "studio"},
    )
    assert studio.status_code == 200, studio.text
    forged = await client.post(  # anything else is an ordinary user run, never replay/eval
        "/api/chat", json={"question": f"{TOKEN} 再问一次"}, headers={"X-Session-Origin": "eval"}
    )
    replay = await client.post(f"/api/sessions/{asked['sessionId']}/replay", json={})
    assert replay.status_code == 200, replay.text
    replay_id = replay.json()["replaySessionId"]

    async def listed(**params: str) -> dict[str, str]:
        page = (await client.get("/api/sessions", params={"q": TOKEN, **params})).json()
        return {i["sessionId"]: i["origin"] for i in page["items"]}

    everything = await listed()
    assert everything == {
        asked["sessionId"]: "user",
        studio.json()["sessionId"]: "studio",
        forged.json()["sessionId"]: "user",
        replay_id: "replay",
    }
    assert await listed(origin="replay") == {replay_id: "replay"}
    assert set(await listed(origin="user")) == {asked["sessionId"], forged.json()["sessionId"]}
    assert await listed(origin="studio") == {studio.json()["sessionId"]: "studio"}
    bad = await client.get("/api/sessions", params={"origin": "robot"})
    assert bad.status_code == 422 and "origin" in bad.text
