package autograd

import "math"

// Operation names what made a node: one of the three leaf kinds or a row of the op table.
type Operation uint8

// The leaf kinds and the operations of the contract (docs/contract.md sections 3-4), in the
// contract's order.
const (
	OpVariable Operation = iota
	OpConstant
	OpDetached
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpNeg
	OpPow
	OpExp
	OpLog
	OpTanh
	OpReLU
	OpSigmoid
	OpSqrt
	opCount
)

// opRule maps operand values (a, b; b is unused by unary ops) and pow's
// constant exponent c to the result value and one local derivative per slot.
type opRule func(a, b, c float64) (value, d0, d1 float64)

// opSpec is one row of the op table: name, arity, whether it takes a constant
// exponent, and its rule.
type opSpec struct {
	name          string
	arity         int
	takesExponent bool
	rule          opRule
}

// opTable is the op table, the single place where the engine's arithmetic is
// written down. Every product is wrapped in float64(...) so the compiler can
// never fuse it with a neighbouring addition into an FMA: the results are the
// individually rounded IEEE ones the contract fixes.
var opTable = [opCount]opSpec{
	OpVariable: {name: "variable"},
	OpConstant: {name: "constant"},
	OpDetached: {name: "detached"},
	OpAdd: {"add", 2, false, func(a, b, _ float64) (float64, float64, float64) {
		// d(a+b)/da = 1, d(a+b)/db = 1
		return a + b, 1, 1
	}},
	OpSub: {"sub", 2, false, func(a, b, _ float64) (float64, float64, float64) {
		// d(a-b)/da = 1, d(a-b)/db = -1
		return a - b, 1, -1
	}},
	OpMul: {"mul", 2, false, func(a, b, _ float64) (float64, float64, float64) {
		// d(ab)/da = b, d(ab)/db = a
		return float64(a * b), b, a
	}},
	OpDiv: {"div", 2, false, func(a, b, _ float64) (float64, float64, float64) {
		r := float64(a / b)
		// d(a/b)/da = 1/b; d(a/b)/db = -a/b^2, written -(r/b) to reuse the rounded quotient
		return r, float64(1 / b), -float64(r / b)
	}},
	OpNeg: {"neg", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		// d(-a)/da = -1
		return -a, -1, 0
	}},
	OpPow: {"pow", 1, true, func(a, _, c float64) (float64, float64, float64) {
		r := math.Pow(a, c)
		// d(a^c)/da = c*a^(c-1); exactly 0 when c == 0, so 0^0 has derivative 0, not 0*inf
		if c == 0 {
			return r, 0, 0
		}
		return r, float64(c * math.Pow(a, c-1)), 0
	}},
	OpExp: {"exp", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		r := math.Exp(a)
		// d(e^a)/da = e^a, the rounded result itself
		return r, r, 0
	}},
	OpLog: {"log", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		// d(ln a)/da = 1/a
		return math.Log(a), float64(1 / a), 0
	}},
	OpTanh: {"tanh", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		t := math.Tanh(a)
		// d(tanh a)/da = 1 - tanh(a)^2, from the rounded t
		return t, 1 - float64(t*t), 0
	}},
	OpReLU: {"relu", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		// relu(a) = a for a > 0 else +0.0 (so relu(-0.0) is +0.0); derivative 1 where a > 0, else 0
		if a > 0 {
			return a, 1, 0
		}
		return 0, 0, 0
	}},
	OpSigmoid: {"sigmoid", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		// The stable form: exp of a non-positive argument never overflows, and for very
		// negative a the value is subnormal or +0.0, never non-finite.
		var s float64
		if a >= 0 {
			s = 1 / (1 + math.Exp(-a))
		} else {
			e := math.Exp(a)
			s = e / (1 + e)
		}
		// d(sigmoid a)/da = s*(1-s), from the rounded s: first 1 - s, then the product
		return s, float64(s * (1 - s)), 0
	}},
	OpSqrt: {"sqrt", 1, false, func(a, _, _ float64) (float64, float64, float64) {
		// IEEE-exact; nan for a < 0 and -0.0 for -0.0, as IEEE-754 says
		r := math.Sqrt(a)
		// d(sqrt a)/da = 1/(2 sqrt a), written 0.5/r from the rounded r (+-inf at a = +-0.0)
		return r, float64(0.5 / r), 0
	}},
}

// String returns the op's name as the contract spells it: variable, constant,
// detached, add, sub, mul, div, neg, pow, exp, log, tanh, relu, sigmoid or sqrt.
func (o Operation) String() string {
	if o >= opCount {
		return "unknown"
	}
	return opTable[o].name
}

// Arity returns the number of operand slots: 0 for leaves, 1 or 2 for operations.
func (o Operation) Arity() int {
	if o >= opCount {
		return 0
	}
	return opTable[o].arity
}

// IsLeaf reports whether o is a leaf kind (variable, constant, detached).
func (o Operation) IsLeaf() bool { return o <= OpDetached }

// TakesExponent reports whether o carries a constant exponent (only pow).
func (o Operation) TakesExponent() bool { return o < opCount && opTable[o].takesExponent }

// LookupOp returns the operation named name ("add" ... "sqrt"). Leaf kinds and
// detach are not operations of the op table and are not found.
func LookupOp(name string) (Operation, bool) {
	for o := OpAdd; o < opCount; o++ {
		if opTable[o].name == name {
			return o, true
		}
	}
	return 0, false
}

// Ops returns every operation of the op table, in the contract's order.
func Ops() []Operation {
	out := make([]Operation, 0, opCount-OpAdd)
	for o := OpAdd; o < opCount; o++ {
		out = append(out, o)
	}
	return out
}
