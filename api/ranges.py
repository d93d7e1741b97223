"""Dates in query strings, for every route: one parser with range checks. Pure.

A bare date means the whole (UTC) day. A moment outside 1970-01-01 … 9998-12-31 (UTC, after its
offset is applied) is refused with 422 naming the parameter: the arithmetic on such dates (offsets,
bucket floors, the day's end) would step outside what ``datetime`` holds, and no record lies there.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from pydantic import TypeAdapter, ValidationError

from api.errors import ApiError

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MOMENT = TypeAdapter(datetime)
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
RANGE_TEXT = "1970-01-01 and 9998-12-31 (UTC)"


def _invalid(name: str, raw: str, why: str) -> ApiError:
    return ApiError(422, "invalid_request", f"{name}: {raw!r} {why}")


def parse_moment(name: str, raw: str | None) -> datetime | date | None:
    """``2026-11-30`` is a day; anything else must be an ISO date-time (pydantic's reading, which
    would also turn a bare date into midnight — hence the day is recognised first)."""
    if not raw:
        return None
    try:
        value = date.fromisoformat(raw) if DAY.match(raw) else MOMENT.validate_python(raw)
    except (ValueError, ValidationError):
        raise _invalid(
            name, raw, "is not a date or date-time; use 2026-11-30 or 2026-11-30T08:00:00Z"
        ) from None
    if not _in_range(value):
        raise _invalid(name, raw, f"is out of range; give a date between {RANGE_TEXT}")
    return value


def _in_range(value: datetime | date) -> bool:
    if _is_day(value):
        return EARLIEST.date() <= value <= LATEST.date()  # type: ignore[operator]
    naive = value.replace(tzinfo=None)  # type: ignore[union-attr]
    offset = value.utcoffset() if isinstance(value, datetime) else None
    # Compare before converting: converting 0001-01-01T00:00+14:00 to UTC is the OverflowError.
    shift = offset or timedelta(0)
    return EARLIEST.replace(tzinfo=None) + shift <= naive <= LATEST.replace(tzinfo=None) + shift


def moment_range(
    names: tuple[str, str],
    raw_start: str | None,
    raw_end: str | None,
    *,
    code: str = "invalid_range",
    hint: str = "swap them or widen the range",
) -> tuple[datetime | None, datetime | None]:
    """Both ends in UTC (a bare date: from its 00:00 to its end); start after end is a mistake,
    said as such (400 ``code``)."""
    start, end = parse_moment(names[0], raw_start), parse_moment(names[1], raw_end)
    lo = datetime.combine(start, time.min, UTC) if _is_day(start) else start
    hi = datetime.combine(end, time.max, UTC) if _is_day(end) else end
    lo, hi = (_utc(lo) if lo else None), (_utc(hi) if hi else None)  # type: ignore[arg-type]
    if lo and hi and lo > hi:
        raise ApiError(
            400, code, f"{names[0]} ({raw_start}) is after {names[1]} ({raw_end}); {hint}"
        )
    return lo, hi


def day_range(
    raw_start: str | None, raw_end: str | None
) -> tuple[datetime | None, datetime | None]:
    """``from`` / ``to`` of a listing."""
    return moment_range(("from", "to"), raw_start, raw_end)


def _is_day(value: datetime | date | None) -> bool:
    return isinstance(value, date) and not isinstance(value, datetime)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
