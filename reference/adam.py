"""Adam with a linearly decaying learning rate, the optimiser of docs/contract.md section 11.

``Adam(parameters, total_steps)`` keeps one first and second moment per
parameter (in the order given, which must not change between steps).
``step(index)`` reads every parameter's stored gradient, updates its value,
then zeroes the stored gradient, so the next document's backward starts from
zero instead of adding onto this step's gradient. The update is microGPT's
and the Go port's (``adapters/go/gpt/adam.go``), operation for operation:

    lr_t = lr * (1 - step / total_steps)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    value -= lr_t * (m / (1 - beta1^(step+1))) / (sqrt(v / (1 - beta2^(step+1))) + eps)
"""

from __future__ import annotations

import math
from typing import Sequence

from .node import Node


class Adam:
    """Adam over a fixed list of parameter leaves; lr 0.01, beta1 0.85, beta2 0.99, eps 1e-8 by default."""

    def __init__(
        self,
        parameters: Sequence[Node],
        total_steps: int,
        *,
        lr: float = 0.01,
        beta1: float = 0.85,
        beta2: float = 0.99,
        eps: float = 1e-8,
    ) -> None:
        if total_steps < 1:
            raise ValueError(f"Adam needs at least one step, got total_steps={total_steps}")
        untracked = [p for p in parameters if not p.tracked or p.operands]
        if untracked:
            raise ValueError(f"Adam updates variable leaves only, got {untracked[0]!r}")
        self.parameters = list(parameters)
        self.total_steps = total_steps
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = [0.0] * len(self.parameters)
        self.v = [0.0] * len(self.parameters)

    def step(self, index: int) -> None:
        """Apply update number ``index`` (0-based) from the stored gradients, then zero them."""
        lr = self.lr * (1.0 - index / self.total_steps)
        # Python's float ** is the platform pow; these two numbers are the same for every parameter
        # and only scale the step, so a last-bit difference between platforms cannot matter here.
        c1 = 1.0 - self.beta1 ** (index + 1)
        c2 = 1.0 - self.beta2 ** (index + 1)
        b1, b2, eps = self.beta1, self.beta2, self.eps
        m, v = self.m, self.v
        for i, p in enumerate(self.parameters):
            g = p.grad
            assert g is not None
            m[i] = b1 * m[i] + (1.0 - b1) * g
            v[i] = b2 * v[i] + (1.0 - b2) * (g * g)
            p.value -= lr * (m[i] / c1) / (math.sqrt(v[i] / c2) + eps)
            # zeroing a leaf reaches only that leaf
            p.zero_grad()
