package gpt

import (
	"math"

	"scalarkit/autograd"
)

// builder wraps a graph with a sticky error, like bufio.Writer: after the
// first engine error every call returns the zero Node without touching the
// graph, and the caller checks err once at the end.
type builder struct {
	g   *autograd.Graph
	err error
}

func (b *builder) keep(n autograd.Node, err error) autograd.Node {
	if err != nil {
		b.err = err
		return autograd.Node{}
	}
	return n
}

func (b *builder) lit(v float64) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(b.g.Literal(v))
}

func (b *builder) param(p *autograd.Parameter) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(b.g.Param(p))
}

func (b *builder) row(ps []*autograd.Parameter) []autograd.Node {
	out := make([]autograd.Node, len(ps))
	for i, p := range ps {
		out[i] = b.param(p)
	}
	return out
}

func (b *builder) binary(f func(x, y autograd.Node) (autograd.Node, error), x, y autograd.Node) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(f(x, y))
}

func (b *builder) unary(f func(x autograd.Node) (autograd.Node, error), x autograd.Node) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(f(x))
}

func (b *builder) add(x, y autograd.Node) autograd.Node { return b.binary(b.g.Add, x, y) }
func (b *builder) sub(x, y autograd.Node) autograd.Node { return b.binary(b.g.Sub, x, y) }
func (b *builder) mul(x, y autograd.Node) autograd.Node { return b.binary(b.g.Mul, x, y) }
func (b *builder) div(x, y autograd.Node) autograd.Node { return b.binary(b.g.Div, x, y) }
func (b *builder) neg(x autograd.Node) autograd.Node    { return b.unary(b.g.Neg, x) }
func (b *builder) exp(x autograd.Node) autograd.Node    { return b.unary(b.g.Exp, x) }
func (b *builder) log(x autograd.Node) autograd.Node    { return b.unary(b.g.Log, x) }
func (b *builder) relu(x autograd.Node) autograd.Node   { return b.unary(b.g.ReLU, x) }

func (b *builder) pow(x autograd.Node, c float64) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(b.g.Pow(x, c))
}

func (b *builder) dot(x, y []autograd.Node) autograd.Node {
	if b.err != nil {
		return autograd.Node{}
	}
	return b.keep(b.g.Dot(x, y))
}

func (b *builder) addVec(x, y []autograd.Node) []autograd.Node {
	if b.err != nil {
		return make([]autograd.Node, len(x))
	}
	out, err := b.g.AddVec(x, y)
	if err != nil {
		b.err = err
		return make([]autograd.Node, len(x))
	}
	return out
}

// linear is a bias-free linear layer: one Dot per row of w (autograd.MatVec).
func (b *builder) linear(w Matrix, x []autograd.Node) []autograd.Node {
	if b.err != nil {
		return make([]autograd.Node, len(w))
	}
	rows := make([][]autograd.Node, len(w))
	for i, r := range w {
		rows[i] = b.row(r)
	}
	if b.err != nil {
		return make([]autograd.Node, len(w))
	}
	out, err := b.g.MatVec(rows, x)
	if err != nil {
		b.err = err
		return make([]autograd.Node, len(w))
	}
	return out
}

func (b *builder) sum(xs []autograd.Node) autograd.Node {
	total := xs[0]
	for _, x := range xs[1:] {
		total = b.add(total, x)
	}
	return total
}

// rmsnorm scales x by (mean(x^2) + 1e-5)^-0.5, with no gain.
func (b *builder) rmsnorm(x []autograd.Node) []autograd.Node {
	if b.err != nil {
		return x
	}
	ms := b.div(b.dot(x, x), b.lit(float64(len(x))))
	scale := b.pow(b.add(ms, b.lit(1e-5)), -0.5)
	out := make([]autograd.Node, len(x))
	for i := range x {
		out[i] = b.mul(x[i], scale)
	}
	return out
}

// softmax subtracts the row max as a Literal (so no gradient flows through the
// max; the result is unchanged), exponentiates and normalises.
func (b *builder) softmax(logits []autograd.Node) []autograd.Node {
	if b.err != nil {
		return make([]autograd.Node, len(logits))
	}
	highest := math.Inf(-1)
	for _, l := range logits {
		highest = math.Max(highest, l.Value())
	}
	shift := b.lit(highest)
	exps := make([]autograd.Node, len(logits))
	for i, l := range logits {
		exps[i] = b.exp(b.sub(l, shift))
	}
	total := b.sum(exps)
	out := make([]autograd.Node, len(exps))
	for i, e := range exps {
		out[i] = b.div(e, total)
	}
	return out
}
