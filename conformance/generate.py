"""The fixture generator: case definitions in, canonical fixture files out.

Cases come from the TOML files in ``conformance/cases/`` (hand-written, one
``[[case]]`` table each) and from the Python families in
``conformance/cases/families.py``. For every case the reference runs the
program, and the generator decides the levels the case checks and its
comparison policy (docs/contract.md section 9): ``exact`` only when every op is IEEE-exact
and every pass adjoint sum is provably independent of summation order, otherwise
``bounds``; and the bound of every compared float under each profile, derived by
``conformance.bounds``. ``regen`` writes atomically; ``regen --check`` only
compares and lists stale, missing and extra files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Optional, Sequence

import msgspec

import reference
from reference.ops import IEEE_EXACT_OPS

from .bounds import LIBM_ULPS, derive_bounds
from .cases.case import Case, CaseError
from .errors import UsageError
from .execute import run_program
from .files import write_atomic
from .fixture import (
    FIXTURES_DIR,
    Comparison,
    Fixture,
    FixtureBug,
    Mode,
    fixture_ids,
    fixture_paths,
    fixture_text,
    record_paths,
    validate_data,
)
from .mutants import BUGS
from .program import LEAF_OPS, Program, ProgramError, features_used, ops_used, parse_program, program_hash
from .protocol import LEVELS, Level, Observation, Profile
from .tomlfile import load_toml
from .wire import float_bits_equal, to_json_ready

CASES_DIR = Path(__file__).resolve().parent / "cases"
ROOT = CASES_DIR.parent.parent


def load_toml_cases(path: Path, source: Optional[str] = None) -> list[Case]:
    """Read every ``[[case]]`` of one TOML case file; ``source`` is how messages and provenance name it."""
    if source is None:
        source = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    data = load_toml(path, CaseError, source)
    other = sorted(set(data) - {"case"})
    if other:
        raise CaseError(f"{source}: unexpected table or key {other[0]!r} (a case file holds [[case]] tables only)")
    tables = data.get("case", [])
    if not isinstance(tables, list) or not all(isinstance(raw, dict) for raw in tables):
        raise CaseError(f"{source}: 'case' must be an array of tables, written [[case]] (double brackets)")
    cases = []
    for index, raw in enumerate(tables):
        where = f"{source}: case {index}"
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("description"), str):
            raise CaseError(f"{where}: needs string fields 'id' and 'description'")
        where = f"{source}: case {raw['id']!r}"
        unknown = set(raw) - {"id", "description", "program", "levels", "catches"}
        if unknown:
            raise CaseError(f"{where}: unexpected field {sorted(unknown)[0]!r}")
        try:
            program = parse_program(raw.get("program"), where)
        except ProgramError as error:
            raise CaseError(str(error)) from None
        levels = raw.get("levels")
        if levels is not None and (not isinstance(levels, list) or not set(levels) <= set(LEVELS)):
            raise CaseError(f"{where}: field 'levels' must be a list drawn from {', '.join(LEVELS)}")
        catches = raw.get("catches", [])
        wrong = [bug for bug in catches if bug not in BUGS] if isinstance(catches, list) else [catches]
        if wrong:
            raise CaseError(f"{where}: field 'catches': {wrong[0]!r} is not a bug of conformance/mutants.py")
        levels_tuple = tuple(levels) if levels else None
        cases.append(Case(raw["id"], raw["description"], program, source, levels_tuple, catches=tuple(catches)))
    return cases


def all_cases() -> list[Case]:
    """Every case definition: the TOML files, then the Python families."""
    from .cases import families, principles, regressions, survivors
    from .cases import llm as llm_family

    cases: list[Case] = []
    for path in sorted(CASES_DIR.glob("*.toml")):
        cases.extend(load_toml_cases(path))
    cases.extend(families.cases())
    cases.extend(principles.cases())
    cases.extend(regressions.cases())
    cases.extend(llm_family.cases())
    cases.extend(survivors.cases())
    _check_ids(cases)
    return cases


def load_own_cases(folders: Sequence[Path]) -> list[Case]:
    """A port's own cases: every TOML case file (the kit's format) and every program ``fuzz --save`` wrote, in folders.

    Files are found at any depth, sorted; a file is named in messages and in its
    fixture's provenance by the folder's name and its path under the folder, so the
    generated text does not depend on where the folder lies or how it was spelt. Raises
    UsageError for a folder that does not exist or holds no case file, CaseError for a
    bad file, an id defined twice, or an id the kit's own corpus already has.
    """
    from .cases import regressions

    cases: list[Case] = []
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"--cases {folder}: no such folder")
        files = sorted(
            path for pattern in ("*.toml", "*.json") for path in folder.rglob(pattern) if not path.name.startswith(".")
        )
        if not files:
            raise UsageError(f"--cases {folder}: no case file (*.toml in the kit's case format, or *.json from fuzz --save)")
        for path in files:
            source = f"{folder.resolve().name}/{path.relative_to(folder).as_posix()}"
            if path.suffix == ".toml":
                found = load_toml_cases(path, source)
                if not found:
                    raise CaseError(f"{source}: no [[case]] table (docs/fixtures.md shows one)")
                cases += found
            else:
                cases.append(regressions.load_case(path, source))
    _check_ids(cases)
    kit = fixture_ids(FIXTURES_DIR)
    for case in cases:
        if case.id in kit:
            raise CaseError(f"{case.generator}: case id {case.id!r} is a case of the kit's corpus too; choose another id")
    return cases


def _check_ids(cases: list[Case]) -> None:
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            raise CaseError(f"case id {case.id!r} is defined twice: in {seen[case.id]} and in {case.generator}")
        seen[case.id] = case.generator


def build_fixture(case: Case, *, profile: Optional[Profile] = None) -> Fixture:
    """Run the case on the reference and produce its fixture.

    ``profile`` derives only the bounds that profile compares under (none for an exact case under
    ``contract``): a fixture made to be compared once, as a shrinker makes thousands, not to be written.
    """
    repeated = any(step.repeat for step in case.program)
    try:
        observations = run_program(case.program, record_pass=not repeated)
    except ProgramError as error:
        raise CaseError(f"{case.generator}: case {case.id!r}: {error}") from None
    levels = case.levels or default_levels(case.program, observations)
    comparison = choose_comparison(case.program, observations)
    if Level.TRACE not in levels and Level.ORDER not in levels:
        observations = [msgspec.structs.replace(obs, pass_=None) for obs in observations]
    if repeated:
        problem = _repeat_problem(case.program, levels, comparison)
        if problem:
            raise CaseError(f"{case.generator}: case {case.id!r}: {problem}")
        # Compared exactly under every profile (docs/contract.md, rule comparison.repeated-exact).
        bounds: dict[str, tuple[dict[str, float], ...]] = {Profile.NUMERIC: tuple({} for _ in case.program)}
    else:
        try:
            bounds = fixture_bounds(case.program, observations, comparison, only=profile)
        except BoundsMismatch as error:
            raise CaseError(f"{case.generator}: case {case.id!r}: {error}") from None
    fixture = Fixture(
        id=case.id,
        description=case.description + catches_sentence(case.catches),
        ops=tuple(ops_used(case.program)),
        features=tuple(features_used(case.program)),
        levels=tuple(level for level in LEVELS if level in levels),
        comparison=comparison,
        program=case.program,
        expected=tuple(observations),
        bounds=bounds,
        provenance={
            "reference_version": reference.__version__,
            "generator": case.generator,
            "program_sha256": program_hash(case.program),
        },
    )
    return fixture


def catches_sentence(bugs: Iterable[str]) -> str:
    """The sentence a fixture's description ends with: the porting mistakes its case is written to catch."""
    named = [f"{BUGS[bug].split(':')[0]} (`{bug}`)" for bug in bugs]
    return f" Catches: {'; '.join(named)}." if named else ""


