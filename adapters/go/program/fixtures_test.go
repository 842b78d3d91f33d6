package program

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixturesDir is the repository's fixtures folder, read in place; the
// SCALARKIT_FIXTURES environment variable overrides it.
func fixturesDir() string {
	if dir := os.Getenv("SCALARKIT_FIXTURES"); dir != "" {
		return dir
	}
	return "../../../fixtures"
}

// fixtureFormat is the one fixture file format these tests read: format 3,
// protocol 2's vocabulary (steps list "operands"; an edge is (consumer, slot)
// -> operand; bound paths are pass.edges[CONSUMER:SLOT]).
const fixtureFormat = 3

// fixture is one case file (fixtures/fixture.schema.json).
type fixture struct {
	Format      int             `json:"format"`
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Ops         []string        `json:"ops"`
	Features    []string        `json:"features"`
	Levels      []string        `json:"levels"`
	Comparison  comparison      `json:"comparison"`
	Program     json.RawMessage `json:"program"`
	Expected    []Observation   `json:"expected"`
	// Bounds holds, per profile, one object per step: a float's path -> its bound.
	Bounds map[string]json.RawMessage `json:"bounds"`
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	fsys := os.DirFS(fixturesDir())
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// llm-records/ holds model-level records, not cases; gpt's tests read them.
		if d.IsDir() && p == "llm-records" {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") && p != "fixture.schema.json" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading fixtures from %s: %v", fixturesDir(), err)
	}
	sort.Strings(files)
	var out []fixture
	for _, name := range files {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatalf("fixture bug: %s: %v", name, err)
		}
		f, err := readFixture(name, data)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Join(fixturesDir(), name), err)
		}
		out = append(out, f)
	}
	return out
}

// readFixture decodes the case file at path name (relative to the fixtures
// folder) from data. A file of another format than fixtureFormat is an error
// that says so, checked before anything else: decoding it would fail on some
// field with a message that does not say why. Any other problem is a fixture
// bug.
func readFixture(name string, data []byte) (fixture, error) {
	var header struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &header); err != nil {
		return fixture{}, fmt.Errorf("fixture bug: %v", err)
	}
	if header.Format == nil || *header.Format != fixtureFormat {
		return fixture{}, fmt.Errorf("%s, but these tests read fixture format %d only (protocol 2's operands, consumer, slot and operand); "+
			"point SCALARKIT_FIXTURES at fixtures of format %d, or regenerate them", describeFormat(header.Format), fixtureFormat, fixtureFormat)
	}
	var f fixture
	if err := json.Unmarshal(data, &f); err != nil {
		return fixture{}, fmt.Errorf("fixture bug: %v", err)
	}
	if want := strings.TrimSuffix(name, ".json"); f.ID != want {
		return fixture{}, fmt.Errorf("fixture bug: id %q differs from its path", f.ID)
	}
	return f, nil
}

// describeFormat names a fixture file's format field for a message.
func describeFormat(format *int) string {
	if format == nil {
		return "no \"format\" field"
	}
	return fmt.Sprintf("fixture format %d", *format)
}

func hasFeature(f fixture, feature string) bool {
	for _, x := range f.Features {
		if x == feature {
			return true
		}
	}
	return false
}

func hasLevel(f fixture, level string) bool {
	for _, l := range f.Levels {
		if l == level {
			return true
		}
	}
	return false
}

// observe runs f's program through the runner the adapter uses and returns
// the observations as the harness sees them: wire JSON, read back. As the
// harness, it asks for pass records only when f's levels read them (trace,
// order; the harness sends "records": false otherwise), so the million-node
// chain builds none. An error that starts with "fixture bug" blames the
// fixture.
func observe(f fixture) ([]Step, []Observation, error) {
	steps, err := Parse(f.Program, f.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("fixture bug: %v", err)
	}
	observations, err := Run(steps, hasLevel(f, "trace") || hasLevel(f, "order"))
	if err != nil {
		return nil, nil, fmt.Errorf("run: %v", err)
	}
	data, err := json.Marshal(observations)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding observations: %v", err)
	}
	var actual []Observation
	if err := json.Unmarshal(data, &actual); err != nil {
		return nil, nil, fmt.Errorf("decoding our own observations: %v", err)
	}
	if len(actual) != len(steps) {
		return nil, nil, fmt.Errorf("%d steps but %d observations", len(steps), len(actual))
	}
	return steps, actual, nil
}

