// Package program parses conformance programs (lists of steps over named
// nodes, docs/contract.md section 8) and runs them on the autograd engine, observing every
// step exactly as conformance/execute.py does. The adapter command and the
// fixture tests share this code, so what the tests check is what the harness
// sees on the wire.
//
// An operation step may carry "repeat": n (the repeat feature, rule
// program.repeat): the operation is applied n times, each result taking slot 0
// of the next application, so one step builds a chain of n nodes; the last is
// the step's id, the k-th before it is named id[k]. No other step may take
// such a name.
package program

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"

	"scalarkit/autograd"
	"scalarkit/wire"
)

// Step is one program step. Creation steps have an ID; backward and zero_grad
// have an Output.
type Step struct {
	Op       string   // variable, constant, detach, an op name, backward or zero_grad
	ID       string   // the created node's id (creation steps)
	Value    float64  // variable, constant
	Operands []string // detach and operations, one id per operand slot
	Exponent float64  // pow
	Repeat   int      // operations: how many times the op is applied; 0 when the step has no "repeat" (once)
	Output   string   // backward, zero_grad
	Seed     float64  // backward; 1 unless HasSeed
	HasSeed  bool
}

// MaxRepeat is the most applications one repeated step may ask for (a bound
// on what one step can cost), as in conformance/program.py.
const MaxRepeat = 10_000_000

// Creates reports whether the step creates a node.
func (s Step) Creates() bool { return s.ID != "" }

// Size is how many steps s counts as (program_size in conformance/program.py):
// its Repeat, else 1. A creation step that succeeds creates this many nodes.
func (s Step) Size() int { return max(s.Repeat, 1) }

// Size is how many steps a program runs, a repeated step counted once per
// application (program_size in conformance/program.py).
func Size(steps []Step) int {
	size := 0
	for _, step := range steps {
		size += step.Size()
	}
	return size
}

// ChainName returns the name of node position (1-based) of the chain step s
// creates: id[position] for an inner node, the step's id for the last. It is
// built only when something names the node.
func (s Step) ChainName(position int) string {
	if position < s.Size() {
		return fmt.Sprintf("%s[%d]", s.ID, position)
	}
	return s.ID
}

// Error is a program that breaks the step rules; the message names the
// source, the step and the field.
type Error struct {
	Where string
	Msg   string
}

// Error returns where the program broke a rule, then the rule.
func (e *Error) Error() string { return e.Where + ": " + e.Msg }

var allowedKeys = map[string][]string{
	"leaf":      {"id", "op", "value"},
	"detach":    {"id", "op", "operands"},
	"apply":     {"id", "op", "operands", "repeat"},
	"pow":       {"id", "op", "operands", "exponent", "repeat"},
	"backward":  {"op", "output", "seed"},
	"zero_grad": {"op", "output"},
}

// Parse reads a program from raw JSON (an array of step objects) and checks
// it: known ops, allowed fields, fresh non-empty ids, operands naming earlier
// ids, the right arity, numbers where numbers belong, a finite pow exponent.
// source names where the program came from, for messages. It reads protocol
// 2's steps: an operation's operand ids are in "operands", and protocol 1's
// "args" is an error that says so.
func Parse(raw json.RawMessage, source string) ([]Step, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, &Error{source, "program must be a list of steps"}
	}
	steps := make([]Step, 0, len(items))
	known := make(map[string]bool, len(items))
	var chains chains
	for index, item := range items {
		where := fmt.Sprintf("%s: step %d", source, index)
		step, err := parseStep(item, where, known)
		if err != nil {
			return nil, err
		}
		if step.ID != "" {
			if err := chains.check(step, where); err != nil {
				return nil, err
			}
			known[step.ID] = true
		}
		steps = append(steps, step)
	}
	return steps, nil
}

