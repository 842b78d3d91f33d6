package main

import (
	"fmt"
	"testing"

	"scalarkit/program"
)

// chain returns a program of n multiplications by a constant, then backward
// and zero_grad from the end.
func chain(n int) []program.Step {
	steps := []program.Step{{Op: "variable", ID: "x", Value: 0.5}, {Op: "constant", ID: "one", Value: 1}}
	prev := "x"
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i)
		steps = append(steps, program.Step{Op: "mul", ID: id, Operands: []string{prev, "one"}})
		prev = id
	}
	return append(steps, program.Step{Op: "backward", Output: prev, Seed: 1}, program.Step{Op: "zero_grad", Output: prev})
}

func TestBenchCountsEveryCreatedNode(t *testing.T) {
	steps := chain(1000)
	r, err := run(program.NewSession(steps), steps, program.Size(steps))
	if err != nil {
		t.Fatal(err)
	}
	if r.Nodes != 1002 || r.Engine != "go-autograd" {
		t.Errorf("got %+v", r)
	}
}

func BenchmarkChain100k(b *testing.B) {
	steps := chain(100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := run(program.NewSession(steps), steps, program.Size(steps)); err != nil {
			b.Fatal(err)
		}
	}
}
