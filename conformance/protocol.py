"""The adapter protocol (docs/protocol.md): every message as a type, decoded and validated here.

The messages are msgspec Structs: one definition gives typed decoding with precise
error paths (``$.observations[3].gradients.x``), fast JSON in both directions, and
the JSON Schema a port can validate its replies against (``protocol_schema``). Nothing
else in the kit reads or writes the wire form of an observation.

The vocabulary (docs/contract.md section 1): an edge is (consumer, slot) -> operand.

Floats on the wire are JSON numbers, or the strings "inf", "-inf" and "nan"; ``-0``
written as an integer is negative zero (docs/protocol.md, "Numbers"). The decoder reads a
finite number written as a string leniently, as that number; a non-finite float spelt
any other way (``"Infinity"``, ``"NaN"``, Jackson's defaults) is an error naming the
token, as the schema, the strict form, rejects it. A reply is decoded strictly first, so
that check costs nothing on a reply without a string where a float goes.
"""

from __future__ import annotations

import math
import operator
import re
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Iterator, Optional, Sequence, Union

import msgspec
import msgspec.inspect

from reference.errors import ERROR_KINDS as _ERROR_CLASSES

from . import wire
from .program import DECLARABLE_OPS, Program, Step, well_formed

#: The protocol version this kit speaks; an adapter's hello must carry the same number.
PROTOCOL_VERSION = 2

#: The longest reply line the harness reads.
MAX_LINE_BYTES = 64 * 1024 * 1024

#: What changed since each older version, for the message an adapter speaking it gets.
CHANGES_SINCE: dict[int, str] = {
    1: (
        "protocol 2 renamed the edge vocabulary so that it reads like micrograd's: program steps name their "
        "'operands' (was 'args'); pass-record edges are {consumer, slot, operand, local_derivative, upstream, "
        "contribution, operand_tracked, before, after} (were child, operand (the slot), parent, parent_tracked); "
        "non-finite-local-derivative carries 'slot' (was 'operand'); non-finite-contribution carries consumer, slot, "
        "operand (were child, operand, parent). See docs/protocol.md, 'Changes from protocol 1'"
    ),
}


class Level(StrEnum):
    """A conformance level: what a comparison looks at (docs/protocol.md, "Levels")."""

    VALUES = "values"
    GRADIENTS = "gradients"
    ERRORS = "errors"
    TRACE = "trace"
    ORDER = "order"


#: Every level, in the contract's order.
LEVELS: tuple[Level, ...] = tuple(Level)


class Profile(StrEnum):
    """How floats are compared (docs/contract.md section 9)."""

    CONTRACT = "contract"
    NUMERIC = "numeric"


class TraceKind(StrEnum):
    """What an adapter's pass records hold: node and edge records, or node records only."""

    FULL = "full"
    NODES = "nodes"


