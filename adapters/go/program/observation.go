package program

import (
	"bytes"
	"encoding/json"
	"fmt"

	"scalarkit/wire"
)

// Observation is what one step produced, as the wire carries it
// (docs/protocol.md "Observations"):
//
//	creation, succeeded:  {"value": v, "tracked": b}
//	creation, failed:     {"error": E}
//	backward, succeeded:  {"gradients": G, "pass": P}
//	backward, failed:     {"error": E, "gradients": G}
//	zero_grad:            {"gradients": G}
type Observation struct {
	Value     *wire.Float `json:"value,omitempty"`
	Tracked   *bool       `json:"tracked,omitempty"`
	Error     *ErrorInfo  `json:"error,omitempty"`
	Gradients *Gradients  `json:"gradients,omitempty"`
	Pass      *Pass       `json:"pass,omitempty"`
}

// Gradient is one entry of a gradients map: a node id and its stored gradient.
type Gradient struct {
	ID   string
	Grad float64
}

// Gradients maps the id of every tracked node created so far to its stored
// gradient. It is a JSON object written in creation order.
type Gradients []Gradient

// MarshalJSON writes the gradients as one JSON object, in order.
func (g Gradients) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, e := range g {
		if i > 0 {
			buf = append(buf, ',')
		}
		key, err := json.Marshal(e.ID)
		if err != nil {
			return nil, err
		}
		buf = append(buf, key...)
		buf = append(buf, ':')
		buf = wire.AppendFloat(buf, e.Grad)
	}
	return append(buf, '}'), nil
}

// UnmarshalJSON reads a JSON object of floats, keeping the key order.
func (g *Gradients) UnmarshalJSON(data []byte) error {
	*g = (*g)[:0]
	return decodeObject(data, func(key string, raw json.RawMessage) error {
		v, err := wire.ParseFloat(raw)
		if err != nil {
			return fmt.Errorf("gradient of %q: %w", key, err)
		}
		*g = append(*g, Gradient{key, v})
		return nil
	})
}

// Map returns the gradients keyed by id.
func (g Gradients) Map() map[string]float64 {
	m := make(map[string]float64, len(g))
	for _, e := range g {
		m[e.ID] = e.Grad
	}
	return m
}

// Field is one field of an error: its name and its value, which is a string
// (an operation or a node id: consumer, operand, node), an int (slot) or a
// float64.
type Field struct {
	Name  string
	Value any
}

// ErrorInfo is an engine error as wire data: its kind, then exactly the fields
// of that kind in the contract's order, nodes named by program id.
type ErrorInfo struct {
	Kind   string
	Fields []Field
}

// Field returns the value of the named field, or nil.
func (e *ErrorInfo) Field(name string) any {
	for _, f := range e.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// MarshalJSON writes {"kind": K, ...fields} in order.
func (e ErrorInfo) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"kind":`)
	kind, _ := json.Marshal(e.Kind)
	buf.Write(kind)
	for _, f := range e.Fields {
		key, _ := json.Marshal(f.Name)
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		switch v := f.Value.(type) {
		case float64:
			buf.Write(wire.AppendFloat(nil, v))
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads an error object; which fields hold ids, slots and floats
// is fixed by the contract (protocol 2: consumer, operand and node are ids,
// slot is an int).
func (e *ErrorInfo) UnmarshalJSON(data []byte) error {
	*e = ErrorInfo{}
	return decodeObject(data, func(key string, raw json.RawMessage) error {
		switch key {
		case "kind":
			return json.Unmarshal(raw, &e.Kind)
		case "operation", "consumer", "operand", "node":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("error field %q: %w", key, err)
			}
			e.Fields = append(e.Fields, Field{key, s})
		case "slot":
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				return fmt.Errorf("error field %q: %w", key, err)
			}
			e.Fields = append(e.Fields, Field{key, n})
		default:
			v, err := wire.ParseFloat(raw)
			if err != nil {
				return fmt.Errorf("error field %q: %w", key, err)
			}
			e.Fields = append(e.Fields, Field{key, v})
		}
		return nil
	})
}

// Pass is the pass record as wire data: the seed, nodes in topology order,
// edges in processing order, every node named by program id.
type Pass struct {
	Seed  wire.Float `json:"seed"`
	Nodes []PassNode `json:"nodes"`
	Edges []PassEdge `json:"edges"`
}

// PassNode is one node of a pass; PassAdjoint and StoredGradient are null for
// an untracked node.
type PassNode struct {
	Node           string      `json:"node"`
	Operation      string      `json:"operation"`
	Value          wire.Float  `json:"value"`
	Tracked        bool        `json:"tracked"`
	PassAdjoint    *wire.Float `json:"pass_adjoint"`
	StoredGradient *wire.Float `json:"stored_gradient"`
}

// PassEdge is one operand edge of a pass, (Consumer, Slot) -> Operand, with
// its fields in protocol 2's order: Consumer's operation reads Operand in slot
// Slot. Upstream is the consumer's pass adjoint; Before and After are the
// operand's pass adjoint around this edge, null when the operand is
// untracked.
type PassEdge struct {
	Consumer        string      `json:"consumer"`
	Slot            int         `json:"slot"`
	Operand         string      `json:"operand"`
	LocalDerivative wire.Float  `json:"local_derivative"`
	Upstream        wire.Float  `json:"upstream"`
	Contribution    wire.Float  `json:"contribution"`
	OperandTracked  bool        `json:"operand_tracked"`
	Before          *wire.Float `json:"before"`
	After           *wire.Float `json:"after"`
}

// decodeObject calls fn for every key of the JSON object in data, in order.
func decodeObject(data []byte, fn func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("expected an object, got %s", show(data))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := fn(key, raw); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}
