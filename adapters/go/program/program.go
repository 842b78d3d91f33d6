// Package program parses conformance programs (lists of steps over named
// nodes, docs/contract.md section 8) and runs them on the autograd engine, observing every
// step exactly as conformance/execute.py does. The adapter command and the
// fixture tests share this code, so what the tests check is what the harness
// sees on the wire.
package program

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"

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
	Output   string   // backward, zero_grad
	Seed     float64  // backward; 1 unless HasSeed
	HasSeed  bool
}

// Creates reports whether the step creates a node.
func (s Step) Creates() bool { return s.ID != "" }

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
	"apply":     {"id", "op", "operands"},
	"pow":       {"id", "op", "operands", "exponent"},
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
	for index, item := range items {
		step, err := parseStep(item, fmt.Sprintf("%s: step %d", source, index), known)
		if err != nil {
			return nil, err
		}
		if step.ID != "" {
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
	case "pow", "backward", "zero_grad":
		shape = op
	case "detach":
		shape = "apply"
	default:
		if _, ok := autograd.LookupOp(op); !ok {
			return Step{}, &Error{where, fmt.Sprintf("field 'op': unknown operation %q", op)}
		}
		shape = "apply"
	}
	if _, old := fields["args"]; old && (shape == "apply" || shape == "pow") {
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
	return step, nil
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
