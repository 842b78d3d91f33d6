package autograd

import (
	"errors"
	"math"
	"testing"
)

// must unwraps a creation the test expects to succeed; a failure panics,
// which fails the test with the error and its stack.
func must(n Node, err error) Node {
	if err != nil {
		panic(err)
	}
	return n
}

func grad(t *testing.T, n Node) float64 {
	t.Helper()
	g, ok := n.Grad()
	if !ok {
		t.Fatalf("%v is untracked, has no stored gradient", n)
	}
	return g
}

func TestSeedFactsReusedSquareAccumulatesThenZeroes(t *testing.T) {
	g := NewGraph()
	x := must(g.Variable(2))
	square := must(g.Mul(x, x))
	loss := must(g.Add(square, square))
	if square.Value() != 4 || loss.Value() != 8 {
		t.Fatalf("values: square %v loss %v, want 4 and 8", square.Value(), loss.Value())
	}
	steps := []struct {
		name               string
		zero               bool
		loss, square, xval float64
	}{
		{"first backward", false, 1, 2, 8},
		{"second backward adds", false, 2, 4, 16},
		{"zero_grad resets", true, 0, 0, 0},
		{"backward after zero_grad", false, 1, 2, 8},
	}
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.zero {
				g.ZeroGrad(loss)
			} else {
				record, err := g.BackwardRecord(loss, 1)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					checkReusedSquareRecord(t, record, x, square, loss)
				}
			}
			if got := [3]float64{grad(t, loss), grad(t, square), grad(t, x)}; got != [3]float64{s.loss, s.square, s.xval} {
				t.Errorf("stored gradients loss, square, x = %v, want %v %v %v", got, s.loss, s.square, s.xval)
			}
		})
	}
}

func checkReusedSquareRecord(t *testing.T, r *PassRecord, x, square, loss Node) {
	t.Helper()
	want := []EdgeRecord{
		{loss.i, 0, square.i, 1, 1, 1, true, 0, 1},
		{loss.i, 1, square.i, 1, 1, 1, true, 1, 2},
		{square.i, 0, x.i, 2, 2, 4, true, 0, 4},
		{square.i, 1, x.i, 2, 2, 4, true, 4, 8},
	}
	if len(r.Edges) != len(want) {
		t.Fatalf("%d edges, want 4 (edges are never merged)", len(r.Edges))
	}
	for i := range want {
		if r.Edges[i] != want[i] {
			t.Errorf("edge %d = %+v, want %+v", i, r.Edges[i], want[i])
		}
	}
	if len(r.Nodes) != 3 || r.Nodes[2].Node != loss.i || r.Nodes[0].Node != x.i {
		t.Errorf("nodes %+v: want x, square, loss with the output last", r.Nodes)
	}
}

func TestSeedFactsDetachLeaksNoEdge(t *testing.T) {
	g := NewGraph()
	x := must(g.Variable(2))
	d := g.Detach(x)
	three := must(g.Literal(3))
	xx := must(g.Mul(x, x))
	d3 := must(g.Mul(d, three))
	y := must(g.Add(xx, d3))
	if err := g.Backward(y, 1); err != nil {
		t.Fatal(err)
	}
	if y.Value() != 10 || grad(t, x) != 4 {
		t.Errorf("value %v, x gradient %v; want 10 and 4", y.Value(), grad(t, x))
	}
	if _, ok := d.Grad(); ok || d.Operation() != OpDetached || len(d.Operands()) != 0 {
		t.Errorf("detached node must be an untracked leaf without edges")
	}
}

func TestSeedFactsExpTanh(t *testing.T) {
	g := NewGraph()
	x := must(g.Variable(0.5))
	y := must(g.Exp(must(g.Tanh(x))))
	if err := g.Backward(y, 1); err != nil {
		t.Fatal(err)
	}
	if math.Abs(y.Value()-1.587431271430) > 1e-12 || math.Abs(grad(t, x)-1.248431724655) > 1e-12 {
		t.Errorf("exp(tanh(0.5)) = %v, gradient %v", y.Value(), grad(t, x))
	}
}

