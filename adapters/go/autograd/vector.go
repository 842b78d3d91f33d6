package autograd

import "fmt"

// Dot returns a[0]*b[0] + a[1]*b[1] + ..., built left to right from Mul and
// Add nodes, so its gradient comes from the op table like any other. a and b
// must have the same non-zero length.
func (g *Graph) Dot(a, b []Node) (Node, error) {
	if len(a) != len(b) || len(a) == 0 {
		panic(fmt.Sprintf("autograd: Dot of lengths %d and %d", len(a), len(b)))
	}
	sum, err := g.Mul(a[0], b[0])
	if err != nil {
		return Node{}, err
	}
	for i := 1; i < len(a); i++ {
		p, err := g.Mul(a[i], b[i])
		if err != nil {
			return Node{}, err
		}
		if sum, err = g.Add(sum, p); err != nil {
			return Node{}, err
		}
	}
	return sum, nil
}

// MatVec returns the vector whose i-th entry is Dot(w[i], x): a linear layer
// without bias, one row of w per output.
func (g *Graph) MatVec(w [][]Node, x []Node) ([]Node, error) {
	out := make([]Node, len(w))
	for i, row := range w {
		v, err := g.Dot(row, x)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// AddVec returns the element-wise sum a[i] + b[i]; a and b must have the same
// length.
func (g *Graph) AddVec(a, b []Node) ([]Node, error) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("autograd: AddVec of lengths %d and %d", len(a), len(b)))
	}
	out := make([]Node, len(a))
	for i := range a {
		v, err := g.Add(a[i], b[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
