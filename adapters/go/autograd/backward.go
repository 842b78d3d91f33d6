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
	Operation      Operation
	Tracked        bool
	Value          float64
	PassAdjoint    float64
	StoredGradient float64
}

// EdgeRecord is one operand edge as backward walked it: node Consumer read
// node Operand (both tape indices) in slot Slot. Upstream is the consumer's
// pass adjoint (0 for an untracked consumer) and Contribution is Upstream *
// LocalDerivative. Before and After are the operand's pass adjoint around this
// edge, meaningful only when OperandTracked (the wire format writes null
// otherwise). The fields are in the wire's order (docs/protocol.md).
type EdgeRecord struct {
	Consumer        int32
	Slot            int
	Operand         int32
	LocalDerivative float64
	Upstream        float64
	Contribution    float64
	OperandTracked  bool
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
		s.topo = make([]int32, 0, size)
	}
	if len(s.stack) == 0 {
		// The stack grows with the walk's depth (growStack), which on most
		// graphs is far below the tape's length (a few hundred entries for
		// an MLP of 27k nodes; a chain's walk is as deep as the chain), so
		// a pass does not allocate and clear room for the deepest walk a
		// tape of its size could have.
		s.stack = make([]int32, 1024)
	}
	s.gen++
	if s.gen == 0 { // wrapped (every 255 passes): forget every old mark once
		clear(s.mark)
		s.gen = 1
	}
}

// growStack doubles the walk's stack, keeping its first depth entries, and
// returns it. It is out of line: it runs a handful of times per graph.
//
//go:noinline
func (s *scratch) growStack(depth int) []int32 {
	bigger := make([]int32, 2*len(s.stack))
	copy(bigger, s.stack[:depth])
	s.stack = bigger
	return bigger
}

