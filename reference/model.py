"""The tiny GPT of docs/contract.md section 11, built only from the reference's scalar ops.

No derivative is written here: every number of the forward pass is a
``Node`` made by the op table, so ``loss.backward()`` is the engine's own
backward, and a correct gradient of this model is evidence of a correct
engine. The architecture follows microGPT and the Go port
(``adapters/go/gpt``) operation for operation, so the two build the same
graph from the same parameters:

- ``x = wte[token] + wpe[pos]``, then RMSNorm (eps 1e-5, no gain);
- per layer: ``x + attn(rmsnorm(x))`` with causal multi-head attention over a
  KV cache (each position appends its key and value; the logits are
  ``dot(q_h, k_h) / sqrt(head_dim)``), then ``x + fc2(relu(fc1(rmsnorm(x))))``
  with fc1 four times wider than the embedding;
- ``logits = lm_head(x)``; softmax subtracts the row max as a *constant*, so
  no gradient flows through the max (the result is mathematically unchanged);
- the loss is the mean over positions of ``-log p(next token)``.

No biases. Sums are chained left to right from the first term (``dot`` is
``x0*y0 + x1*y1 + ...``), the order the Go port uses. Parameters are
``variable`` leaves that live as long as the model, so the graphs of several
documents share them and their backwards accumulate into one stored gradient.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Iterator, Sequence

import gmpy2

from .node import Node, constant, variable
from .tokenizer import VOCAB_SIZE

#: RMSNorm's epsilon, added to the mean square before the inverse square root.
RMS_EPS = 1e-5

Matrix = list[list[Node]]
"""A weight matrix: one row of parameters per output, so ``linear`` is one dot per row."""


@dataclass(frozen=True)
class GPTConfig:
    """The model's shape. The defaults are the reference width (4,192 parameters)."""

    n_layer: int = 1
    n_embd: int = 16
    n_head: int = 4
    block_size: int = 16
    vocab_size: int = VOCAB_SIZE
    init_std: float = 0.08

    def __post_init__(self) -> None:
        for name in ("n_layer", "n_embd", "n_head", "block_size", "vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPTConfig.{name} must be at least 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: {self.n_embd} embedding dims do not split into {self.n_head} heads")

    @property
    def head_dim(self) -> int:
        """Embedding dims per attention head."""
        return self.n_embd // self.n_head

    def shapes(self) -> list[tuple[str, int, int]]:
        """Every weight matrix as (name, rows, columns), in initialisation order.

        The names are microGPT's state-dict names and the Go port's ``Matrices()``:
        wte, wpe, lm_head, then per layer attn_wq, attn_wk, attn_wv, attn_wo,
        mlp_fc1, mlp_fc2.
        """
        e = self.n_embd
        shapes = [("wte", self.vocab_size, e), ("wpe", self.block_size, e), ("lm_head", self.vocab_size, e)]
        for i in range(self.n_layer):
            shapes += [
                (f"layer{i}.attn_wq", e, e),
                (f"layer{i}.attn_wk", e, e),
                (f"layer{i}.attn_wv", e, e),
                (f"layer{i}.attn_wo", e, e),
                (f"layer{i}.mlp_fc1", 4 * e, e),
                (f"layer{i}.mlp_fc2", e, 4 * e),
            ]
        return shapes

    def parameter_count(self) -> int:
        """How many scalar parameters the model has."""
        return sum(rows * cols for _, rows, cols in self.shapes())


_IEEE_DOUBLE = gmpy2.ieee(64)
_TWO_PI = 2.0 * math.pi


