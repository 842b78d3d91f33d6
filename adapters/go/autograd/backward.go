package autograd

// PassRecord is what one successful backward computed (docs/contract.md
// section 5, "The pass record"): the seed, the nodes in topology order (the
// canonical depth-first post-order of section 7, output last) and the operand
// edges in processing order. Only BackwardRecord builds one; Backward, the
// training path, records nothing. Nodes are named by tape index (see
// Graph.At), so a record holds no pointer and costs the collector nothing.
type PassRecord struct {
	Seed  float64
	Nodes []NodeRecord
	Edges []EdgeRecord
}

// NodeRecord is one node of a pass, named by its tape index. PassAdjoint and
// StoredGradient (after commit) mean something only when Tracked; an untracked
// node has neither and the wire format writes null for both.
type NodeRecord struct {
	Node           int32
	Operation      Op
	Tracked        bool
	Value          float64
	PassAdjoint    float64
	StoredGradient float64
}

// EdgeRecord is one operand edge as backward walked it: node Child consumed
// node Parent (both tape indices) in slot Operand. Upstream is the child's pass
// adjoint (0 for an untracked child) and Contribution is Upstream *
// LocalDerivative. Before and After are the parent's pass adjoint around this
// edge, meaningful only when ParentTracked (the wire format writes null
// otherwise).
type EdgeRecord struct {
	Child           int32
	Parent          int32
	Operand         int
	LocalDerivative float64
	Upstream        float64
	Contribution    float64
	ParentTracked   bool
	Before          float64
	After           float64
}

// scratch is the per-graph working memory of Backward and ZeroGrad, indexed
// like the tape and reused by every pass, so a pass allocates nothing once the
// buffers have grown to the tape's length.
type scratch struct {
	pass  []float64 // pass adjoints by tape index, valid for the current topology
	mark  []uint8   // mark[i] == gen: node i is in the current topology
	gen   uint8     // the current pass's generation
	topo  []int32   // the current topology
	stack []int32   // depth-first work: i >= 0 visits node i, ^i places node i
}

// grow makes the buffers cover n tape entries and starts a new generation, so
// every mark of an earlier pass reads as unvisited.
func (s *scratch) grow(n int) {
	if len(s.mark) < n {
		size := max(n, 2*len(s.mark))
		s.mark = append(s.mark, make([]uint8, size-len(s.mark))...)
		s.pass = append(s.pass, make([]float64, size-len(s.pass))...)
		// Room for the deepest possible walk: pages never touched are never
		// resident, and the walk never copies a growing stack.
		s.topo = make([]int32, 0, size)
		s.stack = make([]int32, 0, 2*size) // at most two entries per node

	}
	s.gen++
	if s.gen == 0 { // wrapped (every 255 passes): forget every old mark once
		clear(s.mark)
		s.gen = 1
	}
}

// topology fills g.scratch.topo with every node output reaches, each once,
// in the canonical order of docs/contract.md section 7: depth-first post-order
// from the output, operands visited in slot order. It is iterative, so a
// million-node chain needs no recursion. Every node it visits gets a fresh
// pass adjoint of 0.
//
// The explicit stack holds what the recursive walk would still do: "place
// node i" (^i) below "visit its slot-1 operand", while the slot-0 operand is
// visited at once. A visit checks the mark when it is popped, which is when
// the recursive walk would check it: after the earlier slots' subtrees.
func (g *Graph) topology(output int32) []int32 {
	s := &g.scratch
	s.grow(len(g.nodes))
	nodes, mark, pass, gen := g.nodes, s.mark, s.pass, s.gen
	topo, stack := s.topo[:0], s.stack[:0]
	for p := output; ; {
		if mark[p] != gen {
			mark[p], pass[p] = gen, 0
			if nd := &nodes[p]; nd.arity > 0 {
				stack = append(stack, ^p)
				if nd.arity == 2 {
					stack = append(stack, nd.operands[1])
				}
				p = nd.operands[0]
				continue
			}
			topo = append(topo, p) // a leaf's post-order place is where it is found
		}
		// Pop: place every finished node, up to the next pending visit.
		for len(stack) > 0 && stack[len(stack)-1] < 0 {
			topo = append(topo, ^stack[len(stack)-1])
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			break
		}
		p = stack[len(stack)-1]
		stack = stack[:len(stack)-1]
	}
	s.topo, s.stack = topo, stack
	return topo
}

// Backward runs one backward pass from output with the given seed (use 1 for
// the plain gradient) and adds its pass adjoints to the stored gradients
// (docs/contract.md section 5). It builds no pass record and, once the graph's
// scratch buffers have grown to the tape, allocates nothing; BackwardRecord
// does the same pass and also returns its record.
//
// The checks come in the contract's order: an untracked output
// (*UntrackedOutputError), a non-finite seed (*NonFiniteSeedError), then while
// walking the edges a non-finite contribution (*NonFiniteContributionError) or
// pass adjoint (*NonFinitePassAdjointError), then, in topology order, a
// non-finite prospective stored gradient (*NonFiniteAccumulatedGradientError).
// When Backward returns an error no stored gradient has changed a single bit.
// Nodes the output does not reach are never touched.
func (g *Graph) Backward(output Node, seed float64) error {
	return g.backward(output, seed, nil)
}

