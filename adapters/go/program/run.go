package program

import (
	"errors"
	"fmt"
	"sort"

	"scalarkit/autograd"
	"scalarkit/wire"
)

// Session is one program's run on the engine: ids and their nodes. It
// executes the steps of one program on one fresh graph. NewSession resolves
// every id to the index of the step that creates it, once, so running a step
// looks its operands up by index: no map and no string on the way to the
// engine. Run uses it to observe a program; the bench command uses it to time
// one without building observations. (The Rust port's executor is a Session
// too.)
type Session struct {
	Graph *autograd.Graph
	steps []Step
	plan  []plan  // by step: what NewSession resolved
	tape  []int32 // by step, and one more: the tape index of the node the step created (a chain's last); notRun or failed if none
	spans []span  // the nodes of each step that created some, in tape order, filled when a name is asked for
	seen  int     // the steps spans has been filled from
}

// The tape entry of a step that created no node: not run (yet), or failed.
const (
	notRun int32 = -1
	failed int32 = -2
)

// span is the nodes one creation step made: tape indices first to
// tape[step], one node, or a repeated step's chain (docs/contract.md rule
// program.repeat). A million-node chain is one span: no name and no entry per
// inner node until an error or a record names one.
type span struct{ first, step int32 }

// plan is one step resolved: its operation and the creating step of each
// operand (or, for backward and zero_grad, of the output in refs[0]). An id
// no earlier step creates resolves to len(steps), whose tape entry stays notRun,
// so a ref needs no sign test before it is used.
type plan struct {
	value   float64 // the leaf's value or pow's exponent
	refs    [2]int32
	op      autograd.Operation
	repeat  int32 // how many nodes the step creates: an operation's applications, else 1
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

// NewSession returns a session for steps on an empty graph.
func NewSession(steps []Step) *Session {
	s := &Session{
		Graph: autograd.NewGraph(), steps: steps,
		plan: make([]plan, len(steps)), tape: make([]int32, len(steps)+1),
	}
	s.tape[len(steps)] = notRun
	created := make(map[string]int32, len(steps))
	resolve := func(id string) int32 {
		if k, ok := created[id]; ok {
			return k
		}
		return int32(len(steps))
	}
	for index, step := range steps {
		s.tape[index] = notRun
		p := &s.plan[index]
		p.value, p.repeat = step.Value, int32(step.Size())
		if step.Op == "pow" {
			p.value = step.Exponent
		}
		for slot, id := range step.Operands {
			p.refs[slot] = resolve(id)
		}
		if p.creates = step.Creates(); !p.creates {
			p.refs[0] = resolve(step.Output)
			continue
		}
		switch step.Op {
		case "variable":
			p.kind = kindVariable
		case "constant":
			p.kind = kindConstant
		case "detach":
			p.kind = kindDetach
		default:
			if op, ok := autograd.LookupOp(step.Op); ok && len(step.Operands) == op.Arity() {
				p.op, p.arity, p.kind = op, uint8(op.Arity()), kindApply
				p.refs[1] = p.refs[op.Arity()-1] // a unary op's slot 1 repeats slot 0
			}
		}
		if _, dup := created[step.ID]; !dup {
			created[step.ID] = int32(index)
		}
	}
	return s
}

// node returns the node created by step ref for step index, or a *Error
// naming id when no step created it (its creating step failed).
func (s *Session) node(ref int32, id string, index int) (autograd.Node, error) {
	if s.tape[ref] < 0 {
		return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("id %q was never created (its creating step failed)", id)}
	}
	return s.Graph.At(int(s.tape[ref])), nil
}

// Creates reports whether step number index creates a node.
func (s *Session) Creates(index int) bool { return s.plan[index].creates }

// Output returns the output node of backward or zero_grad step number index,
// or a *Error when no step created it (its creating step failed).
func (s *Session) Output(index int) (autograd.Node, error) {
	return s.node(s.plan[index].refs[0], s.steps[index].Output, index)
}

// Name returns the program name of n: the id of the step that created it,
// or id[k] for the k-th node of a repeated step's chain before its last.
func (s *Session) Name(n autograd.Node) string {
	step, position := s.creator(n.Index())
	if step < 0 {
		return "?"
	}
	return s.steps[step].ChainName(position)
}

