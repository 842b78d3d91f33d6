package main

import "math"

// The minimal tape engine: the limit baseline the Go port is measured
// against (issue 18), not a port. Nodes live in one slice, operands are u32
// tape indices, local derivatives are stored at creation, and backward is one
// reverse sweep of the tape into a fresh adjoint slice, checked before it is
// committed. It keeps none of the port's bookkeeping: no topology, no pass
// record, no error fields, no parameters.

// node is one tape entry: its value, one local derivative per operand slot,
// the operands' tape indices and its arity.
type node struct {
	value            float64
	localDerivatives [2]float64
	operands         [2]uint32
	arity            uint8
	tracked          bool
}

// tape is the engine: the nodes in creation order and their stored gradients.
type tape struct {
	nodes []node
	grad  []float64
}

func finite(v float64) bool { return v-v == 0 }

// opcode is a step's operation, resolved from its name when the program is read.
type opcode uint8

const (
	opNone opcode = iota
	opVariable
	opConstant
	opDetach
	opAdd
	opSub
	opMul
	opDiv
	opNeg
	opPow
	opExp
	opLog
	opTanh
	opRelu
	opBackward
	opZeroGrad
)

var opcodes = map[string]opcode{
	"variable": opVariable, "constant": opConstant, "detach": opDetach,
	"add": opAdd, "sub": opSub, "mul": opMul, "div": opDiv, "neg": opNeg, "pow": opPow,
	"exp": opExp, "log": opLog, "tanh": opTanh, "relu": opRelu,
	"backward": opBackward, "zero_grad": opZeroGrad,
}

// leaf appends a variable (tracked) or constant.
func (t *tape) leaf(v float64, tracked bool) (uint32, bool) {
	if !finite(v) {
		return 0, false
	}
	t.nodes = append(t.nodes, node{value: v, tracked: tracked})
	t.grad = append(t.grad, 0)
	return uint32(len(t.nodes) - 1), true
}

// apply appends op(a, b) (b unused by unary ops; c is pow's exponent). It
// fails, creating nothing, on a non-finite value or derivative.
func (t *tape) apply(op opcode, a, b uint32, c float64) (uint32, bool) {
	x, y := t.nodes[a].value, t.nodes[b].value
	n := node{operands: [2]uint32{a, b}, arity: 1, tracked: t.nodes[a].tracked}
	switch op {
	case opAdd:
		n.value, n.localDerivatives, n.arity = x+y, [2]float64{1, 1}, 2
	case opSub:
		n.value, n.localDerivatives, n.arity = x-y, [2]float64{1, -1}, 2
	case opMul:
		n.value, n.localDerivatives, n.arity = float64(x*y), [2]float64{y, x}, 2
	case opDiv:
		r := float64(x / y)
		n.value, n.localDerivatives, n.arity = r, [2]float64{float64(1 / y), -float64(r / y)}, 2
	case opNeg:
		n.value, n.localDerivatives[0] = -x, -1
	case opPow:
		n.value = math.Pow(x, c)
		if c != 0 {
			n.localDerivatives[0] = float64(c * math.Pow(x, c-1))
		}
	case opExp:
		n.value = math.Exp(x)
		n.localDerivatives[0] = n.value
	case opLog:
		n.value, n.localDerivatives[0] = math.Log(x), float64(1/x)
	case opTanh:
		n.value = math.Tanh(x)
		n.localDerivatives[0] = 1 - float64(n.value*n.value)
	case opRelu:
		if x > 0 {
			n.value, n.localDerivatives[0] = x, 1
		}
	case opDetach:
		n.value, n.arity, n.tracked = x, 0, false
	default:
		return 0, false
	}
	if n.arity == 2 {
		n.tracked = n.tracked || t.nodes[b].tracked
	}
	if !finite(n.value) || !finite(n.localDerivatives[0]) || !finite(n.localDerivatives[1]) {
		return 0, false
	}
	t.nodes = append(t.nodes, n)
	t.grad = append(t.grad, 0)
	return uint32(len(t.nodes) - 1), true
}

// backward sweeps the tape once from out down to 0 into a fresh adjoint
// slice, checks every adjoint and prospective stored gradient, then commits.
func (t *tape) backward(out uint32, seed float64) bool {
	if !t.nodes[out].tracked || !finite(seed) {
		return false
	}
	adj := make([]float64, out+1)
	adj[out] = seed
	for i := int(out); i >= 0; i-- {
		n := &t.nodes[i]
		if !n.tracked {
			continue
		}
		up := adj[i]
		for k := uint8(0); k < n.arity; k++ {
			adj[n.operands[k]] += float64(up * n.localDerivatives[k])
		}
	}
	grad := t.grad[:len(adj)]
	for i, a := range adj {
		if !finite(a) || !finite(grad[i]+a) {
			return false
		}
	}
	for i, a := range adj {
		if t.nodes[i].tracked {
			grad[i] += a
		}
	}
	return true
}

// zeroGrad zeroes the stored gradient of every tracked node out reaches, in
// one reverse sweep with a fresh mark slice.
func (t *tape) zeroGrad(out uint32) {
	mark := make([]bool, out+1)
	mark[out] = true
	for i := int(out); i >= 0; i-- {
		if !mark[i] {
			continue
		}
		n := &t.nodes[i]
		for k := uint8(0); k < n.arity; k++ {
			mark[n.operands[k]] = true
		}
		if n.tracked {
			t.grad[i] = 0
		}
	}
}
