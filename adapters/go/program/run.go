package program

import (
	"errors"
	"fmt"

	"scalarkit/autograd"
	"scalarkit/wire"
)

// Machine executes the steps of one program on one fresh graph. NewMachine
// resolves every id to the index of the step that creates it, once, so
// running a step looks its operands up by index: no map and no string on the
// way to the engine. Run uses it to observe a program; the bench command uses
// it to time one without building observations.
type Machine struct {
	Graph *autograd.Graph
	steps []Step
	plan  []plan  // by step: what NewMachine resolved
	tape  []int32 // by step, and one more: the tape index of the node the step created; -1 if none (yet)
	step  []int32 // by tape index: the step that created the node, filled when a name is asked for
	seen  int     // the steps step has been filled from
}

// plan is one step resolved: its operation and the creating step of each arg
// (or, for backward and zero_grad, of the output in refs[0]). An id no earlier
// step creates resolves to len(steps), whose tape entry stays -1, so a ref
// needs no sign test before it is used.
type plan struct {
	value   float64 // the leaf's value or pow's exponent
	refs    [2]int32
	op      autograd.Op
	arity   uint8 // of op, for kindApply
	kind    kind
	creates bool // the step has an id
}

// kind is what a creation step does.
type kind uint8

const (
	kindOther kind = iota // backward, zero_grad or an unknown operation
	kindVariable
	kindConstant
	kindDetach
	kindApply
)

// NewMachine returns a machine for steps with an empty graph.
func NewMachine(steps []Step) *Machine {
	m := &Machine{
		Graph: autograd.NewGraph(), steps: steps,
		plan: make([]plan, len(steps)), tape: make([]int32, len(steps)+1),
	}
	m.tape[len(steps)] = -1
	created := make(map[string]int32, len(steps))
	resolve := func(id string) int32 {
		if k, ok := created[id]; ok {
			return k
		}
		return int32(len(steps))
	}
	for index, s := range steps {
		m.tape[index] = -1
		p := &m.plan[index]
		p.value = s.Value
		if s.Op == "pow" {
			p.value = s.Exponent
		}
		for slot, id := range s.Args {
			p.refs[slot] = resolve(id)
		}
		if p.creates = s.Creates(); !p.creates {
			p.refs[0] = resolve(s.Output)
			continue
		}
		switch s.Op {
		case "variable":
			p.kind = kindVariable
		case "constant":
			p.kind = kindConstant
		case "detach":
			p.kind = kindDetach
		default:
			if op, ok := autograd.LookupOp(s.Op); ok && len(s.Args) == op.Arity() {
				p.op, p.arity, p.kind = op, uint8(op.Arity()), kindApply
				p.refs[1] = p.refs[op.Arity()-1] // a unary op's slot 1 repeats slot 0
			}
		}
		if _, dup := created[s.ID]; !dup {
			created[s.ID] = int32(index)
		}
	}
	return m
}

// node returns the node created by step ref for step index, or a *Error
// naming id when no step created it (its creating step failed).
func (m *Machine) node(ref int32, id string, index int) (autograd.Node, error) {
	if m.tape[ref] < 0 {
		return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("id %q was never created (its creating step failed)", id)}
	}
	return m.Graph.At(int(m.tape[ref])), nil
}

// Creates reports whether step number index creates a node.
func (m *Machine) Creates(index int) bool { return m.plan[index].creates }

// Output returns the output node of backward or zero_grad step number index,
// or a *Error when no step created it (its creating step failed).
func (m *Machine) Output(index int) (autograd.Node, error) {
	return m.node(m.plan[index].refs[0], m.steps[index].Output, index)
}

// Name returns the program id of n.
func (m *Machine) Name(n autograd.Node) string { return m.steps[m.creator(n.Index())].ID }

// creator returns the step that created tape index i, filling m.step up to i
// from m.tape: creation does not keep this inverse, since only names (errors,
// records, gradients) need it. The program is the graph's only writer, so the
// steps that created nodes, in step order, are tape indices 0, 1, 2...
func (m *Machine) creator(i int) int32 {
	for len(m.step) <= i {
		if m.tape[m.seen] >= 0 {
			m.step = append(m.step, int32(m.seen))
		}
		m.seen++
	}
	return m.step[i]
}

