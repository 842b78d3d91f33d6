// Command minimal times the minimal tape engine (engine.go) on one program, the
// same way the Go port's bench command does: minimal PROGRAM.json reads a JSON
// array of program steps, resolves every id and op name before the clock
// starts, runs it and prints one JSON line:
//
//	{"engine":"go-minimal","nodes":N,"forward_seconds":F,"backward_seconds":B,
//	 "cold_forward_seconds":CF,"cold_backward_seconds":CB,"peak_rss_delta_bytes":M}
//
// Forward is node creation, backward every backward and zero_grad step. As in
// the port's bench command the program runs twice on a fresh tape: the cold
// first run, in memory just returned to the operating system, gives the cold_
// times and peak_rss_delta_bytes (the peak resident set during the run minus
// the resident set before it; Linux, absent elsewhere); the second run, in the
// memory the first left to the collector, gives forward and backward seconds.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// step is one program step with its ids resolved to step indices.
type step struct {
	op    opcode
	refs  [2]int32 // creating steps of the operands, or of the output
	value float64  // leaf value, pow exponent or backward seed
}

type report struct {
	Engine          string  `json:"engine"`
	Nodes           int     `json:"nodes"`
	ForwardSeconds  float64 `json:"forward_seconds"`
	BackwardSeconds float64 `json:"backward_seconds"`
	ColdForward     float64 `json:"cold_forward_seconds"`
	ColdBackward    float64 `json:"cold_backward_seconds"`
	PeakRSSDelta    *int64  `json:"peak_rss_delta_bytes,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: minimal PROGRAM.json")
		os.Exit(2)
	}
	steps, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "minimal: %v\n", err)
		os.Exit(1)
	}
	debug.FreeOSMemory()
	base, baseOK := startRSS()
	cold := run(steps)
	peak, peakOK := rssField("VmHWM:")
	runtime.GC()
	r := run(steps)
	r.ColdForward, r.ColdBackward = cold.ForwardSeconds, cold.BackwardSeconds
	if peakOK && baseOK {
		delta := peak - base
		r.PeakRSSDelta = &delta
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
}

// read parses the program file and resolves ids and op names.
func read(path string) ([]step, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID       string          `json:"id"`
		Op       string          `json:"op"`
		Value    json.RawMessage `json:"value"`
		Operands []string        `json:"operands"`
		Args     json.RawMessage `json:"args"` // protocol 1's name for operands: refused
		Exponent json.RawMessage `json:"exponent"`
		Output   string          `json:"output"`
		Seed     json.RawMessage `json:"seed"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	ids := make(map[string]int32, len(raw))
	steps := make([]step, len(raw))
	for i, r := range raw {
		s := &steps[i]
		if s.op = opcodes[r.Op]; s.op == opNone {
			return nil, fmt.Errorf("step %d: unknown op %q", i, r.Op)
		}
		if r.Args != nil {
			return nil, fmt.Errorf("step %d: field 'args' is protocol 1's name; a step lists its ids in 'operands'", i)
		}
		names := r.Operands
		if r.ID == "" {
			names = []string{r.Output}
		}
		for k, name := range names {
			ref, ok := ids[name]
			if !ok {
				return nil, fmt.Errorf("step %d: unknown id %q", i, name)
			}
			s.refs[k] = ref
		}
		number := r.Value
		switch s.op {
		case opPow:
			number = r.Exponent
		case opBackward:
			number = r.Seed
		}
		if s.value, err = parseFloat(number, s.op == opBackward); err != nil {
			return nil, fmt.Errorf("step %d: %v", i, err)
		}
		if r.ID != "" {
			ids[r.ID] = int32(i)
		}
	}
	return steps, nil
}

// parseFloat reads a number or "inf", "-inf", "nan"; an absent seed is 1.
func parseFloat(raw json.RawMessage, seed bool) (float64, error) {
	if raw == nil {
		if seed {
			return 1, nil
		}
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "inf":
			return math.Inf(1), nil
		case "-inf":
			return math.Inf(-1), nil
		case "nan":
			return math.NaN(), nil
		}
		return 0, fmt.Errorf("bad number %q", s)
	}
	return strconv.ParseFloat(string(raw), 64)
}

// run executes the steps, timing creation and gradient steps separately.
func run(steps []step) report {
	var forward, backward time.Duration
	start := time.Now()
	t := &tape{nodes: make([]node, 0, len(steps)), grad: make([]float64, 0, len(steps))}
	at := make([]uint32, len(steps)) // tape index by creating step
	creates := func(s *step) bool { return s.op < opBackward }
	for i := range steps {
		s := &steps[i]
		if i > 0 && creates(s) != creates(&steps[i-1]) {
			now := time.Now()
			if creates(&steps[i-1]) {
				forward += now.Sub(start)
			} else {
				backward += now.Sub(start)
			}
			start = now
		}
		var n uint32
		var ok bool
		switch s.op {
		case opVariable, opConstant:
			n, ok = t.leaf(s.value, s.op == opVariable)
		case opBackward:
			t.backward(at[s.refs[0]], s.value)
			continue
		case opZeroGrad:
			t.zeroGrad(at[s.refs[0]])
			continue
		default:
			n, ok = t.apply(s.op, at[s.refs[0]], at[s.refs[1]], s.value)
		}
		if ok {
			at[i] = n
		}
	}
	if elapsed := time.Since(start); len(steps) > 0 && creates(&steps[len(steps)-1]) {
		forward += elapsed
	} else {
		backward += elapsed
	}
	return report{Engine: "go-minimal", Nodes: len(t.nodes), ForwardSeconds: forward.Seconds(), BackwardSeconds: backward.Seconds()}
}

// startRSS resets the kernel's peak resident set counter and returns the
// current resident set in bytes.
func startRSS() (int64, bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return rssField("VmRSS:")
}

// rssField reads one "Name:  N kB" line of /proc/self/status, in bytes.
func rssField(name string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, name) {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, name)), " kB"), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}
