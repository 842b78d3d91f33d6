// Command adapter puts the autograd engine behind the conformance kit's
// JSON-lines protocol, version 2 (docs/protocol.md): it reads requests on
// stdin, answers each on one stdout line and flushes, and logs to stderr.
//
// Protocol 2 names edges by consumer, slot and operand: a program step lists
// its operand ids in "operands", a pass record edge is (consumer, slot) ->
// operand with operand_tracked, and the errors non-finite-local-derivative
// and non-finite-contribution carry a slot.
//
// Every run starts from a fresh graph. A program the adapter cannot run, or a
// panic while running it, becomes a {"type":"error"} reply for that case; the
// adapter keeps serving. shutdown, or the end of stdin, exits with status 0.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"scalarkit/autograd"
	"scalarkit/program"
)

// protocolVersion is the protocol this adapter speaks. A hello asking for
// another version, protocol 1 included, gets this number back, and the harness
// then reports the wrong version and runs nothing.
const protocolVersion = 2

// levels are the conformance levels the adapter declares (docs/contract.md
// section 9).
var levels = []string{"values", "gradients", "errors", "trace", "order"}

// recordPass is whether a backward observation carries its pass record: only
// the trace and order levels read one (docs/protocol.md "Observations"), and
// without them backward takes the engine's fast path, which records nothing.
var recordPass = declares("trace") || declares("order")

func declares(level string) bool {
	for _, l := range levels {
		if l == level {
			return true
		}
	}
	return false
}

// hello is the handshake reply: the engine and everything it supports.
type hello struct {
	Type     string   `json:"type"`
	Protocol int      `json:"protocol"`
	Engine   engine   `json:"engine"`
	Ops      []string `json:"ops"`
	Levels   []string `json:"levels"`
	Features []string `json:"features"`
}

type engine struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Language string `json:"language"`
}

type result struct {
	Type         string                `json:"type"`
	Case         string                `json:"case"`
	Observations []program.Observation `json:"observations"`
}

type errorReply struct {
	Type    string `json:"type"`
	Case    string `json:"case"`
	Message string `json:"message"`
}

type request struct {
	Type    string          `json:"type"`
	Case    string          `json:"case"`
	Program json.RawMessage `json:"program"`
	// Records is false when the harness reads no pass record for the case
	// (docs/protocol.md "records"); absent means true.
	Records *bool `json:"records"`
}

// features are the optional features the adapter declares: backward takes
// any seed, and a step may be repeated (a loop in program.Session; such
// programs come with "records": false, which the adapter honours).
var features = []string{"seed", "repeat"}

func main() {
	os.Exit(serve(os.Stdin, os.Stdout, os.Stderr))
}

// serve answers requests from in on out until shutdown or end of input and
// returns the exit status.
func serve(in io.Reader, out, log io.Writer) int {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	reply := func(msg any) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(msg); err != nil {
			fmt.Fprintf(log, "adapter: cannot encode reply: %v\n", err)
			return
		}
		w.Write(buf.Bytes()) // Encode ends the line with '\n'
		if err := w.Flush(); err != nil {
			fmt.Fprintf(log, "adapter: cannot write reply: %v\n", err)
		}
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if done := handle(line, reply, log); done {
				return 0
			}
		}
		if err == io.EOF {
			return 0
		}
		if err != nil {
			fmt.Fprintf(log, "adapter: reading stdin: %v\n", err)
			return 1
		}
	}
}

// handle answers one request line and reports whether it was shutdown.
func handle(line []byte, reply func(any), log io.Writer) bool {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintf(log, "adapter: ignoring a request that is not a JSON object: %v\n", err)
		return false
	}
	switch req.Type {
	case "hello":
		reply(hello{
			Type:     "hello",
			Protocol: protocolVersion,
			Engine:   engine{Name: "go-autograd", Version: "0.1.0", Language: "go"},
			Ops:      declaredOps(),
			Levels:   levels,
			Features: features,
		})
	case "run":
		observations, err := runCase(req, log)
		if err != nil {
			reply(errorReply{Type: "error", Case: req.Case, Message: err.Error()})
			return false
		}
		reply(result{Type: "result", Case: req.Case, Observations: observations})
	case "shutdown":
		return true
	default:
		fmt.Fprintf(log, "adapter: unknown request type %q\n", req.Type)
	}
	return false
}

// declaredOps lists the operation rows of the op table (autograd/op.go) in
// the contract's order, then detach, which the engine has as Graph.Detach. It
// is derived from the table, never written out, so hello declares exactly the
// operations the engine has.
func declaredOps() []string {
	var ops []string
	for _, op := range autograd.Ops() {
		ops = append(ops, op.String())
	}
	return append(ops, "detach")
}

// runCase parses and runs one case; a panic becomes an error for that case.
func runCase(req request, log io.Writer) (observations []program.Observation, err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(log, "adapter: panic in case %s: %v\n%s", req.Case, p, debug.Stack())
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	steps, err := program.Parse(req.Program, "case "+req.Case)
	if err != nil {
		return nil, err
	}
	// A million-node chain's record would not fit in a reply: build none
	// when the harness reads none.
	return program.Run(steps, recordPass && (req.Records == nil || *req.Records))
}
