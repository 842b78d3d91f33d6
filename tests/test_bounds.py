"""The derived bounds (docs/contract.md section 9): sound for every correct variant, tight enough for every bug.

A bound is sound when no correct port falls outside it: the variant engines of
conformance/variants.py take every allowance the contract grants (libm, fused
multiply-adds, any summation order; under numeric, algebraically equal formulas) and
must pass the whole corpus and the fuzzer. A bound is tight when it still fails every
mistake: the catalogue of conformance/mutants.py must stay killed under contract, and
every mistake that changes a number beyond rounding under numeric too.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance.bounds import Quantity, derive_bounds
from conformance.cases.case import Case
from conformance.compare import compare_fields, compare_level
from conformance.fixture import load_corpus, replayable
from conformance.fuzz import fuzz
from conformance.generate import build_fixture, compact_bound
from conformance.mutants import BUGS, MutantEngine
from conformance.program import parse_program
from conformance.protocol import LEVELS
from conformance.strategies import programs
from conformance.transport import AdapterFault, Handshake
from conformance.variants import VARIANTS, VariantEngine, VariantTransport, fma, sech_squared

CORPUS = replayable(load_corpus())  # in-process replays: without the million-node chain
ROOT = Path(__file__).resolve().parent.parent

#: Mistakes whose only effect is rounding or the sign of a zero: the numeric profile is made to accept them.
#: (div-by-reciprocal is not among them: 1e-300 / 1e-310 overflows through 1 / b and fails with another error.)
WITHIN_ROUNDING = {"div-derivative-squared", "relu-keeps-negative-zero", "signed-zero-lost"}


def _failures(engine, fixture, profile, undeclared=()):
    observations = engine.run(fixture.program)
    found = []
    for level in fixture.levels:
        if level in undeclared:
            continue
        differences, _ = compare_level(fixture, observations, level, limit=1, profile=profile)
        found += [f"{fixture.id} [{level}]: {d.describe()}" for d in differences]
    return found


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_correct_variant_passes_the_whole_corpus_under_its_profile(variant):
    engine = VariantEngine(variant)
    profile = VARIANTS[variant][0]
    undeclared = set(LEVELS) - VariantTransport(variant).hello.levels
    failures = []
    for fixture in CORPUS:
        # A variant that sums out of processing order declares neither order nor errors (conformance/variants.py):
        # the first overflowing partial sum, and so the error's previous and contribution, depend on the order.
        failures += _failures(engine, fixture, profile, undeclared=undeclared)
    assert failures == []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_fuzzer_finds_no_divergence_on_a_correct_variant(variant):
    transport = VariantTransport(variant)
    result = fuzz(transport, examples=150, seed=1, shrink=False)
    assert result.divergence is None, result.divergence.describe()
    assert result.profile == VARIANTS[variant][0]


def test_the_variants_really_round_differently_from_the_contract():
    # Otherwise the tests above would prove nothing.
    differing = {variant: 0 for variant in VARIANTS}
    for fixture in CORPUS:
        if fixture.comparison.exact:
            continue
        for variant in VARIANTS:
            observed = VariantEngine(variant).run(fixture.program)
            differing[variant] += sum(
                1 for a, b in zip(observed, fixture.expected) if b.value is not None and a.value != b.value
            ) + sum(1 for a, b in zip(observed, fixture.expected) if b.gradients is not None and a.gradients != b.gradients)
    assert {variant for variant, count in differing.items() if count == 0} <= {"reversed-sums", "shuffled-sums"}
    assert differing["libm"] > 0 and differing["fma"] > 0 and differing["accurate-tanh-derivative"] > 0


def test_every_mutant_is_killed_under_contract_and_every_real_mistake_under_numeric():
    survivors = {"contract": set(), "numeric": set()}
    for bug in BUGS:
        if bug == "recursive-topo":
            continue  # caught by the deep chain through the protocol (tests/test_catalogue.py)
        for profile in survivors:
            killed = False
            for fixture in sorted(CORPUS, key=lambda f: f.size):
                try:
                    observations = MutantEngine(bug).run(fixture.program)
                except Exception:  # noqa: BLE001 - a crashing mutant is caught through the protocol
                    killed = True
                    break
                if any(compare_level(fixture, observations, level, limit=1, profile=profile)[0] for level in fixture.levels):
                    killed = True
                    break
            if not killed:
                survivors[profile].add(bug)
    assert survivors["contract"] == set()
    assert survivors["numeric"] == WITHIN_ROUNDING


def test_a_cancellation_to_zero_gets_a_bound_from_the_magnitudes_summed():
    # exp(2)/exp(2): the divisor's contribution cancels the dividend's exactly in the contract;
    # autograd's -g*x/y**2 leaves 2e-16. The bound of x's gradient must hold that.
    program = parse_program(
        [
            {"id": "x", "op": "variable", "value": 2.0},
            {"id": "e", "op": "exp", "operands": ["x"]},
            {"id": "q", "op": "div", "operands": ["e", "e"]},
            {"op": "backward", "output": "q"},
        ],
        "test",
    )
    contract, numeric = derive_bounds(program, "contract")[3], derive_bounds(program, "numeric")[3]
    assert contract["gradients.x"][0] == 0.0
    assert 1e-16 < numeric["gradients.x"][1] < 1e-13
    # autograd, literally: d(x/y) gives g/y to x and -g*x/y**2 to y; both are e here, so they add up.
    e = math.exp(2.0)
    autograd = e * (1.0 / e + -1.0 * e / e**2)
    assert autograd != 0.0 and abs(autograd) <= numeric["gradients.x"][1]


def test_tanh_at_saturation_allows_the_accurate_derivative_and_nothing_large():
    fixture = next(f for f in CORPUS if f.id == "ops/tanh/saturated")
    bound = fixture.bounds["contract"][-1]["gradients.a"]
    assert sech_squared(20.0) <= bound < 1e-14  # the true derivative passes, a wrong formula (1 - t) does not
    assert fixture.expected[-1].gradients["a"] == 0.0


def test_ieee_exact_operations_on_exact_values_keep_bound_zero_under_contract():
    fixture = next(f for f in CORPUS if f.id == "structure/neuron")
    for step, bounds in zip(fixture.program, fixture.bounds["contract"]):
        if step.op == "variable":
            assert "value" not in bounds


@settings(max_examples=150, deadline=None)
@given(programs(extreme=True, failures=True))
def test_the_replay_computes_the_references_bits_for_every_program(program):
    # build_fixture refuses to write bounds when the replay disagrees with the reference (BoundsMismatch).
    build_fixture(Case("fuzz/example", "drawn", program, "test"))


def test_fma_and_sech_squared_are_what_hardware_and_mathematics_give():
    t = 0.9
    assert fma(-t, t, 1.0) == 0.18999999999999995
    assert math.isclose(sech_squared(1.0), 1 / math.cosh(1.0) ** 2, rel_tol=1e-15)


def test_a_bound_is_rounded_up_never_down():
    for bound in (2.220446049250313e-16, 9.996e-10, 1.0000000001e-5, 5e-324):
        assert compact_bound(bound) >= bound
    assert compact_bound(2.220446049250313e-16) == 2.23e-16


def test_a_point_has_bound_zero_and_an_interval_its_larger_side():
    assert Quantity.point(3.0).bound() == 0.0
    assert Quantity(1.0, 0.5, 1.25).bound() >= 0.5
    assert Quantity(1.0, -math.inf, 2.0).bound() == math.inf


FAKE = f"{sys.executable} {ROOT / 'tests' / 'fakes' / 'partial_adapter.py'}"


def _run(tmp_path, *args):
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--case", "ops/div/*", "--json", str(report), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return done, json.loads(report.read_text())


def test_a_rounding_only_mistake_fails_under_contract_and_passes_under_numeric(tmp_path):
    command = f"{FAKE} --bug div-derivative-squared"
    contract, data = _run(tmp_path, "--command", command)
    assert contract.returncode == 1 and data["adapters"][0]["profile"] == "contract"
    assert "ops/div/divisor-derivative-rounding" in contract.stdout
    forced, data = _run(tmp_path, "--command", command, "--profile", "numeric")
    assert forced.returncode == 0, forced.stdout
    assert data["adapters"][0]["profile"] == "numeric" and "profile numeric" in forced.stdout
    declared, data = _run(tmp_path, "--command", f"{command} --hello-extra " + shlex.quote('{"profile": "numeric"}'))
    assert declared.returncode == 0, declared.stdout
    assert data["adapters"][0]["profile"] == "numeric"


def test_a_wrong_derivative_still_fails_under_numeric(tmp_path):
    done, _ = _run(tmp_path, "--command", f"{FAKE} --bug wrong-derivative-div", "--profile", "numeric")
    assert done.returncode == 1
    assert "times its bound" in done.stdout or "bound is 0" in done.stdout


def test_an_unknown_profile_in_hello_is_a_handshake_error_naming_the_field():
    hello = {"type": "hello", "protocol": 2, "engine": {"name": "e", "version": "0", "language": "c"}, "ops": ["add"]}
    assert Handshake.parse({**hello, "levels": ["values"], "profile": "numeric"}).profile == "numeric"
    with pytest.raises(AdapterFault, match="hello: field 'profile': 'loose' is not one of 'contract', 'numeric'"):
        Handshake.parse({**hello, "levels": ["values"], "profile": "loose"})


class TanhFromExp(MutantEngine):
    """A port whose tanh is the composite (e^2a - 1) / (e^2a + 1): +0.0 at -0.0, within rounding elsewhere."""

    def __init__(self):
        super().__init__(None)

    def _rule(self, op, values, exponent):
        if op == "tanh":
            e = math.exp(2.0 * values[0])
            t = (e - 1.0) / (e + 1.0)
            return t, (1.0 - t * t,)
        return super()._rule(op, values, exponent)


def _fixture(case):
    return next(f for f in CORPUS if f.id == case)


def test_a_tanh_that_loses_the_sign_of_zero_fails_its_signed_zero_case_under_contract_though_it_has_bounds():
    fixture = _fixture("ops/tanh/negative-zero")
    assert not fixture.comparison.exact  # compared under bounds, and the sign still counts
    observations = TanhFromExp().run(fixture.program)
    assert observations[1].value == 0.0 and math.copysign(1.0, observations[1].value) == 1.0
    (first, *_), _ = compare_level(fixture, observations, "values", profile="contract")
    assert first.path == "observations[1].value" and "only the sign of zero differs" in first.note
    assert compare_level(fixture, MutantEngine(None).run(fixture.program), "values", profile="contract")[0] == []


def test_under_numeric_a_difference_only_in_the_sign_of_zero_passes_with_a_warning():
    tanh = _fixture("ops/tanh/negative-zero")
    found = compare_fields(tanh, TanhFromExp().run(tanh.program), "values", profile="numeric")
    assert found.differences == [] and [w.path for w in found.signed_zero_warnings] == ["observations[1].value"]
    relu = _fixture("ops/relu/negative-zero")
    observations = MutantEngine("relu-keeps-negative-zero").run(relu.program)
    found = compare_fields(relu, observations, "values", profile="numeric")
    assert found.differences == [] and found.signed_zero_warnings
    assert "only the sign of zero differs" in found.signed_zero_warnings[0].note
    exact = compare_fields(relu, MutantEngine(None).run(relu.program), "values", profile="numeric")
    assert exact.signed_zero_warnings == []


def test_a_run_under_numeric_prints_one_sign_of_zero_warning_line_for_an_adapter_that_passes_with_one(tmp_path):
    report = tmp_path / "report.json"
    command = f"{sys.executable} {ROOT / 'adapters' / 'broken' / 'adapter.py'} relu-keeps-negative-zero"
    markdown, page = tmp_path / "matrix.md", tmp_path / "report.html"
    args = ["run", "--case", "ops/relu/*", "--command", command, "--profile", "numeric", "--json", str(report)]
    args += ["--markdown", str(markdown), "--html", str(page)]
    done = subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("WARNING ") and "sign of zero" in line]
    assert len(warnings) == 1 and "ops/relu/negative-zero" in warnings[0], done.stdout
    (entry,) = json.loads(report.read_text())["adapters"]
    assert "sign of zero" in entry["signed_zero_warning"]
    for written in (markdown, page):  # every report says it, not only the terminal and the JSON
        text = written.read_text()
        assert text.count("WARNING broken-relu-keeps-negative-zero:") == 1 and "ops/relu/negative-zero" in text, written
    contract = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--case", "ops/relu/*", "--command", command],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert contract.returncode == 1 and "only the sign of zero differs" in contract.stdout
