package program

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestAComparisonOrBoundsOfTheWrongShapeIsAFixtureBug(t *testing.T) {
	cases := []struct{ name, comparison, bounds, want string }{
		{"the removed tolerance mode", `{"mode":"tolerance","rel":1e-12,"abs":0.0}`, `{"numeric":[{}]}`, `unknown comparison mode "tolerance"`},
		{"bounds without the contract profile", `{"mode":"bounds"}`, `{"numeric":[{}]}`, "without bounds.contract"},
		{"exact with the contract profile", `{"mode":"exact"}`, `{"contract":[{}],"numeric":[{}]}`, "an exact comparison with bounds.contract"},
		{"one bounds entry per step", `{"mode":"bounds"}`, `{"contract":[{},{}],"numeric":[{}]}`, "2 entries for 1 steps"},
		{"a negative bound", `{"mode":"bounds"}`, `{"contract":[{"value":-1.0}],"numeric":[{}]}`, "not a positive bound"},
		{"a bound that is not a float", `{"mode":"bounds"}`, `{"contract":[{"value":"big"}],"numeric":[{}]}`, "bounds.contract[0].value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f fixture
			data := fmt.Sprintf(`{"comparison":%s,"bounds":%s}`, tc.comparison, tc.bounds)
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Fatal(err)
			}
			if _, _, err := contractBounds(f, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("contractBounds(%s) = %v, want an error about %s", data, err, tc.want)
			}
		})
	}
}

func TestABoundIsReadFromItsPathAndAnAbsentPathHasBound0(t *testing.T) {
	var f fixture
	data := `{"comparison":{"mode":"bounds"},"bounds":{"contract":[{},{"value":1e-15,"gradients.x":"inf"}],"numeric":[{},{}]}}`
	if err := json.Unmarshal([]byte(data), &f); err != nil {
		t.Fatal(err)
	}
	exact, bounds, err := contractBounds(f, 2)
	if err != nil || exact {
		t.Fatalf("contractBounds = %v, %v", exact, err)
	}
	if bounds[1]["value"] != 1e-15 || !math.IsInf(bounds[1]["gradients.x"], 1) || bounds[1]["gradients.y"] != 0 || bounds[0]["value"] != 0 {
		t.Errorf("bounds %v", bounds)
	}
}

// floatAt returns the float of an observation at a bounds path (docs/fixtures.md),
// found the way conformance/generate.py names it, independently of the comparer.
func floatAt(o *Observation, path string) *float64 {
	if path == "value" {
		return (*float64)(o.Value)
	}
	if id, ok := strings.CutPrefix(path, "gradients."); ok {
		for i := range *o.Gradients {
			if (*o.Gradients)[i].ID == id {
				return &(*o.Gradients)[i].Grad
			}
		}
		return nil
	}
	rest, ok := strings.CutPrefix(path, "pass.")
	dot := strings.LastIndexByte(rest, '.')
	if !ok || dot < 0 || o.Pass == nil {
		return nil
	}
	list, selector, _ := strings.Cut(strings.TrimSuffix(rest[:dot], "]"), "[")
	key := rest[dot+1:]
	if list == "nodes" {
		for i := range o.Pass.Nodes {
			n := &o.Pass.Nodes[i]
			if n.Node == selector {
				return map[string]*float64{"value": (*float64)(&n.Value), "pass_adjoint": (*float64)(n.PassAdjoint), "stored_gradient": (*float64)(n.StoredGradient)}[key]
			}
		}
		return nil
	}
	for i := range o.Pass.Edges {
		e := &o.Pass.Edges[i]
		consumer, slot, byConsumer := strings.Cut(selector, ":")
		if byConsumer && e.Consumer == consumer && strconv.Itoa(e.Slot) == slot || !byConsumer && strconv.Itoa(i) == selector {
			return map[string]*float64{"local_derivative": (*float64)(&e.LocalDerivative), "upstream": (*float64)(&e.Upstream), "contribution": (*float64)(&e.Contribution),
				"before": (*float64)(e.Before), "after": (*float64)(e.After)}[key]
		}
	}
	return nil
}

// moved returns f with its expectations set to what this engine observes, the
// float at path in step (every finite bound's float when path is "") moved
// by move(actual, bound).
func moved(t *testing.T, f fixture, bounds []map[string]float64, step int, path string, move func(actual, bound float64) float64) fixture {
	t.Helper()
	_, observed, err := observe(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, paths := range bounds {
		for p, bound := range paths {
			if (path != "" && (i != step || p != path)) || math.IsInf(bound, 1) {
				continue
			}
			at := floatAt(&observed[i], p)
			if at == nil {
				t.Fatalf("%s: step %d: no float at %s", f.ID, i, p)
			}
			*at = move(*at, bound)
		}
	}
	f.Expected = observed
	return f
}

// atTheBound is the float farthest above actual within bound; pastTheBound the nearest beyond it.
func atTheBound(actual, bound float64) float64 {
	x := actual + bound
	for math.Abs(x-actual) > bound {
		x = math.Nextafter(x, math.Inf(-1))
	}
	return x
}

func pastTheBound(actual, bound float64) float64 {
	x := actual + bound
	for math.Abs(x-actual) <= bound {
		x = math.Nextafter(x, math.Inf(1))
	}
	return x
}

// TestEveryBoundLetsItsFloatMoveToItAndNoFurther sets each bounds fixture's
// expectations to this engine's own floats moved to the edge of their bounds:
// the comparer must find every bound at the path it compares the float under
// (else it uses bound 0 and fails), and must fail a float moved one past it.
func TestEveryBoundLetsItsFloatMoveToItAndNoFurther(t *testing.T) {
	cases, floats := 0, 0
	for _, f := range loadFixtures(t) {
		if f.Comparison.Mode != "bounds" {
			continue
		}
		_, bounds, err := contractBounds(f, len(f.Expected))
		if err != nil {
			t.Fatalf("%s: fixture bug: %v", f.ID, err)
		}
		cases++
		var paths [][2]string // (step, path) of every finite bound, in a fixed order
		for i, step := range bounds {
			for p, b := range step {
				if !math.IsInf(b, 1) {
					paths = append(paths, [2]string{strconv.Itoa(i), p})
				}
			}
		}
		sort.Slice(paths, func(i, j int) bool { return paths[i][0]+paths[i][1] < paths[j][0]+paths[j][1] })
		floats += len(paths)
		problems, err := checkCase(moved(t, f, bounds, 0, "", atTheBound))
		if err != nil || len(problems) > 0 {
			t.Errorf("%s: every float at the edge of its bound: %v %q", f.ID, err, problems)
		}
		if len(paths) > 200 {
			continue // the model cases: one run per float would take minutes
		}
		for _, sp := range paths {
			step, _ := strconv.Atoi(sp[0])
			problems, err := checkCase(moved(t, f, bounds, step, sp[1], pastTheBound))
			prefix := fmt.Sprintf("step %d (", step)
			ok := err == nil && len(problems) > 0
			for _, p := range problems {
				ok = ok && strings.HasPrefix(p, prefix) && strings.Contains(p, "): "+sp[1]+": ")
			}
			if !ok {
				t.Errorf("%s: step %d %s moved one float past its bound: %v %q", f.ID, step, sp[1], err, problems)
			}
		}
	}
	if cases < 30 || floats < 1000 {
		t.Errorf("only %d bounds cases with %d bounded floats", cases, floats)
	}
}
