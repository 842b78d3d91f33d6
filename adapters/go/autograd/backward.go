package autograd

// PassRecord is what one successful backward computed (docs/contract.md section 5, "The pass record"):
// the seed, the nodes in the order backward took them (tape order, output
// last), and the operand edges in processing order.
type PassRecord struct {
	Seed  float64
	Nodes []NodeRecord
	Edges []EdgeRecord
}

// NodeRecord is one node of a pass. PassAdjoint and StoredGradient (after
// commit) mean something only when Tracked; an untracked node has neither and
// the wire format writes null for both.
type NodeRecord struct {
	Node           Node
	Operation      Op
	Value          float64
	Tracked        bool
	PassAdjoint    float64
	StoredGradient float64
}

// EdgeRecord is one operand edge as backward walked it: Child consumed Parent
// in slot Operand. Upstream is the child's pass adjoint (0 for an untracked
// child) and Contribution is Upstream * LocalDerivative. Before and After are
// the parent's pass adjoint around this edge, meaningful only when
// ParentTracked (the wire format writes null otherwise).
type EdgeRecord struct {
	Child           Node
	Parent          Node
	Operand         int
	LocalDerivative float64
	Upstream        float64
	Contribution    float64
	ParentTracked   bool
	Before          float64
	After           float64
}

// reachable marks every node output reaches through operand edges. Operands are
// always created before their consumers, so one sweep down the tape from the
// output marks them all: no stack, no recursion, any depth.
func (g *Graph) reachable(output int32) []bool {
	mark := make([]bool, output+1)
	mark[output] = true
	for i := output; i >= 0; i-- {
		if !mark[i] {
			continue
		}
		nd := &g.nodes[i]
		for slot := 0; slot < nd.op.Arity(); slot++ {
			mark[nd.operands[slot]] = true
		}
	}
	return mark
}

// Backward runs one backward pass from output with the given seed (use 1 for
// the plain gradient) and adds its pass adjoints to the stored gradients.
//
// The checks come in the contract's order: an untracked output
// (*UntrackedOutputError), a non-finite seed (*NonFiniteSeedError), then while
// walking the edges a non-finite contribution (*NonFiniteContributionError) or
// pass adjoint (*NonFinitePassAdjointError), then a non-finite prospective
// stored gradient (*NonFiniteAccumulatedGradientError). When Backward returns
// an error no stored gradient has changed a single bit. Nodes the output does
// not reach are never touched.
func (g *Graph) Backward(output Node, seed float64) (*PassRecord, error) {
	g.check(output)
	out := &g.nodes[output.i]
	if !out.tracked {
		return nil, &UntrackedOutputError{Operation: out.op.String()}
	}
	if !isFinite(seed) {
		return nil, &NonFiniteSeedError{Seed: seed}
	}
	mark := g.reachable(output.i)
	topo := make([]int32, 0, 16)
	for i, ok := range mark {
		if ok {
			topo = append(topo, int32(i))
		}
	}
	// Fresh pass adjoints, indexed by tape position: 0 for every tracked node,
	// the seed for the output.
	pass := make([]float64, len(mark))
	pass[output.i] = seed
	edges := make([]EdgeRecord, 0, len(topo))
	for k := len(topo) - 1; k >= 0; k-- {
		ci := topo[k]
		child := &g.nodes[ci]
		upstream := 0.0
		if child.tracked {
			upstream = pass[ci]
		}
		for slot := 0; slot < child.op.Arity(); slot++ {
			pi := child.operands[slot]
			parent := &g.nodes[pi]
			local := child.local[slot]
			contribution := float64(upstream * local)
			if !isFinite(contribution) {
				return nil, &NonFiniteContributionError{
					Child: Node{g, ci}, Parent: Node{g, pi}, Operand: slot,
					Upstream: upstream, LocalDerivative: local,
				}
			}
			e := EdgeRecord{
				Child: Node{g, ci}, Parent: Node{g, pi}, Operand: slot,
				LocalDerivative: local, Upstream: upstream, Contribution: contribution,
				ParentTracked: parent.tracked,
			}
			if parent.tracked {
				before := pass[pi]
				after := before + contribution
				if !isFinite(after) {
					return nil, &NonFinitePassAdjointError{Node: Node{g, pi}, Previous: before, Contribution: contribution}
				}
				pass[pi] = after
				e.Before, e.After = before, after
			}
			edges = append(edges, e)
		}
	}
	// Prospective stored gradients, checked in topology order before any commit.
	nodes := make([]NodeRecord, len(topo))
	for k, i := range topo {
		nd := &g.nodes[i]
		r := NodeRecord{Node: Node{g, i}, Operation: nd.op, Value: nd.value, Tracked: nd.tracked}
		if nd.tracked {
			stored := g.stored(nd)
			total := stored + pass[i]
			if !isFinite(total) {
				return nil, &NonFiniteAccumulatedGradientError{Node: Node{g, i}, Stored: stored, PassAdjoint: pass[i]}
			}
			r.PassAdjoint, r.StoredGradient = pass[i], total
		}
		nodes[k] = r
	}
	// Every check passed: commit.
	for _, r := range nodes {
		if r.Tracked {
			g.setStored(&g.nodes[r.Node.i], r.StoredGradient)
		}
	}
	return &PassRecord{Seed: seed, Nodes: nodes, Edges: edges}, nil
}

// ZeroGrad sets the stored gradient of every tracked node reachable from
// output to 0, including the Parameters those nodes stand for. Values, edges
// and unreachable nodes are untouched.
func (g *Graph) ZeroGrad(output Node) {
	g.check(output)
	mark := g.reachable(output.i)
	for i, ok := range mark {
		if ok && g.nodes[i].tracked {
			g.setStored(&g.nodes[i], 0)
		}
	}
}
