package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrainPrintsOneLossPerStepAndTheSpeed(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-steps", "3"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	text := out.String()
	if n := strings.Count(text, "  loss "); n != 3 {
		t.Errorf("%d loss lines, want 3:\n%s", n, text)
	}
	if !strings.Contains(text, "steps/s") || !strings.Contains(text, "4192 parameters") {
		t.Errorf("no speed or parameter count in:\n%s", text)
	}
}

func TestTrainRejectsABadCorpusLineNamingFileAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs.txt")
	if err := os.WriteFile(path, []byte("emma\n\nol1via\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-corpus", path, "-steps", "2"}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "docs.txt: line 3") {
		t.Errorf("stderr %q does not name the file and line", errOut.String())
	}
}
