package browser

import (
	"errors"
	"os"
	"slices"
	"testing"
)

func TestMergeFlags(t *testing.T) {
	const rules = "--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND"
	tests := []struct {
		name  string
		lists [][]string
		want  []string
	}{
		{"empty", nil, []string{}},
		{"host rules kept whole", [][]string{{rules}}, []string{rules}},
		{
			"commas in other values never split",
			[][]string{{"--proxy-bypass-list=a,b", "--lang=en-US,en"}},
			[]string{"--proxy-bypass-list=a,b", "--lang=en-US,en"},
		},
		{
			"disable-features merged across lists at first position",
			[][]string{
				{"--a", "--disable-features=Foo,Bar", rules},
				{"--disable-features=Baz, Foo"},
				{"--b", "--disable-features=ServiceWorkerAutoPreload"},
			},
			[]string{"--a", "--disable-features=Foo,Bar,Baz,ServiceWorkerAutoPreload", rules, "--b"},
		},
		{
			"enable and disable merged separately",
			[][]string{{"--enable-features=A", "--disable-features=B"}, {"--enable-features=C"}},
			[]string{"--enable-features=A,C", "--disable-features=B"},
		},
		{
			"later disable removes earlier enable",
			[][]string{{"--enable-features=A,ServiceWorkerAutoPreload:x/1"}, {"--disable-features=ServiceWorkerAutoPreload"}},
			[]string{"--enable-features=A", "--disable-features=ServiceWorkerAutoPreload"},
		},
		{
			"list emptied by the opposite list is dropped",
			[][]string{{"--enable-features=X"}, {"--disable-features=X"}},
			[]string{"--disable-features=X"},
		},
		{
			"feature params: last spelling wins in place",
			[][]string{{"--enable-features=A:p/1,B"}, {"--enable-features=A:p/2"}},
			[]string{"--enable-features=A:p/2,B"},
		},
		{
			"blink features merged too",
			[][]string{{"--disable-blink-features=X"}, {"--disable-blink-features=Y"}},
			[]string{"--disable-blink-features=X,Y"},
		},
		{
			"empty entries and empty flags dropped",
			[][]string{{"", "--disable-features=,A,,"}, {"--disable-features="}},
			[]string{"--disable-features=A"},
		},
		{
			"same switch: first position, last value",
			[][]string{{"--proxy-server=user:1", "--x"}, {"--proxy-server=guard:2"}},
			[]string{"--proxy-server=guard:2", "--x"},
		},
		{
			"single dash is the same switch",
			[][]string{{"-headless"}, {"--headless"}},
			[]string{"--headless"},
		},
		{
			"switch without value replaces with value",
			[][]string{{"--headless"}, {"--headless=new"}},
			[]string{"--headless=new"},
		},
		{
			"bare disable-features dropped",
			[][]string{{"--disable-features", "--b"}, {"--disable-features=A"}},
			[]string{"--disable-features=A", "--b"},
		},
		{
			"positional args kept in order once",
			[][]string{{"about:blank", "--a", "https://x.test/"}, {"about:blank"}},
			[]string{"about:blank", "--a", "https://x.test/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MergeFlags(tt.lists...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("MergeFlags(%q)\n got %q\nwant %q", tt.lists, got, tt.want)
			}
		})
	}
}

func TestMergeFlagsDoesNotModifyInput(t *testing.T) {
	in := []string{"--disable-features=A", "--x=1"}
	orig := slices.Clone(in)
	_ = MergeFlags(in, []string{"--disable-features=B", "--x=2"})
	if !slices.Equal(in, orig) {
		t.Errorf("input changed: %q", in)
	}
}

func TestCheckFlags(t *testing.T) {
	ok := []string{"", "--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND", "--lang=de", "--enable-features=X"}
	if err := CheckFlags(ok); err != nil {
		t.Errorf("CheckFlags(%q) = %v, want nil", ok, err)
	}
	for _, bad := range []string{
		"--remote-debugging-port=9222", "-remote-debugging-port=1", "--remote-debugging-address=0.0.0.0",
		"--remote-allow-origins=*", "--no-proxy-server", "--proxy-bypass-list=*", "--proxy-pac-url=x",
		"--user-data-dir=/tmp/x", "https://evil.test/", "--",
	} {
		err := CheckFlags([]string{"--ok", bad})
		var fe *FlagError
		if !errors.Is(err, ErrForbiddenFlag) || !errors.As(err, &fe) || fe.Flag != bad {
			t.Errorf("CheckFlags(%q) = %v, want FlagError for it", bad, err)
		}
	}
}

func TestBuildArgs(t *testing.T) {
	const rules = "--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND"
	args := BuildArgs(LaunchOptions{
		UserDataDir: "/tmp/profile",
		Flags:       []string{rules, "--disable-features=Foo", "--proxy-server=user:1", "about:blank"},
		GuardFlags:  []string{"--proxy-server=127.0.0.1:3128", "--disable-features=Bar"},
	})
	want := []string{
		"--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,PreloadTopChromeWebUI,Foo,Bar,ServiceWorkerAutoPreload",
		rules,
		"--proxy-server=127.0.0.1:3128",
		"--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-quic", "--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--user-data-dir=/tmp/profile",
	}
	if os.Geteuid() == 0 {
		want = append(want, "--no-sandbox")
	}
	want = append(want, "--headless", "--disable-gpu", "about:blank")
	if !slices.Equal(args, want) {
		t.Errorf("BuildArgs\n got %q\nwant %q", args, want)
	}

	// An economy flag is a default: the user's word wins.
	mine := BuildArgs(LaunchOptions{Flags: []string{"--enable-features=WebUIOmniboxPopup"}})
	if !slices.Contains(mine, "--enable-features=WebUIOmniboxPopup") ||
		!slices.Contains(mine, "--disable-features=WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,PreloadTopChromeWebUI,ServiceWorkerAutoPreload") {
		t.Errorf("a user's --enable-features does not override the economy flags: %q", mine)
	}

	headed := BuildArgs(LaunchOptions{Headed: true})
	if slices.Contains(headed, "--headless") || slices.Contains(headed, "--disable-gpu") {
		t.Errorf("headed args contain headless flags: %q", headed)
	}
	if slices.ContainsFunc(headed, func(a string) bool { return len(a) > 15 && a[:16] == "--user-data-dir=" }) {
		t.Errorf("args without UserDataDir contain --user-data-dir: %q", headed)
	}
	if headed[len(headed)-1] != "about:blank" {
		t.Errorf("last arg = %q, want about:blank", headed[len(headed)-1])
	}
}
