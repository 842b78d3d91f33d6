"""The JSON float encoding shared by fixtures and the adapter protocol (docs/fixtures.md).

Finite numbers are written as the shortest decimal that round-trips (Python's
float repr), non-finite ones as the strings ``"inf"``, ``"-inf"`` and ``"nan"``,
and negative zero keeps its sign. Reading accepts ``-0`` written as an integer
(Go's encoder does that) as negative zero.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class WireError(ValueError):
    """A value that is not valid in the wire encoding; the message says which and where."""


def encode_float(value: float) -> Any:
    """A float as it appears in JSON: itself when finite, else its string name."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def decode_float(raw: Any, where: str) -> float:
    """Read a JSON number or non-finite string as a float; ``where`` names the field for errors."""
    if isinstance(raw, bool) or raw is None:
        raise WireError(f"{where}: expected a number, got {json.dumps(raw)}")
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str) and raw in NON_FINITE:
        return NON_FINITE[raw]
    raise WireError(f'{where}: expected a number or one of "inf", "-inf", "nan", got {json.dumps(raw)}')


def misspelt_non_finite(text: str) -> bool:
    """Whether a string where a float goes names inf or nan in a spelling other than the wire's ("Infinity", "NaN")."""
    if text in NON_FINITE:
        return False
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def wire_word(token: str) -> str:
    """The wire's spelling of the non-finite float a token names: "inf", "-inf" or "nan"."""
    bare = token.strip().strip('"').lower()
    if "nan" in bare:
        return "nan"
    return "-inf" if bare.startswith("-") else "inf"


def spelling_problem(token: str, bare: bool = False) -> str:
    """What is wrong with a non-finite float written as ``token``: a JSON string's content, or a ``bare`` token."""
    word = wire_word(token)
    written = f"the bare token {token}" if bare else json.dumps(token)
    return (
        f"{written} is not how the protocol writes {word}: write the string {json.dumps(word)} "
        '(docs/protocol.md, "Numbers": inf, -inf and nan are the strings "inf", "-inf" and "nan")'
    )


def to_json_ready(obj: Any) -> Any:
    """Recursively replace non-finite floats by their string names."""
    if isinstance(obj, float):
        return encode_float(obj)
    if isinstance(obj, dict):
        return {key: to_json_ready(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json_ready(value) for value in obj]
    return obj


def dumps_line(obj: Any) -> str:
    """One compact JSON line (no newline) in the wire encoding."""
    return json.dumps(to_json_ready(obj), separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def _parse_int(text: str) -> Any:
    # "-0" is negative zero written by an encoder that drops ".0"; keep its sign.
    return -0.0 if text == "-0" else int(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f'{name} is not valid JSON; write non-finite numbers as "inf", "-inf" or "nan"')


def loads(text: str) -> Any:
    """Parse JSON text, keeping -0 as negative zero and rejecting NaN/Infinity literals."""
    return json.loads(text, parse_int=_parse_int, parse_constant=_reject_constant)


def load_json_file(path: Path, error: type[Exception], source: str = "") -> Any:
    """A JSON file's data (see ``loads``), or ``error("<source>: ...")`` saying why it cannot be read."""
    where = source or str(path)
    try:
        return loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as problem:
        raise error(f"{where}: cannot read: {problem}") from None
    except ValueError as problem:
        raise error(f"{where}: not valid JSON: {problem}") from None


def float_bits_equal(a: float, b: float) -> bool:
    """Bit equality, except that every nan equals every nan: the `exact` comparison."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def ulp_distance(a: float, b: float) -> float:
    """How many binary64 values lie between a and b (0 for equal bits; inf if one is nan or inf)."""
    if float_bits_equal(a, b):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return float(abs(_ordinal(a) - _ordinal(b)))


def _ordinal(x: float) -> int:
    # Map doubles to integers so that adjacent doubles differ by one; -0.0 and 0.0 are one apart.
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF) - 1
