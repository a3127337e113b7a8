package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestControlsFlag(t *testing.T) {
	for _, c := range []struct {
		args  []string
		human bool
		want  bool
	}{
		{nil, false, false}, // headless serve
		{nil, true, true},   // --headed, attach
		{[]string{"--controls=false"}, true, false},
		{[]string{"--controls"}, false, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f := &cli.BoolFlag{Name: "controls"}
		if err := f.Apply(fs); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := controlsFlag(cli.NewContext(cli.NewApp(), fs, nil), c.human); got != c.want {
			t.Errorf("%v human=%v: controls %v, want %v", c.args, c.human, got, c.want)
		}
	}
}

func TestAttachNote(t *testing.T) {
	var b bytes.Buffer
	printAttachNote(&b, "http://127.0.0.1:9444", true)
	for _, want := range []string{"--proxy-server=http://127.0.0.1:9444", "WebSocket", "not judged", "fixed by --egress-listen"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("attach note lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printAttachNote(&b, "http://127.0.0.1:40000", false)
	if !strings.Contains(b.String(), "changes at every start") {
		t.Errorf("attach note without --egress-listen:\n%s", b.String())
	}
}
