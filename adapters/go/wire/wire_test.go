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

func TestCloseComparesNonFiniteValuesExactly(t *testing.T) {
	if Close(math.Inf(1), math.MaxFloat64, 1, 1) || !Close(math.NaN(), math.NaN(), 0, 0) || !Close(1, 1+1e-14, 1e-13, 0) {
		t.Error("tolerance comparison is wrong")
	}
	if BitsEqual(0, math.Copysign(0, -1)) {
		t.Error("exact comparison must tell -0.0 from 0.0")
	}
}
