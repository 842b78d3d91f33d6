// Package gpt is the tiny GPT of docs/contract.md section 11, built only from autograd's scalar
// ops: no derivative is written by hand, so a correct gradient here is a
// correct engine.
//
// The model follows microGPT: token and position embeddings, RMSNorm (eps
// 1e-5, no gain) after the embeddings and before each block, causal multi-head
// self-attention with a KV cache, a softmax that subtracts the row max as a
// Literal (no gradient flows through the max), an MLP with ReLU at 4x width,
// an lm_head and the mean cross-entropy over positions. No biases. The
// parameters are autograd.Parameters, so they outlive the graph of each
// document and two documents' backwards accumulate into them.
package gpt

import (
	"fmt"
	"math"
	"math/rand"

	"scalarkit/autograd"
)

// Config is the model's shape.
type Config struct {
	Layers  int     // transformer blocks
	Embed   int     // embedding width
	Heads   int     // attention heads; Embed must be a multiple
	Block   int     // longest context (positions)
	Vocab   int     // symbols, the boundary token included
	InitStd float64 // standard deviation of the Gaussian initialisation
}

// ReferenceConfig is the reference width: 1 layer, 16 embedding dims, 4
// heads, block size 16, 27 symbols (26 letters plus the boundary token), init
// std 0.08. It has 4,192 parameters.
func ReferenceConfig() Config {
	return Config{Layers: 1, Embed: 16, Heads: 4, Block: 16, Vocab: 27, InitStd: 0.08}
}

// BOS is the boundary token that starts and ends every document; the letters
// a-z are tokens 0-25.
const BOS = 26

// Matrix is a weight matrix, one row of parameters per output.
type Matrix [][]*autograd.Parameter

// Layer is one transformer block's weights.
type Layer struct {
	WQ, WK, WV, WO Matrix // attention projections, Embed x Embed
	FC1            Matrix // MLP up-projection, 4*Embed x Embed
	FC2            Matrix // MLP down-projection, Embed x 4*Embed
}

// Model is the tiny GPT's configuration and parameters.
type Model struct {
	Config Config
	WTE    Matrix // token embeddings, Vocab x Embed
	WPE    Matrix // position embeddings, Block x Embed
	Layers []Layer
	LMHead Matrix // Vocab x Embed
}

// NamedMatrix is one weight matrix with its microGPT state-dict name.
type NamedMatrix struct {
	Name   string
	Matrix Matrix
}

// New returns a model with every weight drawn from a Gaussian of std
// cfg.InitStd using a math/rand source seeded with seed, in the order of
// Matrices.
func New(cfg Config, seed int64) *Model {
	if cfg.Heads <= 0 || cfg.Embed%cfg.Heads != 0 {
		panic(fmt.Sprintf("gpt: %d embedding dims do not split into %d heads", cfg.Embed, cfg.Heads))
	}
	rng := rand.New(rand.NewSource(seed))
	matrix := func(rows, cols int) Matrix {
		m := make(Matrix, rows)
		for i := range m {
			m[i] = make([]*autograd.Parameter, cols)
			for j := range m[i] {
				m[i][j] = &autograd.Parameter{Value: rng.NormFloat64() * cfg.InitStd}
			}
		}
		return m
	}
	m := &Model{Config: cfg}
	m.WTE = matrix(cfg.Vocab, cfg.Embed)
	m.WPE = matrix(cfg.Block, cfg.Embed)
	m.LMHead = matrix(cfg.Vocab, cfg.Embed)
	for i := 0; i < cfg.Layers; i++ {
		m.Layers = append(m.Layers, Layer{
			WQ:  matrix(cfg.Embed, cfg.Embed),
			WK:  matrix(cfg.Embed, cfg.Embed),
			WV:  matrix(cfg.Embed, cfg.Embed),
			WO:  matrix(cfg.Embed, cfg.Embed),
			FC1: matrix(4*cfg.Embed, cfg.Embed),
			FC2: matrix(cfg.Embed, 4*cfg.Embed),
		})
	}
	return m
}

// Matrices returns every weight matrix with its name, in initialisation order.
func (m *Model) Matrices() []NamedMatrix {
	out := []NamedMatrix{{"wte", m.WTE}, {"wpe", m.WPE}, {"lm_head", m.LMHead}}
	for i, l := range m.Layers {
		p := fmt.Sprintf("layer%d.", i)
		out = append(out,
			NamedMatrix{p + "attn_wq", l.WQ}, NamedMatrix{p + "attn_wk", l.WK},
			NamedMatrix{p + "attn_wv", l.WV}, NamedMatrix{p + "attn_wo", l.WO},
			NamedMatrix{p + "mlp_fc1", l.FC1}, NamedMatrix{p + "mlp_fc2", l.FC2})
	}
	return out
}

