package gpt

import (
	"math"
	"testing"

	"scalarkit/autograd"
)

func TestReferenceWidthHas4192Parameters(t *testing.T) {
	if n := len(New(ReferenceConfig(), 1).Parameters()); n != 4192 {
		t.Errorf("%d parameters, want 4192", n)
	}
}

func TestTokenizeWrapsTheDocumentInBoundaryTokens(t *testing.T) {
	tokens, err := Tokenize("emma")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{BOS, 4, 12, 12, 0, BOS}
	if len(tokens) != len(want) {
		t.Fatalf("got %v, want %v", tokens, want)
	}
	for i := range want {
		if tokens[i] != want[i] {
			t.Fatalf("got %v, want %v", tokens, want)
		}
	}
	if _, err := Tokenize("Emma"); err == nil {
		t.Error("an upper-case letter must be rejected")
	}
}

// TestLossGradientMatchesFiniteDifference checks backward through the whole
// model against central differences (L(w+e) - L(w-e)) / 2e, for one weight of
// the query projection and one of the first MLP layer. In each matrix it takes
// the weight with the largest gradient, so a weight whose gradient is exactly
// zero (behind a closed ReLU) can never make the check trivial.
func TestLossGradientMatchesFiniteDifference(t *testing.T) {
	m := New(ReferenceConfig(), 42)
	tokens, err := Tokenize("emma")
	if err != nil {
		t.Fatal(err)
	}
	g := autograd.NewGraph()
	loss, err := m.Loss(g, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if v := loss.Value(); !(v > 2 && v < 5) {
		t.Fatalf("initial loss %v, want about ln 27 = 3.3", v)
	}
	if err := g.Backward(loss, 1); err != nil {
		t.Fatal(err)
	}
	const step = 1e-6
	const rel = 1e-5
	for _, tc := range []struct {
		name string
		w    Matrix
	}{{"layer0.attn_wq", m.Layers[0].WQ}, {"layer0.mlp_fc1", m.Layers[0].FC1}} {
		t.Run(tc.name, func(t *testing.T) {
			var p *autograd.Parameter
			zeros, at := 0, [2]int{}
			for i, row := range tc.w {
				for j, q := range row {
					if q.Grad == 0 {
						zeros++
						continue
					}
					if p == nil || math.Abs(q.Grad) > math.Abs(p.Grad) {
						p, at = q, [2]int{i, j}
					}
				}
			}
			if p == nil {
				t.Fatal("every weight has gradient exactly 0")
			}
			analytic, w := p.Grad, p.Value
			p.Value = w + step
			plus, err := m.LossValue(tokens)
			if err != nil {
				t.Fatal(err)
			}
			p.Value = w - step
			minus, err := m.LossValue(tokens)
			if err != nil {
				t.Fatal(err)
			}
			p.Value = w
			numerical := (plus - minus) / (2 * step)
			diff := math.Abs(analytic - numerical)
			t.Logf("%s[%d][%d]: analytic %.12g, numerical %.12g (%d weights with gradient 0 skipped)", tc.name, at[0], at[1], analytic, numerical, zeros)
			if diff > rel*math.Max(math.Abs(analytic), math.Abs(numerical)) {
				t.Errorf("%s[%d][%d]: analytic %v, numerical %v, relative difference %.3g > %g",
					tc.name, at[0], at[1], analytic, numerical, diff/math.Abs(analytic), rel)
			}
		})
	}
}

func TestTwoDocumentsAccumulateIntoOneParameterField(t *testing.T) {
	m := New(ReferenceConfig(), 7)
	p := m.WPE[0][0] // position 0 is used by every document
	for i, doc := range []string{"emma", "olivia"} {
		tokens, _ := Tokenize(doc)
		g := autograd.NewGraph()
		loss, err := m.Loss(g, tokens)
		if err != nil {
			t.Fatal(err)
		}
		before := p.Grad
		record, err := g.BackwardRecord(loss, 1)
		if err != nil {
			t.Fatal(err)
		}
		node, _ := g.Param(p) // the node that already stands for p in this graph
		var pass float64
		for _, r := range record.Nodes {
			if r.Node == int32(node.Index()) {
				pass = r.PassAdjoint
			}
		}
		if pass == 0 || p.Grad != before+pass || (i == 1 && before == 0) {
			t.Errorf("document %d: stored %v before, pass adjoint %v, stored %v after", i, before, pass, p.Grad)
		}
	}
}

func TestAFewAdamStepsLowerTheLossOnOneDocument(t *testing.T) {
	m := New(ReferenceConfig(), 42)
	const steps = 10
	opt := NewAdam(steps)
	var losses []float64
	g := autograd.NewGraph() // reused: every step resets it
	for i := 0; i < steps; i++ {
		loss, _, err := m.TrainStep(g, "emma", opt, i)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	for _, p := range m.Parameters() {
		if p.Grad != 0 {
			t.Fatal("Adam must zero the gradients after each step")
		}
	}
	tokens, _ := Tokenize("emma")
	final, err := m.LossValue(tokens)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("losses %v, final %v", losses, final)
	if !(final < losses[0]-0.5) {
		t.Errorf("loss went from %v to %v, want a clear fall", losses[0], final)
	}
}