// checkCase runs f and compares the observations with its expectations at
// the levels it checks, under the contract profile: the differences, or an
// error when the case could not be compared (a fixture bug says so).
func checkCase(f fixture) ([]string, error) {
	steps, actual, err := observe(f)
	if err != nil {
		return nil, err
	}
	if len(f.Expected) != len(steps) {
		return nil, fmt.Errorf("fixture bug: %d steps but %d expected observations", len(steps), len(f.Expected))
	}
	exact, bounds, err := contractBounds(f, len(steps))
	if err != nil {
		return nil, fmt.Errorf("fixture bug: %v", err)
	}
	c := &comparer{exact: exact, bounds: bounds, steps: steps}
	for i, step := range steps {
		want, got := f.Expected[i], actual[i]
		if step.Creates() {
			if !hasLevel(f, "values") {
				continue
			}
			if want.Error != nil {
				c.errorInfo(i, "error", want.Error, got.Error)
				continue
			}
			if got.Error != nil {
				c.failf(i, "error", "expected a node, got error %s", got.Error.Kind)
				continue
			}
			c.float(i, "value", float64(*want.Value), float64(*got.Value))
			if *want.Tracked != *got.Tracked {
				c.failf(i, "tracked", "expected %v, got %v", *want.Tracked, *got.Tracked)
			}
			continue
		}
		if want.Error != nil {
			if hasLevel(f, "errors") {
				c.errorInfo(i, "error", want.Error, got.Error)
				c.gradients(i, want.Gradients, got.Gradients)
			}
			continue
		}
		if hasLevel(f, "gradients") {
			if got.Error != nil {
				c.failf(i, "error", "expected success, got error %s", got.Error.Kind)
				continue
			}
			c.gradients(i, want.Gradients, got.Gradients)
		}
		if want.Pass == nil {
			continue
		}
		if hasLevel(f, "trace") {
			c.trace(i, want.Pass, got.Pass)
		}
		if hasLevel(f, "order") {
			if !sameNodeOrder(want.Pass, got.Pass) {
				c.failf(i, "pass.nodes", "the nodes are not in the canonical depth-first post-order")
			}
			c.order(i, want.Pass, got.Pass)
		}
	}
	return c.problems, nil
}

// TestFixturesMatchTheReference runs every canonical fixture through the same
// program runner the adapter uses, sends the observations through the wire
// encoding and back, and compares them with the fixture's expectations at the
// levels the fixture checks, the order level (the canonical topology and edge
// sequence) included, under the contract profile: an exact fixture bit for
// bit, a bounds fixture with each float's bound from bounds.contract.
func TestFixturesMatchTheReference(t *testing.T) {
	fixtures := loadFixtures(t)
	ran, repeated := 0, 0
	for _, f := range fixtures {
		t.Run(f.ID, func(t *testing.T) {
			ran++
			if hasFeature(f, "repeat") {
				repeated++
			}
			problems, err := checkCase(f)
			if err != nil {
				t.Fatalf("%s: %v", f.ID, err)
			}
			for _, p := range problems {
				t.Errorf("%s: %s", f.ID, p)
			}
		})
	}
	if ran <= 80 {
		t.Errorf("ran %d fixture cases from %s, expected more than 80", ran, fixturesDir())
	}
	// structure/deep-chain-1000000 and any other case with a repeated step.
	if repeated == 0 {
		t.Errorf("ran no fixture with a repeated step from %s", fixturesDir())
	}
	t.Logf("ran %d fixture cases", ran)
}

// TestBackwardWithoutARecordObservesTheSameAsWithOne runs every fixture on
// the fast path (no pass record) and on the recording path: every value,
// error and stored gradient must be the same bits; only the pass is missing.
func TestBackwardWithoutARecordObservesTheSameAsWithOne(t *testing.T) {
	for _, f := range loadFixtures(t) {
		if hasFeature(f, "repeat") {
			// A program with a repeated step is always run without a record
			// (docs/protocol.md "records"): a million-node record is not built.
			continue
		}
		t.Run(f.ID, func(t *testing.T) {
			steps, err := Parse(f.Program, f.ID)
			if err != nil {
				t.Fatalf("fixture bug: %s: %v", f.ID, err)
			}
			recorded, err := Run(steps, true)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := Run(steps, false)
			if err != nil {
				t.Fatal(err)
			}
			for i := range recorded {
				if fast[i].Pass != nil {
					t.Fatalf("step %d: the fast path returned a pass record", i)
				}
				recorded[i].Pass = nil
			}
			want, _ := json.Marshal(recorded)
			got, _ := json.Marshal(fast)
			if string(want) != string(got) {
				t.Errorf("fast path observed\n%s\nrecording path observed\n%s", got, want)
			}
		})
	}
}

func TestAFixtureOfAnotherFormatIsRefusedWithAMessageAboutItsFormat(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"format 2", `{"format":2,"id":"c","expected":[{"error":{"kind":"non-finite-contribution","child":"y","parent":"x","operand":0}}]}`,
			"fixture format 2, but these tests read fixture format 3 only"},
		{"no format", `{"id":"c"}`, `no "format" field, but these tests read fixture format 3 only`},
		{"format 3 with a wrong id", `{"format":3,"id":"d"}`, `fixture bug: id "d" differs from its path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := readFixture("c.json", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readFixture(%s) = %v, want an error about %s", tc.data, err, tc.want)
			}
		})
	}
	if f, err := readFixture("c.json", []byte(`{"format":3,"id":"c"}`)); err != nil || f.ID != "c" {
		t.Errorf("a format 3 fixture: %+v, %v", f, err)
	}
}