// topology fills g.scratch.topo with every node output reaches, each once,
// in the canonical order of docs/contract.md section 7: depth-first post-order
// from the output, operands visited in slot order. It is iterative, so a
// million-node chain needs no recursion. Every node it places gets a fresh
// pass adjoint of 0.
//
// With trackedOnly it leaves out every untracked node, and so never enters an
// untracked node's operands: those are untracked too (graph.tracked), so no
// tracked node is lost, and the tracked nodes keep their canonical relative
// order, since a post-order restricted to a set closed under "operand of" is
// the post-order of the walk that skips the rest. Backward without a record
// and ZeroGrad need only the tracked nodes; BackwardRecord needs them all.
//
// The explicit stack holds what the recursive walk would still do: "place
// node i" (^i) below "visit its slot-1 operand", while the slot-0 operand is
// visited at once. An operand already placed, or one the walk leaves out, is
// never pushed, since a mark is never taken back; one pushed but placed
// before it is popped (by the slot-0 subtree) is skipped when popped, which is
// when the recursive walk would check it: after the earlier slots' subtrees.
func (g *Graph) topology(output int32, trackedOnly bool) []int32 {
	s := &g.scratch
	s.grow(len(g.nodes))
	nodes, mark, pass, gen := g.nodes, s.mark, s.pass, s.gen
	// topo has room for every node (grow) and the stack is grown before a
	// visit could overflow it, so both are written by index: no append, and
	// the only call in the loop is the rare growStack.
	topo, stack := s.topo[:cap(s.topo)], s.stack
	placed, depth := 0, 0
	// skip reports whether the walk does not enter node q from here.
	skip := func(q int32) bool { return mark[q] == gen || (trackedOnly && !nodes[q].tracked) }
	if !skip(output) {
		for p := output; ; {
			// p is unplaced and wanted: mark it, then descend or place it.
			mark[p], pass[p] = gen, 0
			nd := &nodes[p]
			next := int32(-1)
			if nd.arity > 0 && !skip(nd.operands[0]) {
				next = nd.operands[0]
			}
			if depth+2 > len(stack) {
				stack = s.growStack(depth)
			}
			if nd.arity == 2 && !skip(nd.operands[1]) {
				stack[depth], stack[depth+1] = ^p, nd.operands[1]
				depth += 2
			} else if next >= 0 {
				stack[depth] = ^p
				depth++
			} else {
				topo[placed] = p // nothing left below p: its post-order place is here
				placed++
			}
			if next >= 0 {
				p = next
				continue
			}
			// Pop: place every finished node, up to the next visit still wanted.
			for depth > 0 {
				depth--
				q := stack[depth]
				if q < 0 {
					topo[placed] = ^q
					placed++
				} else if mark[q] != gen {
					next = q
					break
				}
			}
			if next < 0 {
				break
			}
			p = next
		}
	}
	topo = topo[:placed]
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
	// A record lists the untracked nodes too; the fast walk leaves them out.
	topo := g.topology(output.i, r == nil)
	g.syncGrads()
	g.scratch.pass[output.i] = seed
	var (
		overflow bool
		err      error
	)
	if r == nil {
		overflow, err = g.sweep(topo)
	} else {
		overflow, err = g.sweepRecord(topo, r)
	}
	if err != nil {
		return err
	}
	nodes, grads, pass := g.nodes, g.grads, g.scratch.pass
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

// sweep is the walk of Backward: the topology (tracked nodes only) in
// reverse, each consumer's edges in slot order, contribution then the
// operand's pass adjoint checked on every edge. A consumer's pass adjoint is
// final when the walk reaches it (every node that reads it comes later in the
// topology), so its prospective stored gradient is checked there too; but the
// contract reports every contribution and pass adjoint error first, so a
// failing sum only raises overflow, and backward reports it after the walk.
//
// It adds into every operand's slot without reading the operand: the slot of
// an untracked operand (never placed, so never reset) is never read, not as
// upstream, not in a check, not as a stored gradient, so only a non-finite
// sum needs to know whether the operand counts. An edge to an untracked
// operand is still checked, as the contract asks.
func (g *Graph) sweep(topo []int32) (overflow bool, err error) {
	nodes, grads, pass := g.nodes, g.grads, g.scratch.pass
	for k := len(topo) - 1; k >= 0; k-- {
		ci := topo[k]
		consumer := &nodes[ci]
		upstream := pass[ci]
		stored := grads[ci]
		if consumer.param > 0 {
			stored = g.parameters[consumer.param-1].Grad
		}
		if !isFinite(stored + upstream) {
			overflow = true
		}
		// The slots are spelled out, slot 0 before slot 1: o is an operand's
		// tape index, d its local derivative, c the contribution, a the sum.
		arity := consumer.arity
		if arity == 0 {
			continue
		}
		o0, d0 := consumer.operands[0], consumer.localDerivatives[0]
		o1, d1 := consumer.operands[1], consumer.localDerivatives[1]
		c0 := float64(upstream * d0)
		if !isFinite(c0) {
			return false, g.contributionError(ci, 0, upstream)
		}
		a0 := pass[o0] + c0
		if !isFinite(a0) && nodes[o0].tracked {
			return false, &NonFinitePassAdjointError{Node: Node{g, o0}, Previous: pass[o0], Contribution: c0}
		}
		pass[o0] = a0
		if arity == 1 {
			continue
		}
		c1 := float64(upstream * d1)
		if !isFinite(c1) {
			return false, g.contributionError(ci, 1, upstream)
		}
		a1 := pass[o1] + c1
		if !isFinite(a1) && nodes[o1].tracked {
			return false, &NonFinitePassAdjointError{Node: Node{g, o1}, Previous: pass[o1], Contribution: c1}
		}
		pass[o1] = a1
	}
	return overflow, nil
}

// contributionError is the *NonFiniteContributionError of the edge in slot of
// the node at tape index consumer.
func (g *Graph) contributionError(consumer int32, slot uint8, upstream float64) error {
	nd := &g.nodes[consumer]
	return &NonFiniteContributionError{
		Consumer: Node{g, consumer}, Slot: int(slot), Operand: Node{g, nd.operands[slot]},
		Upstream: upstream, LocalDerivative: nd.localDerivatives[slot],
	}
}

// sweepRecord is sweep over the whole topology, untracked nodes included,
// appending every edge to r.Edges as it goes (docs/contract.md section 5, "The
// pass record"): an untracked consumer's upstream is 0, and an edge to an
// untracked operand is recorded with its contribution but stores no adjoint.
func (g *Graph) sweepRecord(topo []int32, r *PassRecord) (overflow bool, err error) {
	nodes, pass := g.nodes, g.scratch.pass
	r.Nodes = make([]NodeRecord, 0, len(topo))
	r.Edges = make([]EdgeRecord, 0, len(topo))
	for k := len(topo) - 1; k >= 0; k-- {
		ci := topo[k]
		consumer := &nodes[ci]
		upstream := 0.0
		if consumer.tracked {
			upstream = pass[ci]
			if !isFinite(g.stored(ci) + upstream) {
				overflow = true
			}
		}
		for slot := uint8(0); slot < consumer.arity; slot++ {
			oi := consumer.operands[slot]
			localDerivative := consumer.localDerivatives[slot]
			contribution := float64(upstream * localDerivative)
			if !isFinite(contribution) {
				return false, g.contributionError(ci, slot, upstream)
			}
			operandTracked := nodes[oi].tracked
			var before, after float64
			if operandTracked {
				before = pass[oi]
				after = before + contribution
				if !isFinite(after) {
					return false, &NonFinitePassAdjointError{Node: Node{g, oi}, Previous: before, Contribution: contribution}
				}
				pass[oi] = after
			}
			r.Edges = append(r.Edges, EdgeRecord{
				Consumer: ci, Slot: int(slot), Operand: oi,
				LocalDerivative: localDerivative, Upstream: upstream, Contribution: contribution,
				OperandTracked: operandTracked, Before: before, After: after,
			})
		}
	}
	return overflow, nil
}

// ZeroGrad sets the stored gradient of every tracked node reachable from
// output to 0, including the Parameters those nodes stand for
// (docs/contract.md section 6). Values, edges and unreachable nodes are
// untouched. It walks the same topology as Backward, in the same reused
// buffers.
func (g *Graph) ZeroGrad(output Node) {
	g.check(output)
	g.syncGrads()
	for _, i := range g.topology(output.i, true) {
		g.grads[i] = 0
	}
	mark, gen := g.scratch.mark, g.scratch.gen
	for k, i := range g.paramNodes {
		if mark[i] == gen {
			g.parameters[k].Grad = 0
		}
	}
}
