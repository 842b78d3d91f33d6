"""The fixture file format (docs/fixtures.md): model, loading with validation, canonical text.

One case per file; the case id is the path under ``fixtures/`` without
``.json``. A fixture carries its format version, id, description, the ops,
features and levels it needs, its comparison policy, the program, one expected
observation per step, and provenance. Loading validates against
``fixtures/fixture.schema.json`` (the folder's own copy, or the kit's when the
folder has none) and then parses the program, so a broken
fixture is reported as a fixture bug naming the file and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Optional

import jsonschema
import jsonschema_rs
import msgspec

from .program import Program, ProgramError, parse_program, program_size
from .protocol import Level, Observation, Profile
from .wire import WireError, decode_float, load_json_file, to_json_ready, ulp_distance

FORMAT_VERSION = 3
SCHEMA_NAME = "fixture.schema.json"
#: The folder under fixtures/ that holds model-level records (docs/fixtures.md), not cases.
RECORDS_DIR = "llm-records"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
#: Where a built wheel carries the corpus (setup.py copies the checkout's fixtures/ there).
PACKAGED_FIXTURES = Path(__file__).resolve().parent / "fixtures"


def in_checkout() -> bool:
    """True when the kit runs from its own source checkout (an editable install or the tree itself)."""
    return (PACKAGE_ROOT / "fixtures" / SCHEMA_NAME).exists() and not (PACKAGED_FIXTURES / SCHEMA_NAME).exists()


def default_fixtures_dir() -> Path:
    """The corpus the kit runs by default: its checkout's fixtures/, or the copy shipped inside the package."""
    return PACKAGE_ROOT / "fixtures" if in_checkout() else PACKAGED_FIXTURES


FIXTURES_DIR = default_fixtures_dir()


class FixtureBug(ValueError):
    """A fixture file that cannot be used: unreadable, invalid JSON, or against the schema."""


#: One step's bounds: the path of a compared float under the step's observation
#: (``value``, ``gradients.ID``, ``pass.edges[ID:SLOT].contribution``, ...) -> its bound.
#: A float whose path is absent has bound 0: it must be the same number (docs/fixtures.md).
StepBounds = dict[str, float]


class Mode(StrEnum):
    """How a fixture's floats are compared under the contract profile."""

    EXACT = "exact"
    BOUNDS = "bounds"


@dataclass(frozen=True)
class Comparison:
    """How floats are compared for one fixture.

    ``exact``: bit equality (nan equals nan, -0.0 differs from 0.0), under the
    ``contract`` profile; the ``numeric`` profile compares such a case under its bounds.
    ``bounds``: every compared float has its own bound, derived by conformance.bounds
    (docs/contract.md section 9): expected ``e`` and actual ``a`` agree when they are the
    same bits, or both finite and ``|e - a| <= bound``.
    """

    mode: Mode
    reason: str

    @property
    def exact(self) -> bool:
        """Whether the contract profile compares this fixture bit for bit."""
        return self.mode is Mode.EXACT

    def to_json(self) -> dict[str, Any]:
        """The policy as fixture data."""
        return {"mode": self.mode.value, "reason": self.reason}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Comparison":
        """Read a policy from fixture data (already schema-checked)."""
        return Comparison(Mode(data["mode"]), data["reason"])


def agree(expected: float, actual: float, bound: Optional[float]) -> bool:
    """Whether two floats agree: the same bits, or (with a bound) both finite and within it.

    ``bound`` None means compared exactly; under a bound a difference only in the sign of
    zero agrees.
    """
    if ulp_distance(expected, actual) == 0.0:
        return True
    if bound is None or not (math.isfinite(expected) and math.isfinite(actual)):
        return False
    return abs(expected - actual) <= bound


