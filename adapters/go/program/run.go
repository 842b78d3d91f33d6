package program

import (
	"errors"
	"fmt"

	"scalarkit/autograd"
	"scalarkit/wire"
)

// Machine executes steps on one fresh graph, keeping the id of every node it
// created. Run uses it to observe a program; the bench command uses it to time
// one without building observations.
type Machine struct {
	Graph *autograd.Graph
	nodes map[string]autograd.Node
	ids   []string // in creation order, so ids[k] is the k-th created node
	names []string // by tape index
}

// NewMachine returns a machine with an empty graph.
func NewMachine() *Machine {
	return &Machine{Graph: autograd.NewGraph(), nodes: map[string]autograd.Node{}}
}

// Lookup returns the node named id, or a *Error when no step created it (its
// creating step failed).
func (m *Machine) Lookup(id string, index int) (autograd.Node, error) {
	n, ok := m.nodes[id]
	if !ok {
		return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("id %q was never created (its creating step failed)", id)}
	}
	return n, nil
}

// Name returns the program id of n.
func (m *Machine) Name(n autograd.Node) string { return m.names[n.Index()] }

// Len returns the number of nodes created so far.
func (m *Machine) Len() int { return len(m.ids) }

// Create executes creation step number index and records the new node under
// step.ID. An engine error (autograd.Error) creates no id.
func (m *Machine) Create(step Step, index int) (autograd.Node, error) {
	g := m.Graph
	var (
		n   autograd.Node
		err error
	)
	switch step.Op {
	case "variable":
		n, err = g.Variable(step.Value)
	case "constant":
		n, err = g.Literal(step.Value)
	default:
		var buf [2]autograd.Node
		operands := buf[:len(step.Args)]
		for slot, id := range step.Args {
			if operands[slot], err = m.Lookup(id, index); err != nil {
				return autograd.Node{}, err
			}
		}
		if step.Op == "detach" {
			n = g.Detach(operands[0])
			break
		}
		op, ok := autograd.LookupOp(step.Op)
		if !ok {
			return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("unknown operation %q", step.Op)}
		}
		n, err = g.Apply(op, operands, step.Exponent)
	}
	if err != nil {
		return autograd.Node{}, err
	}
	m.nodes[step.ID] = n
	m.names = append(m.names, step.ID) // the program is the graph's only writer, so this is index n
	m.ids = append(m.ids, step.ID)
	return n, nil
}

// Gradients returns the stored gradient of every tracked node created so far,
// in creation order.
func (m *Machine) Gradients() Gradients {
	out := Gradients{}
	for _, id := range m.ids {
		if grad, ok := m.nodes[id].Grad(); ok {
			out = append(out, Gradient{id, grad})
		}
	}
	return out
}

// Run executes steps on a fresh graph and returns one observation per step,
// as conformance/execute.py does. recordPass adds the pass record to every
// successful backward. Engine errors become observations; a *Error (a step
// naming an id whose creating step failed) ends the run.
func Run(steps []Step, recordPass bool) ([]Observation, error) {
	m := NewMachine()
	observations := make([]Observation, 0, len(steps))
	for index, step := range steps {
		var engineErr autograd.Error
		if step.Creates() {
			n, err := m.Create(step, index)
			if errors.As(err, &engineErr) {
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
		output, err := m.Lookup(step.Output, index)
		if err != nil {
			return nil, err
		}
		switch step.Op {
		case "zero_grad":
			m.Graph.ZeroGrad(output)
			g := m.Gradients()
			observations = append(observations, Observation{Gradients: &g})
		case "backward":
			record, err := m.Graph.Backward(output, step.Seed)
			g := m.Gradients()
			if errors.As(err, &engineErr) {
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
		add("operand", e.Operand)
		add("value", e.Value)
	case *autograd.UntrackedOutputError:
		add("operation", e.Operation)
	case *autograd.NonFiniteSeedError:
		add("seed", e.Seed)
	case *autograd.NonFiniteContributionError:
		add("child", m.Name(e.Child))
		add("parent", m.Name(e.Parent))
		add("operand", e.Operand)
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
			Node: m.Name(n.Node), Operation: n.Operation.String(), Value: wire.Float(n.Value), Tracked: n.Tracked,
		}
		if n.Tracked {
			p.Nodes[i].PassAdjoint = floatPtr(n.PassAdjoint)
			p.Nodes[i].StoredGradient = floatPtr(n.StoredGradient)
		}
	}
	for i, e := range r.Edges {
		p.Edges[i] = PassEdge{
			Child: m.Name(e.Child), Parent: m.Name(e.Parent), Operand: e.Operand,
			LocalDerivative: wire.Float(e.LocalDerivative), Upstream: wire.Float(e.Upstream),
			Contribution: wire.Float(e.Contribution), ParentTracked: e.ParentTracked,
		}
		if e.ParentTracked {
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