def _gaussians(seed: int) -> Iterator[float]:
    # random.Random(seed).gauss's algorithm (Box-Muller, both values of each pair, the cos one
    # first) with log, cos and sin correctly rounded by MPFR instead of the platform's libm,
    # so the initial weights, and every fixture made from them, have the same bits everywhere.
    # On a platform whose libm is correctly rounded these are exactly random.gauss's numbers.
    uniform = random.Random(seed).random
    while True:
        x2pi = uniform() * _TWO_PI
        g2rad = math.sqrt(-2.0 * float(_IEEE_DOUBLE.log(1.0 - uniform())))
        yield float(_IEEE_DOUBLE.cos(x2pi)) * g2rad
        yield float(_IEEE_DOUBLE.sin(x2pi)) * g2rad


def init_values(config: GPTConfig, seed: int) -> dict[str, list[list[float]]]:
    """The initial weights: Gaussian(0, init_std) draws in a fixed order, as plain floats.

    The order is deterministic and documented: matrix by matrix in
    ``config.shapes()`` order, row by row, column by column, one draw each from
    a Gaussian stream seeded with ``seed`` (see ``_gaussians``).
    """
    draws = _gaussians(seed)
    return {
        name: [[0.0 + next(draws) * config.init_std for _ in range(cols)] for _ in range(rows)]
        for name, rows, cols in config.shapes()
    }


def init_params(config: GPTConfig, seed: int) -> dict[str, Matrix]:
    """The initial weights as ``variable`` leaves, keyed by matrix name (see ``init_values``)."""
    return {name: [[variable(v) for v in row] for row in matrix] for name, matrix in init_values(config, seed).items()}


class GPT:
    """A configuration and its parameters: named matrices of ``variable`` leaves."""

    def __init__(self, config: GPTConfig, params: dict[str, Matrix]) -> None:
        expected = config.shapes()
        if [name for name, _, _ in expected] != list(params):
            raise ValueError(f"GPT: parameters {list(params)} do not match the config's {[n for n, _, _ in expected]}")
        for name, rows, cols in expected:
            if len(params[name]) != rows or any(len(row) != cols for row in params[name]):
                raise ValueError(f"GPT: {name} must be {rows} x {cols}")
        self.config = config
        self.params = params

    @classmethod
    def from_seed(cls, config: GPTConfig, seed: int) -> GPT:
        """A freshly initialised model (``init_params``)."""
        return cls(config, init_params(config, seed))

    @classmethod
    def from_values(cls, config: GPTConfig, values: dict[str, list[list[float]]]) -> GPT:
        """A model whose parameters are variables with the given values (e.g. from a model record)."""
        return cls(config, {name: [[variable(v) for v in row] for row in matrix] for name, matrix in values.items()})

    def named_parameters(self) -> list[tuple[str, Node]]:
        """Every parameter with its name ``matrix[row][column]``, in initialisation order."""
        return [
            (f"{name}[{i}][{j}]", node)
            for name, matrix in self.params.items()
            for i, row in enumerate(matrix)
            for j, node in enumerate(row)
        ]

    def parameters(self) -> list[Node]:
        """Every parameter, matrix by matrix, row by row: the order of Adam's state."""
        return [node for matrix in self.params.values() for row in matrix for node in row]

    def values(self) -> dict[str, list[list[float]]]:
        """The current parameter values as plain floats, keyed by matrix name."""
        return {name: [[node.value for node in row] for row in matrix] for name, matrix in self.params.items()}

    def zero_grad(self) -> None:
        """Reset every parameter's stored gradient to 0.0.

        Each parameter is a leaf, so its own ``zero_grad`` reaches exactly itself;
        a loss's ``zero_grad`` would miss parameters that document did not use.
        """
        for node in self.parameters():
            node.zero_grad()

    def loss(self, tokens: Sequence[int]) -> Node:
        """Mean cross-entropy of predicting ``tokens[t+1]`` from ``tokens[:t+1]``, for t < block_size.

        Builds a fresh graph on the shared parameters and returns its output.
        Raises ValueError for fewer than two tokens or a token outside the
        vocabulary, and the engine's own errors for a non-finite value.
        """
        cfg = self.config
        n = min(len(tokens) - 1, cfg.block_size)
        if n < 1:
            raise ValueError(f"GPT.loss needs at least two tokens, got {len(tokens)}")
        bad = [t for t in tokens[: n + 1] if not 0 <= t < cfg.vocab_size]
        if bad:
            raise ValueError(f"GPT.loss: token {bad[0]} is outside the vocabulary of {cfg.vocab_size}")
        keys: list[list[list[Node]]] = [[] for _ in range(cfg.n_layer)]
        values: list[list[list[Node]]] = [[] for _ in range(cfg.n_layer)]
        total = None
        for pos in range(n):
            probs = softmax(self.logits(tokens[pos], pos, keys, values))
            # cross-entropy at this position: -log p(next token)
            term = probs[tokens[pos + 1]].log().neg()
            total = term if total is None else total.add(term)
        assert total is not None
        return total.div(constant(float(n)))

    def logits(self, token: int, pos: int, keys: list[list[list[Node]]], values: list[list[list[Node]]]) -> list[Node]:
        """The next-token logits at ``pos``; appends this position's keys and values to the per-layer KV cache."""
        cfg = self.config
        p = self.params
        hd = cfg.head_dim
        x = add_vec(p["wte"][token], p["wpe"][pos])
        x = rmsnorm(x)
        for li in range(cfg.n_layer):
            layer = f"layer{li}."
            residual = x
            x = rmsnorm(x)
            q = linear(p[layer + "attn_wq"], x)
            keys[li].append(linear(p[layer + "attn_wk"], x))
            values[li].append(linear(p[layer + "attn_wv"], x))
            scale = constant(math.sqrt(hd))
            attended: list[Node] = []
            for h in range(cfg.n_head):
                lo, hi = h * hd, (h + 1) * hd
                weights = softmax([dot(q[lo:hi], k[lo:hi]).div(scale) for k in keys[li]])
                for j in range(lo, hi):
                    attended.append(chain_sum([w.mul(v[j]) for w, v in zip(weights, values[li])]))
            x = add_vec(linear(p[layer + "attn_wo"], attended), residual)
            residual = x
            hidden = [h.relu() for h in linear(p[layer + "mlp_fc1"], rmsnorm(x))]
            x = add_vec(linear(p[layer + "mlp_fc2"], hidden), residual)
        return linear(p["lm_head"], x)


