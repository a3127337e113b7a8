package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A go test -json stream: one passing package with a skipped and a slow
// test, a test that waited at a gate and a group of suites, one failing package, one that does not
// build, and a stray line.
const stream = `{"Time":"2026-12-03T09:00:10Z","Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestFast"}
{"Action":"output","Package":"ex/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"output","Package":"ex/a","Test":"TestFast","Output":"--- PASS: TestFast (0.01s)\n"}
{"Action":"pass","Package":"ex/a","Test":"TestFast","Elapsed":0.01}
{"Action":"output","Package":"ex/a","Test":"TestSlow","Output":"    a_test.go:9: quiet log of a passing test\n"}
{"Action":"pass","Package":"ex/a","Test":"TestSlow","Elapsed":12.5}
{"Action":"output","Package":"ex/a","Test":"TestGated","Output":"    g_test.go:70: suite gate: waited 95.00s for a slot\n"}
{"Action":"pass","Package":"ex/a","Test":"TestGated","Elapsed":100}
{"Action":"output","Package":"ex/a","Test":"TestSkip","Output":"    a_test.go:3: no browser\n"}
{"Action":"skip","Package":"ex/a","Test":"TestSkip","Elapsed":0}
{"Action":"pass","Package":"ex/a","Test":"TestTimed/Bounds","Elapsed":3}
{"Action":"pass","Package":"ex/a","Test":"TestTimed/Bounds/flood","Elapsed":2}
{"Action":"pass","Package":"ex/a","Test":"TestTimed","Elapsed":3.1}
{"Action":"output","Package":"ex/a","Output":"PASS\n"}
{"Action":"output","Package":"ex/a","Output":"ok  \tex/a\t12.6s\n"}
{"Time":"2026-12-03T09:00:22.6Z","Action":"pass","Package":"ex/a","Elapsed":12.6}
{"Action":"output","Package":"ex/b","Test":"TestBad","Output":"    b_test.go:7: leak: 1 hit on the forbidden host\n"}
{"Action":"output","Package":"ex/b","Test":"TestBad/sub","Output":"--- FAIL: TestBad/sub (0.20s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBad/sub","Elapsed":0.2}
{"Action":"output","Package":"ex/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.30s)\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBad","Elapsed":0.3}
{"Action":"output","Package":"ex/b","Test":"TestHang","Output":"panic: test timed out after 30m0s\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\n"}
{"Action":"output","Package":"ex/b","Output":"FAIL\tex/b\t0.4s\n"}
{"Action":"fail","Package":"ex/b","Elapsed":0.4}
{"ImportPath":"ex/c","Action":"build-output","Output":"c.go:3:1: syntax error\n"}
{"ImportPath":"ex/c","Action":"build-fail"}
{"Action":"output","Package":"ex/c","Output":"FAIL\tex/c [build failed]\n"}
{"Action":"fail","Package":"ex/c","Elapsed":0,"FailedBuild":"ex/c"}
go: a line that is not JSON
`

func TestReport(t *testing.T) {
	var out bytes.Buffer
	report(strings.NewReader(stream), &out, 3, time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	got := out.String()
	for _, want := range []string{
		"leak: 1 hit on the forbidden host", // a failing test's output is shown
		"--- FAIL: TestBad/sub",
		"panic: test timed out", // output of a test cut short by its package's failure
		"c.go:3:1: syntax error",
		"go: a line that is not JSON",
		"slowest tests (3 of 6 top-level tests: 4 passed, 1 failed, 1 skipped)", // a group's suites count, the group does not
		"    5.00s  pass  ex/a TestGated\n",                                     // less its wait at the gate
		"TestTimed/Bounds\n",
		"longest packages (seconds after the start of scripts/test.sh):\n      10 →   23  ex/a\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, hidden := range []string{"quiet log of a passing test", "no browser", "=== RUN   TestFast", "PASS\n"} {
		if strings.Contains(got, hidden) {
			t.Errorf("output shows %q, which plain go test hides:\n%s", hidden, got)
		}
	}
	if i, j := strings.Index(got, "TestSlow"), strings.Index(got, "TestGated\n"); i < 0 || j < 0 || i > j {
		t.Errorf("slowest not first:\n%s", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	last := lines[len(lines)-3:]
	want := []string{"ok  \tex/a\t12.6s", "FAIL\tex/b\t0.4s", "FAIL\tex/c [build failed]"}
	for i := range want {
		if last[i] != want[i] {
			t.Fatalf("closing lines = %q, want go test's package lines %q", last, want)
		}
	}
}

// TestLongLine: a line longer than any buffer is passed on whole.
func TestLongLine(t *testing.T) {
	long := strings.Repeat("x", 5<<20)
	in := `{"Action":"output","Package":"ex/a","Test":"TestBig","Output":"` + long + `\n"}` + "\n" +
		`{"Action":"fail","Package":"ex/a","Test":"TestBig","Elapsed":1}` + "\n" +
		`{"Action":"output","Package":"ex/a","Output":"FAIL\tex/a\t1.0s\n"}` + "\n"
	var out bytes.Buffer
	report(strings.NewReader(in), &out, 5, time.Time{})
	if !strings.Contains(out.String(), long) || !strings.HasSuffix(out.String(), "FAIL\tex/a\t1.0s\n") {
		t.Fatalf("long line lost or output cut (%d bytes)", out.Len())
	}
}
