// The conformance corpus as the only test of a gremlins mutant (bench/mutate).
//
// bench/mutate/run.py copies this file into a copy of adapters/go as
// cmd/adapter/corpus_test.go, after removing every other _test.go file of the copy
// (never in the port itself), and runs gremlins there. The test serves the protocol in
// this process on a Unix socket, so that the engine's coverage by the corpus is this
// test's coverage, and has bench/mutate/judge.py run the corpus against it through
// bench/mutate/bridge.py.
package main

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestCorpusPassesOnTheEngineBuiltFromThisSource(t *testing.T) {
	python, judge, bridge := os.Getenv("MUTATE_PYTHON"), os.Getenv("MUTATE_JUDGE"), os.Getenv("MUTATE_BRIDGE")
	if python == "" || judge == "" || bridge == "" {
		t.Fatal("MUTATE_PYTHON, MUTATE_JUDGE and MUTATE_BRIDGE must be set (bench/mutate/run.py sets them)")
	}
	socket := filepath.Join(t.TempDir(), "adapter.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				serve(conn, conn, io.Discard)
			}()
		}
	}()
	args := []string{judge, "go", "--source", ".", "--adapter", python + " " + bridge + " " + socket}
	if os.Getenv("MUTATE_QUICK") != "0" {
		args = append(args, "--quick")
	}
	judging := exec.Command(python, args...)
	judging.Stdout, judging.Stderr = os.Stderr, os.Stderr
	if err := judging.Run(); err != nil {
		t.Fatalf("the corpus fails on this build: %v", err)
	}
}
