"""Date ranges in query strings: a bare date means the whole (UTC) day. Pure."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

from pydantic import TypeAdapter, ValidationError

from api.errors import ApiError

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MOMENT = TypeAdapter(datetime)


def parse_moment(name: str, raw: str | None) -> datetime | date | None:
    """``2026-11-30`` is a day; anything else must be an ISO date-time (pydantic's reading, which
    would also turn a bare date into midnight — hence the day is recognised first)."""
    if not raw:
        return None
    try:
        return date.fromisoformat(raw) if DAY.match(raw) else MOMENT.validate_python(raw)
    except (ValueError, ValidationError):
        raise ApiError(
            422,
            "invalid_request",
            f"{name}: {raw!r} is not a date or date-time; use 2026-11-30 or 2026-11-30T08:00:00Z",
        ) from None


def day_range(
    raw_start: str | None, raw_end: str | None
) -> tuple[datetime | None, datetime | None]:
    """A bare date means the whole day (UTC); ``from`` after ``to`` is a mistake, said as such."""
    start, end = parse_moment("from", raw_start), parse_moment("to", raw_end)
    lo = datetime.combine(start, time.min, UTC) if _is_day(start) else start
    hi = datetime.combine(end, time.max, UTC) if _is_day(end) else end
    if lo and hi and _aware(lo) > _aware(hi):
        raise ApiError(
            400,
            "invalid_range",
            f"from ({start}) is after to ({end}); swap them or widen the range",
        )
    return lo, hi  # type: ignore[return-value]


def _is_day(value: datetime | date | None) -> bool:
    return isinstance(value, date) and not isinstance(value, datetime)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