// Len returns the number of nodes created so far.
func (m *Machine) Len() int { return m.Graph.Len() }

// Create executes creation step number index and records its node. An engine
// error (autograd.Error) creates no node.
func (m *Machine) Create(index int) (autograd.Node, error) {
	// Only the plan is read on the way to the engine; the step's strings only
	// for a message.
	p := &m.plan[index]
	var (
		n   autograd.Node
		err error
	)
	if p.kind == kindApply {
		n, err = m.apply(index, p)
	} else {
		n, err = m.createLeaf(index)
	}
	if err != nil {
		return autograd.Node{}, err
	}
	m.tape[index] = int32(n.Index())
	return n, nil
}

// CreateRun executes the creation steps from number index on, up to the
// first step that creates nothing (or the end), and returns that step's
// number: Create in a loop, for a caller that times steps and does not observe
// them. An engine error (autograd.Error) creates no node and the run goes on,
// as it would in the program; any other error stops it at its step.
func (m *Machine) CreateRun(index int) (int, error) {
	for ; index < len(m.plan) && m.plan[index].creates; index++ {
		p := &m.plan[index]
		var (
			n   autograd.Node
			err error
		)
		if p.kind == kindApply {
			n, err = m.apply(index, p)
		} else {
			n, err = m.createLeaf(index)
		}
		if err == nil {
			m.tape[index] = int32(n.Index())
		} else if _, engine := err.(autograd.Error); !engine {
			return index, err
		}
	}
	return index, nil
}

// apply creates the node of operation step number index, whose plan is p.
func (m *Machine) apply(index int, p *plan) (autograd.Node, error) {
	// Both slots resolve the same way (a unary op's slot 1 repeats slot 0),
	// and Apply takes the slice its arity needs.
	a, b := m.tape[p.refs[0]], m.tape[p.refs[1]]
	if a < 0 || b < 0 {
		return autograd.Node{}, m.missing(index)
	}
	operands := [2]autograd.Node{m.Graph.At(int(a)), m.Graph.At(int(b))}
	return m.Graph.Apply(p.op, operands[:p.arity], p.value)
}

// createLeaf is Create for every step that is not an operation: a variable,
// a constant, a detach, or an unknown operation (a *Error).
func (m *Machine) createLeaf(index int) (autograd.Node, error) {
	p := &m.plan[index]
	switch p.kind {
	case kindVariable:
		return m.Graph.Variable(p.value)
	case kindConstant:
		return m.Graph.Literal(p.value)
	case kindDetach:
		a, err := m.node(p.refs[0], m.steps[index].Args[0], index)
		if err != nil {
			return autograd.Node{}, err
		}
		return m.Graph.Detach(a), nil
	}
	return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("unknown operation %q", m.steps[index].Op)}
}

// missing returns the *Error of operation step number index, naming its
// first operand that was never created.
func (m *Machine) missing(index int) error {
	for slot, id := range m.steps[index].Args {
		if _, err := m.node(m.plan[index].refs[slot], id, index); err != nil {
			return err
		}
	}
	return &Error{fmt.Sprintf("step %d", index), "an operand was never created"}
}

// Gradients returns the stored gradient of every tracked node created so far,
// in creation order.
func (m *Machine) Gradients() Gradients {
	out := Gradients{}
	for i := 0; i < m.Graph.Len(); i++ {
		if grad, ok := m.Graph.At(i).Grad(); ok {
			out = append(out, Gradient{m.steps[m.creator(i)].ID, grad})
		}
	}
	return out
}

