// Package autograd is a scalar reverse-mode autodiff engine in the microGPT
// style: a Graph appends one node per scalar to a tape in creation order, and
// Backward walks the nodes an output reaches in reverse canonical topology
// (docs/contract.md section 7: depth-first post-order from the output,
// operands in slot order).
//
// The tape is index-based and pointer-free: nodes in one slice, operands as
// int32 tape indices, local derivatives stored at creation. Backward works in
// scratch buffers the graph reuses for every pass and builds no pass record;
// BackwardRecord does the same pass and returns its record, for callers that
// check the trace or the order.
//
// It meets the semantic contract of the conformance kit (docs/contract.md): every
// operand occurrence is its own edge (x*x has two edges to x), each backward
// computes fresh pass adjoints and adds them to the stored gradients only after
// every check passed, and nothing is recursive, so a million-node chain works.
// The op table (op.go) is the single place where values and local derivatives
// are written down.
//
// A Parameter is a trainable leaf that outlives graphs: its stored gradient
// lives on the Parameter, so the graphs of two documents accumulate into it.
package autograd

import (
	"fmt"
	"math"
)

// Graph is a tape of nodes in creation order. The zero value is an empty graph
// ready to use. A Graph is not safe for concurrent use.
type Graph struct {
	nodes      []node
	grads      []float64            // stored gradients by tape index, grown by Backward (unused for untracked and Parameter nodes)
	params     map[*Parameter]int32 // parameter -> its node
	parameters []*Parameter         // by node.param - 1
	paramNodes []int32              // the node of each parameter, by node.param - 1
	scratch    scratch              // Backward's and ZeroGrad's reused buffers
}

// node is one tape entry, 40 bytes. operands and localDerivatives are
// parallel, one entry per operand slot (arity of them); pow, which has one
// slot, keeps its constant exponent in localDerivatives[1]. The stored gradient of a tracked node is
// Graph.grads at its index, unless param is set (1 + an index into
// Graph.parameters), in which case it lives on that Parameter. A node holds
// no pointer, so the garbage collector never scans the tape.
type node struct {
	value            float64
	localDerivatives [2]float64
	operands         [2]int32
	param            int32
	op               Operation
	arity            uint8
	tracked          bool
}

// Node is a handle to one scalar of a Graph. Two handles are equal iff they
// name the same node; the zero Node names nothing and must not be used.
type Node struct {
	g *Graph
	i int32
}

// Parameter is a trainable leaf that persists across graphs. Value is read
// when a graph first uses the parameter; Grad is its stored gradient, which
// every successful Backward through any graph adds to and ZeroGrad resets.
type Parameter struct {
	Value float64
	Grad  float64
}

// NewGraph returns an empty graph.
func NewGraph() *Graph { return &Graph{} }

// Len returns the number of nodes on the tape.
func (g *Graph) Len() int { return len(g.nodes) }

// At returns the handle of the node at tape index i (as a PassRecord names
// it). It panics when i is not on the tape.
func (g *Graph) At(i int) Node {
	if uint(i) >= uint(len(g.nodes)) { // also catches i < 0
		g.noNode(i)
	}
	return Node{g, int32(i)}
}

// noNode is At's panic, kept out of At so that At inlines into the callers
// that turn program ids into nodes once per step.
//
//go:noinline
func (g *Graph) noNode(i int) {
	panic(fmt.Sprintf("autograd: no node %d on a tape of %d", i, len(g.nodes)))
}

// Reset empties the graph for the next document, keeping its memory: the
// tape, the parameter table and the scratch buffers are reused, so a training
// loop that resets one graph per step stops allocating once the buffers have
// grown. The stored gradients of Parameters live on the Parameters and are
// kept. Every Node of the graph from before the Reset is invalid.
func (g *Graph) Reset() {
	g.nodes, g.grads = g.nodes[:0], g.grads[:0]
	clear(g.params)
	clear(g.parameters)
	g.parameters, g.paramNodes = g.parameters[:0], g.paramNodes[:0]
}

// Variable returns a new tracked leaf with value v, whose stored gradient
// lives on the graph. It returns a *NonFiniteLeafError for inf or nan.
func (g *Graph) Variable(v float64) (Node, error) {
	if !isFinite(v) {
		return Node{}, &NonFiniteLeafError{Operation: "variable", Value: v}
	}
	return g.push(node{value: v, op: OpVariable, tracked: true}), nil
}

// Literal returns a new constant: an untracked leaf with value v. It returns a
// *NonFiniteLeafError (operation "constant") for inf or nan.
func (g *Graph) Literal(v float64) (Node, error) {
	if !isFinite(v) {
		return Node{}, &NonFiniteLeafError{Operation: "constant", Value: v}
	}
	return g.push(node{value: v, op: OpConstant}), nil
}

