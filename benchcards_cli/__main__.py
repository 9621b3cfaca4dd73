"""``python -m benchcards_cli`` is the ``benchcards`` command; ``--readme`` rewrites README.md's CLI reference."""

from __future__ import annotations

import sys

from benchcards.read.paths import ROOT
from benchcards_cli import main, readme_with_reference

if __name__ == "__main__":
    if sys.argv[1:] == ["--readme"]:
        path = ROOT / "README.md"
        path.write_text(readme_with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the CLI reference into {path}")
        sys.exit(0)
    sys.exit(main())
