"""The tiny GPT on the reference engine: its shape, its gradients against two oracles, its fixtures.

The gradient oracles are independent of backward: central differences of the
loss at reference width, and high-precision (MPFR, 256-bit) forward mode over
every node of a narrow model's graph, which needs only each op's meaning, not
the reference's local derivatives.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import gmpy2
import pytest

from conformance.cases import llm as llm_cases
from conformance.execute import run_program
from conformance.fixture import FIXTURES_DIR, load_fixture
from conformance.wire import loads
from reference import Node, topology
from reference.adam import Adam
from reference.corpus import ELEMENTS, builtin_corpus
from reference.model import GPT, GPTConfig, init_values
from reference.tokenizer import BOS, TokenError, decode, encode

RECORD = llm_cases.record_path(FIXTURES_DIR)
HIGH = gmpy2.context(precision=256)


def test_the_reference_width_has_4192_parameters():
    config = GPTConfig()
    assert (config.n_layer, config.n_embd, config.n_head, config.block_size, config.vocab_size) == (1, 16, 4, 16, 27)
    assert config.parameter_count() == 4192
    assert len(GPT.from_seed(config, 0).parameters()) == 4192


def test_the_tokenizer_wraps_a_document_in_boundary_tokens_and_lowercases_it():
    assert encode("emma") == [BOS, 4, 12, 12, 0, BOS] == encode("Emma")
    assert decode(encode("hydrogen")) == "hydrogen"
    with pytest.raises(TokenError, match=r"'2' at column 4"):
        encode("bob2")


def test_the_builtin_corpus_is_the_118_elements_and_every_name_tokenizes():
    assert len(builtin_corpus()) == len(set(ELEMENTS)) == 118
    assert all(len(encode(name)) >= 3 for name in builtin_corpus())


def test_initialisation_is_seeded_gaussian_in_the_documented_order():
    config = GPTConfig()
    values = init_values(config, 42)
    assert list(values) == [name for name, _, _ in config.shapes()]
    assert values == init_values(config, 42) != init_values(config, 43)
    # The same draws as random.gauss (which uses the platform's libm): equal within an ulp or so.
    rng = random.Random(42)
    flat = [v for matrix in values.values() for row in matrix for v in row]
    for v in flat[:200]:
        assert math.isclose(v, rng.gauss(0.0, 0.08), rel_tol=1e-15, abs_tol=1e-300)
    assert 0.07 < (sum(v * v for v in flat) / len(flat)) ** 0.5 < 0.09


def test_the_initial_loss_is_near_uniform_prediction():
    loss = GPT.from_seed(GPTConfig(), 42).loss(encode("emma"))
    assert abs(loss.value - math.log(27)) < 0.3


def _largest_gradient(matrix: list[list[Node]]) -> tuple[int, int, int]:
    """(row, column, number of zero-gradient weights skipped) of the weight with the largest |gradient|."""
    best, zeros = None, 0
    for i, row in enumerate(matrix):
        for j, node in enumerate(row):
            if node.grad == 0.0:
                zeros += 1
            elif best is None or abs(node.grad or 0.0) > abs(matrix[best[0]][best[1]].grad or 0.0):
                best = (i, j)
    assert best is not None, "every weight has gradient exactly 0"
    return best[0], best[1], zeros


@pytest.mark.parametrize("matrix", ["layer0.attn_wq", "layer0.mlp_fc1"])
def test_a_weight_gradient_at_reference_width_matches_central_differences(matrix):
    model = GPT.from_seed(GPTConfig(), 42)
    tokens = encode("emma")
    model.loss(tokens).backward()
    i, j, zeros_skipped = _largest_gradient(model.params[matrix])
    weight = model.params[matrix][i][j]
    analytic, w = weight.grad, weight.value
    step = 2.0**-20
    weight.value = w + step
    plus = model.loss(tokens).value
    weight.value = w - step
    minus = model.loss(tokens).value
    weight.value = w
    numerical = (plus - minus) / (2 * step)
    assert analytic != 0.0
    # measured: relative differences of a few 1e-9 (truncation and rounding of the difference quotient)
    where = f"{matrix}[{i}][{j}] ({zeros_skipped} zero-gradient weights skipped)"
    assert abs(analytic - numerical) <= 1e-6 * max(abs(analytic), abs(numerical)), (where, analytic, numerical)


def _forward_mode(output: Node, parameters: list[Node]) -> list[float]:
    """d(output)/d(parameter) for every parameter, by vector dual numbers in 256-bit MPFR over output's graph."""
    index = {p: k for k, p in enumerate(parameters)}
    size = len(parameters)
    zero = [gmpy2.mpfr(0)] * size
    value: dict[Node, Any] = {}
    tangent: dict[Node, list[Any]] = {}
    with gmpy2.context(HIGH):
        for node in topology(output):
            op = node.operation
            if op in ("variable", "constant"):
                value[node] = gmpy2.mpfr(node.value)
                tangent[node] = zero
                if node in index:
                    tangent[node] = [gmpy2.mpfr(1 if k == index[node] else 0) for k in range(size)]
                continue
            a, da = value[node.operands[0]], tangent[node.operands[0]]
            if op in ("add", "sub", "mul", "div"):
                b, db = value[node.operands[1]], tangent[node.operands[1]]
            if op == "add":
                v, d = a + b, [x + y for x, y in zip(da, db)]
            elif op == "sub":
                v, d = a - b, [x - y for x, y in zip(da, db)]
            elif op == "mul":
                v, d = a * b, [x * b + a * y for x, y in zip(da, db)]
            elif op == "div":
                v = a / b
                d = [(x - v * y) / b for x, y in zip(da, db)]
            elif op == "neg":
                v, d = -a, [-x for x in da]
            elif op == "exp":
                v = gmpy2.exp(a)
                d = [v * x for x in da]
            elif op == "log":
                v, d = gmpy2.log(a), [x / a for x in da]
            elif op == "pow":
                c = gmpy2.mpfr(node.exponent)
                v = a**c
                factor = c * a ** (c - 1)
                d = [factor * x for x in da]
            elif op == "relu":
                assert a != 0, "a pre-activation sits exactly on the ReLU kink"
                v, d = (a, da) if a > 0 else (gmpy2.mpfr(0), zero)
            else:
                raise AssertionError(f"the model does not use {op}")
            value[node], tangent[node] = v, d
        return [float(x) for x in tangent[output]]


