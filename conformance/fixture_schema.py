"""The fixture schema, ``fixtures/fixture.schema.json``, made from the kit's tables.

``conformance regen`` writes it and ``regen --check`` fails when the file differs, as for
docs/protocol.schema.json: the op enums come from reference.ops.OPS (by arity, and the ops
that take an exponent), the levels and features from the protocol, the error kinds from
reference.errors, the format from conformance.fixture, the pass record's node and edge objects
from their wire types. A new op, level, feature, error kind or record field therefore reaches the
schema without a hand edit.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import msgspec

from reference.errors import ERROR_KINDS
from reference.ops import OPS

from .fixture import FORMAT_VERSION
from .program import DECLARABLE_OPS, LEAF_OPS
from .protocol import FEATURES, LEVELS, OBSERVATION_SHAPES, SHAPE_FIELDS, EdgeRecord, ErrorInfo, NodeId, NodeRecord, PassRecord


def fixture_schema() -> dict[str, Any]:
    """The JSON schema every fixture file of format FORMAT_VERSION matches."""
    unary = [name for name, op in OPS.items() if op.arity == 1 and not op.takes_exponent]
    binary = [name for name, op in OPS.items() if op.arity == 2 and not op.takes_exponent]
    with_exponent = [name for name, op in OPS.items() if op.takes_exponent]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://scalar-conformance.invalid/fixture.schema.json",
        "title": f"Scalar autodiff conformance fixture, format {FORMAT_VERSION}",
        "description": "One case: a program over named nodes and the reference engine's observation of every step. "
        "Floats are JSON numbers (shortest round-trip decimal) or the strings inf, -inf, nan.",
        "type": "object",
        "additionalProperties": False,
        "required": [
            "format",
            "id",
            "description",
            "ops",
            "features",
            "levels",
            "comparison",
            "program",
            "expected",
            "bounds",
            "provenance",
        ],
        "properties": {
            "format": {"const": FORMAT_VERSION},
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$"},
            "description": {"type": "string", "minLength": 1},
            "ops": {"type": "array", "uniqueItems": True, "items": {"$ref": "#/$defs/declarable_op"}},
            "features": {"type": "array", "uniqueItems": True, "items": {"enum": list(FEATURES)}},
            "levels": {
                "type": "array",
                "uniqueItems": True,
                "minItems": 1,
                "items": {"enum": [str(level) for level in LEVELS]},
            },
            "comparison": {
                "oneOf": [
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["mode", "reason"],
                        "properties": {"mode": {"const": "exact"}, "reason": {"type": "string"}},
                    },
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["mode", "reason"],
                        "properties": {"mode": {"const": "bounds"}, "reason": {"type": "string"}},
                    },
                ]
            },
            "program": {"type": "array", "items": {"$ref": "#/$defs/step"}},
            "expected": {"type": "array", "items": {"$ref": "#/$defs/observation"}},
            "bounds": {
                "description": "Per profile, one object per step: the path of a compared float "
                "under that step's observation -> how far a correct port's value "
                "may be from the expected one. An absent path has bound 0.",
                "type": "object",
                "additionalProperties": False,
                "required": ["numeric"],
                "properties": {
                    "contract": {"type": "array", "items": {"$ref": "#/$defs/step_bounds"}},
                    "numeric": {"type": "array", "items": {"$ref": "#/$defs/step_bounds"}},
                },
            },
            "provenance": {
                "type": "object",
                "additionalProperties": False,
                "required": ["reference_version", "generator", "program_sha256"],
                "properties": {
                    "reference_version": {"type": "string"},
                    "generator": {"type": "string"},
                    "program_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                },
            },
        },
        "$defs": {
            "float": {"oneOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]},
            "finite": {"type": "number"},
            "step_bounds": {
                "type": "object",
                "additionalProperties": {"oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"const": "inf"}]},
            },
            "nullable_float": {"oneOf": [{"$ref": "#/$defs/float"}, {"type": "null"}]},
            "node_id": {"type": "string", "minLength": 1},
            "repeat": {"type": "integer", "minimum": 1, "maximum": 10000000},
            "declarable_op": {"enum": list(DECLARABLE_OPS)},
            "step": {
                "type": "object",
                "required": ["op"],
                "oneOf": [
                    {
                        "additionalProperties": False,
                        "required": ["id", "op", "value"],
                        "properties": {
                            "id": {"$ref": "#/$defs/node_id"},
                            "op": {"enum": list(LEAF_OPS)},
                            "value": {"$ref": "#/$defs/float"},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["id", "op", "operands"],
                        "properties": {
                            "id": {"$ref": "#/$defs/node_id"},
                            "op": {"const": "detach"},
                            "operands": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"$ref": "#/$defs/node_id"}},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["id", "op", "operands"],
                        "properties": {
                            "id": {"$ref": "#/$defs/node_id"},
                            "op": {"enum": unary},
                            "operands": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"$ref": "#/$defs/node_id"}},
                            "repeat": {"$ref": "#/$defs/repeat"},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["id", "op", "operands"],
                        "properties": {
                            "id": {"$ref": "#/$defs/node_id"},
                            "op": {"enum": binary},
                            "operands": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"$ref": "#/$defs/node_id"}},
                            "repeat": {"$ref": "#/$defs/repeat"},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["id", "op", "operands", "exponent"],
                        "properties": {
                            "id": {"$ref": "#/$defs/node_id"},
                            "op": {"enum": with_exponent},
                            "operands": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"$ref": "#/$defs/node_id"}},
                            "exponent": {"$ref": "#/$defs/finite"},
                            "repeat": {"$ref": "#/$defs/repeat"},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["op", "output"],
                        "properties": {
                            "op": {"const": "backward"},
                            "output": {"$ref": "#/$defs/node_id"},
                            "seed": {"$ref": "#/$defs/float"},
                        },
                    },
                    {
                        "additionalProperties": False,
                        "required": ["op", "output"],
                        "properties": {"op": {"const": "zero_grad"}, "output": {"$ref": "#/$defs/node_id"}},
                    },
                ],
            },
            "gradients": {"type": "object", "additionalProperties": {"$ref": "#/$defs/float"}},
            "error": {
                "type": "object",
                "required": ["kind"],
                "properties": {
                    "kind": {"enum": list(ERROR_KINDS)},
                    "operation": {"type": "string"},
                    "value": {"$ref": "#/$defs/float"},
                    "slot": {"type": "integer", "minimum": 0},
                    "seed": {"$ref": "#/$defs/float"},
                    "consumer": {"$ref": "#/$defs/node_id"},
                    "operand": {"$ref": "#/$defs/node_id"},
                    "node": {"$ref": "#/$defs/node_id"},
                    "upstream": {"$ref": "#/$defs/float"},
                    "local_derivative": {"$ref": "#/$defs/float"},
                    "previous": {"$ref": "#/$defs/float"},
                    "contribution": {"$ref": "#/$defs/float"},
                    "stored": {"$ref": "#/$defs/float"},
                    "pass_adjoint": {"$ref": "#/$defs/float"},
                },
                "additionalProperties": False,
            },
            "pass": {
                "type": "object",
                "additionalProperties": False,
                "required": ["seed", "nodes", "edges"],
                "properties": {
                    "seed": {"$ref": "#/$defs/float"},
                    "nodes": {"type": "array", "items": _record_schema(NodeRecord)},
                    "edges": {"type": "array", "items": _record_schema(EdgeRecord)},
                },
            },
            "observation": {"oneOf": _observation_shapes()},
        },
    }


#: The schema of each type a record field has (``_record_schema``).
_FIELD_SCHEMAS: dict[Any, dict[str, Any]] = {
    NodeId: {"$ref": "#/$defs/node_id"},
    str: {"type": "string"},
    float: {"$ref": "#/$defs/float"},
    Optional[float]: {"$ref": "#/$defs/nullable_float"},
    bool: {"type": "boolean"},
    int: {"type": "integer", "minimum": 0},
}


def _record_schema(record: type[msgspec.Struct]) -> dict[str, Any]:
    """A pass record's node or edge object, made from its wire type (conformance.protocol): every field required."""
    fields = msgspec.structs.fields(record)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [field.name for field in fields],
        "properties": {field.name: _FIELD_SCHEMAS[field.type] for field in fields},
    }


