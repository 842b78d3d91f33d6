"""The reference's sigmoid and sqrt against oracles of their own (docs/contract.md section 4).

sigmoid's value is checked against MPFR at 1000 bits by another formula, e**a / (1 + e**a),
rounded once to binary64 with subnormals; its derivative is s * (1 - s) from the rounded s.
sqrt's value is the IEEE root and its derivative 0.5 / r, bit for bit 1 / (2 r). The creation
errors are the contract's: sqrt of a negative is non-finite-result, of +-0.0 a non-finite
local derivative; sigmoid of a finite operand never raises.
"""

from __future__ import annotations

import math

import gmpy2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import NonFiniteLocalDerivative, NonFiniteResult, variable

_ORACLE = gmpy2.context(precision=1000, emax=2**30, emin=-(2**30))
_BINARY64 = gmpy2.ieee(64)


def _oracle_sigmoid(a: float) -> float:
    """e**a / (1 + e**a) at 1000 bits, rounded once to binary64 (subnormals included)."""
    with gmpy2.context(_ORACLE):
        e = gmpy2.exp(gmpy2.mpfr(a))
        exact = e / (1 + e)
    return float(_BINARY64.plus(exact))


operands = st.floats(min_value=-800.0, max_value=800.0, allow_nan=False)


@given(operands)
def test_sigmoid_is_correctly_rounded_and_its_derivative_is_s_times_one_minus_s(a: float) -> None:
    node = variable(a).sigmoid()
    s = _oracle_sigmoid(a)
    assert node.value == s and math.copysign(1.0, node.value) == 1.0
    assert node.local_derivatives == (s * (1.0 - s),)


@pytest.mark.parametrize(
    ("a", "expected"),
    [(0.0, 0.5), (-0.0, 0.5), (37.0, 1.0 - 2.0**-53), (40.0, 1.0), (-745.0, 5e-324), (-746.0, 0.0)],
)
def test_sigmoid_at_its_special_points(a: float, expected: float) -> None:
    assert variable(a).sigmoid().value == expected


@given(st.floats(min_value=0.0, max_value=1.7e308, allow_nan=False, exclude_min=True))
def test_sqrt_is_the_ieee_root_and_its_derivative_half_its_reciprocal(a: float) -> None:
    node = variable(a).sqrt()
    r = math.sqrt(a)
    assert node.value == r
    assert node.local_derivatives == (0.5 / r,)
    assert node.local_derivatives == (1.0 / (2.0 * r),)


@given(st.floats(max_value=-5e-324, allow_nan=False, allow_infinity=False))
def test_sqrt_of_a_negative_is_a_non_finite_result(a: float) -> None:
    with pytest.raises(NonFiniteResult):
        variable(a).sqrt()


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_sqrt_of_a_signed_zero_has_a_non_finite_local_derivative(zero: float) -> None:
    with pytest.raises(NonFiniteLocalDerivative):
        variable(zero).sqrt()
