"""``python -m persistence migrate|drift`` (sessions commands arrive with the records issue)."""

from __future__ import annotations

import argparse
import sys

from persistence.migrate import drift, upgrade
from settings import SettingsError, load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m persistence")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("migrate", help="upgrade the database in DATABASE_URL to the newest schema")
    sub.add_parser("drift", help="list differences between the models and the live schema")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.cmd == "migrate":
        upgrade(settings.database_url)
        print(f"database ({settings.database_kind}) is at the newest schema")
        return 0
    diffs = drift(settings.database_url)
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
