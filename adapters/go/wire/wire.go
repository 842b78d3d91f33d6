// Package wire is the JSON float encoding shared by fixtures and the adapter
// protocol (docs/protocol.md "Numbers"; docs/fixtures.md).
//
// A finite float is written as the shortest decimal that round-trips, in the
// same spelling as Python's repr (8.0, 0.1, 1e+300, 1e-05), so the Go adapter's
// lines read like the reference adapter's. Negative zero is written -0.0, never
// -0 as encoding/json would. inf, -inf and nan are the strings "inf", "-inf"
// and "nan". Reading accepts any JSON number (including -0, read as negative
// zero) and those three strings.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Float is a float64 with the wire encoding. Use *Float for a nullable float.
type Float float64

// FormatFloat returns f as the wire writes it: a JSON number in Python's repr
// spelling, or the JSON string "inf", "-inf" or "nan".
func FormatFloat(f float64) string {
	return string(AppendFloat(nil, f))
}

// AppendFloat appends the wire encoding of f to dst.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"nan"`...)
	case math.IsInf(f, 1):
		return append(dst, `"inf"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-inf"`...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	// Python's repr switches to exponent notation when the decimal exponent is
	// below -4 or at least 16; otherwise it writes a fixed-point number with at
	// least one digit after the point.
	exp := decimalExponent(f)
	if exp < -4 || exp >= 16 {
		return strconv.AppendFloat(dst, f, 'e', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	if !bytes.ContainsRune(dst[start:], '.') {
		dst = append(dst, ".0"...)
	}
	return dst
}

// decimalExponent returns the exponent of f's shortest decimal in scientific
// notation (1.5e+300 -> 300).
func decimalExponent(f float64) int {
	s := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.LastIndexByte(s, 'e')
	n, _ := strconv.Atoi(s[i+1:])
	return n
}

// MarshalJSON writes f in the wire encoding.
func (f Float) MarshalJSON() ([]byte, error) {
	return AppendFloat(nil, float64(f)), nil
}

// UnmarshalJSON reads a JSON number or one of "inf", "-inf", "nan".
func (f *Float) UnmarshalJSON(data []byte) error {
	v, err := ParseFloat(data)
	if err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// ParseFloat reads one raw JSON value as a float: a number (-0 is negative
// zero) or one of the strings "inf", "-inf", "nan". Anything else, including
// the invalid literals NaN and Infinity, is an error that quotes the input.
func ParseFloat(raw []byte) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			switch s {
			case "inf":
				return math.Inf(1), nil
			case "-inf":
				return math.Inf(-1), nil
			case "nan":
				return math.NaN(), nil
			}
		}
		return 0, fmt.Errorf(`expected a number or one of "inf", "-inf", "nan", got %s`, raw)
	}
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) || !json.Valid(raw) {
		return 0, fmt.Errorf("expected a number, got %s", quote(raw))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("number %s is out of binary64 range", raw)
	}
	return v, nil
}

func quote(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// BitsEqual reports bit equality, except that every nan equals every nan: the
// `exact` comparison (so -0.0 differs from 0.0).
func BitsEqual(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// Agree reports whether actual agrees with expected under bound, the `bounds`
// comparison (docs/contract.md section 9): the same bits (every nan equals every
// nan), or both finite and |expected-actual| <= bound. So a non-finite value must
// match exactly, and -0.0 agrees with 0.0 even when the bound is 0.
func Agree(expected, actual, bound float64) bool {
	if BitsEqual(expected, actual) {
		return true
	}
	return isFinite(expected) && isFinite(actual) && math.Abs(expected-actual) <= bound
}

// UlpDistance returns how many binary64 values lie between a and b: 0 for
// equal bits, +Inf when one of them is not finite and they differ.
func UlpDistance(a, b float64) float64 {
	if BitsEqual(a, b) {
		return 0
	}
	if !isFinite(a) || !isFinite(b) {
		return math.Inf(1)
	}
	d := ordinal(a) - ordinal(b)
	if d < 0 {
		d = -d
	}
	return float64(d)
}

// ordinal maps doubles to integers so that adjacent doubles differ by one.
func ordinal(x float64) int64 {
	bits := int64(math.Float64bits(x))
	if bits >= 0 {
		return bits
	}
	return -(bits & math.MaxInt64) - 1
}

func isFinite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