def test_every_parameter_gradient_of_a_narrow_model_matches_high_precision_forward_mode():
    config = GPTConfig(n_layer=1, n_embd=4, n_head=2, block_size=3)
    model = GPT.from_seed(config, 3)
    loss = model.loss(encode("neon"))
    loss.backward()
    parameters = model.parameters()
    exact = _forward_mode(loss, parameters)
    scale = max(abs(g) for g in exact)
    assert scale > 0.01
    reached = 0
    for (name, node), g in zip(model.named_parameters(), exact):
        # Each gradient sums many float products of both signs, so bound its error against the largest
        # gradient: measured 3e-16 of it, a wrong local derivative or a lost edge moves it by far more.
        assert abs(node.grad - g) <= 1e-14 * scale, (name, node.grad, g)
        reached += g != 0.0
    assert reached > len(parameters) // 2


def test_two_documents_accumulate_into_the_same_parameters_and_zero_grad_resets_them():
    config = GPTConfig()
    alone = []
    for document in ("emma", "neon"):
        model = GPT.from_seed(config, 7)
        model.loss(encode(document)).backward()
        alone.append([p.grad for p in model.parameters()])
    model = GPT.from_seed(config, 7)
    for document in ("emma", "neon"):
        model.loss(encode(document)).backward()
    assert [p.grad for p in model.parameters()] == [a + b for a, b in zip(*alone)]
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())


def test_a_few_adam_steps_lower_the_loss_and_leave_the_gradients_zeroed():
    model = GPT.from_seed(GPTConfig(), 42)
    tokens = encode("emma")
    steps = 5
    optimiser = Adam(model.parameters(), steps)
    first = None
    for step in range(steps):
        loss = model.loss(tokens)
        loss.backward()
        optimiser.step(step)
        first = loss.value if first is None else first
        assert all(p.grad == 0.0 for p in model.parameters())
    assert model.loss(tokens).value < first - 0.3


def _fixture_run(name: str):
    fixture = load_fixture(FIXTURES_DIR / "llm" / f"{name}.json")
    observations = run_program(fixture.program, record_pass=False)
    ids = [step.id for step in fixture.program]
    return fixture, observations, ids


def test_the_one_document_program_reproduces_the_models_loss_and_gradients():
    fixture, observations, ids = _fixture_run("one-document")
    model = GPT.from_seed(llm_cases.SMALL, llm_cases.SMALL_SEED)
    loss = model.loss(encode("tin"))
    loss.backward()
    backward = fixture.program[-1]
    assert backward.op == "backward"
    assert observations[ids.index(backward.output)].value == loss.value
    gradients = observations[-1].gradients
    assert [gradients[f"p{k}"] for k in range(len(model.parameters()))] == [p.grad for p in model.parameters()]
    assert fixture.comparison.mode == "bounds" and "exp" in fixture.comparison.reason