@dataclass(frozen=True)
class Fixture:
    """One canonical case: what to run and what the reference observed."""

    id: str
    description: str
    ops: tuple[str, ...]
    features: tuple[str, ...]
    levels: tuple[Level, ...]
    comparison: Comparison
    program: Program
    expected: tuple[Observation, ...]
    provenance: dict[str, str]
    bounds: dict[str, tuple[StepBounds, ...]]
    """Per profile (``contract`` only when the comparison is not exact, ``numeric`` always), one map per step."""
    path: Optional[Path] = None
    compared_gradients: Optional[frozenset[str]] = None
    """The ids whose stored gradients are compared (None: every one); ``leaves_only`` sets it. Never written."""

    float32: bool = False
    """Compared as an engine in single precision is (``as_float32``): a float also agrees as float32 makes it."""

    def as_float32(self) -> "Fixture":
        """The fixture as a float32 engine is compared: a float agrees too when it is the contract's value in single
        precision (a float32 within 4 float32 ulps, an infinity past float32's range, underflow below its normals)."""
        return replace(self, float32=True)

    def leaves_only(self) -> "Fixture":
        """The fixture as an engine that keeps stored gradients on tracked leaves only is compared: variables alone."""
        return replace(self, compared_gradients=frozenset(step.id for step in self.program if step.op == "variable" and step.id))

    @property
    def size(self) -> int:
        """How many steps the program runs, a repeated step counted once per application."""
        return program_size(self.program)

    @cached_property
    def error_kinds(self) -> frozenset[str]:
        """The kinds of the errors its expected observations hold (empty for a case where nothing fails)."""
        return frozenset(observation.error.kind for observation in self.expected if observation.error is not None)

    def step_bounds(self, profile: Profile) -> Optional[tuple[StepBounds, ...]]:
        """The bounds a profile compares this fixture under; None when it compares bit for bit."""
        if profile is Profile.CONTRACT and self.comparison.exact:
            return None
        return self.bounds[profile]

    def to_json(self) -> dict[str, Any]:
        """The fixture file's data, keys in their canonical order."""
        return {
            "format": FORMAT_VERSION,
            "id": self.id,
            "description": self.description,
            "ops": list(self.ops),
            "features": list(self.features),
            "levels": [level.value for level in self.levels],
            "comparison": self.comparison.to_json(),
            "program": [step.to_json() for step in self.program],
            "expected": [observation.to_json() for observation in self.expected],
            "bounds": {profile: list(steps) for profile, steps in self.bounds.items()},
            "provenance": dict(self.provenance),
        }


