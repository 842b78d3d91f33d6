"""The example reply of docs/protocol.md, written by ``conformance regen`` from the reference's own run.

The example shows every field of an observation and of the pass record's node and edge
objects, so a new field of the wire types would leave it stale; ``regen`` writes it from the
reference's observations of the document's own example request (the run request above it),
and ``regen --check`` fails when it differs, so the document's example is always the reply
the reference gives.
"""

from __future__ import annotations

import json
from typing import Any

from .execute import run_program
from .program import parse_program
from .protocol import Observation
from .wire import to_json_ready

#: The line before the example reply's fenced block in docs/protocol.md.
MARK = "<!-- the example reply below is written by `conformance regen`: the reference's reply to the run request above -->"
#: How the example run request's fenced block begins.
REQUEST = '```json\n{"type": "run", '


def example_reply(request: dict[str, Any]) -> str:
    """The reference's reply to a run request, one observation (and record entry) per line."""
    observations = run_program(parse_program(request["program"], "docs/protocol.md, the example run request"))
    lines = [f'{{"type": "result", "case": {_dumps(request["case"])}, "observations": [']
    for index, observation in enumerate(observations):
        end = "]}" if index == len(observations) - 1 else ","
        lines.extend(_observation_lines(observation, end))
    return "\n".join(lines)


def _observation_lines(observation: Observation, end: str) -> list[str]:
    data = observation.to_json()
    record = data.pop("pass", None)
    if record is None:
        return [f"  {_dumps(data)}{end}"]
    lines = [f"  {_dumps(data)[:-1]},", f'   "pass": {{"seed": {_dumps(record["seed"])},']
    for key in ("nodes", "edges"):
        rows = record[key]
        lines.append(f'     "{key}": [')
        close = "]," if key == "nodes" else "]}}" + end
        lines.extend(f"       {_dumps(row)}{close if i == len(rows) - 1 else ','}" for i, row in enumerate(rows))
    return lines


def _dumps(value: Any) -> str:
    return json.dumps(to_json_ready(value))


def with_example(text: str) -> str:
    """docs/protocol.md's text with the fenced block after MARK replaced by the reply to its run request."""
    begin = text.index(REQUEST) + len("```json\n")
    request = json.loads(text[begin : text.index("\n```", begin)])
    at = text.index(MARK, begin) + len(MARK)
    start = text.index("```json\n", at) + len("```json\n")
    stop = text.index("\n```", start)
    return text[:start] + example_reply(request) + text[stop:]
