// Package autograd is a scalar reverse-mode autodiff engine in the microGPT
// style: a Graph appends one node per scalar to a tape in creation order, and
// Backward walks that tape backwards from an output, restricted to the nodes
// the output reaches.
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
	params     map[*Parameter]int32 // parameter -> its node
	parameters []*Parameter         // by node.param - 1
}

// node is one tape entry. operands and local are parallel, one entry per
// operand slot; grad is the stored gradient of a tracked node, unless param is
// set (1 + an index into Graph.parameters), in which case the stored gradient
// lives on that Parameter. A node holds no pointer, so the garbage collector
// never scans the tape.
type node struct {
	value    float64
	exponent float64
	local    [2]float64
	grad     float64
	operands [2]int32
	param    int32
	op       Op
	tracked  bool
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
func (g *Graph) Apply(op Op, operands []Node, exponent float64) (Node, error) {
	if op.IsLeaf() || op >= opCount {
		panic(fmt.Sprintf("autograd: %v is not an operation", op))
	}
	spec := &opTable[op]
	if len(operands) != spec.arity {
		panic(fmt.Sprintf("autograd: %s takes %d operand(s), got %d", spec.name, spec.arity, len(operands)))
	}
	if spec.takesExponent && !isFinite(exponent) {
		panic(fmt.Sprintf("autograd: %s needs a finite constant exponent, got %v", spec.name, exponent))
	}
	if !spec.takesExponent {
		exponent = 0
	}
	nd := node{op: op, exponent: exponent}
	var a, b float64
	for slot, operand := range operands {
		g.check(operand)
		parent := &g.nodes[operand.i]
		nd.operands[slot] = operand.i
		nd.tracked = nd.tracked || parent.tracked
		if slot == 0 {
			a = parent.value
		} else {
			b = parent.value
		}
	}
	value, d0, d1 := spec.rule(a, b, exponent)
	if !isFinite(value) {
		return Node{}, &NonFiniteResultError{Operation: spec.name, Value: value}
	}
	nd.value = value
	nd.local = [2]float64{d0, d1}
	for slot := 0; slot < spec.arity; slot++ {
		if !isFinite(nd.local[slot]) {
			return Node{}, &NonFiniteLocalDerivativeError{Operation: spec.name, Operand: slot, Value: nd.local[slot]}
		}
	}
	return g.push(nd), nil
}

// Add returns a + b.
func (g *Graph) Add(a, b Node) (Node, error) { return g.Apply(OpAdd, []Node{a, b}, 0) }

// Sub returns a - b.
func (g *Graph) Sub(a, b Node) (Node, error) { return g.Apply(OpSub, []Node{a, b}, 0) }

// Mul returns a * b.
func (g *Graph) Mul(a, b Node) (Node, error) { return g.Apply(OpMul, []Node{a, b}, 0) }

// Div returns a / b.
func (g *Graph) Div(a, b Node) (Node, error) { return g.Apply(OpDiv, []Node{a, b}, 0) }

// Neg returns -a.
func (g *Graph) Neg(a Node) (Node, error) { return g.Apply(OpNeg, []Node{a}, 0) }

// Pow returns a^c for a finite constant exponent c (not a node).
func (g *Graph) Pow(a Node, c float64) (Node, error) { return g.Apply(OpPow, []Node{a}, c) }

// Exp returns e^a.
func (g *Graph) Exp(a Node) (Node, error) { return g.Apply(OpExp, []Node{a}, 0) }

// Log returns the natural logarithm of a.
func (g *Graph) Log(a Node) (Node, error) { return g.Apply(OpLog, []Node{a}, 0) }

// Tanh returns the hyperbolic tangent of a.
func (g *Graph) Tanh(a Node) (Node, error) { return g.Apply(OpTanh, []Node{a}, 0) }

// ReLU returns a if a > 0, else +0.0.
func (g *Graph) ReLU(a Node) (Node, error) { return g.Apply(OpReLU, []Node{a}, 0) }

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
func (n Node) Operation() Op { return n.g.nodes[n.i].op }

// Tracked reports whether n takes part in gradients: a variable, or an
// operation with at least one tracked operand.
func (n Node) Tracked() bool { return n.g.nodes[n.i].tracked }

// Exponent returns pow's constant exponent (0 for every other node).
func (n Node) Exponent() float64 { return n.g.nodes[n.i].exponent }

// Operands returns n's operands in slot order; x*x lists x twice.
func (n Node) Operands() []Node {
	nd := &n.g.nodes[n.i]
	out := make([]Node, nd.op.Arity())
	for slot := range out {
		out[slot] = Node{n.g, nd.operands[slot]}
	}
	return out
}

// LocalDerivatives returns one local derivative per operand slot.
func (n Node) LocalDerivatives() []float64 {
	nd := &n.g.nodes[n.i]
	return append([]float64(nil), nd.local[:nd.op.Arity()]...)
}

// Grad returns n's stored gradient, and false for an untracked node (which
// has none).
func (n Node) Grad() (float64, bool) {
	nd := &n.g.nodes[n.i]
	if !nd.tracked {
		return 0, false
	}
	return n.g.stored(nd), true
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

func (g *Graph) stored(nd *node) float64 {
	if nd.param > 0 {
		return g.parameters[nd.param-1].Grad
	}
	return nd.grad
}

func (g *Graph) setStored(nd *node, v float64) {
	if nd.param > 0 {
		g.parameters[nd.param-1].Grad = v
	} else {
		nd.grad = v
	}
}

func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