// creator returns the step that created tape index i and the node's position
// (1-based) in that step's chain, filling s.spans up to i from s.tape:
// creation does not keep this inverse, since only names (errors, records)
// need it. The program is the graph's only writer, so the steps that created
// nodes, in step order, hold consecutive tape indices 0, 1, 2... (the nodes
// of a chain whose application failed sit between two spans: they are no
// operand of any node, so nothing names them, and they get step -1). It stops
// at a creation step not run yet, whose nodes are not on the tape.
func (s *Session) creator(i int) (step int32, position int) {
	for s.seen < len(s.steps) && (len(s.spans) == 0 || int(s.tape[s.spans[len(s.spans)-1].step]) < i) {
		last := s.tape[s.seen]
		if last == notRun && s.plan[s.seen].creates {
			break
		}
		if last >= 0 {
			s.spans = append(s.spans, span{last - s.plan[s.seen].repeat + 1, int32(s.seen)})
		}
		s.seen++
	}
	// Until the first chain, span k is node k; after it, a binary search.
	k := i
	if k >= len(s.spans) || int(s.spans[k].first) != i {
		k = sort.Search(len(s.spans), func(k int) bool { return int(s.spans[k].first) > i }) - 1
	}
	if k < 0 || i > int(s.tape[s.spans[k].step]) {
		return -1, 0
	}
	return s.spans[k].step, i - int(s.spans[k].first) + 1
}

// Len returns the number of nodes created so far.
func (s *Session) Len() int { return s.Graph.Len() }

// Create executes creation step number index and records its node. An engine
// error (autograd.Error) creates no node.
func (s *Session) Create(index int) (autograd.Node, error) {
	// Only the plan is read on the way to the engine; the step's strings only
	// for a message.
	p := &s.plan[index]
	var (
		n   autograd.Node
		err error
	)
	if p.kind == kindApply {
		n, err = s.apply(index, p)
	} else {
		n, err = s.createLeaf(index)
	}
	if err != nil {
		s.tape[index] = failed
		return autograd.Node{}, err
	}
	s.tape[index] = int32(n.Index())
	return n, nil
}

// CreateRun executes the creation steps from number index on, up to the
// first step that creates nothing (or the end), and returns that step's
// number: Create in a loop, for a caller that times steps and does not observe
// them. An engine error (autograd.Error) creates no node and the run goes on,
// as it would in the program; any other error stops it at its step.
func (s *Session) CreateRun(index int) (int, error) {
	for ; index < len(s.plan) && s.plan[index].creates; index++ {
		p := &s.plan[index]
		var (
			n   autograd.Node
			err error
		)
		if p.kind == kindApply {
			n, err = s.apply(index, p)
		} else {
			n, err = s.createLeaf(index)
		}
		if err == nil {
			s.tape[index] = int32(n.Index())
			continue
		}
		s.tape[index] = failed
		if _, engine := err.(autograd.Error); !engine {
			return index, err
		}
	}
	return index, nil
}

// apply creates the node of operation step number index, whose plan is p.
func (s *Session) apply(index int, p *plan) (autograd.Node, error) {
	// Both slots resolve the same way (a unary op's slot 1 repeats slot 0),
	// and Apply takes the slice its arity needs.
	a, b := s.tape[p.refs[0]], s.tape[p.refs[1]]
	if a < 0 || b < 0 {
		return autograd.Node{}, s.missing(index)
	}
	operands := [2]autograd.Node{s.Graph.At(int(a)), s.Graph.At(int(b))}
	n, err := s.Graph.Apply(p.op, operands[:p.arity], p.value)
	// A repeated step: each result takes slot 0 of the next application, the
	// other slot stays; the first application that fails fails the step.
	for k := int32(1); k < p.repeat && err == nil; k++ {
		operands[0] = n
		n, err = s.Graph.Apply(p.op, operands[:p.arity], p.value)
	}
	return n, err
}

// createLeaf is Create for every step that is not an operation: a variable,
// a constant, a detach, or an unknown operation (a *Error).
func (s *Session) createLeaf(index int) (autograd.Node, error) {
	p := &s.plan[index]
	switch p.kind {
	case kindVariable:
		return s.Graph.Variable(p.value)
	case kindConstant:
		return s.Graph.Literal(p.value)
	case kindDetach:
		a, err := s.node(p.refs[0], s.steps[index].Operands[0], index)
		if err != nil {
			return autograd.Node{}, err
		}
		return s.Graph.Detach(a), nil
	}
	return autograd.Node{}, &Error{fmt.Sprintf("step %d", index), fmt.Sprintf("unknown operation %q", s.steps[index].Op)}
}

