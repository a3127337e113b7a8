package testhosts

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
)

// UDPCounter is a loopback UDP listener that counts the datagrams it
// receives: a STUN server that must hear nothing from a guarded browser, or
// a DNS server that counts the names it is asked about.
type UDPCounter struct {
	// Addr is the address it listens on.
	Addr *net.UDPAddr

	mu      sync.Mutex
	packets int
	from    []string
	names   map[string]int
}

// StartUDP listens on addr ("127.0.0.1:0" for any free port) and stops when
// t ends. Datagrams are counted, never answered.
func StartUDP(t testing.TB, addr string) *UDPCounter {
	t.Helper()
	la, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatalf("testhosts: udp address %q: %v", addr, err)
	}
	c, err := net.ListenUDP("udp", la)
	if err != nil {
		t.Fatalf("testhosts: listen udp %s: %v", addr, err)
	}
	u := &UDPCounter{Addr: c.LocalAddr().(*net.UDPAddr), names: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("testhosts: read udp %s: %v", u.Addr, err)
				}
				return
			}
			u.record(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	return u
}

func (u *UDPCounter) record(b []byte, from *net.UDPAddr) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.packets++
	if len(u.from) < 50 {
		u.from = append(u.from, from.String())
	}
	if name, ok := dnsQuestion(b); ok {
		u.names[name]++
	}
}

// Packets returns how many datagrams arrived.
func (u *UDPCounter) Packets() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.packets
}

// From returns the senders of the first datagrams, for failure messages.
func (u *UDPCounter) From() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.from...)
}

// Queries returns how many DNS questions named name (lower case, no
// trailing dot) arrived.
func (u *UDPCounter) Queries(name string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.names[strings.ToLower(strings.TrimSuffix(name, "."))]
}

// dnsQuestion returns the name of the first question of a DNS query, lower
// case and without the trailing dot; ok is false for anything else.
func dnsQuestion(b []byte) (string, bool) {
	const header = 12
	if len(b) < header+1 || b[2]&0x80 != 0 || b[4] == 0 && b[5] == 0 {
		return "", false
	}
	var labels []string
	for i := header; i < len(b); {
		l := int(b[i])
		if l == 0 {
			return strings.ToLower(strings.Join(labels, ".")), len(labels) > 0
		}
		if l&0xc0 != 0 || i+1+l > len(b) {
			return "", false
		}
		labels = append(labels, string(b[i+1:i+1+l]))
		i += 1 + l
	}
	return "", false
}