func TestOpTableFollowsTheContractFormulas(t *testing.T) {
	cases := []struct {
		name     string
		op       Operation
		a, b, c  float64
		value    float64
		d0, d1   float64
		negZeroV bool
	}{
		{"div reuses the rounded quotient", OpDiv, 1, 3, 0, 1.0 / 3, 1.0 / 3, -((1.0 / 3) / 3), false},
		{"pow with c == 0 has derivative 0", OpPow, 0, 0, 0, 1, 0, 0, false},
		{"pow derivative is c*a^(c-1)", OpPow, 2.5, 0, 2, 6.25, 5, 0, false},
		{"relu of -0.0 is +0.0", OpReLU, math.Copysign(0, -1), 0, 0, 0, 0, 0, false},
		{"neg of +0.0 is -0.0", OpNeg, 0, 0, 0, math.Copysign(0, -1), -1, 0, true},
		{"tanh derivative is 1-t*t", OpTanh, 0.5, 0, 0, math.Tanh(0.5), 1 - math.Tanh(0.5)*math.Tanh(0.5), 0, false},
		{"sub", OpSub, 5, 3.5, 0, 1.5, 1, -1, false},
		{"mul", OpMul, 3, -4, 0, -12, -4, 3, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph()
			a := must(g.Variable(tc.a))
			operands := []Node{a}
			if tc.op.Arity() == 2 {
				operands = append(operands, must(g.Variable(tc.b)))
			}
			n := must(g.Apply(tc.op, operands, tc.c))
			if math.Float64bits(n.Value()) != math.Float64bits(tc.value) {
				t.Errorf("value %v, want %v", n.Value(), tc.value)
			}
			localDerivatives := n.LocalDerivatives()
			want := []float64{tc.d0, tc.d1}[:tc.op.Arity()]
			for slot := range want {
				if math.Float64bits(localDerivatives[slot]) != math.Float64bits(want[slot]) {
					t.Errorf("slot %d: local derivative %v, want %v", slot, localDerivatives[slot], want[slot])
				}
			}
		})
	}
}