// Param returns the tracked leaf (operation "variable") standing for p in this
// graph, creating it with p's current value on first use. Later calls with the
// same p return the same node, so one pass never counts p's stored gradient
// twice. It returns a *NonFiniteLeafError when p.Value is inf or nan.
func (g *Graph) Param(p *Parameter) (Node, error) {
	if i, ok := g.params[p]; ok {
		return Node{g, i}, nil
	}
	if !isFinite(p.Value) {
		return Node{}, &NonFiniteLeafError{Operation: "variable", Value: p.Value}
	}
	g.parameters = append(g.parameters, p)
	n := g.push(node{value: p.Value, op: OpVariable, tracked: true, param: int32(len(g.parameters))})
	if g.params == nil {
		g.params = make(map[*Parameter]int32)
	}
	g.params[p] = n.i
	g.paramNodes = append(g.paramNodes, n.i)
	return n, nil
}

// Detach returns a new untracked leaf (operation "detached") with n's value and
// no edge to n.
func (g *Graph) Detach(n Node) Node {
	g.check(n)
	return g.push(node{value: g.nodes[n.i].value, op: OpDetached})
}

// Apply applies operation op to operands (and pow's constant exponent, ignored
// by every other op) and returns the new node. It returns a
// *NonFiniteResultError or *NonFiniteLocalDerivativeError, and then creates no
// node. Applying a leaf kind, a wrong number of operands, a node of another
// graph or a non-finite exponent is a programming mistake and panics.
func (g *Graph) Apply(op Operation, operands []Node, exponent float64) (Node, error) {
	if len(operands) == 0 {
		return badApply(op, 0)
	}
	// The last operand is b: the second of two, or a itself for a unary op.
	return g.apply(op, operands[0], operands[len(operands)-1], exponent, len(operands))
}

// badApply is Apply's panic, kept out of Apply so that Apply inlines.
//
//go:noinline
func badApply(op Operation, operands int) (Node, error) {
	if op.IsLeaf() || op >= opCount {
		panic(fmt.Sprintf("autograd: %v is not an operation", op))
	}
	spec := &opTable[op]
	panic(fmt.Sprintf("autograd: %s takes %d operand(s), got %d", spec.name, spec.arity, operands))
}

// apply is Apply with its operands spelled out: a and b (for a unary op b is
// a again, so both slots name a real node and the tracked flag needs no
// branch on the arity), and how many operands the caller gave, which must be
// op's arity.
func (g *Graph) apply(op Operation, a, b Node, exponent float64, count int) (Node, error) {
	if uint(op-OpAdd) >= uint(opCount-OpAdd) || count != opTable[op].arity {
		return badApply(op, count)
	}
	spec := &opTable[op]
	if !spec.takesExponent {
		exponent = 0
	} else if !isFinite(exponent) {
		badExponent(spec, exponent)
	}
	g.check(a)
	g.check(b)
	pa, pb := &g.nodes[a.i], &g.nodes[b.i]
	value, d0, d1 := spec.rule(pa.value, pb.value, exponent)
	// A unary rule gives d1 = 0, so one test covers every slot; which check
	// failed is sorted out only when one did.
	if !isFinite(value - value + (d0 - d0) + (d1 - d1)) {
		return Node{}, creationError(spec, value, d0, d1)
	}
	if spec.arity == 1 {
		d1 = exponent // the unused slot holds pow's exponent (0 for other unary ops)
	}
	return g.push(node{
		value: value, localDerivatives: [2]float64{d0, d1}, operands: [2]int32{a.i, b.i},
		op: op, arity: uint8(spec.arity), tracked: pa.tracked || pb.tracked,
	}), nil
}

// creationError is the error of an operation whose value or some local
// derivative is not finite: the value is checked first, then the slots in
// order (docs/contract.md section 4, op.check-order).
func creationError(spec *opSpec, value, d0, d1 float64) error {
	if !isFinite(value) {
		return &NonFiniteResultError{Operation: spec.name, Value: value}
	}
	if !isFinite(d0) {
		return &NonFiniteLocalDerivativeError{Operation: spec.name, Slot: 0, Value: d0}
	}
	return &NonFiniteLocalDerivativeError{Operation: spec.name, Slot: 1, Value: d1}
}

// badExponent is apply's panic for pow with a non-finite exponent.
//
//go:noinline
func badExponent(spec *opSpec, exponent float64) {
	panic(fmt.Sprintf("autograd: %s needs a finite constant exponent, got %v", spec.name, exponent))
}

// Add returns a + b.
func (g *Graph) Add(a, b Node) (Node, error) { return g.apply(OpAdd, a, b, 0, 2) }

// Sub returns a - b.
func (g *Graph) Sub(a, b Node) (Node, error) { return g.apply(OpSub, a, b, 0, 2) }

// Mul returns a * b.
func (g *Graph) Mul(a, b Node) (Node, error) { return g.apply(OpMul, a, b, 0, 2) }

// Div returns a / b.
func (g *Graph) Div(a, b Node) (Node, error) { return g.apply(OpDiv, a, b, 0, 2) }

// Neg returns -a.
func (g *Graph) Neg(a Node) (Node, error) { return g.apply(OpNeg, a, a, 0, 1) }

