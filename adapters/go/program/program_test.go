package program

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"scalarkit/wire"
)

func TestParseRejectsBrokenProgramsNamingStepAndField(t *testing.T) {
	cases := []struct {
		name, program, want string
	}{
		{"not a list", `{"op":"variable"}`, "program must be a list"},
		{"unknown op", `[{"id":"x","op":"sin","operands":[]}]`, "step 0: field 'op': unknown operation"},
		{"unknown id", `[{"id":"y","op":"neg","operands":["x"]}]`, `step 0 (y): field 'operands[0]': unknown id "x"`},
		{"reused id", `[{"id":"x","op":"variable","value":1},{"id":"x","op":"constant","value":2}]`, "already used"},
		{"wrong arity", `[{"id":"x","op":"variable","value":1},{"id":"y","op":"add","operands":["x"]}]`, "add takes a list of 2"},
		{"string value", `[{"id":"x","op":"variable","value":"two"}]`, "field 'value'"},
		{"unexpected field", `[{"id":"x","op":"variable","value":1,"seed":2}]`, `unexpected field "seed"`},
		{"non-finite exponent", `[{"id":"x","op":"variable","value":1},{"id":"y","op":"pow","operands":["x"],"exponent":"inf"}]`, "finite constant"},
		{"unknown output", `[{"op":"backward","output":"x"}]`, `unknown id "x"`},
		{"protocol 1's args", `[{"id":"x","op":"variable","value":1},{"id":"y","op":"mul","args":["x","x"]}]`, "step 1 (mul): field 'args' is protocol 1's name"},
		{"protocol 1's args on pow", `[{"id":"x","op":"variable","value":1},{"id":"y","op":"pow","args":["x"],"exponent":2}]`, "step 1 (pow): field 'args'"},
		{"operands missing", `[{"id":"x","op":"variable","value":1},{"id":"y","op":"neg"}]`, "step 1 (y): field 'operands': neg takes a list of 1 id(s), got nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(tc.program), "case t")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestObservationsKeepNegativeZeroAndNonFiniteOnTheWire(t *testing.T) {
	data := wireObservations(t, `[
		{"id":"z","op":"constant","value":-0},
		{"id":"x","op":"variable","value":"nan"},
		{"id":"y","op":"variable","value":-0.0},
		{"id":"n","op":"neg","operands":["y"]},
		{"op":"backward","output":"n","seed":"inf"}]`)
	want := `[{"value":-0.0,"tracked":false},{"error":{"kind":"non-finite-leaf","operation":"variable","value":"nan"}},` +
		`{"value":-0.0,"tracked":true},{"value":0.0,"tracked":true},` +
		`{"error":{"kind":"non-finite-seed","seed":"inf"},"gradients":{"y":0.0,"n":0.0}}]`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

func TestComparerComparesEachFloatUnderItsBoundAndNamesWhatDiffers(t *testing.T) {
	steps, _ := Parse(json.RawMessage(`[{"id":"x","op":"variable","value":3},{"id":"y","op":"mul","operands":["x","x"]},{"op":"backward","output":"y"}]`), "case t")
	got, err := Run(steps, true)
	if err != nil {
		t.Fatal(err)
	}
	// 6 and its neighbours 1 and 2 ulps up (1 ulp of 6 is 2^-50).
	ulp := math.Ldexp(1, -50)
	oneUp, twoUp := 6+ulp, 6+2*ulp
	onGradient := func(x float64) func(p *Pass, g *Gradients) {
		return func(p *Pass, g *Gradients) { (*g)[0].Grad = x }
	}
	cases := []struct {
		name   string
		exact  bool
		bounds map[string]float64 // step 2's bounds when not exact
		mutate func(p *Pass, g *Gradients)
		want   string // "" when nothing differs
	}{
		{"gradient off by one ulp under exact", true, nil, onGradient(oneUp), "gradients.x"},
		{"gradient off by one ulp under bound 0", false, nil, onGradient(oneUp), "gradients.x"},
		{"gradient off by one ulp under a bound of one ulp", false, map[string]float64{"gradients.x": ulp}, onGradient(oneUp), ""},
		{"gradient off by two ulps under a bound of one ulp", false, map[string]float64{"gradients.x": ulp}, onGradient(twoUp), "gradients.x"},
		{"a bound on another path does not apply", false, map[string]float64{"gradients.y": ulp}, onGradient(oneUp), "gradients.x"},
		{"edge contribution within its bound at pass.edges[CONSUMER:SLOT]", false, map[string]float64{"pass.edges[y:0].contribution": ulp},
			func(p *Pass, g *Gradients) {
				p.Edges[0].Contribution = wire.Float(math.Nextafter(float64(p.Edges[0].Contribution), 7))
			}, ""},
		{"merged edge", true, nil, func(p *Pass, g *Gradients) { p.Edges = p.Edges[:1] }, "pass.edges: expected 1 edges, got 2"},
		{"wrong operand", true, nil, func(p *Pass, g *Gradients) { p.Edges[0].Operand = "y" }, "pass.edges[y:0].operand: expected y, got x"},
		{"wrong operand_tracked", true, nil, func(p *Pass, g *Gradients) { p.Edges[1].OperandTracked = false }, "pass.edges[y:1].operand_tracked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := json.Marshal(got[2])
			var want Observation
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			tc.mutate(want.Pass, want.Gradients)
			c := &comparer{exact: tc.exact, bounds: []map[string]float64{{}, {}, tc.bounds}, steps: steps}
			c.gradients(2, want.Gradients, got[2].Gradients)
			c.trace(2, want.Pass, got[2].Pass)
			if tc.want == "" {
				if len(c.problems) > 0 {
					t.Errorf("problems %q, want none", c.problems)
				}
				return
			}
			if len(c.problems) == 0 || !strings.Contains(strings.Join(c.problems, "\n"), tc.want) {
				t.Errorf("problems %q, want one about %s", c.problems, tc.want)
			}
		})
	}
}

func TestCreateRunSkipsFailedCreationsAndStopsAtTheFirstGradientStep(t *testing.T) {
	steps, err := Parse(json.RawMessage(`[
		{"id":"x","op":"variable","value":2},
		{"id":"zero","op":"constant","value":0},
		{"id":"bad","op":"div","operands":["x","zero"]},
		{"id":"y","op":"mul","operands":["x","x"]},
		{"op":"backward","output":"y"},
		{"id":"z","op":"neg","operands":["bad"]}]`), "case t")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(steps)
	next, err := s.CreateRun(0)
	if err != nil || next != 4 {
		t.Fatalf("CreateRun(0) = %d, %v; want 4 (the backward), nil", next, err)
	}
	if s.Len() != 3 || s.Name(s.Graph.At(2)) != "y" {
		t.Fatalf("created %d nodes, the last %q; want x, zero, y (the failed div creates none)", s.Len(), s.Name(s.Graph.At(s.Len()-1)))
	}
	if next, err = s.CreateRun(5); err == nil || next != 5 || !strings.Contains(err.Error(), `"bad" was never created`) {
		t.Errorf("CreateRun(5) = %d, %v; want 5 and an error naming the never-created id", next, err)
	}
}

func TestEdgesAndEdgeErrorsAreWrittenWithProtocol2sFieldsInItsOrder(t *testing.T) {
	data := wireObservations(t, `[
		{"id":"x","op":"variable","value":3},
		{"id":"k","op":"constant","value":2},
		{"id":"y","op":"mul","operands":["x","k"]},
		{"op":"backward","output":"y"},
		{"id":"s","op":"variable","value":1e-200},
		{"id":"big","op":"constant","value":1e200},
		{"id":"z","op":"mul","operands":["s","big"]},
		{"op":"backward","output":"z","seed":1e200},
		{"id":"tiny","op":"variable","value":5e-324},
		{"id":"l","op":"log","operands":["tiny"]}]`)
	for _, want := range []string{
		`"edges":[{"consumer":"y","slot":0,"operand":"x","local_derivative":2.0,"upstream":1.0,"contribution":2.0,"operand_tracked":true,"before":0.0,"after":2.0},` +
			`{"consumer":"y","slot":1,"operand":"k","local_derivative":3.0,"upstream":1.0,"contribution":3.0,"operand_tracked":false,"before":null,"after":null}]`,
		`{"error":{"kind":"non-finite-contribution","consumer":"z","slot":0,"operand":"s","upstream":1e+200,"local_derivative":1e+200},`,
		`{"error":{"kind":"non-finite-local-derivative","operation":"log","slot":0,"value":"inf"}}`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("observations\n%s\ndo not contain\n%s", data, want)
		}
	}
	// What the harness reads back is what was written: ids stay ids, the slot an int.
	var back []Observation
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Errorf("read back and written again\n%s\nwant\n%s", again, data)
	}
}

// wireObservations parses program, runs it with pass records, and returns the
// observations as the adapter writes them; any failure ends the test.
func wireObservations(t *testing.T, program string) []byte {
	t.Helper()
	steps, err := Parse(json.RawMessage(program), "case t")
	if err != nil {
		t.Fatal(err)
	}
	observations, err := Run(steps, true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(observations)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
