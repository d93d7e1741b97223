"""Dates in query strings: one parser with range checks for every route, so extreme dates are a
422 naming the parameter and the accepted range (never a 500), and the insights timeline never
exceeds 400 points whatever the window."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from persistence import bucketing as b

EXTREMES = [
    "0001-01-01T00:00:00",
    "0001-01-01",
    "9999-12-31T23:59:59",
    "9999-12-31",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00-14:00",
    "9999-12-31T23:59:59+14:00",
]


@pytest.mark.parametrize("raw", EXTREMES)
async def test_extreme_dates_are_422_naming_the_parameter(client: httpx.AsyncClient, raw) -> None:  # noqa: ANN001
    for path, name in (
        ("/api/insights", "since"),
        ("/api/insights", "until"),
        ("/api/sessions", "from"),
        ("/api/sessions", "to"),
    ):
        r = await client.get(path, params={name: raw})
        assert r.status_code == 422, (path, name, raw, r.status_code, r.text[:300])
        body = r.json()
        assert body["error"] == "invalid_request"
        assert body["message"].startswith(f"{name}:") and "1970-01-01" in body["message"], body


async def test_the_reported_extreme_window_is_422_not_500(client: httpx.AsyncClient) -> None:
    r = await client.get(
        "/api/insights", params={"since": "0001-01-01T00:00:00", "until": "9999-12-31T23:59:59"}
    )
    assert r.status_code == 422, r.text[:300]
    r = await client.get("/api/sessions", params={"from": "0001-01-01T00:00:00+14:00"})
    assert r.status_code == 422, r.text[:300]


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("1970-01-01", None),  # since the epoch until now: 57 years
        ("1970-01-01T14:00:00+14:00", "9998-12-31T09:59:59-14:00"),  # the widest window accepted
        ("2026-01-01", "2026-01-01"),  # one day, hourly
    ],
)
async def test_timeline_never_exceeds_400_points(client: httpx.AsyncClient, since, until) -> None:  # noqa: ANN001
    params = {"since": since} | ({"until": until} if until else {})
    for bucket in (None, "hour", "day", "week"):
        r = await client.get(
            "/api/insights", params=params | ({"bucket": bucket} if bucket else {})
        )
        assert r.status_code == 200, r.text[:300]
        d = r.json()
        assert 1 <= len(d["timeline"]) <= 400, (params, bucket, len(d["timeline"]))
        assert d["bucketSeconds"] >= 3600
        starts = [datetime.fromisoformat(t["start"]) for t in d["timeline"]]
        steps = {(y - x).total_seconds() for x, y in zip(starts, starts[1:], strict=False)}
        assert steps <= {float(d["bucketSeconds"])}, steps  # evenly spaced, as declared


def test_bucket_width_grows_with_the_span() -> None:
    start = datetime(1970, 1, 1, tzinfo=UTC)
    for end in (datetime(2026, 12, 1, tzinfo=UTC), datetime(9998, 12, 31, 23, 59, tzinfo=UTC)):
        unit, step = b.fit_step(start, end, "hour")
        series = b.time_series([(datetime(2000, 5, 5, tzinfo=UTC), "x")], start, end, unit, step)
        assert len(series) <= b.MAX_BUCKETS and unit == "week"
        assert sum(x.counts.get("x", 0) for x in series) == 1  # the event is in one bucket
