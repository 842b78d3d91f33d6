package gpt

import (
	"math"

	"scalarkit/autograd"
)

// Adam is the optimiser of docs/contract.md section 11: Adam with a learning rate that decays
// linearly to zero over Steps steps.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	Steps                 int // the whole run, for the linear decay
	m, v                  []float64
}

// NewAdam returns the reference optimiser (lr 0.01, beta1 0.85, beta2 0.99,
// eps 1e-8) for a run of steps steps.
func NewAdam(steps int) *Adam {
	return &Adam{LR: 0.01, Beta1: 0.85, Beta2: 0.99, Eps: 1e-8, Steps: steps}
}

// Step applies update number step (0-based) to params from their stored
// gradients, then zeroes those gradients. params must be the same slice, in the
// same order, on every call.
func (a *Adam) Step(params []*autograd.Parameter, step int) {
	if a.m == nil {
		a.m = make([]float64, len(params))
		a.v = make([]float64, len(params))
	}
	lr := a.LR * (1 - float64(step)/float64(a.Steps))
	c1 := 1 - math.Pow(a.Beta1, float64(step+1))
	c2 := 1 - math.Pow(a.Beta2, float64(step+1))
	for i, p := range params {
		g := p.Grad
		// Products are converted before they are added so no FMA changes the bits.
		a.m[i] = float64(a.Beta1*a.m[i]) + float64((1-a.Beta1)*g)
		a.v[i] = float64(a.Beta2*a.v[i]) + float64((1-a.Beta2)*float64(g*g))
		mHat := a.m[i] / c1
		vHat := a.v[i] / c2
		p.Value -= float64(lr*mHat) / (math.Sqrt(vHat) + a.Eps)
		p.Grad = 0
	}
}

// TrainStep resets g, builds the loss of doc on it, runs backward (which adds
// into the parameters' stored gradients), takes one Adam step and returns the
// loss before the step and the number of nodes of its graph. Passing the same
// g to every step reuses its memory (autograd.Graph.Reset).
func (m *Model) TrainStep(g *autograd.Graph, doc string, opt *Adam, step int) (loss float64, nodes int, err error) {
	tokens, err := Tokenize(doc)
	if err != nil {
		return 0, 0, err
	}
	g.Reset()
	out, err := m.Loss(g, tokens)
	if err != nil {
		return 0, 0, err
	}
	if err := g.Backward(out, 1); err != nil {
		return 0, 0, err
	}
	opt.Step(m.Parameters(), step)
	return out.Value(), g.Len(), nil
}