def chain_sum(terms: Sequence[Node]) -> Node:
    """``((t0 + t1) + t2) + ...``: a left-to-right chain of adds starting from the first term."""
    total = terms[0]
    for term in terms[1:]:
        total = total.add(term)
    return total


def dot(x: Sequence[Node], y: Sequence[Node]) -> Node:
    """``x0*y0 + x1*y1 + ...``, chained from the first product."""
    return chain_sum([a.mul(b) for a, b in zip(x, y)])


def linear(w: Matrix, x: Sequence[Node]) -> list[Node]:
    """A bias-free linear layer: one dot product per row of ``w``."""
    return [dot(row, x) for row in w]


def add_vec(x: Sequence[Node], y: Sequence[Node]) -> list[Node]:
    """Element-wise ``x[i] + y[i]``."""
    return [a.add(b) for a, b in zip(x, y)]


def rmsnorm(x: Sequence[Node]) -> list[Node]:
    """``x * (mean(x^2) + eps)^-0.5``, no gain; the mean square is ``dot(x, x) / len(x)``."""
    mean_square = dot(x, x).div(constant(float(len(x))))
    scale = mean_square.add(constant(RMS_EPS)).pow(-0.5)
    return [xi.mul(scale) for xi in x]


def softmax(logits: Sequence[Node]) -> list[Node]:
    """``exp(l - max) / sum``. The max is a constant leaf: it only keeps exp in range and carries no gradient."""
    shift = constant(max(node.value for node in logits))
    exps = [node.sub(shift).exp() for node in logits]
    total = chain_sum(exps)
    return [e.div(total) for e in exps]
