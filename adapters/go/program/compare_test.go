package program

import (
	"encoding/json"
	"fmt"
	"sort"

	"scalarkit/wire"
)

// comparison is a fixture's comparison policy (docs/fixtures.md "Comparison
// policy"): mode "exact" or "bounds", and why.
type comparison struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason"`
}

// contractBounds returns how the contract profile, the one a port written from
// the contract declares, compares f (docs/contract.md section 9): exact is true
// for an "exact" fixture (bit for bit); otherwise bounds holds, per step, each
// float's path within the step's observation and its bound, an absent path
// having bound 0. A comparison or bounds not of the documented shape for steps
// steps is an error: a fixture bug.
func contractBounds(f fixture, steps int) (exact bool, bounds []map[string]float64, err error) {
	raw, has := f.Bounds["contract"]
	switch {
	case f.Comparison.Mode == "exact" && has:
		return false, nil, fmt.Errorf("an exact comparison with bounds.contract")
	case f.Comparison.Mode == "exact":
		return true, nil, nil
	case f.Comparison.Mode != "bounds":
		return false, nil, fmt.Errorf("unknown comparison mode %q", f.Comparison.Mode)
	case !has:
		return false, nil, fmt.Errorf("a bounds comparison without bounds.contract")
	}
	var perStep []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &perStep); err != nil {
		return false, nil, fmt.Errorf("bounds.contract: %v", err)
	}
	if len(perStep) != steps {
		return false, nil, fmt.Errorf("bounds.contract has %d entries for %d steps", len(perStep), steps)
	}
	bounds = make([]map[string]float64, steps)
	for i, paths := range perStep {
		bounds[i] = make(map[string]float64, len(paths))
		for path, text := range paths {
			b, err := wire.ParseFloat(text)
			if err != nil {
				return false, nil, fmt.Errorf("bounds.contract[%d].%s: %v", i, path, err)
			}
			if !(b > 0) {
				return false, nil, fmt.Errorf("bounds.contract[%d].%s is %s, not a positive bound", i, path, text)
			}
			bounds[i][path] = b
		}
	}
	return false, bounds, nil
}

// comparer compares one case's observations at its levels and collects the
// differences, each naming the step and the field.
type comparer struct {
	exact    bool                 // every float bit for bit
	bounds   []map[string]float64 // else each step's bounds by path; an absent path has bound 0
	steps    []Step
	problems []string
}

func (c *comparer) failf(step int, path, format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf("step %d (%s): %s: %s", step, describe(c.steps[step]), path, fmt.Sprintf(format, args...)))
}

// float compares the float at path, its path within the step's observation
// (docs/fixtures.md: value, gradients.ID, pass.nodes[ID].value, ...), under
// its bound.
func (c *comparer) float(step int, path string, want, got float64) {
	if c.exact {
		if !wire.BitsEqual(want, got) {
			c.failf(step, path, "expected %s, got %s (%v ulp apart; compared bit for bit)", wire.FormatFloat(want), wire.FormatFloat(got), wire.UlpDistance(want, got))
		}
		return
	}
	bound := c.bounds[step][path]
	if !wire.Agree(want, got, bound) {
		c.failf(step, path, "expected %s, got %s (%v ulp apart; bound %v)", wire.FormatFloat(want), wire.FormatFloat(got), wire.UlpDistance(want, got), bound)
	}
}

func (c *comparer) nullable(step int, path string, want, got *wire.Float) {
	switch {
	case want == nil && got == nil:
	case want == nil || got == nil:
		c.failf(step, path, "expected %s, got %s", showPtr(want), showPtr(got))
	default:
		c.float(step, path, float64(*want), float64(*got))
	}
}

func showPtr(f *wire.Float) string {
	if f == nil {
		return "null"
	}
	return wire.FormatFloat(float64(*f))
}

func (c *comparer) errorInfo(step int, path string, want, got *ErrorInfo) {
	if got == nil {
		c.failf(step, path, "expected error %s, got no error", want.Kind)
		return
	}
	if want.Kind != got.Kind {
		c.failf(step, path+".kind", "expected %s, got %s", want.Kind, got.Kind)
		return
	}
	names := map[string]bool{}
	for _, f := range want.Fields {
		names[f.Name] = true
	}
	for _, f := range got.Fields {
		names[f.Name] = true
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, g := want.Field(k), got.Field(k)
		wf, wIsFloat := w.(float64)
		gf, gIsFloat := g.(float64)
		switch {
		case wIsFloat && gIsFloat:
			c.float(step, path+"."+k, wf, gf)
		case w != g:
			c.failf(step, path+"."+k, "expected %v, got %v", w, g)
		}
	}
}

func (c *comparer) gradients(step int, want, got *Gradients) {
	if got == nil {
		c.failf(step, "gradients", "missing")
		return
	}
	w, g := want.Map(), got.Map()
	for _, e := range *want {
		v, ok := g[e.ID]
		if !ok {
			c.failf(step, "gradients."+e.ID, "missing (expected %s)", wire.FormatFloat(e.Grad))
			continue
		}
		c.float(step, "gradients."+e.ID, e.Grad, v)
	}
	for _, e := range *got {
		if _, ok := w[e.ID]; !ok {
			c.failf(step, "gradients."+e.ID, "unexpected (got %s)", wire.FormatFloat(e.Grad))
		}
	}
}

