"""Reading the kit's TOML files (case files, the adapter registry, expected-failure lists).

One place for the ``tomllib`` / ``tomli`` choice and for turning a read or
parse failure into the caller's own error type, with the file named.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def load_toml(path: Path, error: type[Exception], source: str = "") -> dict[str, Any]:
    """The parsed file, or ``error("<source>: ...")`` saying why it cannot be read."""
    where = source or str(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as problem:
        raise error(f"{where}: cannot read: {problem.strerror or problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{where}: not UTF-8 text: {problem}") from None
    except tomllib.TOMLDecodeError as problem:
        raise error(f"{where}: not valid TOML: {problem}") from None