def default_levels(program: Program, observations: list[Observation]) -> tuple[Level, ...]:
    """The levels a case checks: values always, then whatever its steps exercise.

    A level is listed only where it compares something (``compare.compare_fields`` counts it): gradients
    where a backward or zero_grad succeeds, errors where one fails. A failed creation is compared at
    values, so it alone does not list errors; a backward that fails is compared at errors, so it alone
    does not list gradients.
    """
    levels = [Level.VALUES]
    passes = [(step, obs) for step, obs in zip(program, observations) if step.op in ("backward", "zero_grad")]
    if any(obs.error is None for _, obs in passes):
        levels.append(Level.GRADIENTS)
    if any(obs.error is not None for _, obs in passes):
        levels.append(Level.ERRORS)
    if any(obs.pass_ is not None for obs in observations):
        levels += [Level.TRACE, Level.ORDER]
    return tuple(levels)


def choose_comparison(program: Program, observations: list[Observation]) -> Comparison:
    """Exact when provably order-independent and IEEE-exact, else per-value bounds (docs/contract.md section 9)."""
    leaves = {*LEAF_OPS, "detach"}
    inexact = sorted({step.op for step in program if step.id and step.op not in IEEE_EXACT_OPS} - leaves)
    crowded = _order_dependent_sums(observations)
    if not inexact and not crowded:
        return Comparison(
            Mode.EXACT,
            "every op is IEEE-exact and every pass adjoint sums at most two contributions "
            "or dyadic contributions whose every partial sum is exact, so any valid order gives the same bits",
        )
    reasons = []
    if inexact:
        reasons.append(f"{', '.join(inexact)} may come from a port's libm, within {LIBM_ULPS} ulps of the true value")
    if "tanh" in inexact:
        reasons.append("1 - t*t may be one fused multiply-add")
    if any(step.op == "backward" for step in program):
        reasons.append("backward's pass + upstream * local may be one fused multiply-add")
    if crowded:
        reasons.append(f"{crowded} pass adjoint(s) sum three or more inexact contributions, in any order")
    return Comparison(
        Mode.BOUNDS,
        "; ".join(reasons) + ": each float's bound is derived from these by interval evaluation (field bounds)",
    )


