"""``get_current_time``: the server's current time, so answers can reason about "now".

A run whose context carries a world (``tools/world.py``) is told the world's ``now`` instead: an
incident replayed later still happens at its own time.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime

from tools.world import world_of


def make_time_tool() -> BaseTool:
    @tool("get_current_time")
    def get_current_time(runtime: ToolRuntime[Any, Any], timezone: str = "Asia/Shanghai") -> str:
        """Current date and time in the given IANA timezone (default Asia/Shanghai) and in UTC."""
        world = world_of(runtime.context)
        now = world.now if world is not None and world.now is not None else datetime.now(UTC)
        now = now.astimezone(UTC)
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