// Parameters returns every parameter, matrix by matrix, row by row.
func (m *Model) Parameters() []*autograd.Parameter {
	var out []*autograd.Parameter
	for _, nm := range m.Matrices() {
		for _, row := range nm.Matrix {
			out = append(out, row...)
		}
	}
	return out
}

// Tokenize turns a document of lowercase letters into tokens wrapped in BOS:
// "emma" -> [BOS e m m a BOS].
func Tokenize(doc string) ([]int, error) {
	tokens := []int{BOS}
	for _, r := range doc {
		if r < 'a' || r > 'z' {
			return nil, fmt.Errorf("gpt: document %q has %q; only a-z are tokens", doc, r)
		}
		tokens = append(tokens, int(r-'a'))
	}
	return append(tokens, BOS), nil
}

// Loss builds the mean cross-entropy of predicting tokens[t+1] from
// tokens[:t+1] on g, for every position up to the block size, and returns the
// loss node. It fails only with an engine error (a non-finite value).
func (m *Model) Loss(g *autograd.Graph, tokens []int) (autograd.Node, error) {
	n := len(tokens) - 1
	if n > m.Config.Block {
		n = m.Config.Block
	}
	if n < 1 {
		return autograd.Node{}, fmt.Errorf("gpt: need at least two tokens, got %d", len(tokens))
	}
	b := &builder{g: g}
	keys := make([][][]autograd.Node, len(m.Layers))
	values := make([][][]autograd.Node, len(m.Layers))
	var total autograd.Node
	for pos := 0; pos < n; pos++ {
		logits := m.forward(b, tokens[pos], pos, keys, values)
		probs := b.softmax(logits)
		if b.err != nil {
			return autograd.Node{}, b.err
		}
		// cross-entropy at this position: -log p(target)
		l := b.neg(b.log(probs[tokens[pos+1]]))
		if pos == 0 {
			total = l
		} else {
			total = b.add(total, l)
		}
	}
	loss := b.div(total, b.lit(float64(n)))
	return loss, b.err
}

// LossValue returns the loss on tokens at the parameters' current values,
// on a throwaway graph.
func (m *Model) LossValue(tokens []int) (float64, error) {
	loss, err := m.Loss(autograd.NewGraph(), tokens)
	if err != nil {
		return 0, err
	}
	return loss.Value(), nil
}

// forward returns the logits for token at pos, appending this position's keys
// and values to the per-layer KV cache.
func (m *Model) forward(b *builder, token, pos int, keys, values [][][]autograd.Node) []autograd.Node {
	cfg := m.Config
	headDim := cfg.Embed / cfg.Heads
	x := b.addVec(b.row(m.WTE[token]), b.row(m.WPE[pos]))
	x = b.rmsnorm(x)
	for li, l := range m.Layers {
		residual := x
		x = b.rmsnorm(x)
		q := b.linear(l.WQ, x)
		keys[li] = append(keys[li], b.linear(l.WK, x))
		values[li] = append(values[li], b.linear(l.WV, x))
		scale := b.lit(math.Sqrt(float64(headDim)))
		attended := make([]autograd.Node, 0, cfg.Embed)
		for h := 0; h < cfg.Heads; h++ {
			lo, hi := h*headDim, (h+1)*headDim
			logits := make([]autograd.Node, len(keys[li]))
			for t, k := range keys[li] {
				logits[t] = b.div(b.dot(q[lo:hi], k[lo:hi]), scale)
			}
			weights := b.softmax(logits)
			for j := lo; j < hi; j++ {
				var sum autograd.Node
				for t, v := range values[li] {
					p := b.mul(weights[t], v[j])
					if t == 0 {
						sum = p
					} else {
						sum = b.add(sum, p)
					}
				}
				attended = append(attended, sum)
			}
		}
		x = b.addVec(b.linear(l.WO, attended), residual)
		residual = x
		x = b.rmsnorm(x)
		x = b.linear(l.FC1, x)
		for i := range x {
			x[i] = b.relu(x[i])
		}
		x = b.addVec(b.linear(l.FC2, x), residual)
	}
	return b.linear(m.LMHead, x)
}
