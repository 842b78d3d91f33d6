"""Writing the kit's files: fixtures, reports, expected-failure lists, regression cases.

``write_atomic`` is the one way the kit writes a file: a reader (another run,
CI, an editor) sees the old text or the new, never half of either, and an
interrupted write leaves no temporary file behind. The new file gets the mode
an ordinary ``open(path, "w")`` would give it: the kernel applies the process's
umask when the file is created, so the umask is never read or changed here
(``os.umask`` can only be read by setting it, which races with other threads).

``refuse_installed_package`` keeps an installed kit from writing into itself:
a regression saved into site-packages would change the corpus of every user of
that environment and vanish on the next install.
"""

from __future__ import annotations

import os
import secrets
import sysconfig
from pathlib import Path

from .errors import UsageError

#: How many random temporary names ``write_atomic`` tries before giving up (one is almost always enough).
_ATTEMPTS = 100


def write_atomic(path: Path, text: str) -> None:
    """Write text to path (UTF-8, ``\\n`` line ends) through a temporary file in the same folder and a rename.

    Missing parent folders are created. The temporary file is ``.<name>.<random>.tmp``
    beside the target, so the rename never crosses file systems; it is removed if the write fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = _create_temporary(path)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _create_temporary(path: Path) -> tuple[int, Path]:
    # Created with mode 0o666 and O_EXCL, as tempfile.mkstemp does but for its fixed 0o600: the
    # kernel takes the umask off, so the file ends with the mode any new file of this process has.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(_ATTEMPTS):
        temp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name} after {_ATTEMPTS} tries")


def _installed_folders() -> list[Path]:
    package = Path(__file__).resolve().parent
    paths = sysconfig.get_paths()
    return [package, *(Path(paths[key]).resolve() for key in ("purelib", "platlib") if key in paths)]


def refuse_installed_package(path: Path, option: str) -> None:
    """Raise UsageError when an installed kit (not its checkout) is asked to write path inside site-packages.

    ``option`` names where the path came from (``--fixtures``, ``--cases-dir``), for the message.
    """
    from .fixture import in_checkout

    if in_checkout():
        return
    target = path.resolve()
    for folder in _installed_folders():
        if target == folder or target.is_relative_to(folder):
            raise UsageError(
                f"{option} {path}: that is inside the installed kit's environment ({folder}); the kit writes nothing "
                "there (it would change the corpus of every user of this environment and vanish on reinstall): "
                "name a folder in your project"
            )
