"""``get_current_time``: the server's current time, so answers can reason about "now"."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, tool


def make_time_tool() -> BaseTool:
    @tool("get_current_time")
    def get_current_time(timezone: str = "Asia/Shanghai") -> str:
        """Current date and time in the given IANA timezone (default Asia/Shanghai) and in UTC."""
        now = datetime.now(UTC)
        try:
            local = now.astimezone(ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown timezone {timezone!r}; use an IANA name such as Asia/Shanghai"
            ) from None
        return json.dumps(
            {
                "utc": now.isoformat(timespec="seconds"),
                "local": local.isoformat(timespec="seconds"),
                "timezone": timezone,
            },
            ensure_ascii=False,
        )

    return get_current_time
