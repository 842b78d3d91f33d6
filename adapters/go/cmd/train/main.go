// Command train trains the tiny GPT (docs/contract.md section 11) at
// reference width on the Go engine, one document per step with Adam, and
// prints the loss of every step and the speed:
//
//	train [-steps 100] [-seed 42] [-corpus FILE] [-shuffle=false] [-init RECORD] [-json]
//
// The corpus (the built-in element names, or FILE with one document per line)
// is shuffled with the seed (unless -shuffle=false) and cycled; the model is
// initialised from the same seed with math/rand, so the run is deterministic
// but its initial weights and document order are not the reference's
// (conformance train). -init starts instead from the parameters of a model
// record (the format of fixtures/llm-records: a "parameters" list of name and
// values), so with -shuffle=false a run can be compared with the reference's
// step by step. -json prints one JSON object per step, the loss at full
// precision. One graph is reused by every step. The last lines give steps/s
// (wall time of the whole step: forward, backward and the Adam update) and
// nodes/s; the command exits 1 when the mean loss of the last 20% of steps is
// not below the first step's loss, 2 on bad input.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"time"

	"scalarkit/autograd"
	"scalarkit/gpt"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, trains and returns the exit status.
func run(args []string, out, errOut io.Writer) int {
	flags := flag.NewFlagSet("train", flag.ContinueOnError)
	flags.SetOutput(errOut)
	steps := flags.Int("steps", 100, "training steps")
	seed := flags.Int64("seed", 42, "initialisation and shuffle seed")
	corpus := flags.String("corpus", "", "one document per line (default: the chemical elements)")
	shuffle := flags.Bool("shuffle", true, "shuffle the documents with the seed")
	initPath := flags.String("init", "", "start from the parameters of this model record (JSON)")
	jsonLines := flags.Bool("json", false, "print each step as a JSON object, the loss at full precision")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *steps < 1 {
		fmt.Fprintf(errOut, "train: -steps must be at least 1, got %d\n", *steps)
		return 2
	}
	docs := append([]string(nil), elements...)
	if *corpus != "" {
		var err error
		if docs, err = readCorpus(*corpus); err != nil {
			fmt.Fprintf(errOut, "train: %v\n", err)
			return 2
		}
	}
	if *shuffle {
		rand.New(rand.NewSource(*seed)).Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	}

	model := gpt.New(gpt.ReferenceConfig(), *seed)
	if *initPath != "" {
		if err := loadParameters(model, *initPath); err != nil {
			fmt.Fprintf(errOut, "train: %v\n", err)
			return 2
		}
	}
	opt := gpt.NewAdam(*steps)
	g := autograd.NewGraph()
	losses := make([]float64, 0, *steps)
	nodes := 0
	started := time.Now()
	for step := 0; step < *steps; step++ {
		doc := docs[step%len(docs)]
		loss, n, err := model.TrainStep(g, doc, opt, step)
		if err != nil {
			fmt.Fprintf(errOut, "train: step %d (%q): %v\n", step+1, doc, err)
			return 1
		}
		nodes += n
		losses = append(losses, loss)
		if *jsonLines {
			line, _ := json.Marshal(map[string]any{"step": step + 1, "loss": loss, "document": doc})
			fmt.Fprintln(out, string(line))
		} else {
			fmt.Fprintf(out, "step %4d/%d  loss %.4f  %s\n", step+1, *steps, loss, doc)
		}
	}
	seconds := time.Since(started).Seconds()
	tail := (*steps + 4) / 5
	first, last := losses[0], mean(losses[len(losses)-tail:])
	fmt.Fprintf(out, "trained %d steps on %d documents, %d parameters, seed %d\n", *steps, len(docs), len(model.Parameters()), *seed)
	fmt.Fprintf(out, "%.3f s: %.1f steps/s, %.0f nodes/s (forward, backward and Adam)\n", seconds, float64(*steps)/seconds, float64(nodes)/seconds)
	fmt.Fprintf(out, "first-step loss %.4f, mean loss over the last %d steps %.4f\n", first, tail, last)
	if *steps >= 5 && !(last < first) {
		fmt.Fprintln(errOut, "train: the loss did not fall")
		return 1
	}
	return 0
}

// loadParameters sets every matrix of model from the "parameters" list of a
// model record, matched by name; a missing matrix or a wrong shape is an error
// naming the file.
func loadParameters(model *gpt.Model, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var record struct {
		Parameters []struct {
			Name   string      `json:"name"`
			Values [][]float64 `json:"values"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &record); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	values := map[string][][]float64{}
	for _, p := range record.Parameters {
		values[p.Name] = p.Values
	}
	for _, m := range model.Matrices() {
		v, ok := values[m.Name]
		if !ok {
			return fmt.Errorf("%s: no parameters named %q", path, m.Name)
		}
		if len(v) != len(m.Matrix) || len(v) == 0 || len(v[0]) != len(m.Matrix[0]) {
			return fmt.Errorf("%s: %q does not have the model's %dx%d shape", path, m.Name, len(m.Matrix), len(m.Matrix[0]))
		}
		for _, row := range v {
			if len(row) != len(v[0]) {
				return fmt.Errorf("%s: %q has rows of different lengths", path, m.Name)
			}
		}
		for i, row := range m.Matrix {
			for j, p := range row {
				p.Value = v[i][j]
			}
		}
	}
	return nil
}

func mean(xs []float64) float64 {
	total := 0.0
	for _, x := range xs {
		total += x
	}
	return total / float64(len(xs))
}

// readCorpus reads one document per line, skipping blank lines, trimming
// whitespace and lowercasing; a document with a character other than a-z is
// an error naming the file and line.
func readCorpus(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		doc := strings.ToLower(strings.TrimSpace(sc.Text()))
		if doc == "" {
			continue
		}
		if _, err := gpt.Tokenize(doc); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", path, line, err)
		}
		docs = append(docs, doc)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents", path)
	}
	return docs, nil
}
