"""Generate or check the JSON Schema files.

Usage: python -m schemas [--check]
"""

from __future__ import annotations

import argparse
import sys

from schemas import CONTRACTS, render, schema_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m schemas",
        description="Write the JSON Schema files (Draft 2020-12) generated from the pydantic contract models.",
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a committed file differs")
    args = parser.parse_args(argv)
    stale = []
    for kind in CONTRACTS:
        path = schema_path(kind)
        text = render(kind)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.name}")
    if stale:
        print("schema files out of date (run `python -m schemas`): " + ", ".join(stale), file=sys.stderr)
        return 1
    if args.check:
        print("schema files are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
