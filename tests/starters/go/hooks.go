// A tiny correct engine written into the Go starter's hooks, for tests/test_starters.py.
// It follows the contract (docs/contract.md sections 3 to 6) with package math: every
// operand edge summed, fresh pass adjoints per backward, every check before the commit, the
// canonical depth-first post-order, and a pass record for trace and order.
package main

import (
	"fmt"
	"math"
	"syscall"
)

var EngineInfo = map[string]string{"name": "starter-test-engine", "version": "0.1.0", "language": "go"}
var Ops = []string{"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach"}
var Levels = []string{"values", "gradients", "errors", "trace", "order"}
var Features = []string{"seed"}

type value struct {
	value            float64
	operation        string
	operands         []*value
	localDerivatives []float64 // one per operand slot
	tracked          bool
	grad             float64
}

type Node = *value

type Engine struct{ record PassRecord }

func NewEngine() *Engine { return &Engine{} }

func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

// rule is the op table: value and local derivatives from the forward values, as the contract writes them.
func rule(op string, a, b, c float64) (float64, []float64) {
	switch op {
	case "add":
		return a + b, []float64{1, 1}
	case "sub":
		return a - b, []float64{1, -1}
	case "mul":
		return a * b, []float64{b, a}
	case "div":
		r := a / b
		return r, []float64{1 / b, -(r / b)}
	case "neg":
		return -a, []float64{-1}
	case "pow":
		if c == 0 {
			return math.Pow(a, c), []float64{0}
		}
		return math.Pow(a, c), []float64{c * math.Pow(a, c-1)}
	case "exp":
		r := math.Exp(a)
		return r, []float64{r}
	case "log":
		return math.Log(a), []float64{1 / a}
	case "tanh":
		t := math.Tanh(a)
		return t, []float64{1 - t*t}
	case "relu":
		if a > 0 {
			return a, []float64{1}
		}
		return 0, []float64{0}
	case "sigmoid":
		// The stable form: exp never overflows, and s is subnormal or +0.0 far below zero.
		var s float64
		if a >= 0 {
			s = 1 / (1 + math.Exp(-a))
		} else {
			e := math.Exp(a)
			s = e / (1 + e)
		}
		return s, []float64{float64(s * (1 - s))}
	case "sqrt":
		r := math.Sqrt(a)
		return r, []float64{0.5 / r}
	}
	panic("unknown op " + op)
}

func (e *Engine) leaf(x float64, operation string) (Node, error) {
	if !finite(x) {
		return nil, &EngineError{"non-finite-leaf", map[string]any{"operation": operation, "value": x}}
	}
	return &value{value: x, operation: operation, tracked: operation == "variable"}, nil
}

func (e *Engine) Variable(x float64) (Node, error) {
	if x == 12345.0 {
		// A stray print, as an engine's debug line: the loop must keep it off the protocol.
		fmt.Println("engine noise on stdout")
		syscall.Write(1, []byte("engine noise written to fd 1\n"))
	}
	return e.leaf(x, "variable")
}
func (e *Engine) Constant(x float64) (Node, error) { return e.leaf(x, "constant") }

func (e *Engine) Apply(op string, operands []Node, exponent float64) (Node, error) {
	a, b := operands[0].value, 0.0
	if len(operands) > 1 {
		b = operands[1].value
	}
	r, localDerivatives := rule(op, a, b, exponent)
	if !finite(r) {
		return nil, &EngineError{"non-finite-result", map[string]any{"operation": op, "value": r}}
	}
	for slot, d := range localDerivatives {
		if !finite(d) {
			return nil, &EngineError{"non-finite-local-derivative", map[string]any{"operation": op, "slot": slot, "value": d}}
		}
	}
	tracked := false
	for _, n := range operands {
		tracked = tracked || n.tracked
	}
	return &value{value: r, operation: op, operands: append([]*value(nil), operands...), localDerivatives: localDerivatives, tracked: tracked}, nil
}

func (e *Engine) Detach(node Node) Node      { return &value{value: node.value, operation: "detached"} }
func (e *Engine) Value(node Node) float64    { return node.value }
func (e *Engine) Tracked(node Node) bool     { return node.tracked }
func (e *Engine) Gradient(node Node) float64 { return node.grad }

// topology is the depth-first post-order from the output, operands in slot order, iteratively.
func topology(output *value) []*value {
	type frame struct {
		node *value
		slot int
	}
	order := []*value{}
	seen := map[*value]bool{output: true}
	stack := []frame{{output, 0}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.slot < len(top.node.operands) {
			operand := top.node.operands[top.slot]
			top.slot++
			if !seen[operand] {
				seen[operand] = true
				stack = append(stack, frame{operand, 0})
			}
		} else {
			order = append(order, top.node)
			stack = stack[:len(stack)-1]
		}
	}
	return order
}

func (e *Engine) Backward(output Node, seed float64) error {
	if !output.tracked {
		return &EngineError{"untracked-output", map[string]any{"operation": output.operation}}
	}
	if !finite(seed) {
		return &EngineError{"non-finite-seed", map[string]any{"seed": seed}}
	}
	order := topology(output)
	adjoint := map[*value]float64{}
	for _, n := range order {
		if n.tracked {
			adjoint[n] = 0
		}
	}
	adjoint[output] = seed
	record := PassRecord{Seed: seed}
	for i := len(order) - 1; i >= 0; i-- {
		consumer := order[i]
		upstream := adjoint[consumer] // 0 for an untracked consumer
		for slot, operand := range consumer.operands {
			d := consumer.localDerivatives[slot]
			contribution := upstream * d
			if !finite(contribution) {
				return &EngineError{"non-finite-contribution", map[string]any{"consumer": consumer, "slot": slot,
					"operand": operand, "upstream": upstream, "local_derivative": d}}
			}
			edge := PassEdge{Consumer: consumer, Slot: slot, Operand: operand, LocalDerivative: d, Upstream: upstream, Contribution: contribution}
			if operand.tracked {
				edge.Before = adjoint[operand]
				edge.After = edge.Before + contribution
				if !finite(edge.After) {
					return &EngineError{"non-finite-pass-adjoint", map[string]any{"node": operand, "previous": edge.Before, "contribution": contribution}}
				}
				adjoint[operand] = edge.After
			}
			record.Edges = append(record.Edges, edge)
		}
	}
	for _, n := range order {
		if n.tracked && !finite(n.grad+adjoint[n]) {
			return &EngineError{"non-finite-accumulated-gradient", map[string]any{"node": n, "stored": n.grad, "pass_adjoint": adjoint[n]}}
		}
	}
	for _, n := range order {
		if n.tracked {
			n.grad += adjoint[n]
		}
		record.Nodes = append(record.Nodes, PassNode{Node: n, PassAdjoint: adjoint[n], StoredGradient: n.grad})
	}
	e.record = record
	return nil
}

func (e *Engine) ZeroGrad(output Node) {
	for _, n := range topology(output) {
		n.grad = 0
	}
}

func (e *Engine) PassRecord() PassRecord { return e.record }
