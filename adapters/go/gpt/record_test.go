package gpt

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"scalarkit/autograd"
)

// modelRecord is fixtures/llm-records/reference-width.json: the reference's
// model at reference width, its parameters, one document, and the loss and
// stored gradients after one backward.
type modelRecord struct {
	Kind   string `json:"kind"`
	Config struct {
		NLayer    int `json:"n_layer"`
		NEmbd     int `json:"n_embd"`
		NHead     int `json:"n_head"`
		BlockSize int `json:"block_size"`
		VocabSize int `json:"vocab_size"`
	} `json:"config"`
	Tokens     []int `json:"tokens"`
	Comparison struct {
		Rel float64 `json:"rel"`
		Abs float64 `json:"abs"`
	} `json:"comparison"`
	Parameters []struct {
		Name   string      `json:"name"`
		Shape  []int       `json:"shape"`
		Values [][]float64 `json:"values"`
	} `json:"parameters"`
	Expected struct {
		Loss      float64 `json:"loss"`
		Gradients []struct {
			Name   string      `json:"name"`
			Values [][]float64 `json:"values"`
		} `json:"gradients"`
	} `json:"expected"`
}

func TestLossAndGradientsMatchTheReferenceModelRecord(t *testing.T) {
	path := filepath.Join("..", "..", "..", "fixtures", "llm-records", "reference-width.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the model record: %v", err)
	}
	var r modelRecord
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("fixture bug: %s: %v", path, err)
	}
	if r.Kind != "llm-model-record" {
		t.Fatalf("fixture bug: %s: kind %q", path, r.Kind)
	}
	cfg := ReferenceConfig()
	if cfg.Layers != r.Config.NLayer || cfg.Embed != r.Config.NEmbd || cfg.Heads != r.Config.NHead ||
		cfg.Block != r.Config.BlockSize || cfg.Vocab != r.Config.VocabSize {
		t.Fatalf("the record's config %+v is not the reference width %+v", r.Config, cfg)
	}
	model := New(cfg, 1)
	matrices := model.Matrices()
	if len(matrices) != len(r.Parameters) || len(matrices) != len(r.Expected.Gradients) {
		t.Fatalf("the record has %d parameter matrices, the model %d", len(r.Parameters), len(matrices))
	}
	for i, m := range matrices {
		p := r.Parameters[i]
		if p.Name != m.Name || len(p.Values) != len(m.Matrix) || len(p.Values[0]) != len(m.Matrix[0]) {
			t.Fatalf("parameter %d: record has %s %v, model has %s %dx%d", i, p.Name, p.Shape, m.Name, len(m.Matrix), len(m.Matrix[0]))
		}
		for a, row := range m.Matrix {
			for b, param := range row {
				param.Value = p.Values[a][b]
			}
		}
	}
	g := autograd.NewGraph()
	loss, err := model.Loss(g, r.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Backward(loss, 1); err != nil {
		t.Fatal(err)
	}
	agree := func(want, got float64) bool {
		return want == got || math.Abs(want-got) <= r.Comparison.Abs+r.Comparison.Rel*math.Max(math.Abs(want), math.Abs(got))
	}
	if !agree(r.Expected.Loss, loss.Value()) {
		t.Errorf("loss: got %v, the reference %v", loss.Value(), r.Expected.Loss)
	}
	checked, nonzero := 0, 0
	for i, m := range matrices {
		want := r.Expected.Gradients[i]
		for a, row := range m.Matrix {
			for b, param := range row {
				checked++
				if want.Values[a][b] != 0 {
					nonzero++
				}
				if !agree(want.Values[a][b], param.Grad) {
					t.Errorf("%s[%d][%d] gradient: got %v, the reference %v", m.Name, a, b, param.Grad, want.Values[a][b])
				}
			}
		}
	}
	if checked != 4192 || nonzero < 1000 {
		t.Fatalf("checked %d gradients (%d non-zero); want all 4192 with most non-zero", checked, nonzero)
	}
}
