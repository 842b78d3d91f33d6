"""The adapter side of the protocol, for adapters written in Python.

``serve`` reads requests from stdin and answers them, turning any exception
raised while running a case into a protocol ``error`` reply, so one bad case
never takes the adapter down. The python adapter, the micrograd and torch
adapters and the catalogue of broken engines all use it; each supplies only
its engine description and a function from a program to observations.

The protocol stream is kept safe by default: ``serve`` writes its replies to a
private copy of the process's stdout and points file descriptor 1 and
``sys.stdout`` at stderr, so whatever the engine or a library prints (a
``print()``, a C extension's ``printf``) shows on stderr instead of corrupting
the harness's replies.
"""

from __future__ import annotations

import inspect
import operator
import os
import sys
import traceback
from typing import Any, Callable, Optional, Sequence, TextIO

from .optable import HARNESS_OPS
from .program import Program, ProgramError, Step, parse_program
from .protocol import PROTOCOL_VERSION, Observation, Result, decode_run_request, encode_result
from .wire import dumps_line, loads

#: Each op as Python spells it on an operator-overloading engine's values (each row's ``python`` in the harness's
#: op table, conformance/optable.py: the operator for add, sub, mul, div and neg, the method of the same name for
#: the others), and detach's method; pow takes its exponent apart.
#: The wrappers of micrograd, micrograd-rust, tinygrad, torch and autograd start from it.
PYTHON_OPS: dict[str, Callable[..., Any]] = {
    **{name: row.python for name, row in HARNESS_OPS.items() if row.python is not None},
    "detach": operator.methodcaller("detach"),
}

#: From a program to one observation per step: typed, or plain data in the wire's shape. A function of two
#: parameters also gets the request's ``records``: when False the harness reads no pass record, so a
#: backward's may be left out (and need not be built). One of one parameter is called with the program only.
RunCase = (
    Callable[[Program, bool], Sequence[Observation | dict[str, Any]]]
    | Callable[[Program], Sequence[Observation | dict[str, Any]]]
)


#: One step on an engine that keeps its nodes between steps: the step's observation, typed or as plain data.
StepHook = Callable[[Step], Observation | dict[str, Any]]


def by_steps(start: Callable[[bool], StepHook]) -> Callable[[Program, bool], list[Observation | dict[str, Any]]]:
    """A ``run_case`` for ``serve`` from a hook that runs one step (protocol 2.1, step-level faults).

    ``start(records)`` begins a case on a fresh engine and returns the hook for its steps. An exception the hook
    raises becomes that step's ``{"fault": "Type: message"}`` (its traceback goes to stderr) and the case goes on;
    a later step that names an id whose creation faulted, or was skipped itself, is answered
    ``{"skipped": k}`` (k: that creating step) without calling the hook; both come typed (``Observation``).
    So an engine's own ZeroDivisionError, RecursionError or refusal costs the steps that depend on it, not the case.
    """

    def run_case(program: Program, records: bool = True) -> list[Observation | dict[str, Any]]:
        hook = start(records)
        observations: list[Observation | dict[str, Any]] = []
        missing: dict[str, int] = {}  # an id the engine did not create -> the step that should have
        for index, step in enumerate(program):
            named = (*step.operands, *((step.output,) if step.output is not None else ()))
            depends = next((missing[name] for name in named if name in missing), None)
            if depends is not None:
                observations.append(Observation(skipped=depends))
            else:
                try:
                    observations.append(hook(step))
                    continue
                except Exception as error:  # noqa: BLE001 - the engine's failure is this step's fault
                    traceback.print_exc(file=sys.stderr)
                    observations.append(
                        Observation(fault=f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
                    )
            if step.id is not None:
                missing[step.id] = index
        return observations

    return run_case


def serve(hello: dict[str, Any], run_case: RunCase, stdin: Optional[TextIO] = None, stdout: Optional[TextIO] = None) -> int:
    """Answer protocol requests until shutdown or end of input; returns the exit status.

    ``hello`` holds the handshake fields ``engine``, ``ops``, ``levels``, ``features`` and, optionally, ``profile``.
    Without an explicit ``stdout``, the replies go to the real stdout and everything else printed to it goes to
    stderr (``protect_stdout``).
    """
    stdin = stdin or sys.stdin
    stdout = stdout or protect_stdout()
    takes_records = _takes_records(run_case)

    def reply(message: dict[str, Any]) -> None:
        stdout.write(dumps_line(message) + "\n")
        stdout.flush()

    def run_typed(case: str, program: Program, records: bool) -> None:
        try:
            observations = list(run_case(program, records) if takes_records else run_case(program))  # type: ignore[call-arg]
            typed = [item for item in observations if isinstance(item, Observation)]
            if len(typed) == len(observations):
                stdout.write(encode_result(Result(case, typed)).decode() + "\n")
                stdout.flush()
            else:  # plain data, or typed and plain mixed (``by_steps`` types its faults): the plain data's encoding
                plain = [item.to_json() if isinstance(item, Observation) else item for item in observations]
                reply({"type": "result", "case": case, "observations": plain})
        except ProgramError as error:
            reply({"type": "error", "case": case, "message": str(error)})
        except Exception as error:  # noqa: BLE001 - any engine failure is this case's error
            traceback.print_exc(file=sys.stderr)
            reply({"type": "error", "case": case, "message": f"{type(error).__name__}: {error}"})

    for line in stdin:
        if not line.strip():
            continue
        typed = decode_run_request(line.encode())  # the harness's own requests: typed in one go
        if typed is not None:
            run_typed(typed.case, typed.program, typed.records)
            continue
        try:
            request = loads(line)
        except ValueError as error:
            print(f"adapter: ignoring a request that is not JSON: {error}", file=sys.stderr)
            continue
        kind = request.get("type") if isinstance(request, dict) else None
        if kind == "hello":
            reply({"type": "hello", "protocol": PROTOCOL_VERSION, **hello})
        elif kind == "run":
            case = request.get("case", "")
            try:
                program = parse_program(request.get("program"), f"case {case}")
            except ProgramError as error:
                reply({"type": "error", "case": case, "message": str(error)})
                continue
            run_typed(case, program, request.get("records", True) is not False)
        elif kind == "shutdown":
            return 0
        else:
            print(f"adapter: unknown request type {kind!r}", file=sys.stderr)
    return 0


def protect_stdout() -> TextIO:
    """A text stream on a private copy of stdout, for the protocol; fd 1 and ``sys.stdout`` then go to stderr.

    ``print()`` writes to ``sys.stdout`` and native code writes to file descriptor 1: both now reach stderr,
    which the harness shows, and only what is written to the returned stream reaches the harness. ``serve``
    calls it itself; an adapter whose engine prints when imported calls it first and hands the stream to
    ``serve(..., stdout=stream)``.
    """
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(protocol, "w", encoding="utf-8", newline="\n")


def _takes_records(run_case: RunCase) -> bool:
    """Whether ``run_case`` takes a second positional parameter (the request's ``records``)."""
    try:
        parameters = inspect.signature(run_case).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature: the program only
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)