// Run executes steps on a fresh graph and returns one observation per step,
// as conformance/execute.py does. recordPass adds the pass record to every
// successful backward; without it backward takes the engine's fast path,
// which builds no record. Engine errors become observations; a *Error (a step
// naming an id whose creating step failed) ends the run.
func Run(steps []Step, recordPass bool) ([]Observation, error) {
	m := NewMachine(steps)
	observations := make([]Observation, 0, len(steps))
	for index, step := range steps {
		if step.Creates() {
			n, err := m.Create(index)
			if engineErr := asEngineError(err); engineErr != nil {
				observations = append(observations, Observation{Error: m.errorInfo(engineErr)})
				continue
			}
			if err != nil {
				return nil, err
			}
			value, tracked := wire.Float(n.Value()), n.Tracked()
			observations = append(observations, Observation{Value: &value, Tracked: &tracked})
			continue
		}
		output, err := m.Output(index)
		if err != nil {
			return nil, err
		}
		switch step.Op {
		case "zero_grad":
			m.Graph.ZeroGrad(output)
			g := m.Gradients()
			observations = append(observations, Observation{Gradients: &g})
		case "backward":
			var record *autograd.PassRecord
			if recordPass {
				record, err = m.Graph.BackwardRecord(output, step.Seed)
			} else {
				err = m.Graph.Backward(output, step.Seed)
			}
			g := m.Gradients()
			if engineErr := asEngineError(err); engineErr != nil {
				observations = append(observations, Observation{Error: m.errorInfo(engineErr), Gradients: &g})
				continue
			}
			if err != nil {
				return nil, err
			}
			obs := Observation{Gradients: &g}
			if recordPass {
				obs.Pass = m.passToWire(record)
			}
			observations = append(observations, obs)
		default:
			return nil, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("unknown operation %q", step.Op)}
		}
	}
	return observations, nil
}

// asEngineError returns err as an engine error, or nil when err is nil or
// something else. Only a non-nil err costs an allocation.
func asEngineError(err error) autograd.Error {
	if err == nil {
		return nil
	}
	var e autograd.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// errorInfo turns an engine error into wire data, nodes named by program id.
func (m *Machine) errorInfo(err autograd.Error) *ErrorInfo {
	info := &ErrorInfo{Kind: err.Kind()}
	add := func(name string, value any) { info.Fields = append(info.Fields, Field{name, value}) }
	switch e := err.(type) {
	case *autograd.NonFiniteLeafError:
		add("operation", e.Operation)
		add("value", e.Value)
	case *autograd.NonFiniteResultError:
		add("operation", e.Operation)
		add("value", e.Value)
	case *autograd.NonFiniteLocalDerivativeError:
		add("operation", e.Operation)
		add("operand", e.Slot)
		add("value", e.Value)
	case *autograd.UntrackedOutputError:
		add("operation", e.Operation)
	case *autograd.NonFiniteSeedError:
		add("seed", e.Seed)
	case *autograd.NonFiniteContributionError:
		add("child", m.Name(e.Consumer))
		add("parent", m.Name(e.Operand))
		add("operand", e.Slot)
		add("upstream", e.Upstream)
		add("local_derivative", e.LocalDerivative)
	case *autograd.NonFinitePassAdjointError:
		add("node", m.Name(e.Node))
		add("previous", e.Previous)
		add("contribution", e.Contribution)
	case *autograd.NonFiniteAccumulatedGradientError:
		add("node", m.Name(e.Node))
		add("stored", e.Stored)
		add("pass_adjoint", e.PassAdjoint)
	}
	return info
}

// passToWire turns a pass record into wire data, nodes named by program id.
func (m *Machine) passToWire(r *autograd.PassRecord) *Pass {
	p := &Pass{Seed: wire.Float(r.Seed), Nodes: make([]PassNode, len(r.Nodes)), Edges: make([]PassEdge, len(r.Edges))}
	for i, n := range r.Nodes {
		p.Nodes[i] = PassNode{
			Node: m.Name(m.Graph.At(int(n.Node))), Operation: n.Operation.String(), Value: wire.Float(n.Value), Tracked: n.Tracked,
		}
		if n.Tracked {
			p.Nodes[i].PassAdjoint = floatPtr(n.PassAdjoint)
			p.Nodes[i].StoredGradient = floatPtr(n.StoredGradient)
		}
	}
	for i, e := range r.Edges {
		p.Edges[i] = PassEdge{
			Child: m.Name(m.Graph.At(int(e.Consumer))), Parent: m.Name(m.Graph.At(int(e.Operand))), Operand: e.Slot,
			LocalDerivative: wire.Float(e.LocalDerivative), Upstream: wire.Float(e.Upstream),
			Contribution: wire.Float(e.Contribution), ParentTracked: e.OperandTracked,
		}
		if e.OperandTracked {
			p.Edges[i].Before = floatPtr(e.Before)
			p.Edges[i].After = floatPtr(e.After)
		}
	}
	return p
}

func floatPtr(v float64) *wire.Float {
	f := wire.Float(v)
	return &f
}