// trace compares a pass order-free: nodes keyed by id, edges by (consumer, slot).
func (c *comparer) trace(step int, want, got *Pass) {
	if got == nil {
		c.failf(step, "pass", "missing")
		return
	}
	c.float(step, "pass.seed", float64(want.Seed), float64(got.Seed))
	gotNodes := map[string]PassNode{}
	for _, n := range got.Nodes {
		gotNodes[n.Node] = n
	}
	if len(got.Nodes) != len(want.Nodes) {
		c.failf(step, "pass.nodes", "expected %d nodes, got %d", len(want.Nodes), len(got.Nodes))
	}
	for _, w := range want.Nodes {
		g, ok := gotNodes[w.Node]
		path := "pass.nodes[" + w.Node + "]"
		if !ok {
			c.failf(step, path, "missing")
			continue
		}
		if w.Operation != g.Operation {
			c.failf(step, path+".operation", "expected %s, got %s", w.Operation, g.Operation)
		}
		if w.Tracked != g.Tracked {
			c.failf(step, path+".tracked", "expected %v, got %v", w.Tracked, g.Tracked)
		}
		c.float(step, path+".value", float64(w.Value), float64(g.Value))
		c.nullable(step, path+".pass_adjoint", w.PassAdjoint, g.PassAdjoint)
		c.nullable(step, path+".stored_gradient", w.StoredGradient, g.StoredGradient)
	}
	type key struct {
		consumer string
		slot     int
	}
	gotEdges := map[key]PassEdge{}
	for _, e := range got.Edges {
		gotEdges[key{e.Consumer, e.Slot}] = e
	}
	if len(got.Edges) != len(want.Edges) {
		c.failf(step, "pass.edges", "expected %d edges, got %d", len(want.Edges), len(got.Edges))
	}
	for _, w := range want.Edges {
		path := fmt.Sprintf("pass.edges[%s:%d]", w.Consumer, w.Slot)
		g, ok := gotEdges[key{w.Consumer, w.Slot}]
		if !ok {
			c.failf(step, path, "missing")
			continue
		}
		if w.Operand != g.Operand {
			c.failf(step, path+".operand", "expected %s, got %s", w.Operand, g.Operand)
		}
		if w.OperandTracked != g.OperandTracked {
			c.failf(step, path+".operand_tracked", "expected %v, got %v", w.OperandTracked, g.OperandTracked)
		}
		c.float(step, path+".local_derivative", float64(w.LocalDerivative), float64(g.LocalDerivative))
		c.float(step, path+".upstream", float64(w.Upstream), float64(g.Upstream))
		c.float(step, path+".contribution", float64(w.Contribution), float64(g.Contribution))
	}
}

// sameNodeOrder reports whether got lists the nodes in want's (canonical) order.
func sameNodeOrder(want, got *Pass) bool {
	if got == nil || len(want.Nodes) != len(got.Nodes) {
		return false
	}
	for i := range want.Nodes {
		if want.Nodes[i].Node != got.Nodes[i].Node {
			return false
		}
	}
	return true
}

// order compares the edge sequence as (consumer, slot, operand) and the
// before/after adjoints, in order.
func (c *comparer) order(step int, want, got *Pass) {
	if len(want.Edges) != len(got.Edges) {
		c.failf(step, "pass.edges", "expected %d edges, got %d", len(want.Edges), len(got.Edges))
		return
	}
	for i, w := range want.Edges {
		g := got.Edges[i]
		path := fmt.Sprintf("pass.edges[%d]", i)
		if w.Consumer != g.Consumer || w.Slot != g.Slot || w.Operand != g.Operand {
			c.failf(step, path, "expected edge (%s, %d, %s), got (%s, %d, %s)", w.Consumer, w.Slot, w.Operand, g.Consumer, g.Slot, g.Operand)
			return
		}
		c.nullable(step, path+".before", w.Before, g.Before)
		c.nullable(step, path+".after", w.After, g.After)
	}
}

func describe(s Step) string {
	switch {
	case s.Op == "variable" || s.Op == "constant":
		return fmt.Sprintf("%s = %s(%s)", s.ID, s.Op, wire.FormatFloat(s.Value))
	case s.Op == "backward":
		return fmt.Sprintf("backward(%s, seed=%s)", s.Output, wire.FormatFloat(s.Seed))
	case s.Op == "zero_grad":
		return fmt.Sprintf("zero_grad(%s)", s.Output)
	case s.Op == "pow":
		return fmt.Sprintf("%s = pow(%s; %s)", s.ID, s.Operands[0], wire.FormatFloat(s.Exponent))
	}
	return fmt.Sprintf("%s = %s(%v)", s.ID, s.Op, s.Operands)
}
