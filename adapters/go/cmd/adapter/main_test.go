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
		{"hello", `{"type":"hello","protocol":1}`, `"engine":{"name":"go-autograd","version":"0.1.0","language":"go"}`},
		{"run", `{"type":"run","case":"c","program":[{"id":"x","op":"variable","value":3.0},{"id":"y","op":"mul","args":["x","x"]},{"op":"backward","output":"y"}]}`,
			`{"type":"result","case":"c","observations":[{"value":3.0,"tracked":true},{"value":9.0,"tracked":true},{"gradients":{"x":6.0,"y":1.0},"pass":`},
		{"negative zero", `{"type":"run","case":"z","program":[{"id":"x","op":"constant","value":-0}]}`,
			`{"type":"result","case":"z","observations":[{"value":-0.0,"tracked":false}]}`},
		{"broken program", `{"type":"run","case":"b","program":[{"id":"y","op":"neg","args":["x"]}]}`, `{"type":"error","case":"b","message":`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, log bytes.Buffer
			status := serve(strings.NewReader(tc.request+"\n"+`{"type":"shutdown"}`+"\n"+`{"type":"hello","protocol":1}`+"\n"), &out, &log)
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
	serve(strings.NewReader(`{"type":"hello","protocol":1}`+"\n"), &out, &log)
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
