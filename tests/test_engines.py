"""The real engines: their adapters pass the corpus or fail only as listed, and each listed reason is true.

The light engines (micrograd, micrograd-rust, autograd) install from wheels with the dev set-up,
so `make test` runs their adapters on the whole corpus. Each reason in their expected-failures
files is reproduced here on the engine itself, without the adapter, so a reason that stops being
true fails a test. tinygrad (which needs clang) and torch are run by `make engines`; their
reasons are reproduced here when they are installed. docs/engines.md must be what docs/engines.json renders.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conformance.program import parse_program

ROOT = Path(__file__).resolve().parent.parent


def _engines_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engines_tool", ROOT / "tools" / "engines.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_engines_page_is_what_the_committed_json_renders():
    tool = _engines_tool()
    assert (ROOT / "docs" / "engines.md").read_text() == tool.render(tool.load()), "run `python tools/engines.py page`"


def test_the_engines_page_shows_at_least_five_real_engines_with_their_versions():
    rows = [row for row in _engines_tool().load()["engines"] if row.get("available")]
    assert len(rows) >= 5, [row["adapter"] for row in rows]
    assert all(row["version"] and row["run_on"] for row in rows)


@pytest.mark.parametrize(
    ("adapter", "module"), [("micrograd", "micrograd"), ("micrograd-rust", "micrograd_rust"), ("autograd", "autograd")]
)
def test_a_light_engine_passes_the_corpus_or_fails_only_as_its_expected_failures_say(adapter, module):
    pytest.importorskip(module)
    run = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--adapter", adapter, "--timeout", "60"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 failed, 0 errors" in run.stdout and "0 xpassed" in run.stdout, run.stdout[-1000:]


def test_micrograd_rust_divides_by_a_reciprocal_and_has_a_nan_pow_derivative_at_c_0():
    mr = pytest.importorskip("micrograd_rust")
    assert (mr.Value(1.75) / mr.Value(0.375)).data == 4.666666666666666 != 1.75 / 0.375
    a = mr.Value(0.0)
    (a**0.0).backward()
    assert math.isnan(a.grad)


def test_micrograd_rust_computes_tanh_as_micrograd_does_and_loses_it_near_zero():
    mr = pytest.importorskip("micrograd_rust")
    assert mr.Value(1e-17).tanh().data == 0.0
    assert mr.Value(5e-324).tanh().data == 0.0
    negative_zero = mr.Value(-0.0).tanh().data
    assert negative_zero == 0.0 and math.copysign(1.0, negative_zero) == 1.0  # the sign of -0.0 is lost
    for a in (1e-9, 0.3, -2.5):
        assert mr.Value(a).tanh().data == (math.exp(2 * a) - 1) / (math.exp(2 * a) + 1)


def test_micrograd_rust_assigns_the_output_gradient_and_re_propagates_stale_ones():
    mr = pytest.importorskip("micrograd_rust")
    x = mr.Value(2.0)
    square = x * x
    y = square * square  # x**4: d/dx = 32 per pass, 64 after two
    y.backward()
    assert x.grad == 32.0
    y.backward()
    assert y.grad == 1.0  # assigned, not 2
    assert x.grad == 96.0  # the stale 8 of `square` flowed again: 32 + 16 * 4


def test_autograd_splits_the_gradient_of_maximum_at_a_tie():
    anp = pytest.importorskip("autograd.numpy")
    from autograd import grad

    relu = grad(lambda a: anp.maximum(a, 0.0))
    assert relu(0.0) == 0.5
    assert relu(-0.0) == 0.5
    assert relu(1.0) == 1.0


@pytest.fixture
def tinygrad() -> ModuleType:
    module = pytest.importorskip("tinygrad")
    if shutil.which("clang") is None:
        pytest.skip("tinygrad's CPU device needs clang")
    return module


def test_tinygrad_merges_equal_expressions_into_one_node(tinygrad):
    def leaf(v: float):
        return tinygrad.Tensor([v], dtype=tinygrad.dtypes.float64).realize()

    x, c = leaf(3.0), leaf(2.0)
    a, b = x * c, x * c
    assert a.uop is b.uop
    a.backward(gradient=leaf(1.0))
    assert b.grad is not None and b.grad.numpy()[0] == 1.0  # the contract: b is another node, still 0


def test_tinygrad_adds_a_later_backward_into_a_gradient_buffer_several_tensors_share(tinygrad):
    # The reason of the tinygrad expected failure of llm/two-documents [gradients], on the engine itself.
    def leaf(v: float):
        return tinygrad.Tensor([v], dtype=tinygrad.dtypes.float64).realize()

    x, y, z = leaf(2.0), leaf(3.0), leaf(5.0)
    ((x + y) * z).backward(gradient=leaf(1.0))
    assert x.grad.uop is y.grad.uop  # an add hands both operands its own gradient, 5
    x.grad.realize()  # reading it makes that UOp one buffer, which y.grad holds too
    (x * y).backward(gradient=leaf(1.0))  # x.grad.assign(x.grad + 3), y.grad.assign(y.grad + 2): a write into it
    assert x.grad.numpy()[0] == 8.0
    assert y.grad.numpy()[0] == 10.0  # the contract: 7; y's 2 is added to x's 8
    assert x.grad.numpy()[0] == 10.0  # and x's gradient changes with it
    # Nothing read between the backwards: the gradient both get is the seed's own buffer.
    x, y, seed = leaf(2.0), leaf(3.0), leaf(1.0)
    (x + y).backward(gradient=seed)
    assert x.grad.uop is y.grad.uop is seed.uop
    (x * y).backward(gradient=leaf(1.0))
    assert (x.grad.numpy()[0], y.grad.numpy()[0], seed.numpy()[0]) == (4.0, 6.0, 6.0)  # the contract: 4, 3; seed 1


def test_tinygrad_loses_exp_near_overflow_and_tanh_near_zero(tinygrad):
    t = tinygrad.Tensor
    exp = float(t([709.0], dtype=tinygrad.dtypes.float64).exp().numpy()[0])
    assert abs(exp - math.exp(709.0)) > 50 * math.ulp(math.exp(709.0))
    assert float(t([1e-17], dtype=tinygrad.dtypes.float64).tanh().numpy()[0]) == 0.0


def test_the_tinygrad_adapter_answers_a_step_tinygrad_raises_at_with_its_fault_and_skips_its_dependants(tinygrad, monkeypatch):
    # Protocol 2.1 through conformance.serve.by_steps: tanh made to raise, the rest of the case still runs.
    spec = importlib.util.spec_from_file_location("tinygrad_adapter", ROOT / "adapters" / "tinygrad" / "adapter.py")
    assert spec is not None and spec.loader is not None
    adapter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(adapter)

    def broken(self):
        raise RuntimeError("tanh is broken")

    monkeypatch.setattr(tinygrad.Tensor, "tanh", broken)
    program = parse_program(
        [
            {"id": "x", "op": "variable", "value": 0.5},
            {"id": "t", "op": "tanh", "operands": ["x"]},
            {"id": "u", "op": "mul", "operands": ["t", "x"]},
            {"id": "y", "op": "add", "operands": ["x", "x"]},
            {"op": "backward", "output": "u"},
            {"op": "backward", "output": "y"},
        ],
        "the test's program",
    )
    plain = [o.to_json() if hasattr(o, "to_json") else o for o in adapter.run(program)]
    assert plain == [
        {"tracked": True, "value": 0.5},
        {"fault": "RuntimeError: tanh is broken"},
        {"skipped": 1},
        {"tracked": True, "value": 1.0},
        {"skipped": 2},
        {"gradients": {"x": 2.0, "y": 1.0}},
    ]


def test_a_malformed_engines_json_is_named_with_its_file(tmp_path):
    tool = _engines_tool()
    path = tmp_path / "engines.json"
    path.write_text("{not json")
    with pytest.raises(tool.EnginesError, match=f"{path}: not JSON"):
        tool.load(path)
    path.write_text('{"engines": 3}')
    with pytest.raises(tool.EnginesError, match=f"{path}: expected an object with a list under 'engines'"):
        tool.load(path)


def test_micrograd_rust_crashes_with_sigsegv_on_a_chain_200000_deep():
    # The reason of its expected failure on structure/deep-chain-1000000 (the 10,000-deep chain passes).
    pytest.importorskip("micrograd_rust")
    program = (
        "from micrograd_rust import Value\n"
        "x, m = Value(0.5), Value(-1.0)\n"
        "y = x + x\n"
        "for i in range(1, 200_000):\n"
        "    y = y * m if i % 2 else y + x\n"
        "y.backward()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    assert done.returncode == -11, (done.returncode, done.stderr[-500:])
