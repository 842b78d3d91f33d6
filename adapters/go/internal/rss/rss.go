// Package rss reads the process's resident set size on Linux, for the bench
// commands' memory-per-node figure: Start resets the kernel's peak counter and
// returns the current resident set, Peak returns the peak since then.
package rss

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Start resets the peak resident set (writing 5 to /proc/self/clear_refs)
// and returns the current resident set in bytes; ok is false where /proc is
// unavailable.
func Start() (bytes int64, ok bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return field("VmRSS:")
}

// Peak returns the peak resident set in bytes since Start (VmHWM).
func Peak() (bytes int64, ok bool) { return field("VmHWM:") }

// field reads one "Name:  N kB" line of /proc/self/status.
func field(name string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, name)), " kB"), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}