class BoundsMismatch(ValueError):
    """The bounds replay computed another contract value than the reference: a bug in one of them."""


def fixture_bounds(
    program: Program, observations: list[Observation], comparison: Comparison, *, only: Optional[Profile] = None
) -> dict[str, tuple[dict[str, float], ...]]:
    """The fixture's bounds: ``numeric`` always, ``contract`` unless compared exactly; ``only`` one of them.

    Only floats the observations hold get a bound (a fixture without trace keeps no pass
    record). The replay computes every contract value a second time, independently of the
    reference's graph; each must equal the observed float bit for bit, or the fixture is not
    made.
    """
    profiles: tuple[Profile, ...] = (Profile.NUMERIC,) if comparison.exact else (Profile.CONTRACT, Profile.NUMERIC)
    if only is not None:
        profiles = tuple(profile for profile in profiles if profile is only)
    observed = [observation.floats() for observation in observations]
    records = any(observation.pass_ is not None for observation in observations)
    out: dict[str, tuple[dict[str, float], ...]] = {}
    for profile in profiles:
        steps = derive_bounds(program, profile, records)
        kept = []
        for index, (bounds, floats) in enumerate(zip(steps, observed)):
            for path, (value, _) in bounds.items():
                reference_value = floats.get(path)
                if isinstance(reference_value, float) and not float_bits_equal(value, reference_value):
                    raise BoundsMismatch(
                        f"step {index}: {path}: the bounds replay has {value!r}, the reference {reference_value!r}"
                    )
            kept.append({path: compact_bound(b) for path, (_, b) in bounds.items() if b > 0.0 and path in floats})
        out[profile] = tuple(kept)
    return out


def compact_bound(bound: float) -> float:
    """A bound rounded up to three significant digits, so fixture files stay small and never tighter."""
    if not math.isfinite(bound):
        return bound
    mantissa, exponent = f"{bound:.2e}".split("e")
    rounded = float(f"{mantissa}e{exponent}")
    if rounded < bound:  # rounded to nearest went down: the next three-digit decimal is above bound
        rounded = float(f"{float(mantissa) + 0.01:.2f}e{exponent}")
    return rounded


#: The ops a case with a repeated step may use: IEEE-exact, local derivatives 1, -1 or 0.
REPEATABLE_EXACT = ("add", "sub", "neg", "relu")