// Pow returns a^c for a finite constant exponent c (not a node).
func (g *Graph) Pow(a Node, c float64) (Node, error) { return g.apply(OpPow, a, a, c, 1) }

// Exp returns e^a.
func (g *Graph) Exp(a Node) (Node, error) { return g.apply(OpExp, a, a, 0, 1) }

// Log returns the natural logarithm of a.
func (g *Graph) Log(a Node) (Node, error) { return g.apply(OpLog, a, a, 0, 1) }

// Tanh returns the hyperbolic tangent of a.
func (g *Graph) Tanh(a Node) (Node, error) { return g.apply(OpTanh, a, a, 0, 1) }

// ReLU returns a if a > 0, else +0.0.
func (g *Graph) ReLU(a Node) (Node, error) { return g.apply(OpReLU, a, a, 0, 1) }

// Sigmoid returns the logistic function 1/(1+e^(-a)), finite for every finite a.
func (g *Graph) Sigmoid(a Node) (Node, error) { return g.apply(OpSigmoid, a, a, 0, 1) }

// Sqrt returns the square root of a. It fails with a NonFiniteResultError for
// a < 0 and with a NonFiniteLocalDerivativeError for a = ±0.0, whose
// derivative is ±inf.
func (g *Graph) Sqrt(a Node) (Node, error) { return g.apply(OpSqrt, a, a, 0, 1) }

func (g *Graph) push(nd node) Node {
	if len(g.nodes) >= math.MaxInt32 {
		panic("autograd: graph has too many nodes")
	}
	g.nodes = append(g.nodes, nd)
	return Node{g, int32(len(g.nodes) - 1)}
}

func (g *Graph) check(n Node) {
	if n.g != g {
		panic("autograd: node belongs to another graph (or is the zero Node)")
	}
}

// Graph returns the graph n belongs to.
func (n Node) Graph() *Graph { return n.g }

// Index returns n's position on its graph's tape (its creation order).
func (n Node) Index() int { return int(n.i) }

// Value returns n's forward value.
func (n Node) Value() float64 { return n.g.nodes[n.i].value }

// Operation returns what made n.
func (n Node) Operation() Operation { return n.g.nodes[n.i].op }

// Tracked reports whether n takes part in gradients: a variable, or an
// operation with at least one tracked operand.
func (n Node) Tracked() bool { return n.g.nodes[n.i].tracked }

// Exponent returns pow's constant exponent (0 for every other node).
func (n Node) Exponent() float64 {
	if nd := &n.g.nodes[n.i]; nd.op == OpPow {
		return nd.localDerivatives[1]
	}
	return 0
}

// Operands returns n's operands in slot order; x*x lists x twice.
func (n Node) Operands() []Node {
	nd := &n.g.nodes[n.i]
	out := make([]Node, nd.arity)
	for slot := range out {
		out[slot] = Node{n.g, nd.operands[slot]}
	}
	return out
}

// LocalDerivatives returns one local derivative per operand slot.
func (n Node) LocalDerivatives() []float64 {
	nd := &n.g.nodes[n.i]
	return append([]float64(nil), nd.localDerivatives[:nd.arity]...)
}

// Grad returns n's stored gradient, and false for an untracked node (which
// has none).
func (n Node) Grad() (float64, bool) {
	nd := &n.g.nodes[n.i]
	if !nd.tracked {
		return 0, false
	}
	return n.g.stored(n.i), true
}

// Parameter returns the Parameter n stands for, or nil.
func (n Node) Parameter() *Parameter {
	if p := n.g.nodes[n.i].param; p > 0 {
		return n.g.parameters[p-1]
	}
	return nil
}

// String returns a short description such as "node 3 (mul)".
func (n Node) String() string {
	if n.g == nil {
		return "node <nil>"
	}
	return fmt.Sprintf("node %d (%s)", n.i, n.g.nodes[n.i].op)
}

// stored returns the stored gradient of tracked node i.
func (g *Graph) stored(i int32) float64 {
	if p := g.nodes[i].param; p > 0 {
		return g.parameters[p-1].Grad
	}
	if int(i) >= len(g.grads) { // no backward since the node was created
		return 0
	}
	return g.grads[i]
}

// syncGrads gives every node created since the last pass its stored gradient
// slot, 0; creation itself never touches grads.
func (g *Graph) syncGrads() {
	if n := len(g.nodes) - len(g.grads); n > 0 {
		g.grads = append(g.grads, make([]float64, n)...)
	}
}

// isFinite reports whether v is neither infinite nor nan: v - v is 0 for
// every finite v and nan for inf and nan, one subtraction and one compare.
func isFinite(v float64) bool { return v-v == 0 }

// Grow makes room on the tape for n more nodes, so the next n creations do
// not reallocate it.
func (g *Graph) Grow(n int) {
	if n > cap(g.nodes)-len(g.nodes) {
		g.nodes = append(make([]node, 0, len(g.nodes)+n), g.nodes...)
		g.grads = append(make([]float64, 0, len(g.grads)+n), g.grads...)
	}
}
