"""A misspelt option gets the option it was probably meant to be, from every subcommand, as a usage error."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import COMMANDS, build_parser

CLI = str(Path(sys.executable).with_name("conformance"))


def test_a_misspelt_option_of_run_suggests_the_right_one_on_the_command_line():
    out = subprocess.run([CLI, "run", "--comand", "x"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "conformance run: error: unrecognized arguments: --comand x; --comand: did you mean --command?" in out.stderr


@pytest.mark.parametrize("command", [module.__name__.rsplit(".", 1)[-1] for module in COMMANDS])
def test_every_subcommand_suggests_its_own_close_option_names(command, capsys):
    subcommand = "list" if command == "list_cases" else command
    parser = build_parser()
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    options = sorted(o for o in subparsers.choices[subcommand]._option_string_actions if o.startswith("--") and o != "--help")
    if not options:
        pytest.skip(f"{subcommand} has no long option")
    option = options[0]
    typo = option[:3] + option[4:] + "x" if len(option) > 4 else option + "x"  # one letter dropped, one added
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([subcommand, typo, "value"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert f"conformance {subcommand}: error: unrecognized arguments: {typo}" in error
    assert f"did you mean {option}?" in error


def test_an_argument_far_from_every_option_gets_no_suggestion(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--zzzzzz"])
    error = capsys.readouterr().err
    assert "unrecognized arguments: --zzzzzz" in error and "did you mean" not in error