// missing returns the *Error of operation step number index, naming its
// first operand that was never created.
func (s *Session) missing(index int) error {
	for slot, id := range s.steps[index].Operands {
		if _, err := s.node(s.plan[index].refs[slot], id, index); err != nil {
			return err
		}
	}
	return &Error{fmt.Sprintf("step %d", index), "an operand was never created"}
}

// Gradients returns the stored gradient of every tracked node created so far
// under a program id, in creation order: the inner nodes of a repeated step's
// chain are left out (rule program.repeat).
func (s *Session) Gradients() Gradients {
	out := Gradients{}
	for index, step := range s.steps {
		if s.tape[index] < 0 {
			continue
		}
		if grad, ok := s.Graph.At(int(s.tape[index])).Grad(); ok {
			out = append(out, Gradient{step.ID, grad})
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
	s := NewSession(steps)
	observations := make([]Observation, 0, len(steps))
	for index, step := range steps {
		if step.Creates() {
			n, err := s.Create(index)
			if engineErr := asEngineError(err); engineErr != nil {
				observations = append(observations, Observation{Error: s.errorInfo(engineErr)})
				continue
			}
			if err != nil {
				return nil, err
			}
			value, tracked := wire.Float(n.Value()), n.Tracked()
			observations = append(observations, Observation{Value: &value, Tracked: &tracked})
			continue
		}
		output, err := s.Output(index)
		if err != nil {
			return nil, err
		}
		switch step.Op {
		case "zero_grad":
			s.Graph.ZeroGrad(output)
			g := s.Gradients()
			observations = append(observations, Observation{Gradients: &g})
		case "backward":
			var record *autograd.PassRecord
			if recordPass {
				record, err = s.Graph.BackwardRecord(output, step.Seed)
			} else {
				err = s.Graph.Backward(output, step.Seed)
			}
			g := s.Gradients()
			if engineErr := asEngineError(err); engineErr != nil {
				observations = append(observations, Observation{Error: s.errorInfo(engineErr), Gradients: &g})
				continue
			}
			if err != nil {
				return nil, err
			}
			obs := Observation{Gradients: &g}
			if recordPass {
				obs.Pass = s.passToWire(record)
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

// errorInfo turns an engine error into wire data, nodes named by program id,
// the fields of each kind in protocol 2's order.
func (s *Session) errorInfo(err autograd.Error) *ErrorInfo {
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
		add("slot", e.Slot)
		add("value", e.Value)
	case *autograd.UntrackedOutputError:
		add("operation", e.Operation)
	case *autograd.NonFiniteSeedError:
		add("seed", e.Seed)
	case *autograd.NonFiniteContributionError:
		add("consumer", s.Name(e.Consumer))
		add("slot", e.Slot)
		add("operand", s.Name(e.Operand))
		add("upstream", e.Upstream)
		add("local_derivative", e.LocalDerivative)
	case *autograd.NonFinitePassAdjointError:
		add("node", s.Name(e.Node))
		add("previous", e.Previous)
		add("contribution", e.Contribution)
	case *autograd.NonFiniteAccumulatedGradientError:
		add("node", s.Name(e.Node))
		add("stored", e.Stored)
		add("pass_adjoint", e.PassAdjoint)
	}
	return info
}

// passToWire turns a pass record into wire data, nodes named by program id.
func (s *Session) passToWire(r *autograd.PassRecord) *Pass {
	p := &Pass{Seed: wire.Float(r.Seed), Nodes: make([]PassNode, len(r.Nodes)), Edges: make([]PassEdge, len(r.Edges))}
	for i, n := range r.Nodes {
		p.Nodes[i] = PassNode{
			Node: s.Name(s.Graph.At(int(n.Node))), Operation: n.Operation.String(), Value: wire.Float(n.Value), Tracked: n.Tracked,
		}
		if n.Tracked {
			p.Nodes[i].PassAdjoint = floatPtr(n.PassAdjoint)
			p.Nodes[i].StoredGradient = floatPtr(n.StoredGradient)
		}
	}
	for i, e := range r.Edges {
		p.Edges[i] = PassEdge{
			Consumer: s.Name(s.Graph.At(int(e.Consumer))), Slot: e.Slot, Operand: s.Name(s.Graph.At(int(e.Operand))),
			LocalDerivative: wire.Float(e.LocalDerivative), Upstream: wire.Float(e.Upstream),
			Contribution: wire.Float(e.Contribution), OperandTracked: e.OperandTracked,
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
