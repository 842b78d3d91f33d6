package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"scalarkit/autograd"
)

func TestServeAnswersEachRequestOnOneLine(t *testing.T) {
	cases := []struct {
		name, request, want string
	}{
		{"hello", `{"type":"hello","protocol":2}`, `"engine":{"name":"go-autograd","version":"0.1.0","language":"go"}`},
		{"run", `{"type":"run","case":"c","program":[{"id":"x","op":"variable","value":3.0},{"id":"y","op":"mul","operands":["x","x"]},{"op":"backward","output":"y"}]}`,
			`{"type":"result","case":"c","observations":[{"value":3.0,"tracked":true},{"value":9.0,"tracked":true},{"gradients":{"x":6.0,"y":1.0},"pass":`},
		{"protocol 2 edges", `{"type":"run","case":"e","program":[{"id":"x","op":"variable","value":3.0},{"id":"y","op":"mul","operands":["x","x"]},{"op":"backward","output":"y"}]}`,
			`"edges":[{"consumer":"y","slot":0,"operand":"x","local_derivative":3.0,"upstream":1.0,"contribution":3.0,"operand_tracked":true,"before":0.0,"after":3.0},`},
		{"features", `{"type":"hello","protocol":2}`, `"features":["seed","repeat"]}`},
		// records:false leaves out the pass (the whole reply is this line), and a repeated step is observed once.
		{"records false", `{"type":"run","case":"r","records":false,"program":[{"id":"x","op":"variable","value":2},{"id":"y","op":"neg","operands":["x"],"repeat":3},{"op":"backward","output":"y"}]}`,
			`{"type":"result","case":"r","observations":[{"value":2.0,"tracked":true},{"value":-2.0,"tracked":true},{"gradients":{"x":-1.0,"y":1.0}}]}`},
		{"records true", `{"type":"run","case":"t","records":true,"program":[{"id":"x","op":"variable","value":2},{"id":"y","op":"neg","operands":["x"],"repeat":3},{"op":"backward","output":"y"}]}`,
			`{"gradients":{"x":-1.0,"y":1.0},"pass":{"seed":1.0,"nodes":[{"node":"x",`},
		{"negative zero", `{"type":"run","case":"z","program":[{"id":"x","op":"constant","value":-0}]}`,
			`{"type":"result","case":"z","observations":[{"value":-0.0,"tracked":false}]}`},
		{"broken program", `{"type":"run","case":"b","program":[{"id":"y","op":"neg","operands":["x"]}]}`, `{"type":"error","case":"b","message":`},
		{"protocol 1's args", `{"type":"run","case":"a","program":[{"id":"x","op":"variable","value":3.0},{"id":"y","op":"neg","args":["x"]}]}`,
			`{"type":"error","case":"a","message":"case a: step 1 (neg): field 'args' is protocol 1's name; protocol 2 lists an operation's ids in 'operands'"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, log bytes.Buffer
			status := serve(strings.NewReader(tc.request+"\n"+`{"type":"shutdown"}`+"\n"+`{"type":"hello","protocol":2}`+"\n"), &out, &log)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if status != 0 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("status %d, replies %q; want one line containing %s", status, out.String(), tc.want)
			}
		})
	}
}

func TestServeSkipsGarbageAndUnknownRequestsWithoutReplying(t *testing.T) {
	var out, log bytes.Buffer
	status := serve(strings.NewReader("not json\n\n{\"type\":\"frobnicate\"}\n"), &out, &log)
	if status != 0 || out.Len() != 0 || !strings.Contains(log.String(), "frobnicate") {
		t.Errorf("status %d, stdout %q, stderr %q", status, out.String(), log.String())
	}
}

func TestHelloDeclaresEveryOpTableRowAndDetachAndNothingElse(t *testing.T) {
	var out, log bytes.Buffer
	serve(strings.NewReader(`{"type":"hello","protocol":2}`+"\n"), &out, &log)
	var reply struct{ Ops []string }
	if err := json.Unmarshal(out.Bytes(), &reply); err != nil {
		t.Fatalf("hello reply %q: %v", out.String(), err)
	}
	// The op table's operation rows in their order, then detach, which the
	// engine has (Graph.Detach) but which is a leaf kind, not a table row.
	var want []string
	for _, op := range autograd.Ops() {
		want = append(want, op.String())
	}
	want = append(want, "detach")
	if strings.Join(reply.Ops, " ") != strings.Join(want, " ") {
		t.Errorf("hello declares ops %q, want the op table's rows and detach: %q", reply.Ops, want)
	}
	for _, name := range reply.Ops {
		if _, ok := autograd.LookupOp(name); !ok && name != "detach" {
			t.Errorf("hello declares %q, which is no row of the op table", name)
		}
	}
}

func TestHelloAnswersProtocol2WhateverVersionItIsAskedFor(t *testing.T) {
	// A harness of protocol 1 (or any other) gets 2 back and refuses the
	// adapter; the adapter never pretends to speak another version.
	for _, asked := range []string{"1", "2", "3"} {
		var out, log bytes.Buffer
		serve(strings.NewReader(`{"type":"hello","protocol":`+asked+`}`+"\n"), &out, &log)
		var reply struct {
			Type     string
			Protocol int
		}
		if err := json.Unmarshal(out.Bytes(), &reply); err != nil || reply.Type != "hello" || reply.Protocol != 2 {
			t.Errorf("hello asking for protocol %s: reply %q, want a hello with protocol 2", asked, out.String())
		}
	}
}
