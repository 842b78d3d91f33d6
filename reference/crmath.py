"""Correctly rounded binary64 math for the reference engine.

exp, log, tanh, sigmoid and pow are evaluated by MPFR (through gmpy2) in an IEEE double
context with subnormals, so every platform produces the same bits and fixture
files are byte-identical wherever they are generated (docs/contract.md section 4).

Every function here returns the IEEE result and never raises: overflow gives
inf, log(0) gives -inf, an invalid operation gives nan. Python's own ``math``
module raises OverflowError / ValueError / ZeroDivisionError in several of these
cases, which is exactly why it is not used.
"""

from __future__ import annotations

import math

import gmpy2

_IEEE_DOUBLE = gmpy2.ieee(64)  # precision 53, emin/emax of binary64, subnormalize=True


def cr_exp(a: float) -> float:
    """e**a, correctly rounded; inf on overflow, +0.0 or a subnormal on underflow."""
    return float(_IEEE_DOUBLE.exp(a))


def cr_log(a: float) -> float:
    """ln(a), correctly rounded; -inf for +-0, nan for a negative argument."""
    return float(_IEEE_DOUBLE.log(a))


def cr_tanh(a: float) -> float:
    """tanh(a), correctly rounded."""
    return float(_IEEE_DOUBLE.tanh(a))


def cr_sigmoid(a: float) -> float:
    """1 / (1 + e**-a), correctly rounded; a subnormal or +0.0 for very negative a, 1.0 for large a.

    MPFR has no sigmoid, so the expression is evaluated with 256 bits and then 512 bits and no
    exponent limit, each rounded once to binary64 (subnormals included); the two agree unless the
    true value is within 2**-200 of a rounding boundary, and the loop doubles the precision until
    they do (Ziv's strategy).
    """
    precision = 256
    while True:
        low, high = (_sigmoid_at(a, bits) for bits in (precision, 2 * precision))
        if low == high or (math.isnan(low) and math.isnan(high)):
            return high
        precision *= 2


def _sigmoid_at(a: float, precision: int) -> float:
    with gmpy2.context(precision=precision, emax=2**30, emin=-(2**30)):
        exact = 1 / (1 + gmpy2.exp(-gmpy2.mpfr(a)))
    return float(_IEEE_DOUBLE.plus(exact))


def ieee_sqrt(a: float) -> float:
    """The IEEE square root (correctly rounded on every platform): sqrt(-0.0) is -0.0, nan for a negative argument."""
    return math.sqrt(a) if a >= 0.0 or math.isnan(a) else math.nan


def cr_pow(a: float, c: float) -> float:
    """a**c, correctly rounded, with the IEEE special cases of pow.

    A negative base with a non-integer exponent gives nan; 0 to a negative
    power gives inf (with the sign of the zero for odd integer exponents).
    """
    return float(_IEEE_DOUBLE.pow(a, c))


def ieee_div(a: float, b: float) -> float:
    """a/b in IEEE arithmetic: a zero divisor gives +-inf or nan instead of raising."""
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    negative = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
    return -math.inf if negative else math.inf
