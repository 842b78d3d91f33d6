package main

import "testing"

// The baseline must do the real work: these are the contract's seed facts.
func TestMinimalEngineReproducesTheReusedSquareSeedFacts(t *testing.T) {
	var tp tape
	x, _ := tp.leaf(2, true)
	square, _ := tp.apply(opMul, x, x, 0)
	loss, _ := tp.apply(opAdd, square, square, 0)
	if !tp.backward(loss, 1) {
		t.Fatal("backward failed")
	}
	if got := [3]float64{tp.grad[x], tp.grad[square], tp.grad[loss]}; got != [3]float64{8, 2, 1} {
		t.Errorf("gradients x, square, loss = %v, want 8 2 1", got)
	}
	tp.backward(loss, 1)
	if tp.grad[x] != 16 {
		t.Errorf("second backward: x gradient %v, want 16 (gradients accumulate)", tp.grad[x])
	}
	tp.zeroGrad(loss)
	if tp.grad[x] != 0 || tp.grad[loss] != 0 {
		t.Errorf("zero_grad left %v", tp.grad)
	}
}

func TestMinimalEngineCommitsNothingWhenAnAdjointOverflows(t *testing.T) {
	var tp tape
	x, _ := tp.leaf(1e300, true)
	if _, ok := tp.apply(opMul, x, x, 0); ok {
		t.Fatal("an overflowing value (1e600) must create no node")
	}
	c, _ := tp.leaf(1e150, false)
	z, _ := tp.apply(opMul, x, c, 0) // 1e450 overflows too: use a smaller x
	if z != 0 {
		t.Fatal("1e300 * 1e150 must not be created")
	}
	w, _ := tp.leaf(1e150, true)
	z, ok := tp.apply(opMul, w, c, 0) // 1e300
	if !ok {
		t.Fatal("1e150 * 1e150 is finite")
	}
	if tp.backward(z, 1e200) || tp.grad[w] != 0 || tp.grad[z] != 0 {
		t.Errorf("an overflowing pass (1e200 * 1e150) must fail and change nothing, gradients %v", tp.grad)
	}
}
