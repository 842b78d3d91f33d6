package program

import (
	"encoding/json"
	"strings"
	"testing"
)

// The repeated step (docs/contract.md rule program.repeat), as tests/test_repeat.py
// checks it on the reference.

const leafX = `{"id":"x","op":"variable","value":0.5}`

func TestABadRepeatIsRefusedNamingStepAndField(t *testing.T) {
	const mustBe = "case t: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got "
	cases := []struct{ step, want string }{
		{`{"id":"y","op":"add","operands":["x","x"],"repeat":0}`, mustBe + "0"},
		{`{"id":"y","op":"add","operands":["x","x"],"repeat":"3"}`, mustBe + `"3"`},
		{`{"id":"y","op":"add","operands":["x","x"],"repeat":true}`, mustBe + "true"},
		{`{"id":"y","op":"neg","operands":["x"],"repeat":2.0}`, mustBe + "2.0"},
		{`{"id":"y","op":"neg","operands":["x"],"repeat":-1}`, mustBe + "-1"},
		{`{"id":"y","op":"pow","operands":["x"],"exponent":2,"repeat":100000000}`, mustBe + "100000000"},
		{`{"id":"y","op":"variable","value":1.0,"repeat":2}`, `case t: step 1 (variable): unexpected field "repeat"`},
		{`{"id":"y","op":"detach","operands":["x"],"repeat":2}`, `case t: step 1 (detach): unexpected field "repeat"`},
		{`{"op":"backward","output":"x","repeat":2}`, `case t: step 1 (backward): unexpected field "repeat"`},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			_, err := Parse(json.RawMessage("["+leafX+","+tc.step+"]"), "case t")
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
	steps, err := Parse(json.RawMessage("["+leafX+`,{"id":"y","op":"pow","operands":["x"],"exponent":1,"repeat":10000000}]`), "case t")
	if err != nil || steps[1].Repeat != MaxRepeat || steps[1].Size() != MaxRepeat || steps[0].Size() != 1 {
		t.Errorf("the largest repeat: %+v, %v", steps, err)
	}
}

func TestNoOtherStepMayTakeTheNameOfAnInnerNode(t *testing.T) {
	cases := []struct{ program, want string }{
		{`{"id":"y","op":"neg","operands":["x"],"repeat":3},{"id":"y[2]","op":"neg","operands":["x"]}`,
			`case t: step 2 (y[2]): field 'id': "y[2]" names a node of the repeated step "y"`},
		{`{"id":"y[1]","op":"neg","operands":["x"]},{"id":"y","op":"neg","operands":["x"],"repeat":3}`,
			"case t: step 2 (y): field 'repeat': its node y[1] would take an id an earlier step uses"},
	}
	for _, tc := range cases {
		if _, err := Parse(json.RawMessage("["+leafX+","+tc.program+"]"), "case t"); err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %s", err, tc.want)
		}
	}
	// y[3] is not a node of a 3-step chain (that one is y itself), and y[02], y[0] are no index: allowed.
	for _, id := range []string{"y[3]", "y[02]", "y[0]", "[1]"} {
		program := "[" + leafX + `,{"id":"y","op":"neg","operands":["x"],"repeat":3},{"id":"` + id + `","op":"neg","operands":["x"]}]`
		if _, err := Parse(json.RawMessage(program), "case t"); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// observations runs program with pass records and returns each observation's wire JSON.
func observations(t *testing.T, program string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal(wireObservations(t, program), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestARepeatedStepObservesWhatItsStepsWrittenOutObserveMinusInnerIDs(t *testing.T) {
	const leaves = leafX + `,{"id":"c","op":"constant","value":0.25}`
	repeated := observations(t, `[`+leaves+`,{"id":"y","op":"add","operands":["x","c"],"repeat":3},
		{"op":"backward","output":"y"},{"op":"zero_grad","output":"y"}]`)
	writtenOut := observations(t, `[`+leaves+`,{"id":"y[1]","op":"add","operands":["x","c"]},
		{"id":"y[2]","op":"add","operands":["y[1]","c"]},{"id":"y","op":"add","operands":["y[2]","c"]},
		{"op":"backward","output":"y"},{"op":"zero_grad","output":"y"}]`)
	// One observation for the step: the last node's.
	if len(repeated) != 5 || string(repeated[2]) != `{"value":1.25,"tracked":true}` || string(repeated[2]) != string(writtenOut[4]) {
		t.Fatalf("repeated %s\nwritten out %s", repeated, writtenOut)
	}
	var short, long struct {
		Gradients json.RawMessage
		Pass      json.RawMessage
	}
	if json.Unmarshal(repeated[3], &short) != nil || json.Unmarshal(writtenOut[5], &long) != nil {
		t.Fatal("backward observations are not objects")
	}
	// The same pass, its inner nodes named y[k]; gradients of the program's own ids only.
	if string(short.Pass) != string(long.Pass) || !strings.Contains(string(short.Pass), `"node":"y[2]"`) {
		t.Errorf("pass\n%s\nwritten out\n%s", short.Pass, long.Pass)
	}
	if string(short.Gradients) != `{"x":1.0,"y":1.0}` || string(long.Gradients) != `{"x":1.0,"y[1]":1.0,"y[2]":1.0,"y":1.0}` {
		t.Errorf("gradients %s, written out %s", short.Gradients, long.Gradients)
	}
	if string(repeated[4]) != `{"gradients":{"x":0.0,"y":0.0}}` {
		t.Errorf("zero_grad observed %s", repeated[4])
	}
}

func TestAnErrorNamesAnInnerNodeOfTheChainByItsIndex(t *testing.T) {
	steps, err := Parse(json.RawMessage(`[{"id":"x","op":"variable","value":1e-300},{"id":"c","op":"constant","value":1e150},
		{"id":"y","op":"mul","operands":["x","c"],"repeat":3},{"op":"backward","output":"y","seed":1e300}]`), "case t")
	if err != nil {
		t.Fatal(err)
	}
	// With and without a pass record: naming does not depend on the record.
	for _, record := range []bool{true, false} {
		got, err := Run(steps, record)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(got[3])
		if want := `{"error":{"kind":"non-finite-contribution","consumer":"y","slot":0,"operand":"y[2]",`; !strings.HasPrefix(string(data), want) {
			t.Errorf("record %v: observed %s, want it to start %s", record, data, want)
		}
	}
}

func TestAFailedApplicationFailsTheStepAndCreatesNoID(t *testing.T) {
	got := observations(t, `[{"id":"x","op":"variable","value":1},{"id":"e","op":"exp","operands":["x"],"repeat":5},
		{"id":"v","op":"variable","value":2},{"op":"backward","output":"v"}]`)
	if string(got[1]) != `{"error":{"kind":"non-finite-result","operation":"exp","value":"inf"}}` {
		t.Errorf("the chain observed %s", got[1])
	}
	// The chain's first nodes stay on the graph but are no program id: not in gradients.
	if string(got[3]) != `{"gradients":{"x":0.0,"v":1.0},"pass":{"seed":1.0,"nodes":[{"node":"v","operation":"variable","value":2.0,"tracked":true,"pass_adjoint":1.0,"stored_gradient":1.0}],"edges":[]}}` {
		t.Errorf("backward after the failed chain observed %s", got[3])
	}
	steps, _ := Parse(json.RawMessage(`[{"id":"x","op":"variable","value":1},{"id":"e","op":"exp","operands":["x"],"repeat":5},
		{"id":"y","op":"neg","operands":["e"]}]`), "case t")
	if _, err := Run(steps, false); err == nil || err.Error() != `step 2: id "e" was never created (its creating step failed)` {
		t.Errorf("naming the failed chain: %v", err)
	}
}

func TestNodesAfterAChainKeepTheirNames(t *testing.T) {
	data := string(wireObservations(t, `[{"id":"x","op":"variable","value":2},{"id":"y","op":"neg","operands":["x"],"repeat":4},
		{"id":"z","op":"mul","operands":["y","x"]},{"op":"backward","output":"z"}]`))
	for _, want := range []string{
		`[{"value":2.0,"tracked":true},{"value":2.0,"tracked":true},{"value":4.0,"tracked":true},{"gradients":{"x":4.0,"y":2.0,"z":1.0},`,
		`{"consumer":"z","slot":0,"operand":"y",`,
		`{"consumer":"y","slot":0,"operand":"y[3]",`,
		`{"consumer":"y[1]","slot":0,"operand":"x",`,
	} {
		if !strings.Contains(data, want) {
			t.Errorf("observations\n%s\ndo not contain\n%s", data, want)
		}
	}
}

func TestANodeOfAFailedChainHasNoNameAndLaterNodesKeepTheirs(t *testing.T) {
	steps, err := Parse(json.RawMessage(`[{"id":"x","op":"variable","value":1},{"id":"e","op":"exp","operands":["x"],"repeat":5},
		{"id":"y","op":"neg","operands":["x"],"repeat":2}]`), "case t")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(steps)
	if _, err := s.Create(0); err != nil {
		t.Fatal(err)
	}
	// exp(exp(exp(e))) is finite, the fourth application overflows: three nodes stay on the tape.
	if _, err := s.Create(1); asEngineError(err) == nil || s.Len() != 4 {
		t.Fatalf("the chain: %v, %d nodes; want an engine error and x plus three inner nodes", err, s.Len())
	}
	if name := s.Name(s.Graph.At(2)); name != "?" {
		t.Errorf("a node of the failed chain is named %q, want ?", name)
	}
	// Asking for that name before y ran must not lose y's nodes.
	if _, err := s.Create(2); err != nil {
		t.Fatal(err)
	}
	if first, last := s.Name(s.Graph.At(4)), s.Name(s.Graph.At(5)); first != "y[1]" || last != "y" {
		t.Errorf("y's chain is named %q, %q; want y[1], y", first, last)
	}
}