@cache
def _validators(schema_path: Path) -> tuple[Any, Any]:
    # jsonschema-rs validates a large fixture in milliseconds; the pure-Python jsonschema
    # is asked only on the error path, for its most specific message.
    schema = json.loads(schema_path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return jsonschema_rs.validator_for(schema), cls(schema)


def schema_path(fixtures_dir: Path = FIXTURES_DIR) -> Path:
    """The fixture JSON Schema a folder's fixtures are checked against: the folder's own, or the kit's when it has none.

    A port's own regression folder, the folder ``fuzz --save`` writes and a subset copied
    by hand usually hold no schema; their fixtures are in this kit's format.
    """
    own = fixtures_dir / SCHEMA_NAME
    return own if own.exists() else FIXTURES_DIR / SCHEMA_NAME


def validate_data(data: Any, source: str, schema: Optional[Path] = None) -> None:
    """Raise FixtureBug (naming source and JSON path) unless data matches the schema."""
    fast, thorough = _validators(schema or schema_path())
    if fast.is_valid(data):
        return
    error = jsonschema.exceptions.best_match(thorough.iter_errors(data))
    if error is None:  # pragma: no cover - the two validators disagree
        raise FixtureBug(f"{source}: does not match the fixture schema")
    location = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    raise FixtureBug(f"{source}: at {location}: {error.message}")


#: What changed since each older fixture format, for the message a file in it gets.
FORMAT_CHANGES = {
    2: (
        "format 3 uses protocol 2's vocabulary: steps name their 'operands' (was 'args'), pass-record edges are "
        "{consumer, slot, operand, ..., operand_tracked} (were child, operand (the slot), parent, parent_tracked), "
        "and error fields 'slot', 'consumer', 'operand' replace 'operand', 'child', 'parent'; fixtures are generated, "
        "so take them from this kit's release (or `conformance regen`) rather than converting them"
    ),
}


def _check_format(data: Any, source: str) -> None:
    found = data.get("format") if isinstance(data, dict) else None
    if found == FORMAT_VERSION or found is None:
        return  # the schema names what is missing
    changes = FORMAT_CHANGES.get(found) if isinstance(found, int) and not isinstance(found, bool) else None
    text = f"{source}: fixture format {found!r}, but this kit reads format {FORMAT_VERSION}"
    raise FixtureBug(f"{text}: {changes}" if changes else text)


def load_fixture(path: Path, root: Path = FIXTURES_DIR) -> Fixture:
    """Read, validate and parse one fixture file; raise FixtureBug on any defect."""
    source = str(path)
    data = load_json_file(path, FixtureBug, source)
    _check_format(data, source)
    validate_data(data, source, schema_path(root))
    try:
        relative = path.resolve().relative_to(root.resolve()).with_suffix("").as_posix()
    except ValueError:
        relative = data["id"]
    if data["id"] != relative:
        raise FixtureBug(f"{source}: field 'id' is {data['id']!r} but the file's place says {relative!r}")
    try:
        program = parse_program(data["program"], f"{source}: program")
    except ProgramError as error:
        raise FixtureBug(str(error)) from None
    if len(data["expected"]) != len(program):
        raise FixtureBug(f"{source}: field 'expected' has {len(data['expected'])} observations for {len(program)} steps")
    comparison = Comparison.from_json(data["comparison"])
    bounds = _read_bounds(data, comparison, len(program), source)
    return Fixture(
        id=data["id"],
        description=data["description"],
        ops=tuple(data["ops"]),
        features=tuple(data["features"]),
        levels=tuple(Level(level) for level in data["levels"]),
        comparison=comparison,
        program=program,
        expected=_observations(data["expected"], source),
        provenance=data["provenance"],
        bounds=bounds,
        path=path,
    )


def _read_bounds(data: dict[str, Any], comparison: Comparison, steps: int, source: str) -> dict[str, tuple[StepBounds, ...]]:
    """The fixture's bounds per profile, checked against its comparison and program (schema already checked)."""
    wanted = ("numeric",) if comparison.exact else ("contract", "numeric")
    raw = data["bounds"]
    if tuple(sorted(raw)) != tuple(sorted(wanted)):
        raise FixtureBug(f"{source}: field 'bounds' must hold exactly {', '.join(wanted)} for a {comparison.mode} comparison")
    out = {}
    for profile in wanted:
        if len(raw[profile]) != steps:
            raise FixtureBug(f"{source}: field 'bounds.{profile}' has {len(raw[profile])} entries for {steps} steps")
        try:
            out[profile] = tuple(
                {path: decode_float(bound, f"bounds.{profile}[{index}].{path}") for path, bound in step.items()}
                for index, step in enumerate(raw[profile])
            )
        except WireError as error:
            raise FixtureBug(f"{source}: {error}") from None
    return out


def _observations(raw: list[Any], source: str) -> tuple[Observation, ...]:
    # Already schema-checked; strict=False reads the wire's "inf", "-inf" and "nan" as floats.
    try:
        return tuple(msgspec.convert(raw, list[Observation], strict=False))
    except msgspec.ValidationError as error:  # pragma: no cover - the schema caught it first
        raise FixtureBug(f"{source}: field 'expected': {error}") from None


def fixture_paths(root: Path = FIXTURES_DIR) -> list[Path]:
    """Every case file under root, sorted by case id (the schema and the model records left out)."""
    return sorted(p for p in root.rglob("*.json") if p.name != SCHEMA_NAME and p.relative_to(root).parts[0] != RECORDS_DIR)


def record_paths(root: Path = FIXTURES_DIR) -> list[Path]:
    """Every model-level record under root: generated files that are not cases."""
    return sorted((root / RECORDS_DIR).glob("*.json"))


def fixture_ids(root: Path = FIXTURES_DIR) -> set[str]:
    """The id of every generated file under root, cases and model records: its path without ``.json``."""
    return {path.relative_to(root).with_suffix("").as_posix() for path in [*fixture_paths(root), *record_paths(root)]}


def load_corpus_reporting(root: Path = FIXTURES_DIR) -> tuple[list[Fixture], list[FixtureBug]]:
    """Every fixture under root that loads, and a FixtureBug for each one that does not.

    The runner uses this so that one broken fixture is reported as a fixture bug
    while every other case still runs.
    """
    fixtures: list[Fixture] = []
    bugs: list[FixtureBug] = []
    for path in fixture_paths(root):
        try:
            fixtures.append(load_fixture(path, root))
        except FixtureBug as bug:
            bugs.append(bug)
    return fixtures, bugs


#: The largest program (in steps run) that ``replayable`` keeps.
REPLAY_MAX_STEPS = 100_000


def replayable(fixtures: list[Fixture]) -> list[Fixture]:
    """The fixtures small enough to replay in-process on a Python engine again and again (not the million-node chain).

    What the chain checks (no recursion, at a depth only a native stack feels) needs a real
    adapter; a catalogue or variant replay of it would take minutes and gigabytes.
    """
    return [fixture for fixture in fixtures if fixture.size <= REPLAY_MAX_STEPS]


def load_corpus(root: Path = FIXTURES_DIR) -> list[Fixture]:
    """Every fixture under root, loaded and validated."""
    return [load_fixture(path, root) for path in fixture_paths(root)]


def fixture_text(fixture: Fixture) -> str:
    """The canonical bytes of a fixture file: deterministic, diff-friendly JSON."""
    return canonical_text(fixture.to_json())


def canonical_text(data: Any) -> str:
    """Deterministic, diff-friendly JSON for every generated file (fixtures and model records).

    Short containers, and containers of plain values (one step, node, edge or
    matrix row), stay on one line; longer containers of containers put one item
    per line. Floats use the wire encoding; the text ends with a newline.
    """
    return _format(to_json_ready(data), 0) + "\n"


_WIDTH = 110


def _format(value: Any, indent: int) -> str:
    compact = json.dumps(value, separators=(", ", ": "), ensure_ascii=False, allow_nan=False)
    if not isinstance(value, (dict, list)) or not value or len(compact) + indent <= _WIDTH:
        return compact
    items_of = value.values() if isinstance(value, dict) else value
    if not any(isinstance(item, (dict, list)) for item in items_of):
        return compact
    pad = " " * (indent + 2)
    if isinstance(value, list):
        items = [pad + _format(item, indent + 2) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    items = [f"{pad}{json.dumps(key)}: {_format(item, indent + 2)}" for key, item in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