func TestEveryErrorKindIsUsableWithErrorsAs(t *testing.T) {
	type probe func(t *testing.T) error
	huge := func(g *Graph, t *testing.T) (Node, Node) {
		x := must(g.Variable(1))
		k := must(g.Literal(1e300))
		return x, must(g.Mul(x, k))
	}
	cases := []struct {
		kind  string
		run   probe
		check func(t *testing.T, err error)
	}{
		{KindNonFiniteLeaf, func(t *testing.T) error {
			_, err := NewGraph().Variable(math.Inf(1))
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteLeafError
			if !errors.As(err, &e) || e.Operation != "variable" || !math.IsInf(e.Value, 1) {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFiniteResult, func(t *testing.T) error {
			g := NewGraph()
			_, err := g.Log(must(g.Variable(0)))
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteResultError
			if !errors.As(err, &e) || e.Operation != "log" || !math.IsInf(e.Value, -1) {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFiniteLocalDerivative, func(t *testing.T) error {
			g := NewGraph()
			_, err := g.Log(must(g.Variable(5e-324)))
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteLocalDerivativeError
			if !errors.As(err, &e) || e.Operation != "log" || e.Slot != 0 || !math.IsInf(e.Value, 1) {
				t.Errorf("got %v", err)
			}
		}},
		{KindUntrackedOutput, func(t *testing.T) error {
			g := NewGraph()
			err := g.Backward(must(g.Literal(1)), math.NaN())
			return err
		}, func(t *testing.T, err error) {
			var e *UntrackedOutputError
			if !errors.As(err, &e) || e.Operation != "constant" {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFiniteSeed, func(t *testing.T) error {
			g := NewGraph()
			err := g.Backward(must(g.Variable(1)), math.Inf(-1))
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteSeedError
			if !errors.As(err, &e) || !math.IsInf(e.Seed, -1) {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFiniteContribution, func(t *testing.T) error {
			g := NewGraph()
			_, y := huge(g, t)
			err := g.Backward(y, 1e10)
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteContributionError
			if !errors.As(err, &e) || e.Slot != 0 || e.Operand.Index() != 0 || e.Upstream != 1e10 || e.LocalDerivative != 1e300 {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFinitePassAdjoint, func(t *testing.T) error {
			g := NewGraph()
			x := must(g.Variable(1e-10))
			k := must(g.Literal(1e308))
			y := must(g.Add(must(g.Mul(x, k)), must(g.Mul(x, k))))
			err := g.Backward(y, 1)
			return err
		}, func(t *testing.T, err error) {
			var e *NonFinitePassAdjointError
			if !errors.As(err, &e) || e.Node.Index() != 0 || e.Previous != 1e308 || e.Contribution != 1e308 {
				t.Errorf("got %v", err)
			}
		}},
		{KindNonFiniteAccumulatedGradient, func(t *testing.T) error {
			g := NewGraph()
			x := must(g.Variable(1))
			y := must(g.Mul(x, must(g.Literal(1e308))))
			if err := g.Backward(y, 1); err != nil {
				t.Fatal(err)
			}
			err := g.Backward(y, 1)
			return err
		}, func(t *testing.T, err error) {
			var e *NonFiniteAccumulatedGradientError
			if !errors.As(err, &e) || e.Node.Index() != 0 || e.Stored != 1e308 || e.PassAdjoint != 1e308 {
				t.Errorf("got %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			err := tc.run(t)
			var kinded Error
			if !errors.As(err, &kinded) || kinded.Kind() != tc.kind {
				t.Fatalf("error %v, want kind %s", err, tc.kind)
			}
			tc.check(t, err)
		})
	}
}

func TestCreationErrorCreatesNoNode(t *testing.T) {
	g := NewGraph()
	x := must(g.Variable(1e200))
	if _, err := g.Mul(x, x); err == nil {
		t.Fatal("1e200*1e200 must fail with non-finite-result")
	}
	if g.Len() != 1 {
		t.Errorf("tape has %d nodes after a failed creation, want 1", g.Len())
	}
}

func TestFailedBackwardChangesNoStoredGradientBit(t *testing.T) {
	g := NewGraph()
	w := must(g.Variable(1))
	b := must(g.Variable(0.5))
	big := must(g.Mul(w, must(g.Literal(1e308))))
	y := must(g.Add(big, b))
	if err := g.Backward(y, 1); err != nil {
		t.Fatal(err)
	}
	before := []float64{grad(t, w), grad(t, b), grad(t, big), grad(t, y)}
	var e *NonFiniteAccumulatedGradientError
	if err := g.Backward(y, 1); !errors.As(err, &e) || e.Node != w {
		t.Fatalf("error %v, want non-finite-accumulated-gradient on w", err)
	}
	after := []float64{grad(t, w), grad(t, b), grad(t, big), grad(t, y)}
	for i := range before {
		if math.Float64bits(before[i]) != math.Float64bits(after[i]) {
			t.Errorf("stored gradient %d changed from %v to %v", i, before[i], after[i])
		}
	}
}

func TestUnreachableNodesAreUntouched(t *testing.T) {
	g := NewGraph()
	x := must(g.Variable(2))
	two := must(g.Literal(2))
	y := must(g.Mul(x, two))
	z := must(g.Add(x, two))
	if err := g.Backward(z, 1); err != nil {
		t.Fatal(err)
	}
	if err := g.Backward(y, 1); err != nil {
		t.Fatal(err)
	}
	g.ZeroGrad(y)
	if grad(t, z) != 1 || grad(t, x) != 0 || grad(t, y) != 0 {
		t.Errorf("z %v x %v y %v, want 1 0 0", grad(t, z), grad(t, x), grad(t, y))
	}
}

func TestParametersAccumulateAcrossDocumentGraphs(t *testing.T) {
	w := &Parameter{Value: 3}
	for doc, want := range []float64{6, 12} {
		g := NewGraph()
		a := must(g.Param(w))
		if again := must(g.Param(w)); again != a {
			t.Fatal("Param must return one node per parameter per graph")
		}
		if err := g.Backward(must(g.Mul(a, a)), 1); err != nil {
			t.Fatal(err)
		}
		if w.Grad != want {
			t.Errorf("after document %d, w.Grad = %v, want %v", doc, w.Grad, want)
		}
		if doc == 1 {
			g.ZeroGrad(a)
			if w.Grad != 0 {
				t.Errorf("ZeroGrad left w.Grad = %v", w.Grad)
			}
		}
	}
}

func TestMillionNodeChainNeedsNoRecursion(t *testing.T) {
	const n = 1_000_000
	g := NewGraph()
	x := must(g.Variable(0.5))
	one := must(g.Literal(1))
	y := x
	for i := 0; i < n; i++ {
		y = must(g.Mul(y, one))
	}
	r, err := g.BackwardRecord(y, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != n+2 || len(r.Edges) != 2*n || grad(t, x) != 1 {
		t.Errorf("nodes %d edges %d x gradient %v", len(r.Nodes), len(r.Edges), grad(t, x))
	}
	g.ZeroGrad(y)
	if grad(t, x) != 0 {
		t.Errorf("ZeroGrad left x gradient %v", grad(t, x))
	}
}

func TestDotMatVecAddVecAreBuiltFromMulAndAdd(t *testing.T) {
	g := NewGraph()
	vars := func(vs ...float64) []Node {
		out := make([]Node, len(vs))
		for i, v := range vs {
			out[i] = must(g.Variable(v))
		}
		return out
	}
	x := vars(1, 2)
	w := [][]Node{vars(3, 4), vars(5, 6)}
	y, err := g.MatVec(w, x)
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.AddVec(y, x)
	if err != nil {
		t.Fatal(err)
	}
	if s[0].Value() != 12 || s[1].Value() != 19 || y[0].Operation() != OpAdd {
		t.Errorf("got %v %v", s[0].Value(), s[1].Value())
	}
	if err := g.Backward(s[1], 1); err != nil {
		t.Fatal(err)
	}
	if grad(t, w[1][0]) != 1 || grad(t, x[1]) != 7 {
		t.Errorf("w10 %v x1 %v, want 1 and 7", grad(t, w[1][0]), grad(t, x[1]))
	}
}

func TestAWalkDeeperThanTheInitialStackKeepsTheCanonicalOrder(t *testing.T) {
	// x[k] = x[k-1] + y[k]: the walk descends slot 0 all the way down and
	// leaves two stack entries per level ("place x[k]", "visit y[k]"), so
	// 3000 levels grow the stack several times in the middle of a walk.
	const levels = 3000
	g := NewGraph()
	x := must(g.Variable(0.5))
	want, ys := []int32{x.i}, make([]Node, levels)
	for k := range ys {
		ys[k] = must(g.Variable(float64(k)))
		x = must(g.Add(x, ys[k]))
		want = append(want, ys[k].i, x.i)
	}
	r, err := g.BackwardRecord(x, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(r.Nodes), len(want))
	}
	for i, n := range r.Nodes {
		if n.Node != want[i] {
			t.Fatalf("node %d of the topology is %d, want %d (x0, y1, x1, y2, x2, ...)", i, n.Node, want[i])
		}
	}
	if err := g.Backward(x, 1); err != nil {
		t.Fatal(err)
	}
	for k, y := range ys {
		if got := grad(t, y); got != 2 {
			t.Fatalf("y[%d] gradient %v after two passes, want 2", k, got)
		}
	}
}

func TestBackwardRecordListsNodesInDepthFirstPostOrderNotTapeOrder(t *testing.T) {
	g := NewGraph()
	b := must(g.Variable(3)) // created first, but the output's slot 1
	a := must(g.Variable(2))
	y := must(g.Mul(a, b))
	r, err := g.BackwardRecord(y, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, n := range r.Nodes {
		got = append(got, n.Node)
	}
	if want := []int32{a.i, b.i, y.i}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("topology %v, want %v (a, b, y: operands in slot order, output last)", got, want)
	}
	if g.At(int(r.Nodes[0].Node)) != a {
		t.Errorf("At does not return the handle the record names")
	}
}

func TestBackwardWithoutARecordCommitsTheSameBitsAsWithOne(t *testing.T) {
	build := func() (*Graph, Node, []Node) {
		g := NewGraph()
		x := must(g.Variable(0.3))
		w := must(g.Variable(-1.7))
		h := must(g.Tanh(must(g.Mul(x, w))))
		y := must(g.Add(must(g.Mul(h, h)), must(g.Div(must(g.Exp(x)), must(g.Pow(w, 3))))))
		return g, y, []Node{x, w, h, y}
	}
	g1, y1, n1 := build()
	g2, y2, n2 := build()
	for pass := 0; pass < 3; pass++ {
		if err := g1.Backward(y1, 0.5); err != nil {
			t.Fatal(err)
		}
		if _, err := g2.BackwardRecord(y2, 0.5); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n1 {
		if a, b := grad(t, n1[i]), grad(t, n2[i]); math.Float64bits(a) != math.Float64bits(b) {
			t.Errorf("node %d: fast path stored %v, recording path %v", i, a, b)
		}
	}
}

func TestResetReusesTheGraphAndKeepsParameterGradients(t *testing.T) {
	p := &Parameter{Value: 3}
	g := NewGraph()
	for doc := 1; doc <= 3; doc++ {
		g.Reset()
		x := must(g.Param(p))
		y := must(g.Mul(x, must(g.Literal(float64(doc)))))
		if err := g.Backward(y, 1); err != nil {
			t.Fatal(err)
		}
		if g.Len() != 3 {
			t.Fatalf("document %d: tape has %d nodes after Reset, want 3", doc, g.Len())
		}
	}
	if p.Grad != 1+2+3 {
		t.Errorf("parameter gradient %v, want 6 (three documents accumulate)", p.Grad)
	}
}

func TestContributionErrorWinsOverAnEarlierFoundAccumulatedOverflow(t *testing.T) {
	// The output's prospective stored gradient overflows before the walk
	// reaches the edge out -> c, whose contribution overflows; the contract
	// checks every edge first, so the contribution error is the one reported.
	g := NewGraph()
	a := must(g.Variable(1))
	h := must(g.Mul(a, must(g.Literal(2))))
	c := must(g.Literal(1))
	out := must(g.Mul(h, c))
	if err := g.Backward(out, 1e307); err != nil {
		t.Fatal(err)
	}
	before := [3]float64{grad(t, a), grad(t, h), grad(t, out)}
	err := g.Backward(out, 1.7e308)
	var e *NonFiniteContributionError
	if !errors.As(err, &e) || e.Consumer != out || e.Slot != 1 || e.Operand != c {
		t.Fatalf("got %v, want a non-finite contribution on out -> c", err)
	}
	if after := [3]float64{grad(t, a), grad(t, h), grad(t, out)}; after != before {
		t.Errorf("stored gradients changed from %v to %v", before, after)
	}
}

func TestTopologyVisitsALaterSlotOnlyAfterTheEarlierSlotsSubtree(t *testing.T) {
	// y = (x + w) * x: x is found inside slot 0's subtree, so slot 1 finds it
	// placed already; w was created first but comes after x.
	g := NewGraph()
	w := must(g.Variable(3))
	x := must(g.Variable(2))
	s := must(g.Add(x, w))
	y := must(g.Mul(s, x))
	r, err := g.BackwardRecord(y, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{x.i, w.i, s.i, y.i}
	if len(r.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(r.Nodes), len(want))
	}
	for k, n := range r.Nodes {
		if n.Node != want[k] {
			t.Fatalf("topology position %d is node %d, want x, w, s, y = %v", k, n.Node, want)
		}
	}
	if grad(t, x) != 7 || grad(t, w) != 2 {
		t.Errorf("x gradient %v (want 2x+w = 7), w gradient %v (want x = 2)", grad(t, x), grad(t, w))
	}
}

func TestVisitMarksStayRightAcrossTheGenerationCounterWrapping(t *testing.T) {
	// The marks are one byte per node with a generation counter: a node left
	// unvisited for about 255 passes must still be found by the next pass.
	for skipped := 250; skipped <= 262; skipped++ {
		g := NewGraph()
		x := must(g.Variable(2))
		a := must(g.Mul(x, x))
		b := must(g.Add(x, must(g.Literal(1))))
		if err := g.Backward(a, 1); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < skipped; i++ {
			if err := g.Backward(b, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Backward(a, 1); err != nil {
			t.Fatal(err)
		}
		if grad(t, a) != 2 || grad(t, x) != float64(4+skipped+4) {
			t.Fatalf("after %d passes elsewhere: a gradient %v (want 2), x gradient %v (want %d)",
				skipped, grad(t, a), grad(t, x), 8+skipped)
		}
	}
}

func TestContributionsIntoAnUntrackedOperandNeverOverflowAPassAdjoint(t *testing.T) {
	// Two edges carry 1e308 each into the constant c: as an untracked operand
	// it has no pass adjoint, so their sum (inf) is no error, on either path.
	for _, record := range []bool{false, true} {
		g := NewGraph()
		x := must(g.Variable(1))
		c := must(g.Literal(1e-300))
		out := must(g.Add(must(g.Mul(x, c)), must(g.Mul(x, c))))
		var err error
		if record {
			_, err = g.BackwardRecord(out, 1e308)
		} else {
			err = g.Backward(out, 1e308)
		}
		if err != nil {
			t.Fatalf("record %v: %v", record, err)
		}
		if grad(t, x) != 2e8 {
			t.Errorf("record %v: x gradient %v, want 2e8", record, grad(t, x))
		}
	}
}

func TestBackwardWithoutRecordMatchesTheRecordAroundUntrackedSubtrees(t *testing.T) {
	// Untracked subtrees hang off both slots; the fast walk leaves them out.
	build := func() (*Graph, Node, []Node) {
		g := NewGraph()
		x, _ := g.Variable(0.3)
		w, _ := g.Variable(-1.7)
		c, _ := g.Literal(2.5)
		d := g.Detach(x)
		k, _ := g.Mul(c, d) // untracked, with an untracked operand
		a, _ := g.Mul(k, x)
		b, _ := g.Tanh(a)
		e, _ := g.Add(w, k)
		f, _ := g.Mul(b, e)
		y, _ := g.Add(f, x)
		return g, y, []Node{x, w, a, b, e, f, y}
	}
	g1, y1, tracked1 := build()
	g2, y2, tracked2 := build()
	for pass := 0; pass < 3; pass++ {
		if err := g1.Backward(y1, 0.75); err != nil {
			t.Fatal(err)
		}
		if _, err := g2.BackwardRecord(y2, 0.75); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tracked1 {
		got, _ := tracked1[i].Grad()
		want, _ := tracked2[i].Grad()
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%v: stored gradient %v without a record, %v with one", tracked1[i], got, want)
		}
	}
}

func TestOpsListsEveryOperationRowOfTheOpTableOnceInTableOrder(t *testing.T) {
	// Every row of the op table that is not a leaf kind is an operation, and
	// Ops (which the adapter's hello declares) must list exactly those.
	var rows []Operation
	for o := Operation(0); o < opCount; o++ {
		if !o.IsLeaf() {
			rows = append(rows, o)
		}
	}
	ops := Ops()
	if len(ops) != len(rows) {
		t.Fatalf("Ops() = %v, want the %d operation rows %v", ops, len(rows), rows)
	}
	for i, o := range ops {
		if o != rows[i] {
			t.Errorf("Ops()[%d] = %v, want %v", i, o, rows[i])
		}
		if back, ok := LookupOp(o.String()); !ok || back != o {
			t.Errorf("LookupOp(%q) = %v, %v; want %v", o.String(), back, ok, o)
		}
	}
	for _, leaf := range []string{"variable", "constant", "detached"} {
		if _, ok := LookupOp(leaf); ok {
			t.Errorf("LookupOp(%q) found a leaf kind", leaf)
		}
	}
}