def test_the_two_documents_program_accumulates_then_zeroes():
    fixture, observations, ids = _fixture_run("two-documents")
    model = GPT.from_seed(llm_cases.SMALL, llm_cases.SMALL_SEED)
    gradient_steps = [k for k, step in enumerate(fixture.program) if step.id is None]
    assert [fixture.program[k].op for k in gradient_steps] == ["backward", "backward", "zero_grad", "zero_grad"]
    parameters = model.parameters()
    for document, k in zip(("tin", "gold"), gradient_steps[:2]):
        loss = model.loss(encode(document))
        loss.backward()
        assert observations[ids.index(fixture.program[k].output)].value == loss.value
        assert [observations[k].gradients[f"p{j}"] for j in range(len(parameters))] == [p.grad for p in parameters]
    after_first_zero = observations[gradient_steps[2]].gradients
    assert any(after_first_zero[f"p{j}"] != 0.0 for j in range(len(parameters))), "tin-only parameters keep their gradient"
    assert all(g == 0.0 for g in observations[gradient_steps[3]].gradients.values())


def _record():
    return loads(RECORD.read_text(encoding="utf-8"))


def test_the_model_record_matches_what_the_model_computes():
    record = _record()
    config = GPTConfig(**{k: v for k, v in record["config"].items() if k != "rms_eps"})
    assert config == llm_cases.RECORD_CONFIG
    values = {p["name"]: p["values"] for p in record["parameters"]}
    assert values == init_values(config, record["init"]["seed"])
    assert record["tokens"] == encode(record["document"])
    model = GPT.from_values(config, values)
    loss = model.loss(record["tokens"])
    loss.backward()
    assert loss.value == record["expected"]["loss"]
    expected = {g["name"]: g["values"] for g in record["expected"]["gradients"]}
    assert expected == {name: [[node.grad for node in row] for row in matrix] for name, matrix in model.params.items()}


def test_the_model_record_is_not_read_as_a_case_fixture():
    from conformance.fixture import fixture_paths

    assert RECORD.exists()
    assert RECORD not in fixture_paths()
    assert json.loads(RECORD.read_text())["comparison"]["reason"]


def test_torch_float64_computes_the_same_loss_and_gradients_as_the_model_record():
    try:
        import torch
    except ImportError as error:
        pytest.skip(f"PyTorch is not installed ({error}); the float64 torch cross-check needs it")
    record = _record()
    cfg = record["config"]
    params = {p["name"]: torch.tensor(p["values"], dtype=torch.float64, requires_grad=True) for p in record["parameters"]}
    tokens = record["tokens"]
    n_embd, n_head = cfg["n_embd"], cfg["n_head"]
    head_dim = n_embd // n_head

    def rmsnorm(x):
        return x * ((x * x).mean() + cfg["rms_eps"]) ** -0.5

    positions = min(len(tokens) - 1, cfg["block_size"])
    keys: list[list] = [[] for _ in range(cfg["n_layer"])]
    values: list[list] = [[] for _ in range(cfg["n_layer"])]
    losses = []
    for pos in range(positions):
        x = rmsnorm(params["wte"][tokens[pos]] + params["wpe"][pos])
        for li in range(cfg["n_layer"]):
            layer = f"layer{li}."
            residual = x
            x = rmsnorm(x)
            q = params[layer + "attn_wq"] @ x
            keys[li].append(params[layer + "attn_wk"] @ x)
            values[li].append(params[layer + "attn_wv"] @ x)
            k_all, v_all = torch.stack(keys[li]), torch.stack(values[li])
            heads = []
            for h in range(n_head):
                span = slice(h * head_dim, (h + 1) * head_dim)
                weights = torch.softmax(k_all[:, span] @ q[span] / head_dim**0.5, dim=0)
                heads.append(weights @ v_all[:, span])
            x = params[layer + "attn_wo"] @ torch.cat(heads) + residual
            residual = x
            x = params[layer + "mlp_fc2"] @ torch.relu(params[layer + "mlp_fc1"] @ rmsnorm(x)) + residual
        logits = params["lm_head"] @ x
        losses.append(-torch.log_softmax(logits, dim=0)[tokens[pos + 1]])
    loss = torch.stack(losses).mean()
    loss.backward()

    def close(a: float, b: float) -> bool:
        # 1e-10 relative; the tiny absolute floor only covers gradients that cancel to about zero.
        return abs(a - b) <= 1e-10 * max(abs(a), abs(b)) + 1e-14

    assert close(loss.item(), record["expected"]["loss"])
    for gradient in record["expected"]["gradients"]:
        got = params[gradient["name"]].grad.tolist()
        for row_got, row_expected in zip(got, gradient["values"]):
            for a, b in zip(row_got, row_expected):
                assert close(a, b), (gradient["name"], a, b)
