package policyfile

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// bigFile writes a policy file with an allowlist of n entries (skipping
// the ones in drop, adding the ones in add) and groups groups that each
// leave out allow, so every group inherits the whole list.
func bigFile(n, groups int, drop map[int]bool, add ...string) string {
	var b strings.Builder
	b.WriteString("allow: [")
	for i := range n {
		if drop[i] {
			continue
		}
		fmt.Fprintf(&b, "x%d.t, ", i)
	}
	for _, a := range add {
		b.WriteString(a + ", ")
	}
	b.WriteString("home.test]\nblock: [ads.test]\n")
	if groups > 0 {
		b.WriteString("groupHeader: X-Group\ngroups:\n")
		for i := range groups {
			fmt.Fprintf(&b, "  g%d: {instructions: hi}\n", i)
		}
	}
	return b.String()
}

// retained returns the heap bytes f's result keeps alive.
func retained(f func() any) (uint64, any) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := f()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0, v
	}
	return after.HeapAlloc - before.HeapAlloc, v
}

// BenchmarkParseGroups compiles a 2,000-entry allowlist under 2,000 groups
// that inherit it; retained-B is the compiled Set's heap.
func BenchmarkParseGroups(b *testing.B) {
	data := []byte(bigFile(2000, 2000, nil))
	b.SetBytes(int64(len(data)))
	var kept uint64
	for b.Loop() {
		n, s := retained(func() any {
			s, err := Parse(data)
			if err != nil {
				b.Fatal(err)
			}
			return s
		})
		runtime.KeepAlive(s)
		kept = n
	}
	b.ReportMetric(float64(kept), "retained-B")
}

// BenchmarkCompare is the reload diff of a 74,000-entry allowlist with one
// entry removed and one added, the default group and 10 inheriting groups.
func BenchmarkCompare(b *testing.B) {
	old, err := Parse([]byte(bigFile(74000, 10, nil)))
	if err != nil {
		b.Fatal(err)
	}
	new, err := Parse([]byte(bigFile(74000, 10, map[int]bool{37000: true}, "added.test")))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if d := Compare(old, new); d.Empty() {
			b.Fatal("no change found")
		}
	}
}

// BenchmarkParse74k parses the 74,000-entry file itself, the rest of a
// reload's cost.
func BenchmarkParse74k(b *testing.B) {
	data := []byte(bigFile(74000, 0, nil))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