#: The schema of each field of an observation, by its type (``_observation_shapes``).
_OBSERVATION_FIELD_SCHEMAS: dict[Any, dict[str, Any]] = {
    Optional[float]: {"$ref": "#/$defs/float"},
    Optional[bool]: {"type": "boolean"},
    Optional[ErrorInfo]: {"$ref": "#/$defs/error"},
    Optional[dict[str, float]]: {"$ref": "#/$defs/gradients"},
    Optional[PassRecord]: {"$ref": "#/$defs/pass"},
}


def _observation_shapes() -> list[dict[str, Any]]:
    """One object per shape an observation may have (``protocol.OBSERVATION_SHAPES``), its fields required."""
    shapes: list[frozenset[str]] = []
    for allowed in OBSERVATION_SHAPES.values():
        shapes.extend(shape for shape in allowed if shape not in shapes)
    return [
        {
            "type": "object",
            "additionalProperties": False,
            "required": [field.encode_name for field in SHAPE_FIELDS if field.encode_name in shape],
            "properties": {
                field.encode_name: _OBSERVATION_FIELD_SCHEMAS[field.type] for field in SHAPE_FIELDS if field.encode_name in shape
            },
        }
        for shape in shapes
    ]


def fixture_schema_text() -> str:
    """The canonical text of fixtures/fixture.schema.json."""
    return json.dumps(fixture_schema(), indent=2) + "\n"
