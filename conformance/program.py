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

An operation step may carry ``"repeat": n`` (the ``repeat`` feature): the operation is
applied n times, each application's result fed back into slot 0, so one step builds a
chain of n nodes; the last is the step's id, the k-th before it is named ``id[k]``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Iterable, Iterator, Optional

import msgspec

from reference.ops import OPS

from .wire import WireError, decode_float, to_json_ready

#: Steps that create a leaf; ``detach`` creates one too, a node whose operation is ``detached``
#: (reference.ops.LEAF_OPERATIONS names the leaves as pass records show them).
LEAF_OPS = ("variable", "constant")
CREATION_OPS = frozenset((*LEAF_OPS, "detach", *OPS))
GRADIENT_OPS = ("backward", "zero_grad")
#: Ops an adapter can declare: the op table plus detach.
DECLARABLE_OPS = (*OPS, "detach")
#: The most applications one repeated step may ask for (a bound on what one step can cost).
MAX_REPEAT = 10_000_000


class ProgramError(ValueError):
    """A program that breaks the step rules; the message names the source, step and field."""


class Step(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """One program step. Creation steps have an ``id``; backward and zero_grad have an ``output``.

    ``repeat`` (an operation step only) applies the operation that many times, feeding each
    result back into slot 0. Fields are in the order the wire writes them.
    """

    id: Optional[str] = None
    op: str
    value: Optional[float] = None
    operands: tuple[str, ...] = ()
    exponent: Optional[float] = None
    repeat: Optional[int] = None
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
        if self.repeat is not None:
            data["repeat"] = self.repeat
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
        times = "" if self.repeat is None else f" repeated {self.repeat} times"
        return f"{self.id} = {self.op}({', '.join(self.operands)}{extra}){times}"

    def written_out(self) -> Iterator["Step"]:
        """A repeated step as its single steps: ``id[1]`` .. ``id[n-1]``, then ``id``, each result slot 0 of the next."""
        assert self.id is not None and self.repeat is not None
        previous, rest = self.operands[0], self.operands[1:]
        for k in range(1, self.repeat + 1):
            name = self.id if k == self.repeat else f"{self.id}[{k}]"
            yield Step(id=name, op=self.op, operands=(previous, *rest), exponent=self.exponent)
            previous = name


Program = tuple[Step, ...]

_ALLOWED_KEYS = {
    "leaf": {"id", "op", "value"},
    "detach": {"id", "op", "operands"},
    "apply": {"id", "op", "operands", "repeat"},
    "pow": {"id", "op", "operands", "exponent", "repeat"},
    "backward": {"op", "output", "seed"},
    "zero_grad": {"op", "output"},
}


def parse_program(raw: Any, source: str) -> Program:
    """Turn plain data into a checked program, or raise ProgramError naming source, step and field."""
    if not isinstance(raw, list):
        raise ProgramError(f"{source}: program must be a list of steps, got {type(raw).__name__}")
    steps: list[Step] = []
    known: set[str] = set()
    chains = _Chains()
    for index, item in enumerate(raw):
        where = f"{source}: step {index}"
        step = _parse_step(item, where, known)
        if step.id is not None:
            chains.check(step, where)
            known.add(step.id)
        steps.append(step)
    return tuple(steps)


def well_formed(steps: Iterable[Step]) -> bool:
    """Whether typed steps pass every rule ``parse_program`` checks: known, unused and non-empty ids, each
    op's fields and arity, a finite exponent, a repeat in range, inner names of repeated steps kept apart.

    For steps decoded losslessly (every field present exactly when it differs from its default): the
    harness's own run requests, which ``protocol.decode_run_request`` takes this way. False means only
    "not proven well formed": ``parse_program`` then reads the plain data and names the mistake.
    """
    known: set[str] = set()
    chains = _Chains()
    for step in steps:
        op = step.op
        if op in GRADIENT_OPS:
            if step.output not in known or step.id is not None or step.operands or step.repeat is not None:
                return False
            if step.value is not None or step.exponent is not None or (op == "zero_grad" and step.seed is not None):
                return False
            continue
        node_id = step.id
        if op not in CREATION_OPS or not node_id or node_id in known or step.output is not None or step.seed is not None:
            return False
        if op in LEAF_OPS:
            if step.value is None or step.operands or step.exponent is not None or step.repeat is not None:
                return False
        else:
            arity = 1 if op == "detach" else OPS[op].arity
            if step.value is not None or len(step.operands) != arity or not known.issuperset(step.operands):
                return False
            if (step.exponent is not None) != (op == "pow") or (step.exponent is not None and not math.isfinite(step.exponent)):
                return False
            if step.repeat is not None and (op == "detach" or not 1 <= step.repeat <= MAX_REPEAT):
                return False
        try:
            chains.check(step, "")
        except ProgramError:
            return False
        known.add(node_id)
    return True


_INDEXED = re.compile(r"(.+)\[([1-9][0-9]*)\]\Z")


class _Chains:
    """The names repeated steps give their inner nodes (``id[k]``), kept apart from the program's own ids."""

    def __init__(self) -> None:
        self.lengths: dict[str, int] = {}
        self.indexed: dict[str, list[int]] = {}

    def check(self, step: Step, where: str) -> None:
        assert step.id is not None
        if step.repeat is None and "[" not in step.id:  # most steps: nothing to check, and no pattern to match
            return
        match = _INDEXED.match(step.id)
        if match:
            base, k = match.group(1), int(match.group(2))
            if k < self.lengths.get(base, 0):
                raise ProgramError(f"{where} ({step.id}): field 'id': {step.id!r} names a node of the repeated step {base!r}")
            self.indexed.setdefault(base, []).append(k)
        if step.repeat is not None:
            clash = [k for k in self.indexed.get(step.id, []) if k < step.repeat]
            if clash:
                raise ProgramError(
                    f"{where} ({step.id}): field 'repeat': its node {step.id}[{clash[0]}] would take an id an earlier step uses"
                )
            self.lengths[step.id] = step.repeat


def _parse_step(item: Any, where: str, known: set[str]) -> Step:
    if not isinstance(item, dict):
        raise ProgramError(f"{where}: a step must be an object, got {json.dumps(to_json_ready(item))}")
    op = item.get("op")
    if not isinstance(op, str):
        raise ProgramError(f"{where}: field 'op' must be a string naming an operation, got {_show(op)}")
    if op not in CREATION_OPS and op not in GRADIENT_OPS:
        choices = ", ".join((*LEAF_OPS, "detach", *OPS, *GRADIENT_OPS))
        raise ProgramError(f"{where}: field 'op': unknown operation {op!r} (known: {choices})")
    shape = "leaf" if op in LEAF_OPS else op if op in ("detach", "pow", "backward", "zero_grad") else "apply"
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
    repeat = None
    if "repeat" in item:
        repeat = item["repeat"]
        if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
            raise ProgramError(f"{where}: field 'repeat' must be a whole number from 1 to {MAX_REPEAT}, got {_show(repeat)}")
    return Step(op=op, id=node_id, operands=tuple(names), exponent=exponent, repeat=repeat)


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


def reachable(output: str, operands: dict[str, tuple[str, ...]]) -> set[str]:
    """The ids ``output`` reaches through the steps' operand lists, itself included (a walk, not a recursion).

    For adapters whose engine cannot list a node's operands: zero_grad(output) then follows the program's.
    """
    seen, stack = {output}, [output]
    while stack:
        for name in operands[stack.pop()]:
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


def observed_ids(program: Program) -> Optional[set[str]]:
    """The ids whose gradients a program observes: its own ids when it has a repeated step, else None (all)."""
    if not any(step.repeat for step in program):
        return None
    return {step.id for step in program if step.id is not None}


def program_size(program: Iterable[Step]) -> int:
    """How many steps the program runs, a repeated step counted once per application."""
    return sum(step.repeat or 1 for step in program)


def ops_used(program: Iterable[Step]) -> list[str]:
    """The declarable ops a program uses, in op-table order."""
    used = {step.op for step in program}
    return [op for op in DECLARABLE_OPS if op in used]


def features_used(program: Iterable[Step]) -> list[str]:
    """Optional features a program needs: ``seed`` when a backward passes a seed other than 1, ``repeat`` for a repeated step."""
    program = tuple(program)
    used = []
    if any(step.seed is not None and step.seed != 1.0 for step in program):
        used.append("seed")
    if any(step.repeat is not None for step in program):
        used.append("repeat")
    return used