class Precision(StrEnum):
    """The engine's working precision: binary64 as the contract computes, or binary32."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"


class GradientScope(StrEnum):
    """Which nodes keep a stored gradient in the engine: every tracked node, or the tracked leaves only."""

    ALL = "all"
    LEAVES = "leaves"


#: The fields of every error kind of the contract, in the contract's order.
ERROR_FIELDS: dict[str, tuple[str, ...]] = {kind: cls.field_names for kind, cls in _ERROR_CLASSES.items()}
#: Every error kind of the contract: an adapter reports all of them unless its hello's ``error_kinds`` says less.
ERROR_KINDS: tuple[str, ...] = tuple(ERROR_FIELDS)
#: The error kinds of a failed creation (compared at ``values``); the others are backward's (``errors``).
CREATION_ERROR_KINDS = ("non-finite-leaf", "non-finite-result", "non-finite-local-derivative")
#: The optional features a hello may declare.
FEATURES = ("seed", "repeat")


class ProtocolError(ValueError):
    """A message that breaks the protocol; the text names the message, the field path and what was expected.

    ``data`` is the message as plain JSON data, when it is JSON (a hello's fields are then checked one by one).
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.data = data


class NotJSON(ProtocolError):
    """A line that is not JSON at all; ``position`` is the byte offset of the first bad byte, when known."""

    def __init__(self, message: str, position: Optional[int] = None) -> None:
        super().__init__(message)
        self.position = position


class Misspelt(ProtocolError):
    """A reply that writes a non-finite float in a spelling the protocol forbids (``"Infinity"``, ``"NaN"``)."""


# -- observations ------------------------------------------------------------------


class ErrorInfo(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """A contract error as observed: its kind and exactly that kind's fields, nodes by program id.

    The fields are in an order that writes every kind's fields in the contract's order.
    """

    kind: str
    operation: Optional[str] = None
    consumer: Optional[str] = None
    slot: Optional[int] = None
    operand: Optional[str] = None
    node: Optional[str] = None
    value: Optional[float] = None
    seed: Optional[float] = None
    upstream: Optional[float] = None
    local_derivative: Optional[float] = None
    previous: Optional[float] = None
    contribution: Optional[float] = None
    stored: Optional[float] = None
    pass_adjoint: Optional[float] = None

    def fields(self) -> dict[str, Any]:
        """The fields it carries (every field that is set), in the contract's order."""
        return {name: getattr(self, name) for name in self.__struct_fields__[1:] if getattr(self, name) is not None}


class ProgramId:
    """The marker of a record field that names a node by its program id (``NodeId``): the fixture schema's ``node_id``."""


#: A record field that names a node by its program id (docs/contract.md section 8); on the wire, a string.
NodeId = Annotated[str, ProgramId]


# A record's fields are the contract's ``record.pass`` fields, in the order of the reference's record types
# (reference.record, the same names: tests/test_observation_fields.py). The comparison, an observation's floats,
# the fixture schema and the reference's observation are read from these definitions (docs/contributing.md,
# "Adding an observation field").


class NodeRecord(msgspec.Struct, forbid_unknown_fields=True):
    """One node of a pass's topology; ``pass_adjoint`` and ``stored_gradient`` are None when untracked.

    ``trace`` compares every field but ``node`` (the key it is matched on); a float one by ulps and bounds.
    """

    KEY: ClassVar[tuple[str, ...]] = ("node",)
    """The field that says which node a record is: records are matched on it, not compared."""

    node: NodeId
    operation: str
    value: float
    tracked: bool
    pass_adjoint: Optional[float]
    stored_gradient: Optional[float]


class EdgeRecord(msgspec.Struct, forbid_unknown_fields=True):
    """One operand edge as backward walked it: (consumer, slot) -> operand.

    ``before`` and ``after`` are the operand's pass adjoint around this edge, None when it is untracked.
    ``trace`` compares every field but ``before`` and ``after``, matched by (consumer, slot); ``order``
    compares consumer, slot, operand, before and after position by position.
    """

    KEY: ClassVar[tuple[str, ...]] = ("consumer", "slot")
    """The fields that say which edge a record is: ``trace`` matches records on them."""
    RUNNING: ClassVar[tuple[str, ...]] = ("before", "after")
    """The operand's running sum around the edge: it depends on the processing order, so only ``order`` compares it."""
    ORDER: ClassVar[tuple[str, ...]] = ("consumer", "slot", "operand", "before", "after")
    """What ``order`` compares at each position of the walk."""

    consumer: NodeId
    slot: int
    operand: NodeId
    local_derivative: float
    upstream: float
    contribution: float
    operand_tracked: bool
    before: Optional[float]
    after: Optional[float]


def record_floats(record: type[msgspec.Struct]) -> tuple[str, ...]:
    """The float fields of a record type (typed ``float`` or ``Optional[float]``), in order: compared by ulps and bounds."""
    return tuple(field.name for field in msgspec.structs.fields(record) if field.type in (float, Optional[float]))


#: The float fields of a node record and of an edge record (``record_floats``).
NODE_FLOATS = record_floats(NodeRecord)
EDGE_FLOATS = record_floats(EdgeRecord)
#: The edge floats an observation's ``floats()`` keys by the edge (CONSUMER:SLOT) and those it keys by position.
_EDGE_OWN_FLOATS = tuple(name for name in EDGE_FLOATS if name not in EdgeRecord.RUNNING)
_EDGE_RUNNING_FLOATS = tuple(name for name in EDGE_FLOATS if name in EdgeRecord.RUNNING)


class PassRecord(msgspec.Struct, forbid_unknown_fields=True):
    """A successful backward: the seed, nodes in topology order, edges in processing order.

    ``edges`` may be left out by an adapter whose hello declares ``"trace": "nodes"``.
    """

    seed: float
    nodes: list[NodeRecord]
    edges: list[EdgeRecord] = msgspec.field(default_factory=list)


class Observation(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=True):
    """What one step showed (docs/protocol.md, "Observations"); fields that do not apply are None.

    creation: ``value`` and ``tracked``, or ``error``; backward: ``gradients`` (and ``pass``), or
    ``error`` and ``gradients``; zero_grad: ``gradients``. ``gradients`` maps the id of every
    tracked node created so far to its stored gradient.
    """

    value: Optional[float] = None
    tracked: Optional[bool] = None
    error: Optional[ErrorInfo] = None
    gradients: Optional[dict[str, float]] = None
    pass_: Optional[PassRecord] = msgspec.field(default=None, name="pass")
    fault: Optional[str] = None
    """Protocol 2.1: the engine raised or refused at this step (its message); no other field."""
    skipped: Optional[int] = None
    """Protocol 2.1: not run, since the step names an id whose creating step (this index) faulted or was skipped."""

    def floats(self) -> dict[str, float]:
        """Every float it holds, by its path under the observation (docs/fixtures.md, "bounds").

        The same paths as a report's ``observations[i].PATH`` and a fixture's bounds: ``value``,
        ``gradients.ID``, ``error.FIELD``, ``pass.nodes[ID].FIELD``, ``pass.edges[CONSUMER:SLOT].FIELD``
        for an edge's own floats and ``pass.edges[POSITION].before|after`` for the running sums.
        """
        out: dict[str, float] = {}
        if self.value is not None:
            out["value"] = self.value
        for name, gradient in (self.gradients or {}).items():
            out[f"gradients.{name}"] = gradient
        if self.error is not None:
            for name, field in self.error.fields().items():
                if isinstance(field, float):
                    out[f"error.{name}"] = field
        if self.pass_ is not None:
            for node in self.pass_.nodes:
                for key in NODE_FLOATS:
                    number = getattr(node, key)
                    if number is not None:
                        out[f"pass.nodes[{node.node}].{key}"] = number
            for position, edge in enumerate(self.pass_.edges):
                where = f"pass.edges[{edge.consumer}:{edge.slot}]"
                for key in _EDGE_OWN_FLOATS:
                    number = getattr(edge, key)
                    if number is not None:
                        out[f"{where}.{key}"] = number
                for key in _EDGE_RUNNING_FLOATS:
                    number = getattr(edge, key)
                    if number is not None:
                        out[f"pass.edges[{position}].{key}"] = number
        return out

    def to_json(self) -> dict[str, Any]:
        """The observation as plain data (floats as Python floats, non-finite included)."""
        data: dict[str, Any] = msgspec.to_builtins(self, builtin_types=(float,))
        return data


#: The shapes an observation may have, by the kind of its step (docs/protocol.md, "Observations"): each the set of
#: fields it carries (wire names). A fault or skipped observation (protocol 2.1) carries its one field instead.
OBSERVATION_SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    "creation": (frozenset({"value", "tracked"}), frozenset({"error"})),
    "backward": (frozenset({"gradients"}), frozenset({"gradients", "pass"}), frozenset({"error", "gradients"})),
    "zero_grad": (frozenset({"gradients"}),),
}
#: Every field an observation's shape is made of (all but protocol 2.1's ``fault`` and ``skipped``), in the type's order.
SHAPE_FIELDS = tuple(field for field in msgspec.structs.fields(Observation) if field.name not in ("fault", "skipped"))
#: The same fields as (wire name, attribute).
_SHAPE_FIELDS = tuple((field.encode_name, field.name) for field in SHAPE_FIELDS)
#: Fields of an observation that ``shape_problem``'s fast path does not know: a new one is checked the careful way.
_UNKNOWN_TO_FAST_PATH = tuple(
    name for wire, name in _SHAPE_FIELDS if wire not in ("value", "tracked", "error", "gradients", "pass")
)


def step_kind(step: Step) -> str:
    """``creation``, ``backward`` or ``zero_grad``: the key of ``OBSERVATION_SHAPES`` for ``step``."""
    return "creation" if step.id is not None else "backward" if step.op == "backward" else "zero_grad"


def shape_problem(step: Step, observation: Observation) -> Optional[str]:
    """What is wrong with the shape of ``observation`` for ``step`` (docs/protocol.md), or None."""
    if observation.fault is not None or observation.skipped is not None:
        return _step_fault_problem(observation)
    # The shapes of a run that went well, told apart without building sets (the hot path of every reply);
    # tests/test_reply_shapes.py holds it to OBSERVATION_SHAPES for every combination of fields.
    if not _UNKNOWN_TO_FAST_PATH or all(getattr(observation, name) is None for name in _UNKNOWN_TO_FAST_PATH):
        if observation.error is None and observation.pass_ is None and step.id is not None:  # a creation
            if observation.value is not None and observation.tracked is not None and observation.gradients is None:
                return None
        elif observation.error is None and observation.value is None and observation.tracked is None and step.id is None:
            if observation.gradients is not None and (observation.pass_ is None or step.op == "backward"):
                return None
    return _shape_problem(step, observation)


def _shape_problem(step: Step, observation: Observation) -> Optional[str]:
    """``shape_problem`` worked out from the sets of fields present and allowed."""
    has = {wire for wire, name in _SHAPE_FIELDS if getattr(observation, name) is not None}
    if observation.error is not None:
        problem = _error_problem(observation.error)
        if problem:
            return problem
    allowed = OBSERVATION_SHAPES[step_kind(step)]
    if has in allowed:
        return None
    shapes = " or ".join("{" + ", ".join(sorted(shape)) + "}" for shape in allowed)
    return f"a {step.op} step is observed as {shapes}, got {{{', '.join(sorted(has))}}}"


def _step_fault_problem(observation: Observation) -> Optional[str]:
    """A fault or skipped observation (protocol 2.1) carries that one field and nothing else."""
    others = [wire for wire, name in _SHAPE_FIELDS if getattr(observation, name) is not None]
    if observation.fault is not None and observation.skipped is not None:
        others.append("skipped")
    if others:
        fields = ", ".join(sorted(others))
        kind = "fault" if observation.fault is not None else "skipped"
        return f"a {kind} observation carries no other field, got {fields} beside it"
    if observation.fault is not None and not observation.fault.strip():
        return "a fault observation names what the engine raised or refused: its message is empty"
    return None


def dependency_problem(index: int, program: Program, observations: Sequence[Observation]) -> Optional[str]:
    """What is wrong with a skipped observation's step reference (protocol 2.1), or None.

    ``skipped: k`` must name an earlier step that faulted or was skipped itself and created an id this step names.
    """
    k = observations[index].skipped
    if k is None:
        return None
    step = program[index]
    if not 0 <= k < index:
        return f"skipped: {k} must name an earlier step (0 to {index - 1})"
    if observations[k].fault is None and observations[k].skipped is None:
        return f"skipped: {k} names a step that neither faulted nor was skipped ({program[k].describe()})"
    named = {*step.operands, *((step.output,) if step.output is not None else ())}
    if program[k].id not in named:
        return f"skipped: {k} names a step whose id ({program[k].id}) this step does not use"
    return None


def _error_problem(error: ErrorInfo) -> Optional[str]:
    wanted = ERROR_FIELDS.get(error.kind)
    if wanted is None:
        return f"error: unknown kind {error.kind!r} (known: {', '.join(ERROR_KINDS)})"
    got = tuple(error.fields())
    if set(got) != set(wanted):
        return f"error: a {error.kind} carries exactly the fields {', '.join(wanted)}; got {', '.join(got) or 'none'}"
    return None


# -- messages ----------------------------------------------------------------------


class EngineInfo(msgspec.Struct):
    """The engine behind an adapter, as its hello names it."""

    name: str
    version: str
    language: str


class HelloRequest(msgspec.Struct, tag="hello", tag_field="type"):
    """The harness's first message."""

    protocol: int


class Hello(msgspec.Struct, tag="hello", tag_field="type", omit_defaults=True):
    """The adapter's reply to hello: its protocol version and what it supports.

    Unknown fields are ignored, so later protocol versions can add optional ones.
    """

    protocol: int
    engine: EngineInfo
    ops: list[str]
    levels: list[Level]
    features: list[str] = msgspec.field(default_factory=list)
    error_kinds: Optional[list[str]] = None
    trace: TraceKind = TraceKind.FULL
    profile: Profile = Profile.CONTRACT
    gradients: GradientScope = GradientScope.ALL
    precision: Precision = Precision.FLOAT64


class RunRequest(msgspec.Struct, tag="run", tag_field="type", omit_defaults=True):
    """One whole case: its id and program (steps as in docs/protocol.md, "run").

    ``records`` false says the harness will not read pass records for this case (its levels include neither
    ``trace`` nor ``order``): backward observations may leave ``pass`` out. Written only when false.
    """

    case: str
    program: Program
    records: bool = True


class Result(msgspec.Struct, tag="result", tag_field="type"):
    """The reply to run: one observation per step."""

    case: str
    observations: list[Observation]


class ErrorReply(msgspec.Struct, tag="error", tag_field="type"):
    """The reply to run when the adapter cannot run the case at all."""

    case: str = ""
    message: str = ""


class Shutdown(msgspec.Struct, tag="shutdown", tag_field="type"):
    """The harness's last message; it has no reply."""


Reply = Union[Result, ErrorReply]

_LAX: dict[str, "msgspec.json.Decoder[Any]"] = {
    "hello": msgspec.json.Decoder(Hello, strict=False),
    "reply": msgspec.json.Decoder(Reply, strict=False),
}
#: A reply is decoded strictly first (no string where a float goes): only a reply that fails that, one with a
#: non-finite float or a mistake, is decoded again leniently and its strings in float positions checked.
_STRICT_REPLY: "msgspec.json.Decoder[Any]" = msgspec.json.Decoder(Reply)
_TYPES: dict[str, Any] = {"hello": Hello, "reply": Reply}
#: ``-0`` (or ``-0`` followed by a delimiter) written as an integer: msgspec would read it as +0.0.
_INTEGER_NEGATIVE_ZERO = re.compile(rb"-0(?![.\deE])")
_BYTE = re.compile(r"\(byte (\d+)\)")


def _decode(line: bytes, which: str) -> Any:
    if _INTEGER_NEGATIVE_ZERO.search(line):
        # Rare (Go's encoder, or an id containing "-0"): parse with the wire reader, which keeps the sign.
        try:
            data = wire.loads(bytes(line).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise _not_json(line, str(error)) from None
        if which == "reply":
            try:
                return msgspec.convert(data, Reply)
            except msgspec.ValidationError:
                pass  # a string where a float goes, or a mistake: the lenient reading says which
        try:
            message = msgspec.convert(data, _TYPES[which], strict=False)
        except msgspec.ValidationError as error:
            raise ProtocolError(_located(error)) from None
        if which == "reply":
            _check_spelling(data)
        return message
    if which == "reply":
        try:
            return _STRICT_REPLY.decode(line)
        except msgspec.DecodeError:
            pass  # not JSON, or a string where a float goes, or a mistake: the lenient reading says which
    try:
        message = _LAX[which].decode(line)
    except msgspec.ValidationError as error:
        # msgspec checks the type of a value before it reads it: "[main] INFO ..." is "Expected object, got array".
        try:
            data = msgspec.json.decode(line)
        except msgspec.DecodeError as malformed:
            raise _not_json(line, str(malformed)) from None
        raise ProtocolError(_located(error), data) from None
    except msgspec.DecodeError as error:
        raise _not_json(line, str(error)) from None
    if which == "reply":
        _check_spelling(msgspec.json.decode(line))
    return message


def _not_json(line: bytes, message: str) -> NotJSON:
    """NotJSON for a line, with the offset of its first bad byte (msgspec's, which names it in bytes)."""
    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError as error:
        found = _BYTE.search(str(error))
        return NotJSON(str(error), int(found.group(1)) if found else None)
    return NotJSON(message)


def _check_spelling(data: Any) -> None:
    """Raise Misspelt for the first string in a float position that names a non-finite float the wrong way."""
    found = list(_misspelt(data, _REPLY_INFO, "$"))
    if found:
        path, token = found[0]
        more = f" (and {len(found) - 1} more misspelt non-finite float(s))" if len(found) > 1 else ""
        raise Misspelt(f"at {path}: {wire.spelling_problem(token)}{more}")


_REPLY_INFO = msgspec.inspect.type_info(Reply)


def _misspelt(data: Any, info: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, token) for every string in a float position of ``data`` that is a non-finite float misspelt."""
    if isinstance(info, msgspec.inspect.FloatType):
        if isinstance(data, str) and wire.misspelt_non_finite(data):
            yield path, data
    elif isinstance(info, msgspec.inspect.UnionType):
        for option in info.types:
            if isinstance(option, msgspec.inspect.StructType) and option.tag is not None:
                if isinstance(data, dict) and data.get(option.tag_field or "") == option.tag:
                    yield from _misspelt(data, option, path)
            elif not isinstance(option, msgspec.inspect.NoneType):
                yield from _misspelt(data, option, path)
    elif isinstance(info, msgspec.inspect.StructType) and isinstance(data, dict):
        for field in info.fields:
            if field.encode_name in data:
                yield from _misspelt(data[field.encode_name], field.type, f"{path}.{field.encode_name}")
    elif isinstance(info, msgspec.inspect.ListType) and isinstance(data, list):
        for index, item in enumerate(data):
            yield from _misspelt(item, info.item_type, f"{path}[{index}]")
    elif isinstance(info, msgspec.inspect.DictType) and isinstance(data, dict):
        for key, value in data.items():
            yield from _misspelt(value, info.value_type, f"{path}.{key}")


def _located(error: msgspec.ValidationError) -> str:
    # msgspec says "Expected `float`, got `str` - at `$.observations[3].value`": put the path first.
    text = str(error)
    message, _, path = text.rpartition(" - at ")
    if message and path.startswith("`$"):
        return f"at {path.strip('`')}: {message}"
    return text


def decode_hello(line: bytes) -> Hello:
    """The adapter's hello reply, or ProtocolError naming the field and what was expected."""
    hello: Hello = _decode(line, "hello")
    return hello


def hello_fields(data: Any) -> tuple[dict[str, Any], list[str]]:
    """A hello's fields converted one at a time: those that convert, and one problem for each that does not.

    msgspec stops at the first bad field; this lists every one (a missing required field, a wrong type), so
    that a porter sees all of them at once. Fields left out take their defaults; unknown fields are ignored.
    """
    if not isinstance(data, dict):
        return {}, [f"the hello is a JSON {_json_type(data)}, not an object"]
    problems = []
    if data.get("type") != "hello":
        problems.append(f"field 'type': expected 'hello', got {_short(data.get('type'))}")
    fields: dict[str, Any] = {}
    for info in msgspec.structs.fields(Hello):
        if info.encode_name not in data:
            if info.required:
                problems.append(f"missing field {info.encode_name!r}")
            else:
                fields[info.name] = info.default_factory() if info.default is msgspec.NODEFAULT else info.default
            continue
        try:
            fields[info.name] = msgspec.convert(data[info.encode_name], _as_text(info.type), strict=False)
        except msgspec.ValidationError as error:
            located = _located(error)
            if located.startswith("at $"):
                problems.append(located.replace("$", f"$.{info.encode_name}", 1))
            else:
                problems.append(f"at $.{info.encode_name}: {located}")
    return fields, problems


def _as_text(kind: Any) -> Any:
    """A field's type with its enums as plain strings: the handshake names an unknown value with the known ones."""
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return str
    if getattr(kind, "__origin__", None) is list:
        return list[_as_text(kind.__args__[0])]  # type: ignore[misc]
    return kind


def _json_type(data: Any) -> str:
    return {list: "array", str: "string", type(None): "null", bool: "boolean", int: "number", float: "number"}.get(
        type(data), type(data).__name__
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def hello_from_data(data: dict[str, Any]) -> Hello:
    """A hello reply given as plain data (as a Python adapter declares it), checked like a decoded one."""
    try:
        hello: Hello = msgspec.convert(data, Hello, strict=False)
    except msgspec.ValidationError as error:
        raise ProtocolError(_located(error)) from None
    return hello


def observations_from_data(data: list[Any], program: Program) -> list[Observation]:
    """Observations given as plain data (as an in-process adapter returns them), checked as a reply's are."""
    try:
        observations: list[Observation] = msgspec.convert(data, list[Observation], strict=False)
    except msgspec.ValidationError as error:
        raise ProtocolError(_located(error).replace("$", "$.observations", 1)) from None
    return _checked(observations, program)


def decode_reply(line: bytes, case: str, program: Program) -> list[Observation]:
    """The observations of a result for ``case``; ProtocolError when the reply is anything else.

    An error reply is raised as ``AdapterErrorReply``. Every observation's shape is checked
    against its step, and every error against its kind's fields.
    """
    reply = _decode(line, "reply")
    if isinstance(reply, ErrorReply):
        raise AdapterErrorReply(reply.message or "(no message)")
    if reply.case != case:
        raise ProtocolError(f"reply names case {reply.case!r}, the request was {case!r}")
    return _checked(reply.observations, program)


def _checked(observations: list[Observation], program: Program) -> list[Observation]:
    if len(observations) != len(program):
        raise ProtocolError(f"result has {len(observations)} observations for {len(program)} steps")
    for index, (step, observation) in enumerate(zip(program, observations)):
        problem = shape_problem(step, observation) or dependency_problem(index, program, observations)
        if problem:
            raise ProtocolError(f"at $.observations[{index}] ({step.describe()}): {problem}")
    return observations


class AdapterErrorReply(Exception):
    """The adapter answered a run with ``{"type": "error"}``; the text is its message."""


_ENCODER = msgspec.json.Encoder()


def encode_result(result: Result) -> bytes:
    """A result as one JSON line (without the newline), floats in the wire encoding."""
    line = _ENCODER.encode(result)
    # msgspec writes inf and nan as null; the wire names them. A reply without ``:null`` has neither; one with it
    # may still hold only the nulls of a pass record's untracked nodes, which the sums of _finite tell apart.
    if b":null" not in line or all(_finite(observation) for observation in result.observations):
        return line
    return _careful(result)  # rare: a failed step's error fields, or a broken engine


def _careful(message: msgspec.Struct) -> bytes:
    """A message with non-finite floats named as the wire names them (the slow path)."""
    return wire.dumps_line(msgspec.to_builtins(message, builtin_types=(float,))).encode()


def _finite(observation: Observation) -> bool:
    """False when the observation may hold inf or nan (a sum that overflows also says False: then the slow path)."""
    total = 0.0 if observation.value is None else observation.value
    if observation.gradients:
        total += sum(observation.gradients.values())
    if observation.error is not None:
        total += sum(value for value in observation.error.fields().values() if isinstance(value, float))
    record = observation.pass_
    if record is not None:
        total += record.seed
        # Every float field of the records (read from their definitions, so a new one is summed too).
        total += sum(value for node in record.nodes for value in _NODE_FLOAT_VALUES(node) if value is not None)
        total += sum(value for edge in record.edges for value in _EDGE_FLOAT_VALUES(edge) if value is not None)
    return math.isfinite(total)


_NODE_FLOAT_VALUES = operator.attrgetter(*NODE_FLOATS)
_EDGE_FLOAT_VALUES = operator.attrgetter(*EDGE_FLOATS)


def run_request(case: str, program: Program, records: bool = True) -> bytes:
    """The run request for one case, as one JSON line (without the newline)."""
    request = RunRequest(case, program, records)
    line = _ENCODER.encode(request)
    # A step leaves out every field it does not have, so ``:null`` is a non-finite number msgspec wrote as
    # null (or those five characters inside an id, which the careful path writes just as well).
    return _careful(request) if b":null" in line else line


_RUN_REQUEST = msgspec.json.Decoder(RunRequest)


def decode_run_request(line: bytes) -> Optional[RunRequest]:
    """A run request as the harness writes it, typed and checked in one go; None for any other line.

    The fast path of the adapter side (``serve``): the line is decoded into typed steps, re-encoded, and
    taken only when that gives back the very same bytes (so no field was dropped, defaulted or converted)
    and ``program.well_formed`` accepts its steps. Every other line, a hello, a shutdown, a request with
    non-finite numbers or a mistake, goes the careful way (``wire.loads`` and ``parse_program``), which
    names what is wrong; both ways agree on every line they both take (tests/test_run_requests.py).
    """
    line = line.rstrip(b"\r\n")
    try:
        request = _RUN_REQUEST.decode(line)
    except msgspec.DecodeError:
        return None
    if _ENCODER.encode(request) != line or not well_formed(request.program):
        return None
    return request


def hello_request() -> bytes:
    """The harness's hello line."""
    return _ENCODER.encode(HelloRequest(PROTOCOL_VERSION))


def shutdown_request() -> bytes:
    """The harness's last line."""
    return _ENCODER.encode(Shutdown())


def version_mismatch(spoken: object) -> str:
    """The message for an adapter whose hello carries protocol ``spoken`` instead of PROTOCOL_VERSION."""
    text = f"wrong protocol version: the adapter speaks {spoken!r}, the harness speaks {PROTOCOL_VERSION}"
    if isinstance(spoken, int) and not isinstance(spoken, bool) and spoken in CHANGES_SINCE:
        text += f": {CHANGES_SINCE[spoken]}"
    return text


# -- the schema --------------------------------------------------------------------


def protocol_schema() -> dict[str, Any]:
    """The JSON Schema of every message an adapter writes (hello, result, error), generated from the types.

    Stricter than the decoder: a float is a JSON number or one of "inf", "-inf", "nan"; a
    declared op, level, feature, error kind, trace or profile is one the protocol knows.
    """
    _, defs = msgspec.json.schema_components([Union[Hello, Result, ErrorReply]], ref_template="#/$defs/{name}")
    # Dispatch on "type" with if/then, so a validator names the field that is wrong, not just "no branch matched".
    reply = {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": ["hello", "result", "error"]}},
        "allOf": [
            {"if": {"properties": {"type": {"const": tag}}}, "then": {"$ref": f"#/$defs/{name}"}}
            for tag, name in (("hello", "Hello"), ("result", "Result"), ("error", "ErrorReply"))
        ],
    }
    defs = _floats_named(defs)
    hello = defs["Hello"]["properties"]
    hello["protocol"] = {"const": PROTOCOL_VERSION}
    hello["ops"]["items"] = {"enum": list(DECLARABLE_OPS)}
    hello["levels"]["items"] = {"enum": [level.value for level in LEVELS]}
    hello["features"]["items"] = {"enum": list(FEATURES)}
    hello["error_kinds"] = {"type": "array", "items": {"enum": list(ERROR_KINDS)}}
    hello["trace"] = {"enum": [kind.value for kind in TraceKind], "default": TraceKind.FULL.value}
    hello["profile"] = {"enum": [profile.value for profile in Profile], "default": Profile.CONTRACT.value}
    hello["gradients"] = {"enum": [scope.value for scope in GradientScope], "default": GradientScope.ALL.value}
    hello["precision"] = {"enum": [each.value for each in Precision], "default": Precision.FLOAT64.value}
    defs["ErrorInfo"]["properties"]["kind"] = {"enum": list(ERROR_KINDS)}
    defs["ErrorInfo"]["allOf"] = [
        {
            "if": {"properties": {"kind": {"const": kind}}},
            "then": {"required": ["kind", *fields], "propertyNames": {"enum": ["kind", *fields]}},
        }
        for kind, fields in ERROR_FIELDS.items()
    ]
    defs["Float"] = {
        "description": "A binary64: a JSON number, or one of the strings inf, -inf, nan (docs/protocol.md, Numbers).",
        "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://scalar-conformance.invalid/protocol.schema.json",
        "title": f"Scalar autodiff conformance adapter protocol, version {PROTOCOL_VERSION}: the adapter's messages",
        "description": (
            "Generated from conformance/protocol.py (`conformance regen` writes it, `regen --check` checks it). "
            "Validate each line your adapter writes to stdout against this schema."
        ),
        **reply,
        "$defs": defs,
    }


def _floats_named(node: Any) -> Any:
    """The schema with every ``{"type": "number"}`` replaced by a reference to the wire's Float."""
    if isinstance(node, dict):
        if node.get("type") == "number" and set(node) <= {"type", "title", "description"}:
            return {"$ref": "#/$defs/Float"}
        return {key: _floats_named(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_floats_named(item) for item in node]
    return node
