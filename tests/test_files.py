"""write_atomic: whole files or none, the mode an ordinary new file gets, and no umask read at import."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent


def test_a_written_file_has_the_text_and_the_mode_an_ordinary_new_file_gets(tmp_path):
    ordinary = tmp_path / "ordinary.txt"
    ordinary.write_text("x")
    target = tmp_path / "deeper" / "folder" / "written.txt"
    write_atomic(target, "one\ntwo\n")
    assert target.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(ordinary.stat().st_mode)
    assert [p.name for p in target.parent.iterdir()] == ["written.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_the_mode_follows_the_umask_in_force_when_the_file_is_written(tmp_path):
    previous = os.umask(0o077)
    try:
        write_atomic(tmp_path / "private.txt", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600


def test_a_failed_write_keeps_the_old_text_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "kept.txt"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "half \udc80 written")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]


def test_importing_the_kit_does_not_touch_the_umask():
    # os.umask can only be read by setting it: a module doing that at import races with other threads.
    script = (
        "import os\n"
        "def refuse(mask): raise AssertionError('os.umask called at import')\n"
        "os.umask = refuse\n"
        "import conformance.files, conformance.generate, conformance.report, conformance.expected, conformance.fuzz\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_installed_kit_refuses_to_write_inside_its_package_or_site_packages(tmp_path, monkeypatch):
    import sysconfig

    import conformance.fixture
    from conformance.errors import UsageError
    from conformance.files import refuse_installed_package

    inside = [Path(conformance.fixture.__file__).parent / "fixtures", Path(sysconfig.get_paths()["purelib"]) / "x"]
    monkeypatch.setattr(conformance.fixture, "in_checkout", lambda: False)
    for path in inside:
        with pytest.raises(UsageError, match="--fixtures .*inside the installed kit's environment"):
            refuse_installed_package(path, "--fixtures")
    refuse_installed_package(tmp_path / "conformance-fixtures", "--fixtures")  # a folder of the user's project
    monkeypatch.setattr(conformance.fixture, "in_checkout", lambda: True)
    refuse_installed_package(inside[0], "--fixtures")  # the checkout writes its own corpus
