"""Programs: lists of steps over named nodes (docs/contract.md section 8), parsed and checked.

A program arrives as plain data (from a TOML case file, a fixture or the wire)
and becomes a tuple of frozen ``Step`` objects. Every mistake is reported as a
``ProgramError`` naming the source, the step and the field: an unknown id, a
reused id, an unknown op, a non-finite exponent, a string where a number
belongs. The step forms, as JSON:

    {"id": "x", "op": "variable", "value": 2.0}
    {"id": "c", "op": "constant", "value": 3.0}
    {"id": "d", "op": "detach", "operands": ["x"]}
    {"id": "y", "op": "mul", "operands": ["x", "x"]}
    {"id": "p", "op": "pow", "operands": ["x"], "exponent": 0.5}
    {"op": "backward", "output": "y"}            (optional "seed", default 1.0)
    {"op": "zero_grad", "output": "y"}
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from reference.ops import OPS

from .wire import WireError, decode_float, to_json_ready

#: Steps that create a leaf; ``detach`` creates one too, a node whose operation is ``detached``
#: (reference.ops.LEAF_OPERATIONS names the leaves as pass records show them).
LEAF_OPS = ("variable", "constant")
CREATION_OPS = frozenset((*LEAF_OPS, "detach", *OPS))
GRADIENT_OPS = ("backward", "zero_grad")
#: Ops an adapter can declare: the op table plus detach.
DECLARABLE_OPS = (*OPS, "detach")


class ProgramError(ValueError):
    """A program that breaks the step rules; the message names the source, step and field."""


@dataclass(frozen=True)
class Step:
    """One program step. Creation steps have an ``id``; backward and zero_grad have an ``output``."""

    op: str
    id: Optional[str] = None
    value: Optional[float] = None
    operands: tuple[str, ...] = ()
    exponent: Optional[float] = None
    output: Optional[str] = None
    seed: Optional[float] = None

    @property
    def creates(self) -> bool:
        """True for a step that creates a node (leaf, detach or operation)."""
        return self.id is not None

    def to_json(self) -> dict[str, Any]:
        """The step as plain data, keys in a fixed order, None fields left out."""
        data: dict[str, Any] = {}
        if self.id is not None:
            data["id"] = self.id
        data["op"] = self.op
        if self.value is not None:
            data["value"] = self.value
        if self.operands:
            data["operands"] = list(self.operands)
        if self.exponent is not None:
            data["exponent"] = self.exponent
        if self.output is not None:
            data["output"] = self.output
        if self.seed is not None:
            data["seed"] = self.seed
        return data

    def describe(self) -> str:
        """A short readable form, e.g. ``y = mul(x, x)`` or ``backward(y, seed=2.0)``."""
        if self.op in LEAF_OPS:
            return f"{self.id} = {self.op}({self.value!r})"
        if self.op in GRADIENT_OPS:
            seed = "" if self.seed is None else f", seed={self.seed!r}"
            return f"{self.op}({self.output}{seed})"
        extra = "" if self.exponent is None else f"; {self.exponent!r}"
        return f"{self.id} = {self.op}({', '.join(self.operands)}{extra})"


Program = tuple[Step, ...]

_ALLOWED_KEYS = {
    "leaf": {"id", "op", "value"},
    "apply": {"id", "op", "operands"},
    "pow": {"id", "op", "operands", "exponent"},
    "backward": {"op", "output", "seed"},
    "zero_grad": {"op", "output"},
}


def parse_program(raw: Any, source: str) -> Program:
    """Turn plain data into a checked program, or raise ProgramError naming source, step and field."""
    if not isinstance(raw, list):
        raise ProgramError(f"{source}: program must be a list of steps, got {type(raw).__name__}")
    steps: list[Step] = []
    known: set[str] = set()
    for index, item in enumerate(raw):
        step = _parse_step(item, f"{source}: step {index}", known)
        if step.id is not None:
            known.add(step.id)
        steps.append(step)
    return tuple(steps)


def _parse_step(item: Any, where: str, known: set[str]) -> Step:
    if not isinstance(item, dict):
        raise ProgramError(f"{where}: a step must be an object, got {json.dumps(to_json_ready(item))}")
    op = item.get("op")
    if not isinstance(op, str):
        raise ProgramError(f"{where}: field 'op' must be a string naming an operation, got {_show(op)}")
    if op not in CREATION_OPS and op not in GRADIENT_OPS:
        choices = ", ".join((*LEAF_OPS, "detach", *OPS, *GRADIENT_OPS))
        raise ProgramError(f"{where}: field 'op': unknown operation {op!r} (known: {choices})")
    shape = "leaf" if op in LEAF_OPS else op if op in ("pow", "backward", "zero_grad") else "apply"
    if "args" in item and shape not in ("leaf", "backward", "zero_grad"):
        raise ProgramError(
            f"{where} ({op}): field 'args' is the old name (protocol 1, fixture format 2): an operation lists its ids "
            "in 'operands'"
        )
    unexpected = sorted(set(item) - _ALLOWED_KEYS[shape])
    if unexpected:
        raise ProgramError(f"{where} ({op}): unexpected field {unexpected[0]!r}")
    if op in GRADIENT_OPS:
        output = _name(item, "output", where, known)
        seed = None
        if "seed" in item:
            seed = _number(item, "seed", where)
        return Step(op=op, output=output, seed=seed)
    node_id = item.get("id")
    if not isinstance(node_id, str) or not node_id:
        raise ProgramError(f"{where} ({op}): field 'id' must be a non-empty string, got {_show(node_id)}")
    where = f"{where} ({node_id})"
    if node_id in known:
        raise ProgramError(f"{where}: field 'id': id {node_id!r} is already used by an earlier step")
    if op in LEAF_OPS:
        return Step(op=op, id=node_id, value=_number(item, "value", where))
    arity = 1 if op == "detach" else OPS[op].arity
    operands = item.get("operands")
    if not isinstance(operands, list) or len(operands) != arity:
        raise ProgramError(f"{where}: field 'operands': {op} takes a list of {arity} id(s), got {_show(operands)}")
    names = []
    for slot, name in enumerate(operands):
        if not isinstance(name, str):
            raise ProgramError(f"{where}: field 'operands[{slot}]' must be an id string, got {_show(name)}")
        if name not in known:
            raise ProgramError(f"{where}: field 'operands[{slot}]': unknown id {name!r} (ids must be created by an earlier step)")
        names.append(name)
    exponent = None
    if op == "pow":
        exponent = _number(item, "exponent", where)
        if not math.isfinite(exponent):
            raise ProgramError(f"{where}: field 'exponent' must be a finite constant, got {exponent!r}")
    return Step(op=op, id=node_id, operands=tuple(names), exponent=exponent)


def _name(item: dict[str, Any], field: str, where: str, known: set[str]) -> str:
    name = item.get(field)
    if not isinstance(name, str):
        raise ProgramError(f"{where} ({item['op']}): field {field!r} must be an id string, got {_show(name)}")
    if name not in known:
        raise ProgramError(f"{where} ({item['op']}): field {field!r}: unknown id {name!r}")
    return name


def _number(item: dict[str, Any], field: str, where: str) -> float:
    if field not in item:
        raise ProgramError(f"{where}: field {field!r} is missing")
    try:
        return decode_float(item[field], f"{where}: field {field!r}")
    except WireError as error:
        raise ProgramError(str(error)) from None


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    return json.dumps(to_json_ready(value))


def program_to_json(program: Iterable[Step]) -> list[dict[str, Any]]:
    """The program as plain data."""
    return [step.to_json() for step in program]


def program_hash(program: Iterable[Step]) -> str:
    """sha256 of the program's canonical JSON (sorted keys, compact): its content identity."""
    text = json.dumps(to_json_ready(program_to_json(program)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def ops_used(program: Iterable[Step]) -> list[str]:
    """The declarable ops a program uses, in op-table order."""
    used = {step.op for step in program}
    return [op for op in DECLARABLE_OPS if op in used]


def features_used(program: Iterable[Step]) -> list[str]:
    """Optional features a program needs: ``seed`` when a backward passes a seed other than 1."""
    return ["seed"] if any(step.seed is not None and step.seed != 1.0 for step in program) else []
