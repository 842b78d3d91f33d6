// Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.
//
// main.go (do not edit it) speaks the protocol and calls the methods of Engine below, on a
// fresh Engine per case (NewEngine). Each method says what the contract (`conformance docs
// contract`) expects of it. Until you fill one in it panics with "not implemented: connect
// ...", which the adapter reports as an error for the case, so the kit runs from the first
// minute and tells you which hook to connect next.
//
// To use your engine's Go module from here, add it to go.mod (require it, and a replace
// directive pointing at your checkout, e.g. `replace example.com/mygrad => ../`).
package main

// import "example.com/mygrad"   // your engine

// ---- config block: what your engine supports (sent in the hello reply) -------------------

// EngineInfo names your engine.
var EngineInfo = map[string]string{"name": "my-engine", "version": "0.1.0", "language": "go"}

// Ops are the ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
// also sigmoid and sqrt, the optional ops, only if your engine has them.
var Ops = []string{"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"}

// Levels are the levels you report honestly: values gradients errors, and trace/order once
// PassRecord works.
var Levels = []string{"values", "gradients", "errors"}

// Features: "seed" if Backward accepts a seed other than 1. (main.go adds "repeat": it runs
// repeated steps itself.)
var Features = []string{"seed"}

// ---- end of config block -------------------------------------------------------------------

// Node is your engine's node handle, e.g. *mygrad.Value or an int index into a tape. It must
// be comparable (the adapter keys a map by it); the adapter only hands it back to you.
type Node = any

// Engine is your engine behind the hooks; a fresh one per case, so no case sees another's graph.
type Engine struct{}

// NewEngine returns an engine with an empty graph.
func NewEngine() *Engine { return &Engine{} }

func notConnected(hook string) string {
	return "not implemented: connect " + hook + " to your engine (hooks.go)"
}

// Variable returns a tracked leaf. A non-finite value returns
// &EngineError{"non-finite-leaf", map[string]any{"operation": "variable", "value": value}}.
func (e *Engine) Variable(value float64) (Node, error) { panic(notConnected("Engine.Variable")) }

// Constant returns an untracked leaf; non-finite-leaf as for Variable, with operation "constant".
func (e *Engine) Constant(value float64) (Node, error) { panic(notConnected("Engine.Constant")) }

// Apply returns the result node of op (add sub mul div: two operands; neg exp log tanh relu
// sigmoid sqrt pow: one); exponent is pow's constant. A non-finite value returns non-finite-result
// (operation, value); a finite value with a non-finite local derivative returns
// non-finite-local-derivative (operation; slot, the operand's 0-based position as an int;
// value, the derivative).
func (e *Engine) Apply(op string, operands []Node, exponent float64) (Node, error) {
	panic(notConnected("Engine.Apply"))
}

// Detach returns an untracked leaf with node's value and no edge.
func (e *Engine) Detach(node Node) Node { panic(notConnected("Engine.Detach")) }

// Value returns the node's forward value.
func (e *Engine) Value(node Node) float64 { panic(notConnected("Engine.Value")) }

// Tracked reports whether the node takes part in gradients (a variable, or an op with a
// tracked operand).
func (e *Engine) Tracked(node Node) bool { panic(notConnected("Engine.Tracked")) }

// Backward runs backward from output with this seed (docs/contract.md section 5). Checks in
// order: untracked-output, non-finite-seed, then per edge non-finite-contribution and
// non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if all
// pass. Errors are *EngineError values.
func (e *Engine) Backward(output Node, seed float64) error { panic(notConnected("Engine.Backward")) }

// ZeroGrad sets the stored gradient of every tracked node reachable from output to 0.
func (e *Engine) ZeroGrad(output Node) { panic(notConnected("Engine.ZeroGrad")) }

// Gradient returns the stored gradient of a tracked node.
func (e *Engine) Gradient(node Node) float64 { panic(notConnected("Engine.Gradient")) }

// PassRecord (optional, for the trace and order levels) returns what the last successful
// Backward did. Add "trace"/"order" to Levels when it works.
func (e *Engine) PassRecord() PassRecord { panic(notConnected("Engine.PassRecord")) }
