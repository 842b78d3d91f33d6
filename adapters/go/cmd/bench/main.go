// Command bench times the engine on one program: bench PROGRAM.json reads a
// JSON array of program steps (the format of a run request's program), runs
// it without building observations, and prints one JSON line:
//
//	{"engine":"go-autograd","nodes":N,"forward_seconds":F,"backward_seconds":B,
//	 "cold_forward_seconds":CF,"cold_backward_seconds":CB,"peak_rss_delta_bytes":M}
//
// The program runs twice, each time on a fresh session and graph. The first,
// cold run starts in memory just returned to the operating system, so every
// page it touches is a page fault; it gives cold_forward_seconds,
// cold_backward_seconds and peak_rss_delta_bytes, the process's peak resident
// set during the run minus its resident set just before (Linux only; absent
// elsewhere): the tape, the engine's scratch buffers and the program's id
// table. The second run reuses the memory the first one left to the
// collector, as a training loop or the reference's best-of-N runs in one
// process do; it gives forward_seconds and backward_seconds.
//
// Forward is the time spent creating nodes, backward the time spent in
// backward and zero_grad steps; reading and parsing are not timed. Backward
// takes the engine's fast path, without a pass record, as training does.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"scalarkit/internal/rss"
	"scalarkit/program"
	"scalarkit/wire"
)

type report struct {
	Engine          string     `json:"engine"`
	Nodes           int        `json:"nodes"`
	ForwardSeconds  wire.Float `json:"forward_seconds"`
	BackwardSeconds wire.Float `json:"backward_seconds"`
	ColdForward     wire.Float `json:"cold_forward_seconds"`
	ColdBackward    wire.Float `json:"cold_backward_seconds"`
	PeakRSSDelta    *int64     `json:"peak_rss_delta_bytes,omitempty"`
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
	s, size := program.NewSession(steps), program.Size(steps)
	debug.FreeOSMemory() // collect the parser's garbage and return it before the clock starts
	base, baseOK := rss.Start()
	cold, err := run(s, steps, size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	peak, peakOK := rss.Peak()
	s = program.NewSession(steps)
	runtime.GC() // the first run's graph is garbage; its memory stays with the process
	r, err := run(s, steps, size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	r.ColdForward, r.ColdBackward = cold.ForwardSeconds, cold.BackwardSeconds
	if peakOK && baseOK {
		delta := peak - base
		r.PeakRSSDelta = &delta
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
}

// run executes steps on s (a session made for them) and times creation and
// gradient steps separately. Consecutive creation steps run as one
// Session.CreateRun and are timed together, so the clock is read only where
// the kind of step changes. The tape's room for size nodes (program.Size: a
// repeated step's n nodes included) is reserved on the clock, as forward
// work; the size itself is read off the parsed program before, as the Rust
// bench does, since scanning the steps for it is program handling, not
// engine work (it streams every parsed step, strings and all, through the
// cache: about a tenth of the warm run on a 27k-node program).
func run(s *program.Session, steps []program.Step, size int) (report, error) {
	var forward, backward time.Duration
	start := time.Now()
	s.Graph.Grow(size)
	for index := 0; index < len(steps); index++ {
		if s.Creates(index) {
			// An engine error is part of the program; anything else ends it.
			next, err := s.CreateRun(index)
			if err != nil {
				return report{}, err
			}
			now := time.Now()
			forward += now.Sub(start)
			start = now
			index = next - 1
			continue
		}
		output, err := s.Output(index)
		if err != nil {
			return report{}, err
		}
		if steps[index].Op == "zero_grad" {
			s.Graph.ZeroGrad(output)
		} else {
			// A failed backward is part of the program; its time counts too.
			_ = s.Graph.Backward(output, steps[index].Seed)
		}
		if index+1 == len(steps) || s.Creates(index+1) {
			now := time.Now()
			backward += now.Sub(start)
			start = now
		}
	}
	return report{Engine: "go-autograd", Nodes: s.Len(), ForwardSeconds: wire.Float(forward.Seconds()), BackwardSeconds: wire.Float(backward.Seconds())}, nil
}
