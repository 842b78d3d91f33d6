// Command bench times the engine on one program: bench PROGRAM.json reads a
// JSON array of program steps (the format of a run request's program), runs
// it without building observations, and prints one JSON line:
//
//	{"engine":"go-autograd","nodes":N,"forward_seconds":F,"backward_seconds":B}
//
// forward_seconds is the time spent creating nodes, backward_seconds the time
// spent in backward and zero_grad steps; reading and parsing are not timed.
// Pass records stay alive until timing ends, as a caller inspecting them would.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"scalarkit/autograd"
	"scalarkit/program"
	"scalarkit/wire"
)

type report struct {
	Engine          string     `json:"engine"`
	Nodes           int        `json:"nodes"`
	ForwardSeconds  wire.Float `json:"forward_seconds"`
	BackwardSeconds wire.Float `json:"backward_seconds"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench PROGRAM.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	steps, err := program.Parse(data, os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	data = nil
	runtime.GC() // collect the parser's garbage before the clock starts
	r, err := run(steps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
}

// run executes steps and times creation and gradient steps separately. Time is
// charged per run of consecutive steps of one kind, so the clock is read only
// where the kind changes.
func run(steps []program.Step) (report, error) {
	m := program.NewMachine()
	var records []*autograd.PassRecord
	var forward, backward time.Duration
	start := time.Now()
	for index, step := range steps {
		if index > 0 && step.Creates() != steps[index-1].Creates() {
			now := time.Now()
			if steps[index-1].Creates() {
				forward += now.Sub(start)
			} else {
				backward += now.Sub(start)
			}
			start = now
		}
		if step.Creates() {
			_, err := m.Create(step, index)
			var engineErr autograd.Error
			if err != nil && !errors.As(err, &engineErr) {
				return report{}, err
			}
			continue
		}
		output, err := m.Lookup(step.Output, index)
		if err != nil {
			return report{}, err
		}
		if step.Op == "zero_grad" {
			m.Graph.ZeroGrad(output)
			continue
		}
		// A failed backward is part of the program; its time counts too.
		if record, err := m.Graph.Backward(output, step.Seed); err == nil {
			records = append(records, record)
		}
	}
	if len(steps) > 0 {
		if elapsed := time.Since(start); steps[len(steps)-1].Creates() {
			forward += elapsed
		} else {
			backward += elapsed
		}
	}
	r := report{Engine: "go-autograd", Nodes: m.Len(), ForwardSeconds: wire.Float(forward.Seconds()), BackwardSeconds: wire.Float(backward.Seconds())}
	keepAlive(records)
	return r, nil
}

// keepAlive holds the pass records until after the clock stopped.
//
//go:noinline
func keepAlive(records []*autograd.PassRecord) { _ = len(records) }
