"""``conformance list``: every case with its ops, features, levels and comparison policy.

``conformance list --rules`` prints the contract's rule map instead: every rule
of docs/contract.md with its section and the fixtures that exercise it, and
fails (exit 1) when a rule names a fixture the corpus does not have.

``conformance list --bugs`` prints the catalogue of broken engines
(``conformance.mutants``): each bug's name, what the mistake is, and the cases
whose description says they catch it, so that an expected-failures entry can
name its ``bug`` without guessing.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Iterable

from ..contract import ContractError, contract_path, load_rules
from ..corpora import add_fixtures_option, corpora_ids, fixture_dirs, load_corpora
from ..errors import UsageError
from ..fixture import Fixture
from ..mutants import BUGS
from ..runner import select


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("list", help="list the cases with their ops and levels, or the contract's rules")
    parser.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose id matches (fnmatch)")
    add_fixtures_option(parser)
    parser.add_argument(
        "--rules", action="store_true", help="print every rule of the contract with the fixtures that exercise it"
    )
    parser.add_argument(
        "--bugs",
        action="store_true",
        help="print the catalogue of bugs (the names an expected-failures entry's `bug` takes) with the cases that catch each",
    )
    parser.add_argument(
        "--allow-empty", action="store_true", help="an empty selection of cases is not an error (it is by default)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print one line per case (or per rule)."""
    from .run import empty_selection_message

    folders = fixture_dirs(args.fixtures)
    if args.rules:
        return _rules(folders)
    corpus = load_corpora(folders)
    fixtures = select(corpus, args.case, None)
    if not fixtures and not args.allow_empty:
        raise UsageError(empty_selection_message(folders, len(corpus), args.case, None))
    if args.bugs:
        return _bugs(fixtures)
    width = max((len(f.id) for f in fixtures), default=0)
    for fixture in fixtures:
        ops = ",".join(fixture.ops) or "-"
        features = f"  features={','.join(fixture.features)}" if fixture.features else ""
        print(f"{fixture.id.ljust(width)}  ops={ops}  levels={','.join(fixture.levels)}  {fixture.comparison.mode}{features}")
    print(f"{len(fixtures)} cases")
    return 0


def _rules(fixtures_dirs: list[Path]) -> int:
    try:
        rules = load_rules()
    except ContractError as error:
        raise UsageError(str(error)) from None
    known = corpora_ids(fixtures_dirs)
    where = ", ".join(str(folder) for folder in fixtures_dirs)
    if not known:
        raise UsageError(f"no fixture files in {where}; point --fixtures at the corpus")
    missing = 0
    section = ""
    for rule in rules:
        if rule.section != section:
            section = rule.section
            print(f"{section}. {rule.title}")
        summary = rule.summary if len(rule.summary) <= 100 else rule.summary[:97] + "..."
        print(f"  {rule.id}  {summary}")
        for case in rule.fixtures:
            flag = "" if case in known else "   <- no such fixture"
            missing += bool(flag)
            print(f"      {case}{flag}")
    covered = {case for rule in rules for case in rule.fixtures} & known
    print(f"{len(rules)} rules in {contract_path()}; they name {len(covered)} of {len(known)} fixtures")
    if missing:
        print(f"{missing} fixture id(s) named by a rule do not exist in {where}")
        return 1
    return 0


def catching_cases(fixtures: Iterable[Fixture]) -> dict[str, list[str]]:
    """Bug name -> the ids of the fixtures whose description says they catch it (the generator's "Catches: ... (`bug`)")."""
    named: dict[str, list[str]] = {}
    for fixture in fixtures:
        _, _, sentence = fixture.description.partition(" Catches: ")
        for bug in re.findall(r"\(`([a-z0-9-]+)`\)", sentence):
            named.setdefault(bug, []).append(fixture.id)
    return named


def _bugs(fixtures: list[Fixture]) -> int:
    catches = catching_cases(fixtures)
    width = max(len(bug) for bug in BUGS)
    for bug, description in BUGS.items():
        cases = catches.get(bug, [])
        print(f"{bug.ljust(width)}  {description}")
        print(f"{''.ljust(width)}  caught by: {', '.join(cases) if cases else 'no selected case names it'}")
    print(f'{len(BUGS)} bugs; an expected-failures entry names one as `bug = "NAME"`')
    return 0
