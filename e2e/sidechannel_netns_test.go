package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/preload"
	"github.com/chromedp/chromedp"
)

// privateNetns reports whether the test runs in a network namespace of its
// own: loopback is its only interface. Only then may a test add addresses
// or links (scripts/test.sh runs everything under `unshare --net`).
func privateNetns() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	n := 0
	for _, i := range ifs {
		if i.Name == tunName { // our own, from addTunLink
			continue
		}
		if i.Flags&net.FlagLoopback == 0 {
			return false
		}
		n++
	}
	return n == 1
}

// tunName is the link addTunLink adds. internal/egress's tests, which run in
// the same namespace at the same time, know it by this name (e2eTunLink).
const tunName = "cdpgtun0"

// webrtcNetAddr is the address of the tun link addTunLink adds.
const webrtcNetAddr = "10.201.0.1"

// addTunLink adds a running, non-loopback link (a tun device whose file the
// test holds open) with webrtcNetAddr/24 to a private network namespace:
// WebRTC gathers candidates only on non-loopback interfaces that are up and
// running, so without one the WebRTC vector could not work even unguarded,
// and its leak test would prove nothing. The link goes when t ends.
func addTunLink(t *testing.T) string {
	if !privateNetns() {
		return "not in a private network namespace (loopback the only link)"
	}
	const (
		tunsetiff = 0x400454ca
		iffTun    = 0x0001
		iffNoPI   = 0x1000
		name      = tunName
	)
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return "open /dev/net/tun: " + err.Error()
	}
	var ifr [40]byte
	copy(ifr[:16], name)
	binary.NativeEndian.PutUint16(ifr[16:], iffTun|iffNoPI)
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), tunsetiff, uintptr(unsafe.Pointer(&ifr[0]))); errno != 0 {
		f.Close()
		return "TUNSETIFF: " + errno.Error()
	}
	t.Cleanup(func() { f.Close() })
	for _, args := range [][]string{
		{"addr", "add", webrtcNetAddr + "/24", "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return "ip " + strings.Join(args, " ") + ": " + err.Error() + " " + string(out)
		}
	}
	return ""
}

// preloadLog collects a tab's Preload status events.
type preloadLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *preloadLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *preloadLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// watchPreload enables the Preload domain on tab and records every prefetch
// and prerender status in pl (and the test log), so a speculation vector
// shows whether Chrome attempted it: a forbidden run that Chrome never
// attempts proves nothing.
func watchPreload(t *testing.T, tab context.Context, pl *preloadLog) {
	_ = chromedp.Listen(tab, func(ev any) {
		switch e := ev.(type) {
		case *preload.EventPrefetchStatusUpdated:
			pl.add(fmt.Sprintf("prefetch %s %s %s", e.Key.URL, e.Status, e.PrefetchStatus))
		case *preload.EventPrerenderStatusUpdated:
			pl.add(fmt.Sprintf("prerender %s %s %s", e.Key.URL, e.Status, e.PrerenderStatus))
		}
	})
	if _, err := chromedp.Call(tab, preload.Enable, cdp.Empty{}); err != nil {
		t.Logf("Preload.enable: %v", err)
	}
	t.Cleanup(func() { t.Logf("preload statuses:\n%s", pl) })
}
