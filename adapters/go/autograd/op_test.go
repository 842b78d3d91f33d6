package autograd

import (
	"errors"
	"math"
	"testing"
)

// ulps is the distance between two finite floats of one sign in units in the last place.
func ulps(a, b float64) int64 {
	d := int64(math.Float64bits(a)) - int64(math.Float64bits(b))
	if d < 0 {
		return -d
	}
	return d
}

func TestSqrtIsTheIEEERootAndHalfItsReciprocal(t *testing.T) {
	for _, a := range []float64{2, 3, 0.25, 6.25, 1e-300, 5e-324, 1e300} {
		g := NewGraph()
		n := must(g.Sqrt(must(g.Variable(a))))
		r := math.Sqrt(a)
		if math.Float64bits(n.Value()) != math.Float64bits(r) {
			t.Errorf("sqrt(%v) = %v, want %v", a, n.Value(), r)
		}
		d := n.LocalDerivatives()[0]
		if math.Float64bits(d) != math.Float64bits(0.5/r) || math.Float64bits(d) != math.Float64bits(1/(2*r)) {
			t.Errorf("sqrt(%v): local derivative %v, want 0.5/r = 1/(2r) = %v", a, d, 0.5/r)
		}
	}
	g := NewGraph()
	if r := must(g.Sqrt(must(g.Variable(2)))).Value(); r != math.Sqrt2 {
		t.Errorf("sqrt(2) = %v, want the correctly rounded root %v", r, math.Sqrt2)
	}
}

func TestSqrtRefusesANegativeOperandAndAZeroOfEitherSign(t *testing.T) {
	g := NewGraph()
	_, err := g.Sqrt(must(g.Variable(-4)))
	var result *NonFiniteResultError
	if !errors.As(err, &result) || result.Operation != "sqrt" || !math.IsNaN(result.Value) {
		t.Errorf("sqrt(-4): got %v, want a non-finite-result of sqrt with value nan", err)
	}
	for _, tc := range []struct {
		zero, derivative float64
	}{{0, math.Inf(1)}, {math.Copysign(0, -1), math.Inf(-1)}} {
		_, err := g.Sqrt(must(g.Variable(tc.zero)))
		var local *NonFiniteLocalDerivativeError
		if !errors.As(err, &local) || local.Operation != "sqrt" || local.Slot != 0 || local.Value != tc.derivative {
			t.Errorf("sqrt(%v): got %v, want a non-finite-local-derivative in slot 0 of %v", tc.zero, err, tc.derivative)
		}
	}
	if g.Len() != 3 {
		t.Errorf("the graph holds %d nodes, want only the 3 leaves", g.Len())
	}
}

func TestSigmoidIsCloseToTheCorrectlyRoundedValue(t *testing.T) {
	// a and the correctly rounded sigmoid(a), computed with mpfr at 300 bits.
	cases := []struct{ a, want float64 }{
		{1, 0.7310585786300049},
		{-1, 0.2689414213699951},
		{0.5, 0.6224593312018546},
		{-3, 0.04742587317756678},
		{2, 0.8807970779778824},
		{36.5, 0.9999999999999999},
		{-40, 4.248354255291589e-18},
		{-700, 9.85967654375977e-305},
	}
	for _, tc := range cases {
		g := NewGraph()
		s := must(g.Sigmoid(must(g.Variable(tc.a)))).Value()
		if d := ulps(s, tc.want); d > 2 {
			t.Errorf("sigmoid(%v) = %v, %d ulps from %v", tc.a, s, d, tc.want)
		}
	}
}

func TestSigmoidTakesTheStableFormAndItsDerivativeFromTheRoundedValue(t *testing.T) {
	e := math.Exp(-3)
	cases := []struct {
		name string
		a, s float64
	}{
		{"a < 0 is e/(1+e) with e = exp(a)", -3, e / (1 + e)},
		{"a >= 0 is 1/(1+exp(-a))", 2, 1 / (1 + math.Exp(-2))},
		{"sigmoid(0) is 1/2", 0, 0.5},
		{"sigmoid(-0.0) takes the a >= 0 form", math.Copysign(0, -1), 0.5},
		{"far below zero the value is subnormal", -745, 5e-324},
		{"then +0.0", -746, 0},
		{"the most negative float gives +0.0", -math.MaxFloat64, 0},
		{"far above zero the value is 1", 40, 1},
		{"the largest float gives 1", math.MaxFloat64, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			n, err := g.Sigmoid(must(g.Variable(tc.a)))
			if err != nil {
				t.Fatalf("sigmoid(%v) failed: %v", tc.a, err)
			}
			if math.Float64bits(n.Value()) != math.Float64bits(tc.s) {
				t.Errorf("sigmoid(%v) = %v, want %v", tc.a, n.Value(), tc.s)
			}
			s := n.Value()
			if d := n.LocalDerivatives()[0]; math.Float64bits(d) != math.Float64bits(s*(1-s)) {
				t.Errorf("sigmoid(%v): local derivative %v, want s*(1-s) = %v", tc.a, d, s*(1-s))
			}
		})
	}
}

func TestSigmoidAndSqrtDerivativesAgreeWithCentralDifferences(t *testing.T) {
	// The step is a power of two, so x ± h is exact; the tolerance is on the error
	// scaled by the larger magnitude (at least 1), as the Rust port's gradcheck.
	const h = 1.0 / (1 << 20)
	value := func(op Operation, x float64) float64 {
		g := NewGraph()
		return must(g.Apply(op, []Node{must(g.Literal(x))}, 0)).Value()
	}
	for _, tc := range []struct {
		op Operation
		xs []float64
	}{{OpSigmoid, []float64{-3, -0.5, 0.25, 2}}, {OpSqrt, []float64{0.25, 0.5, 2, 9}}} {
		for _, x := range tc.xs {
			g := NewGraph()
			v := must(g.Variable(x))
			if err := g.Backward(must(g.Apply(tc.op, []Node{v}, 0)), 1); err != nil {
				t.Fatal(err)
			}
			analytic := grad(t, v)
			numerical := (value(tc.op, x+h) - value(tc.op, x-h)) / (2 * h)
			scaled := math.Abs(analytic-numerical) / math.Max(1, math.Max(math.Abs(analytic), math.Abs(numerical)))
			if scaled > 1e-9 {
				t.Errorf("%v at %v: backward %v, central difference %v", tc.op, x, analytic, numerical)
			}
		}
	}
}
