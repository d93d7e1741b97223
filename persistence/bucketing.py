"""Pure arithmetic behind the insights: time buckets, histograms, percentiles, counts.

No database here: ``persistence/insights.py`` reads the rows and hands plain values to these
functions, so they are tested on lists alone. Everything is UTC.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

UNITS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
MAX_BUCKETS = 400  # more points than a chart is wide says nothing more
AUTO_HOURLY_SPAN = timedelta(days=2)
AUTO_DAILY_SPAN = timedelta(days=120)


def as_utc(ts: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def choose_unit(start: datetime, end: datetime) -> str:
    """hour for up to two days, day up to four months, week beyond."""
    span = end - start
    if span <= AUTO_HOURLY_SPAN:
        return "hour"
    return "day" if span <= AUTO_DAILY_SPAN else "week"


def floor_to(ts: datetime, unit: str) -> datetime:
    """The start of the bucket holding ``ts``: the hour, the day, or the Monday of the week."""
    ts = as_utc(ts)
    if unit == "hour":
        return ts.replace(minute=0, second=0, microsecond=0)
    day = ts.replace(hour=0, minute=0, second=0, microsecond=0)
    return day if unit == "day" else day - timedelta(days=day.weekday())


def bucket_count(start: datetime, end: datetime, unit: str) -> int:
    first, last = floor_to(start, unit), floor_to(end, unit)
    return int((last - first) / UNITS[unit]) + 1


def fit_unit(start: datetime, end: datetime, unit: str) -> str:
    """``unit``, widened until the window needs at most MAX_BUCKETS points (or to weeks)."""
    return fit_step(start, end, unit)[0]


def fit_step(start: datetime, end: datetime, unit: str) -> tuple[str, timedelta]:
    """The unit and the bucket width: ``unit`` widened to day and week, then several weeks per
    bucket, until the window needs at most MAX_BUCKETS points (decades of weeks stay a chart)."""
    order = list(UNITS)
    for candidate in order[order.index(unit) :]:
        if bucket_count(start, end, candidate) <= MAX_BUCKETS:
            return candidate, UNITS[candidate]
    weeks = math.ceil(bucket_count(start, end, "week") / MAX_BUCKETS)
    return "week", UNITS["week"] * weeks


@dataclass(frozen=True)
class Bucket:
    start: datetime
    counts: dict[str, int]


def time_series(
    events: Iterable[tuple[datetime, str]],
    start: datetime,
    end: datetime,
    unit: str,
    step: timedelta | None = None,
) -> list[Bucket]:
    """Counts per bucket and per series name, every bucket from ``start`` to ``end`` present
    (empty ones at zero, so a quiet hour shows as a dip, not as a missing point). Events outside
    the window are ignored. ``step`` (a multiple of ``unit``, default one) is the bucket width."""
    step = step or UNITS[unit]
    first, last = floor_to(start, unit), floor_to(end, unit)
    count = int((last - first) / step) + 1
    tally: dict[int, Counter[str]] = {}
    for ts, name in events:
        key = floor_to(ts, unit)
        if first <= key <= last:
            tally.setdefault(int((key - first) / step), Counter())[name] += 1
    names = sorted({name for c in tally.values() for name in c})
    out = []
    for i in range(count):
        found = tally.get(i, Counter())
        out.append(Bucket(first + i * step, {name: found[name] for name in names}))
    return out


@dataclass(frozen=True)
class Bin:
    lo: float
    hi: float
    count: int


def histogram(values: Iterable[float], lo: float, hi: float, bins: int) -> list[Bin]:
    """``bins`` equal bins over [lo, hi]; the last bin includes ``hi``. Values outside the range
    land in the nearest end bin (a similarity is 0..1 by construction; rounding may step over)."""
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        if v is None or math.isnan(v):
            continue
        i = int((v - lo) // width) if width else 0
        counts[min(max(i, 0), bins - 1)] += 1
    return [
        Bin(round(lo + i * width, 6), round(lo + (i + 1) * width, 6), counts[i])
        for i in range(bins)
    ]


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (p in 0..100) of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass(frozen=True)
class Latency:
    tool: str
    calls: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


def latency_by_tool(rows: Iterable[tuple[str, float | None]]) -> list[Latency]:
    """p50/p95/max per tool from (tool, duration_ms); calls without a duration count as calls
    but not in the percentiles. Busiest tool first."""
    calls: Counter[str] = Counter()
    durations: dict[str, list[float]] = {}
    for tool, ms in rows:
        calls[tool] += 1
        if ms is not None:
            durations.setdefault(tool, []).append(ms)
    out = []
    for tool, n in calls.most_common():
        ds = sorted(durations.get(tool, []))
        out.append(Latency(tool, n, percentile(ds, 50), percentile(ds, 95), ds[-1] if ds else None))
    return out


def ranked_counts(
    counts: dict[str | None, int], order: Sequence[str] = ()
) -> list[tuple[str | None, int]]:
    """Counts in a stable order: the known keys in ``order`` first, then the rest by count, then
    None (no value) last."""
    known = [(k, counts[k]) for k in order if counts.get(k)]
    rest = sorted(
        ((k, n) for k, n in counts.items() if k is not None and k not in order and n),
        key=lambda kn: (-kn[1], kn[0]),
    )
    none = [(None, counts[None])] if counts.get(None) else []
    return known + rest + none


def ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
