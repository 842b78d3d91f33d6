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

// mlp returns the MLP-shaped program of bench/run.py's mlp_program: a
// 16-32-32-1 network (relu hidden layers, linear output) applied to 8
// inputs, the outputs summed, then backward from the sum.
func mlp() []program.Step {
	sizes, samples := []int{16, 32, 32, 1}, 8
	var steps []program.Step
	weights, biases := make([][][]string, len(sizes)-1), make([][]string, len(sizes)-1)
	for layer := range weights {
		for j := 0; j < sizes[layer+1]; j++ {
			var row []string
			for i := 0; i < sizes[layer]; i++ {
				name := fmt.Sprintf("w%d_%d_%d", layer, j, i)
				steps = append(steps, program.Step{Op: "variable", ID: name, Value: float64((i*7+j*3+layer)%11-5) / 10})
				row = append(row, name)
			}
			weights[layer] = append(weights[layer], row)
			bias := fmt.Sprintf("b%d_%d", layer, j)
			steps = append(steps, program.Step{Op: "variable", ID: bias, Value: 0.01 * float64(j%5)})
			biases[layer] = append(biases[layer], bias)
		}
	}
	var outputs []string
	for s := 0; s < samples; s++ {
		var activations []string
		for i := 0; i < sizes[0]; i++ {
			name := fmt.Sprintf("x%d_%d", s, i)
			steps = append(steps, program.Step{Op: "constant", ID: name, Value: float64((i*5+s)%9-4) / 4})
			activations = append(activations, name)
		}
		for layer := range weights {
			var next []string
			for j, row := range weights[layer] {
				total := biases[layer][j]
				for i, w := range row {
					product, sum := fmt.Sprintf("p%d_%d_%d_%d", s, layer, j, i), fmt.Sprintf("a%d_%d_%d_%d", s, layer, j, i)
					steps = append(steps,
						program.Step{Op: "mul", ID: product, Operands: []string{w, activations[i]}},
						program.Step{Op: "add", ID: sum, Operands: []string{total, product}})
					total = sum
				}
				if layer < len(weights)-1 {
					h := fmt.Sprintf("h%d_%d_%d", s, layer, j)
					steps = append(steps, program.Step{Op: "relu", ID: h, Operands: []string{total}})
					total = h
				}
				next = append(next, total)
			}
			activations = next
		}
		outputs = append(outputs, activations[0])
	}
	loss := outputs[0]
	for k, out := range outputs[1:] {
		id := fmt.Sprintf("loss%d", k)
		steps = append(steps, program.Step{Op: "add", ID: id, Operands: []string{loss, out}})
		loss = id
	}
	return append(steps, program.Step{Op: "backward", Output: loss, Seed: 1})
}

func BenchmarkMLP(b *testing.B) {
	steps := mlp()
	size := program.Size(steps)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := program.NewSession(steps)
		b.StartTimer()
		if _, err := run(s, steps, size); err != nil {
			b.Fatal(err)
		}
	}
}
