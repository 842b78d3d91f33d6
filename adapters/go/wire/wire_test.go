package wire

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFormatFloatSpellsNumbersLikePythonRepr(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{8, "8.0"},
		{0.1, "0.1"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1e300, "1e+300"},
		{1e16, "1e+16"},
		{1e15, "1000000000000000.0"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{-2.5, "-2.5"},
		{5e-324, "5e-324"},
		{1.5873912, "1.5873912"},
		{math.Inf(1), `"inf"`},
		{math.Inf(-1), `"-inf"`},
		{math.NaN(), `"nan"`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := FormatFloat(tc.in); got != tc.want {
				t.Errorf("FormatFloat(%v) = %s, want %s", tc.in, got, tc.want)
			}
			back, err := ParseFloat([]byte(tc.want))
			if err != nil || !BitsEqual(back, tc.in) {
				t.Errorf("ParseFloat(%s) = %v, %v; want %v", tc.want, back, err, tc.in)
			}
		})
	}
}

func TestParseFloatReadsMinusZeroAsNegativeZero(t *testing.T) {
	var f Float
	if err := json.Unmarshal([]byte("-0"), &f); err != nil || !math.Signbit(float64(f)) || f != 0 {
		t.Errorf("-0 read as %v, %v; want negative zero", f, err)
	}
}

func TestParseFloatRejectsWhatTheWireForbids(t *testing.T) {
	for _, raw := range []string{"NaN", "Infinity", `"Infinity"`, `"1.0"`, "true", "null", "1e999", ""} {
		t.Run(raw, func(t *testing.T) {
			if v, err := ParseFloat([]byte(raw)); err == nil {
				t.Errorf("ParseFloat(%q) = %v, want an error", raw, v)
			}
		})
	}
}

func TestAgreeLetsABoundThroughAndComparesNonFiniteValuesExactly(t *testing.T) {
	next := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
	ulp := next(1) - 1
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name                    string
		expected, actual, bound float64
		want                    bool
	}{
		{"a bound of 1 ulp lets 1 ulp through", 1, next(1), ulp, true},
		{"a bound of 1 ulp does not let 2 ulps through", 1, next(next(1)), ulp, false},
		{"bound 0 means the same number", 1, next(1), 0, false},
		{"bound 0 lets the same bits through", 1.5, 1.5, 0, true},
		{"the sign of zero agrees under a bound", 0, negZero, 0, true},
		{"nan agrees with nan", math.NaN(), math.NaN(), 0, true},
		{"nan never agrees with a number", math.NaN(), 1, math.Inf(1), false},
		{"inf agrees only with inf", math.Inf(1), math.MaxFloat64, math.Inf(1), false},
		{"-inf is not inf", math.Inf(-1), math.Inf(1), math.Inf(1), false},
		{"inf agrees with inf", math.Inf(-1), math.Inf(-1), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Agree(tc.expected, tc.actual, tc.bound); got != tc.want {
				t.Errorf("Agree(%v, %v, %v) = %v, want %v", tc.expected, tc.actual, tc.bound, got, tc.want)
			}
		})
	}
}

func TestBitsEqualTellsTheSignOfZeroAndEqualsNanToNan(t *testing.T) {
	if BitsEqual(0, math.Copysign(0, -1)) {
		t.Error("exact comparison must tell -0.0 from 0.0")
	}
	if !BitsEqual(math.NaN(), math.NaN()) || BitsEqual(1, math.Nextafter(1, 2)) {
		t.Error("exact comparison: nan equals nan, and 1 ulp differs")
	}
}