func parseStep(item json.RawMessage, where string, known map[string]bool) (Step, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
		return Step{}, &Error{where, fmt.Sprintf("a step must be an object, got %s", show(item))}
	}
	var op string
	if err := json.Unmarshal(fields["op"], &op); err != nil || fields["op"] == nil {
		return Step{}, &Error{where, fmt.Sprintf("field 'op' must be a string naming an operation, got %s", show(fields["op"]))}
	}
	var shape string
	switch op {
	case "variable", "constant":
		shape = "leaf"
	case "detach", "pow", "backward", "zero_grad":
		shape = op
	default:
		if _, ok := autograd.LookupOp(op); !ok {
			return Step{}, &Error{where, fmt.Sprintf("field 'op': unknown operation %q", op)}
		}
		shape = "apply"
	}
	if _, old := fields["args"]; old && (shape == "apply" || shape == "detach" || shape == "pow") {
		return Step{}, &Error{fmt.Sprintf("%s (%s)", where, op), "field 'args' is protocol 1's name; protocol 2 lists an operation's ids in 'operands'"}
	}
	var unexpected []string
	for key := range fields {
		if !contains(allowedKeys[shape], key) {
			unexpected = append(unexpected, key)
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return Step{}, &Error{fmt.Sprintf("%s (%s)", where, op), fmt.Sprintf("unexpected field %q", unexpected[0])}
	}
	step := Step{Op: op, Seed: 1}
	if shape == "backward" || shape == "zero_grad" {
		output, err := name(fields, "output", where, known)
		if err != nil {
			return Step{}, err
		}
		step.Output = output
		if raw, ok := fields["seed"]; ok {
			seed, err := wire.ParseFloat(raw)
			if err != nil {
				return Step{}, &Error{where, "field 'seed': " + err.Error()}
			}
			step.Seed, step.HasSeed = seed, true
		}
		return step, nil
	}
	if err := json.Unmarshal(fields["id"], &step.ID); err != nil || step.ID == "" {
		return Step{}, &Error{fmt.Sprintf("%s (%s)", where, op), fmt.Sprintf("field 'id' must be a non-empty string, got %s", show(fields["id"]))}
	}
	where = fmt.Sprintf("%s (%s)", where, step.ID)
	if known[step.ID] {
		return Step{}, &Error{where, fmt.Sprintf("field 'id': id %q is already used by an earlier step", step.ID)}
	}
	if shape == "leaf" {
		raw, ok := fields["value"]
		if !ok {
			return Step{}, &Error{where, "field 'value' is missing"}
		}
		v, err := wire.ParseFloat(raw)
		if err != nil {
			return Step{}, &Error{where, "field 'value': " + err.Error()}
		}
		step.Value = v
		return step, nil
	}
	arity := 1
	if o, ok := autograd.LookupOp(op); ok {
		arity = o.Arity()
	}
	var operands []json.RawMessage
	if err := json.Unmarshal(fields["operands"], &operands); err != nil || len(operands) != arity {
		return Step{}, &Error{where, fmt.Sprintf("field 'operands': %s takes a list of %d id(s), got %s", op, arity, show(fields["operands"]))}
	}
	for slot, raw := range operands {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil {
			return Step{}, &Error{where, fmt.Sprintf("field 'operands[%d]' must be an id string, got %s", slot, show(raw))}
		}
		if !known[id] {
			return Step{}, &Error{where, fmt.Sprintf("field 'operands[%d]': unknown id %q (ids must be created by an earlier step)", slot, id)}
		}
		step.Operands = append(step.Operands, id)
	}
	if shape == "pow" {
		raw, ok := fields["exponent"]
		if !ok {
			return Step{}, &Error{where, "field 'exponent' is missing"}
		}
		c, err := wire.ParseFloat(raw)
		if err != nil {
			return Step{}, &Error{where, "field 'exponent': " + err.Error()}
		}
		if math.IsInf(c, 0) || math.IsNaN(c) {
			return Step{}, &Error{where, fmt.Sprintf("field 'exponent' must be a finite constant, got %s", wire.FormatFloat(c))}
		}
		step.Exponent = c
	}
	if raw, ok := fields["repeat"]; ok {
		n, err := parseRepeat(raw)
		if err != nil {
			return Step{}, &Error{where, fmt.Sprintf("field 'repeat' must be a whole number from 1 to %d, got %s", MaxRepeat, show(raw))}
		}
		step.Repeat = n
	}
	return step, nil
}

// wholeNumber is a JSON integer: no fraction, no exponent (1.0 and 1e3 are
// floats, as in Python).
var wholeNumber = regexp.MustCompile(`^-?[0-9]+$`)

// parseRepeat reads a "repeat" field: a whole number from 1 to MaxRepeat.
func parseRepeat(raw json.RawMessage) (int, error) {
	text := string(bytes.TrimSpace(raw))
	if !wholeNumber.MatchString(text) {
		return 0, fmt.Errorf("not a whole number")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > MaxRepeat {
		return 0, fmt.Errorf("out of range")
	}
	return int(n), nil
}

// indexed matches an id of the form base[k], the form inner nodes are named by.
var indexed = regexp.MustCompile(`^(.+)\[([1-9][0-9]*)\]$`)

// chains keeps the names repeated steps give their inner nodes (id[k]) apart
// from the program's own ids: conformance/program.py's _Chains.
type chains struct {
	lengths map[string]int      // each repeated step's chain length, by its id
	indexed map[string][]uint64 // for each base, the k of every id base[k] seen so far, in order
}

// check refuses an id that names an inner node of an earlier repeated step,
// and a repeated step one of whose inner nodes an earlier step's id names.
func (c *chains) check(step Step, where string) error {
	if c.lengths == nil {
		c.lengths, c.indexed = map[string]int{}, map[string][]uint64{}
	}
	where = fmt.Sprintf("%s (%s)", where, step.ID)
	if m := indexed.FindStringSubmatch(step.ID); m != nil {
		base := m[1]
		k, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			k = math.MaxUint64 // longer than any chain
		}
		if k < uint64(c.lengths[base]) {
			return &Error{where, fmt.Sprintf("field 'id': %q names a node of the repeated step %q", step.ID, base)}
		}
		c.indexed[base] = append(c.indexed[base], k)
	}
	// A chain of one node has no inner node to clash with.
	if step.Repeat > 1 {
		for _, k := range c.indexed[step.ID] {
			if k < uint64(step.Repeat) {
				return &Error{where, fmt.Sprintf("field 'repeat': its node %s[%d] would take an id an earlier step uses", step.ID, k)}
			}
		}
		c.lengths[step.ID] = step.Repeat
	}
	return nil
}

func name(fields map[string]json.RawMessage, field, where string, known map[string]bool) (string, error) {
	var id string
	if err := json.Unmarshal(fields[field], &id); err != nil || fields[field] == nil {
		return "", &Error{where, fmt.Sprintf("field %q must be an id string, got %s", field, show(fields[field]))}
	}
	if !known[id] {
		return "", &Error{where, fmt.Sprintf("field %q: unknown id %q", field, id)}
	}
	return id, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func show(raw json.RawMessage) string {
	if raw == nil {
		return "nothing"
	}
	if len(raw) > 60 {
		return string(raw[:60]) + "..."
	}
	return string(raw)
}
