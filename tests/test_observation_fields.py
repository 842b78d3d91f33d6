"""A field of the pass record is defined once, in its wire type, and every part of the kit reads it from there.

docs/contributing.md, "Adding an observation field": a new field of a node or edge record is its
wire type's field (conformance/protocol.py), the reference's value of it (reference/record.py), the
catalogue engine's (conformance/mutants.py) and its definition in the contract (docs/contract.md,
rule ``record.pass``); the comparison, an observation's floats, the fixture schema, the reference's
observation and the protocol's example follow by themselves. Each test below is the one that
fails when one of those pieces is forgotten.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import msgspec
import pytest

from conformance.bounds import derive_bounds
from conformance.compare import compare_fields
from conformance.doc_example import with_example
from conformance.execute import run_program
from conformance.fixture import FIXTURES_DIR, load_corpus, load_fixture
from conformance.fixture_schema import fixture_schema
from conformance.mutants import MutantEngine
from conformance.protocol import EDGE_FLOATS, NODE_FLOATS, EdgeRecord, NodeRecord, Profile
from reference import record as reference_record

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ((NodeRecord, reference_record.NodeRecord), (EdgeRecord, reference_record.EdgeRecord))


@pytest.mark.parametrize("wire, reference", RECORDS, ids=["node", "edge"])
def test_the_reference_records_have_the_wire_fields_in_order(wire: type, reference: type) -> None:
    """The reference's observation maps a record row onto the wire type by position (conformance.execute)."""
    assert tuple(field.name for field in dataclasses.fields(reference)) == wire.__struct_fields__


def test_the_reference_rows_have_every_field() -> None:
    fixture = load_fixture(FIXTURES_DIR / "seed" / "reused-square.json")
    observed = run_program(fixture.program)
    record = next(o.pass_ for o in observed if o.pass_ is not None)
    assert record.nodes and record.edges
    assert observed == list(fixture.expected)  # and the rows give the fixture's records, field for field


@pytest.mark.parametrize("case", ["seed/reused-square", "structure/constants-untracked", "seed/detach"])
def test_the_catalogue_engine_records_every_field_as_the_reference_does(case: str) -> None:
    """The catalogue's engine (conformance/mutants.py, also behind the correct variants) builds its own records."""
    fixture = load_fixture(FIXTURES_DIR / f"{case}.json")
    try:
        observed = MutantEngine().run(fixture.program)
    except TypeError as error:  # a record type with a field the catalogue's _pass_record does not give
        pytest.fail(f"conformance/mutants.py's _pass_record does not build every record field: {error}")
    assert observed == list(fixture.expected)


def _contract_rule(name: str) -> str:
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    start = text.index(f"**`{name}`**")
    return text[start : text.index("\n\n", start)]


@pytest.mark.parametrize("wire", [NodeRecord, EdgeRecord], ids=["node", "edge"])
def test_every_record_field_is_defined_by_the_contract(wire: type) -> None:
    named = set(re.findall(r"`([a-z_]+)`", _contract_rule("record.pass")))
    missing = [field for field in wire.__struct_fields__ if field not in named]
    assert not missing, f"docs/contract.md rule record.pass does not define {missing}"


@pytest.mark.parametrize("wire", [NodeRecord, EdgeRecord], ids=["node", "edge"])
def test_the_fixture_schema_has_every_record_field(wire: type) -> None:
    record = fixture_schema()["$defs"]["pass"]["properties"]["nodes" if wire is NodeRecord else "edges"]["items"]
    assert list(record["properties"]) == list(wire.__struct_fields__) == record["required"]


def _perturbed(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, float):
        return value * 3.0 + 1.0
    if isinstance(value, int):
        return value + 7
    return f"{value}-other"


def _every_field_compared(level: str, which: str, fields: tuple[str, ...]) -> None:
    fixture = load_fixture(FIXTURES_DIR / "seed" / "reused-square.json")
    step = next(i for i, o in enumerate(fixture.expected) if o.pass_ is not None)
    for name in fields:
        observations = list(fixture.expected)
        record = observations[step].pass_
        assert record is not None
        rows = list(getattr(record, which))
        rows[0] = msgspec.structs.replace(rows[0], **{name: _perturbed(getattr(rows[0], name))})
        changed = msgspec.structs.replace(record, **{which: rows})
        observations[step] = msgspec.structs.replace(observations[step], pass_=changed)
        found = compare_fields(fixture, observations, level, profile="contract").differences
        assert found, f"{level} does not compare a {which[:-1]} record's {name}"


def test_trace_compares_every_field_of_a_node_record_but_its_key() -> None:
    _every_field_compared("trace", "nodes", tuple(f for f in NodeRecord.__struct_fields__ if f not in NodeRecord.KEY))


def test_trace_and_order_compare_every_field_of_an_edge_record() -> None:
    """trace every field but the running sums (its key fields are what it matches on), order the walk."""
    own = tuple(f for f in EdgeRecord.__struct_fields__ if f not in EdgeRecord.KEY and f not in EdgeRecord.RUNNING)
    _every_field_compared("trace", "edges", own)
    _every_field_compared("order", "edges", EdgeRecord.ORDER)
    assert set(own) | set(EdgeRecord.ORDER) == set(EdgeRecord.__struct_fields__)


def test_the_bounds_cover_every_finite_float_an_observation_holds() -> None:
    """A float field with no rule in conformance/bounds.py would be compared bit for bit on every port."""
    assert set(NODE_FLOATS) >= {"value", "pass_adjoint", "stored_gradient"} and "contribution" in EDGE_FLOATS
    checked = 0
    for fixture in load_corpus():
        if fixture.comparison.exact or any(step.repeat is not None for step in fixture.program):
            continue
        records = any(o.pass_ is not None for o in fixture.expected)
        steps = derive_bounds(fixture.program, Profile.CONTRACT, records)
        for index, (observation, bounds) in enumerate(zip(fixture.expected, steps)):
            unbounded = [p for p, v in observation.floats().items() if math.isfinite(v) and p not in bounds]
            assert not unbounded, f"{fixture.id} step {index}: no bound is derived for {unbounded}"
            checked += 1
    assert checked > 100


def test_the_protocols_example_reply_is_the_references() -> None:
    """docs/protocol.md shows a reply with every field; `conformance regen` writes it, `regen --check` holds it."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert with_example(text) == text, "docs/protocol.md's example reply is stale: run `conformance regen`"