def _repeat_problem(program: Program, levels: Iterable[str], comparison: Comparison) -> str:
    """Why a case with a repeated step cannot be a fixture, or "" when it can.

    Such a case keeps no pass record and gets no bounds: it must be compared exactly under both profiles
    (docs/contract.md, rule comparison.repeated-exact), which needs ops whose every value and contribution
    is exact under every allowance, and no tracked node that is an operand more than twice (so no pass
    adjoint sums three contributions, whose order could change a bit). Counted from the program, not a record.
    """
    if Level.TRACE in levels or Level.ORDER in levels:
        return "a case with a repeated step cannot compare trace or order (its pass records are not kept)"
    if not comparison.exact:
        return f"a case with a repeated step must be compared exactly, and this one is not: {comparison.reason}"
    other = sorted({step.op for step in program if step.id and step.op not in REPEATABLE_EXACT} - {*LEAF_OPS, "detach"})
    if other:
        return f"a case with a repeated step may use only {', '.join(REPEATABLE_EXACT)}, not {', '.join(other)}"
    uses: dict[str, int] = {}
    tracked: set[str] = set()
    for step in program:
        if step.id is None or step.op in LEAF_OPS or step.op == "detach":
            if step.op == "variable":
                tracked.add(step.id)  # type: ignore[arg-type]
            continue
        if any(name in tracked for name in step.operands):
            tracked.add(step.id)
        for slot, name in enumerate(step.operands):
            uses[name] = uses.get(name, 0) + (1 if slot == 0 or step.repeat is None else step.repeat)
    crowded = sorted(name for name, count in uses.items() if count > 2 and name in tracked)
    if crowded:
        return (
            f"a case with a repeated step must be compared exactly, but {crowded[0]!r} is an operand "
            f"{uses[crowded[0]]} times (its pass adjoint may sum in any order): make it a constant"
        )
    return ""


def _order_dependent_sums(observations: list[Observation]) -> int:
    crowded = 0
    for obs in observations:
        if obs.pass_ is None:
            continue
        by_operand: dict[str, list[float]] = {}
        for edge in obs.pass_.edges:
            if edge.operand_tracked:
                by_operand.setdefault(edge.operand, []).append(edge.contribution)
        crowded += sum(1 for parts in by_operand.values() if len(parts) > 2 and not _exact_in_any_order(parts))
    return crowded


def _exact_in_any_order(parts: list[float]) -> bool:
    # Every finite float is n * 2^k. With u the smallest such power of two among the parts
    # (their lowest set bits), every part is an integer number of u; if the magnitudes add up
    # to fewer than 2^53 units, every partial sum in every order is exactly representable,
    # so the summation order cannot change a bit.
    if not all(math.isfinite(p) for p in parts):
        return False
    fractions = [Fraction(p) for p in parts if p != 0.0]
    if not fractions:
        return True
    unit = min(Fraction(f.numerator & -f.numerator, f.denominator) for f in (abs(f) for f in fractions))
    return sum(abs(f) for f in fractions) / unit < 2**53


def generate(cases: Iterable[Case], root: Path = FIXTURES_DIR) -> dict[Path, str]:
    """Every fixture file's path and canonical text, validated against the schema."""
    files: dict[Path, str] = {}
    for case in cases:
        fixture = build_fixture(case)
        try:
            validate_data(to_json_ready(fixture.to_json()), f"generated fixture {case.id}")
        except FixtureBug as error:
            raise CaseError(f"{case.generator}: case {case.id!r} produced an invalid fixture: {error}") from None
        files[root / f"{case.id}.json"] = fixture_text(fixture)
    from .cases import llm as llm_family

    files.update(llm_family.extra_files(root, files))  # the llm family's model record, not a case
    return files


@dataclass(frozen=True)
class Drift:
    """How the committed fixtures differ from what the reference generates."""

    stale: list[Path]
    missing: list[Path]
    extra: list[Path]

    @property
    def clean(self) -> bool:
        """True when nothing differs."""
        return not (self.stale or self.missing or self.extra)


def compare(expected: dict[Path, str], root: Path = FIXTURES_DIR) -> Drift:
    """Compare generated texts with the files under root, changing nothing."""
    present = set(fixture_paths(root)) | set(record_paths(root)) if root.exists() else set()
    stale = [p for p in sorted(expected) if p in present and p.read_text(encoding="utf-8") != expected[p]]
    missing = [p for p in sorted(expected) if p not in present]
    extra = sorted(present - set(expected))
    return Drift(stale, missing, extra)


def write(expected: dict[Path, str], root: Path = FIXTURES_DIR) -> Drift:
    """Bring root in line with the generated texts: atomic writes, extra files removed."""
    drift = compare(expected, root)
    for path in [*drift.stale, *drift.missing]:
        write_atomic(path, expected[path])
    for path in drift.extra:
        path.unlink()
        _prune_empty_dirs(path.parent, root)
    return drift


def _prune_empty_dirs(folder: Path, root: Path) -> None:
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
