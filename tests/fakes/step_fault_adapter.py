"""A fake engine that raises in one step, as real Python engines do (protocol 2.1 step-level faults).

The reference, a step at a time through ``conformance.serve.by_steps``, with one failure of its own:

- ``refuse-exp``: creating ``exp`` of a value above 0.4 raises ValueError (an engine's own limit): the step
  faults, and every later step that names its result is skipped;
- ``raise-in-backward``: a backward whose output was made by ``exp`` raises RuntimeError: the step faults
  and the case goes on;
- ``skip-wrong``: like ``refuse-exp``, but a later step is answered ``{"skipped": 0}`` naming a step that did
  not fault (a broken 2.1 adapter: the harness names the problem).
"""

from __future__ import annotations

import sys
from typing import Any

from conformance.execute import ReferenceSession
from conformance.program import DECLARABLE_OPS, Program, Step
from conformance.protocol import Observation
from conformance.serve import StepHook, by_steps, serve

HELLO = {
    "engine": {"name": "step-fault-fake", "version": "0", "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "trace", "order"],
    "features": ["seed"],
}
MODE = sys.argv[1] if len(sys.argv) > 1 else "refuse-exp"


def start(records: bool = True) -> StepHook:
    """A fresh reference graph for one case, and its step hook with this fake's failure."""
    session = ReferenceSession()
    made: dict[str, str] = {}

    def step_on(step: Step) -> Observation | dict[str, Any]:
        if step.id is not None:
            if MODE in ("refuse-exp", "skip-wrong") and step.op == "exp" and session.nodes[step.operands[0]].value > 0.4:
                raise ValueError(f"exp of {session.nodes[step.operands[0]].value} is above this engine's limit")
            value, tracked = session.create(step)
            made[step.id] = step.op
            return {"value": value, "tracked": tracked}
        assert step.output is not None
        if step.op == "zero_grad":
            session.zero_grad(step.output)
            return {"gradients": session.gradients()}
        if MODE == "raise-in-backward" and made.get(step.output) == "exp":
            raise RuntimeError("backward through exp is not implemented")
        record = session.backward(step.output, 1.0 if step.seed is None else step.seed, records)
        return Observation(gradients=session.gradients(), pass_=record)

    return step_on


def run(program: Program, records: bool = True) -> list[Any]:
    """The program a step at a time; in ``skip-wrong`` mode, every skipped step names step 0 instead."""
    observations = by_steps(start)(program, records)
    if MODE == "skip-wrong":
        observations = [
            Observation(skipped=0) if isinstance(o, Observation) and o.skipped is not None else o for o in observations
        ]
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))
