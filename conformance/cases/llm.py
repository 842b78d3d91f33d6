"""The tiny GPT as fixtures (docs/contract.md section 11): op programs under ``llm/`` and a model-level record.

Two op-program cases prove a port's engine computes the model's loss and
every parameter's gradient: ``llm/one-document`` (one forward and backward)
and ``llm/two-documents`` (two documents on the same parameters, backward on
each in turn so the second accumulates onto the first, then zero_grad of
each). They use a narrow model (``SMALL``: 4 embedding dims, 2 heads, block
size 4, the full 27-symbol vocabulary) because a fixture lists every node's
value and gradient; the reference width would make each file tens of MB.
They check values and gradients only: their pass records would be larger still.

The model-level record (``fixtures/llm-records/reference-width.json``) is
not an op program. It gives the reference-width config, every parameter by
name, a document and its tokens, and the expected loss and gradients, so a
port's *own* model code (e.g. ``adapters/go/gpt``) can be checked against the
reference. ``extra_files`` produces it for ``conformance regen``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import reference
from reference.model import GPT, RMS_EPS, GPTConfig
from reference.tokenizer import BOS, encode

from ..fixture import RECORDS_DIR, canonical_text
from ..llm import ProgramRecorder
from .case import Case

GENERATOR = "conformance.cases.llm"

#: The narrow model of the op-program fixtures.
SMALL = GPTConfig(n_layer=1, n_embd=4, n_head=2, block_size=4)
SMALL_SEED = 1
#: The record's model: reference width.
RECORD_CONFIG = GPTConfig()
RECORD_SEED = 42
RECORD_DOCUMENT = "emma"
#: Where the model-level record lives, relative to the fixtures folder.
RECORD_NAME = "reference-width.json"


def _parameter_ids(config: GPTConfig) -> str:
    ranges = []
    start = 0
    for name, rows, cols in config.shapes():
        ranges.append(f"{name} ({rows}x{cols}) p{start}-p{start + rows * cols - 1}")
        start += rows * cols
    return ", ".join(ranges)


def _describe(config: GPTConfig, seed: int) -> str:
    return (
        f"The tiny GPT of docs/contract.md section 11 at {config.n_layer} layer, {config.n_embd} embedding dims, "
        f"{config.n_head} heads, "
        f"block size {config.block_size}, vocabulary {config.vocab_size} (init seed {seed}). Parameters, row by row: "
        f"{_parameter_ids(config)}; c<k> are constants, n<k> operation results."
    )


def one_document_case() -> Case:
    """Parameters, the graph of one document's loss, backward: loss and every parameter's gradient."""
    model = GPT.from_seed(SMALL, SMALL_SEED)
    recorder = ProgramRecorder(model.parameters())
    loss = model.loss(encode("tin"))
    recorder.graph(loss)
    recorder.backward(loss)
    return Case(
        "llm/one-document",
        f"One training document 'tin': forward to the mean cross-entropy, then backward. {_describe(SMALL, SMALL_SEED)}",
        recorder.program("llm/one-document"),
        f"{GENERATOR}:one_document_case",
        levels=("values", "gradients"),
    )


def two_documents_case() -> Case:
    """Two documents on shared parameters: backward each in turn (accumulating), then zero_grad each."""
    model = GPT.from_seed(SMALL, SMALL_SEED)
    recorder = ProgramRecorder(model.parameters())
    losses = []
    for document in ("tin", "gold"):
        loss = model.loss(encode(document))
        recorder.graph(loss)
        recorder.backward(loss)
        losses.append(loss)
    for loss in reversed(losses):
        recorder.zero_grad(loss)
    return Case(
        "llm/two-documents",
        "Two documents, 'tin' then 'gold' (6 tokens, cut to the block size of 4 positions), on the same parameters: "
        "backward on each in turn, so the second adds onto the first's stored gradients, then zero_grad from the "
        "second loss (parameters only the first reaches keep their gradient) and from the first. " + _describe(SMALL, SMALL_SEED),
        recorder.program("llm/two-documents"),
        f"{GENERATOR}:two_documents_case",
        levels=("values", "gradients"),
    )


def cases() -> list[Case]:
    """Every op-program case of the family."""
    return [one_document_case(), two_documents_case()]


# -- the model-level record -------------------------------------------------------------------

#: Tolerance of the model-level record, for a port's own model code on its own libm. Measured
#: when it was made: the Go port's gpt package matched the loss bit for bit and every gradient
#: within 1.3e-13 relative (2.8e-16 absolute).
RECORD_COMPARISON = {
    "mode": "tolerance",
    "reason": "a port's own model may take exp, log and pow from its libm (within an ulp or so of the correctly rounded "
    "reference) and may sum in another order (a vectorised dot product, a sum that starts from 0); those "
    "differences flow through softmax, RMSNorm and attention, and a gradient that sums terms of both signs loses "
    "relative precision, hence relative 1e-10 plus an absolute floor of 1e-14 (the largest gradient here is "
    "about 0.5; the Go port's gpt package measured 1.3e-13 relative)",
    "rel": 1e-10,
    "abs": 1e-14,
}

ARCHITECTURE = (
    "x = wte[token] + wpe[pos]; x = rmsnorm(x); per layer: r = x; x = rmsnorm(x); q, k, v = wq x, wk x, wv x "
    "(k and v appended to the layer's KV cache); per head h: logits_t = dot(q_h, k_t,h) / sqrt(head_dim), "
    "w = softmax(logits), out_h[j] = sum_t w_t v_t[j]; x = wo out + r; r = x; x = fc2 relu(fc1 rmsnorm(x)) + r; "
    "logits = lm_head x. rmsnorm(x) = x * (dot(x, x) / n + rms_eps)^-0.5, no gain; softmax(l) = exp(l - max) / sum, "
    "max a constant; a matrix row is one output, linear(w, x)[i] = dot(w[i], x); dot and sums chain left to right "
    "from the first term; no biases. loss = sum over positions t < min(len(tokens) - 1, block_size) of "
    "-log softmax(logits_t)[tokens[t+1]], divided by the number of positions."
)


def model_record() -> dict[str, Any]:
    """The record's data: config, parameters by name, document, tokens, expected loss and gradients."""
    config = RECORD_CONFIG
    model = GPT.from_seed(config, RECORD_SEED)
    tokens = encode(RECORD_DOCUMENT)
    loss = model.loss(tokens)
    loss.backward()
    return {
        "format": 1,
        "kind": "llm-model-record",
        "description": (
            "The tiny GPT at reference width on one document: a port's own model code, given these parameters "
            "and tokens, must compute this loss and these stored gradients after one backward."
        ),
        "config": {
            "n_layer": config.n_layer,
            "n_embd": config.n_embd,
            "n_head": config.n_head,
            "block_size": config.block_size,
            "vocab_size": config.vocab_size,
            "rms_eps": RMS_EPS,
        },
        "architecture": ARCHITECTURE,
        "init": {
            "seed": RECORD_SEED,
            "std": config.init_std,
            "method": "reference.model.init_values: random.Random(seed).gauss's Box-Muller draws with correctly rounded "
            "log, cos and sin, times std, matrix by matrix in the order below, row by row (for information only: "
            "the parameter values below are what a port loads)",
        },
        "tokenizer": {"letters": "a-z are tokens 0-25", "bos": BOS},
        "document": RECORD_DOCUMENT,
        "tokens": tokens,
        "comparison": dict(RECORD_COMPARISON),
        "parameters": [
            {"name": name, "shape": [len(matrix), len(matrix[0])], "values": [[node.value for node in row] for row in matrix]}
            for name, matrix in model.params.items()
        ],
        "expected": {
            "loss": loss.value,
            "gradients": [
                {"name": name, "values": [[node.grad for node in row] for row in matrix]} for name, matrix in model.params.items()
            ],
        },
        "provenance": {"reference_version": reference.__version__, "generator": f"{GENERATOR}:model_record"},
    }


def record_text(record: dict[str, Any]) -> str:
    """Deterministic JSON in the fixtures' canonical layout: one matrix row per line."""
    return canonical_text(record)


def record_path(root: Path) -> Path:
    """Where the model-level record lives under a fixtures folder."""
    return root / RECORDS_DIR / RECORD_NAME


def extra_files(root: Path, generated: Mapping[Path, str]) -> dict[Path, str]:
    """Generated files under root that are not case fixtures: the model-level record.

    The record belongs to this family, so it comes with the family: when
    ``generated`` (the case fixtures just generated) holds no ``llm/`` case, as in
    a fuzzer saving one regression case, there is nothing extra.
    """
    if not any(path.parent == root / "llm" for path in generated):
        return {}
    return {record_path(root): record_text(model_record())}