// BackwardRecord is Backward that also returns the pass record, for callers
// that check the trace or the order of a pass (docs/contract.md section 9). It
// allocates the record: one NodeRecord per node and one EdgeRecord per edge.
func (g *Graph) BackwardRecord(output Node, seed float64) (*PassRecord, error) {
	r := &PassRecord{Seed: seed}
	if err := g.backward(output, seed, r); err != nil {
		return nil, err
	}
	return r, nil
}

// backward is the one pass of Backward and BackwardRecord; it fills r when r
// is not nil.
func (g *Graph) backward(output Node, seed float64, r *PassRecord) error {
	g.check(output)
	out := &g.nodes[output.i]
	if !out.tracked {
		return &UntrackedOutputError{Operation: out.op.String()}
	}
	if !isFinite(seed) {
		return &NonFiniteSeedError{Seed: seed}
	}
	topo := g.topology(output.i)
	g.syncGrads()
	nodes, grads, pass := g.nodes, g.grads, g.scratch.pass
	pass[output.i] = seed
	if r != nil {
		r.Nodes = make([]NodeRecord, 0, len(topo))
		r.Edges = make([]EdgeRecord, 0, len(topo))
	}
	// Reverse topology order: each child, then each of its edges in slot order.
	// A child's pass adjoint is final when the walk reaches it (all its
	// consumers come later in the topology), so its prospective stored
	// gradient is checked there too; but the contract reports every
	// contribution and pass adjoint error first, so a failing sum only raises
	// a flag here and is reported after the walk.
	overflow := false
	for k := len(topo) - 1; k >= 0; k-- {
		ci := topo[k]
		child := &nodes[ci]
		upstream := 0.0
		if child.tracked {
			upstream = pass[ci]
			stored := grads[ci]
			if child.param > 0 {
				stored = g.parameters[child.param-1].Grad
			}
			if !isFinite(stored + upstream) {
				overflow = true
			}
		} else if r == nil {
			// An untracked child's operands are untracked and its contributions
			// are 0 * a finite derivative: no check can fail, nothing is stored.
			continue
		}
		for slot := uint8(0); slot < child.arity; slot++ {
			pi := child.operands[slot]
			local := child.local[slot]
			contribution := float64(upstream * local)
			if !isFinite(contribution) {
				return &NonFiniteContributionError{
					Child: Node{g, ci}, Parent: Node{g, pi}, Operand: int(slot),
					Upstream: upstream, LocalDerivative: local,
				}
			}
			if r == nil {
				// The fast path adds into every parent's slot without reading
				// the parent: an untracked parent's slot is never read (not
				// as upstream, not in a check, not as a stored gradient), so
				// only a non-finite sum needs to know whether it counts.
				after := pass[pi] + contribution
				if !isFinite(after) && nodes[pi].tracked {
					return &NonFinitePassAdjointError{Node: Node{g, pi}, Previous: pass[pi], Contribution: contribution}
				}
				pass[pi] = after
				continue
			}
			parentTracked := nodes[pi].tracked
			var before, after float64
			if parentTracked {
				before = pass[pi]
				after = before + contribution
				if !isFinite(after) {
					return &NonFinitePassAdjointError{Node: Node{g, pi}, Previous: before, Contribution: contribution}
				}
				pass[pi] = after
			}
			r.Edges = append(r.Edges, EdgeRecord{
				Child: ci, Parent: pi, Operand: int(slot),
				LocalDerivative: local, Upstream: upstream, Contribution: contribution,
				ParentTracked: parentTracked, Before: before, After: after,
			})
		}
	}
	// Some prospective stored gradient overflows: report the first in
	// topology order, before any commit.
	if overflow {
		for _, i := range topo {
			if nodes[i].tracked && !isFinite(g.stored(i)+pass[i]) {
				return &NonFiniteAccumulatedGradientError{Node: Node{g, i}, Stored: g.stored(i), PassAdjoint: pass[i]}
			}
		}
	}
	// Every check passed: commit. An untracked node's slot of grads is never
	// read (whatever its pass slot held), so the loop needs no branch and
	// reads no node; a Parameter's node commits to the Parameter instead.
	if r != nil {
		for _, i := range topo {
			nd := &nodes[i]
			if !nd.tracked {
				r.Nodes = append(r.Nodes, NodeRecord{Node: i, Operation: nd.op, Value: nd.value})
				continue
			}
			r.Nodes = append(r.Nodes, NodeRecord{
				Node: i, Operation: nd.op, Tracked: true, Value: nd.value, PassAdjoint: pass[i], StoredGradient: g.stored(i) + pass[i],
			})
		}
	}
	for _, i := range topo {
		grads[i] += pass[i]
	}
	mark, gen := g.scratch.mark, g.scratch.gen
	for k, i := range g.paramNodes {
		if mark[i] == gen {
			p := g.parameters[k]
			p.Grad += pass[i]
		}
	}
	return nil
}

// ZeroGrad sets the stored gradient of every tracked node reachable from
// output to 0, including the Parameters those nodes stand for
// (docs/contract.md section 6). Values, edges and unreachable nodes are
// untouched. It walks the same topology as Backward, in the same reused
// buffers.
func (g *Graph) ZeroGrad(output Node) {
	g.check(output)
	g.syncGrads()
	for _, i := range g.topology(output.i) {
		g.grads[i] = 0 // an untracked node's slot is never read
	}
	mark, gen := g.scratch.mark, g.scratch.gen
	for k, i := range g.paramNodes {
		if mark[i] == gen {
			g.parameters[k].Grad = 0
		}
	}
}
