"""What a database failure means for the people using the service, in words. Pure.

A read-only file or a full disk still answers reads: calling it "unreachable" sends an operator to
the network instead of the disk. The driver's own text goes to the log, never to a user.
"""

from __future__ import annotations

from enum import StrEnum

# MySQL/MariaDB error numbers.
_MYSQL_REFUSES_WRITES = {
    1021,  # disk full
    1036,  # table is read only
    1114,  # table is full
    1290,  # running with --read-only (or another option forbidding the statement)
    1792,  # read-only transaction
    1836,  # read-only mode
    3,  # error writing file (errno 28: no space left)
}
_MYSQL_UNREACHABLE = {2002, 2003, 2005, 2006, 2013, 2055}
_SQLITE_REFUSES_WRITES = (
    "readonly database",
    "read-only",
    "disk is full",
    "disk i/o error",  # what an already-open connection gets when its file turns immutable
)
_SQLITE_BUSY = ("database is locked", "database table is locked")


class DbFailure(StrEnum):
    WRITES_REFUSED = "writes_refused"
    UNREACHABLE = "unreachable"
    BUSY = "busy"


MESSAGES = {
    DbFailure.WRITES_REFUSED: (
        "the database refuses writes (read-only, or its disk is full); reads still work — free "
        "disk space or make the database writable, then retry"
    ),
    DbFailure.UNREACHABLE: "the database is unreachable; retry shortly (see /healthz)",
    DbFailure.BUSY: "the database is busy with another write; retry in a moment",
}


def _driver_error(exc: BaseException) -> BaseException:
    """SQLAlchemy wraps the driver's exception in ``.orig``; the checkpointers raise it bare."""
    return getattr(exc, "orig", None) or exc


def classify(exc: BaseException) -> DbFailure | None:
    """Which kind of database failure ``exc`` is; None when it is not one this module knows."""
    err = _driver_error(exc)
    module = type(err).__module__.split(".")[0]
    text = str(err).lower()
    if module in {"sqlite3", "aiosqlite"}:
        if any(s in text for s in _SQLITE_REFUSES_WRITES):
            return DbFailure.WRITES_REFUSED
        if any(s in text for s in _SQLITE_BUSY):
            return DbFailure.BUSY
        if "unable to open" in text:
            return DbFailure.UNREACHABLE
        return None
    if module in {"asyncmy", "pymysql", "MySQLdb"}:
        code = err.args[0] if err.args and isinstance(err.args[0], int) else None
        if code in _MYSQL_REFUSES_WRITES:
            return DbFailure.WRITES_REFUSED
        if code in _MYSQL_UNREACHABLE:
            return DbFailure.UNREACHABLE
    return None


def named_in(text: str | None) -> DbFailure | None:
    """Which database failure a message built from ``MESSAGES`` names (a run's error), or None."""
    return next((kind for kind, message in MESSAGES.items() if text and message in text), None)


def describe(exc: BaseException) -> str | None:
    """The message for a database failure, or None when ``exc`` is not one."""
    kind = classify(exc)
    return MESSAGES[kind] if kind else None
