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
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestCorpusPassesOnTheEngineBuiltFromThisSource(t *testing.T) {
	python, judge, bridge := os.Getenv("MUTATE_PYTHON"), os.Getenv("MUTATE_JUDGE"), os.Getenv("MUTATE_BRIDGE")
	memoryLimit, err := strconv.ParseUint(os.Getenv("MUTATE_MEMORY_LIMIT"), 10, 64)
	if python == "" || judge == "" || bridge == "" || err != nil {
		t.Fatal("MUTATE_PYTHON, MUTATE_JUDGE, MUTATE_BRIDGE and MUTATE_MEMORY_LIMIT must be set (bench/mutate/run.py sets them)")
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
	if err := judging.Start(); err != nil {
		t.Fatal(err)
	}
	// The engine serves in this process: give it the address space a native port's mutant
	// may use (bench/mutate/judge.py MEMORY_LIMIT) beyond what the test process holds
	// already, once the judge has started outside it, so that a mutant whose memory grows
	// with the passes dies here as it would in an adapter of its own.
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &limit); err != nil {
		t.Fatal(err)
	}
	limit.Cur = addressSpace(t) + memoryLimit
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &limit); err != nil {
		t.Fatal(err)
	}
	if err := judging.Wait(); err != nil {
		t.Fatalf("the corpus fails on this build: %v", err)
	}
}

// addressSpace is the bytes of address space this process holds (VmSize of /proc/self/status).
func addressSpace(t *testing.T) uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if fields := strings.Fields(line); len(fields) == 3 && fields[0] == "VmSize:" && fields[2] == "kB" {
			if kb, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}
