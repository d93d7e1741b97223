"""Turn a failure into a sentence a user can act on. The raw exception text goes to the server log.

Import results, document error messages and import jobs are read by operators in the console; a
Python class name or a driver's internal message there says nothing they can act on.
"""

from __future__ import annotations

import errno

from persistence.db import is_database_error
from retrieval.parsing.documents import DocumentError
from retrieval.writing.errors import KnowledgeError

DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
FULL_TEXT = ("disk is full", "no space left on device")  # SQLite's SQLITE_FULL, strerror(ENOSPC)
_MYSQL_FULL = {1021, 1114, 3}  # disk full, table is full, error writing file (errno 28)
DISK_FULL_MESSAGE = "the disk holding the knowledge base is full; free some space and retry"


def is_disk_full(exc: BaseException) -> bool:
    """Did ``exc`` (or what caused it: drivers and Milvus Lite wrap the OSError) come from a full
    disk? A read-only database is not one: that stays a 503."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno in DISK_FULL:
            return True
        orig = getattr(cur, "orig", None)  # SQLAlchemy keeps the driver's error here
        err = orig if isinstance(orig, BaseException) else cur
        mysql = type(err).__module__.split(".")[0] in {"asyncmy", "pymysql"}
        if mysql and err.args and err.args[0] in _MYSQL_FULL:
            return True
        if any(t in str(err).lower() for t in FULL_TEXT):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def describe(exc: BaseException, *, vector_store: str = "") -> str:
    """What went wrong, in words, with what to do next."""
    if isinstance(exc, DocumentError | KnowledgeError):
        return str(exc)
    if isinstance(exc, ConnectionError):  # the vector store's own "unreachable" error is one
        where = f" at {vector_store}" if vector_store else ""
        return f"the vector store{where} is unreachable; re-index the document when it is back"
    if is_database_error(exc):
        return "the database is unreachable or refused the write; retry when /healthz reports it ok"
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return DISK_FULL_MESSAGE
    if isinstance(exc, OSError):
        return f"a file could not be read or written ({exc.strerror or 'input/output error'})"
    if isinstance(exc, TimeoutError):
        return "the operation timed out; retry, and check the server log if it keeps happening"
    if type(exc).__module__.startswith("pymilvus"):
        return "the vector store refused the operation; the server log has the reason"
    return "the operation failed unexpectedly; the server log has the details"
