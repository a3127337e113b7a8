package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestStreamsPlainHTTP: a plain-http response is passed on as it arrives.
// The upstream sends its status line and 2 kB, then holds the response
// open; the client through the proxy gets both well before the upstream
// ends (before the fix: no status line and no byte until the end), and a
// long poll's status line comes before any body byte.
func TestStreamsPlainHTTP(t *testing.T) {
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	first := strings.Repeat("a", 2048)
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		if r.URL.Path == "/stream" {
			_, _ = io.WriteString(w, first)
		}
		http.NewResponseController(w).Flush()
		<-release
		_, _ = io.WriteString(w, "end")
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = up.Serve(l) }()
	defer up.Close()
	port := itoa(l.Addr().(*net.TCPAddr).Port)

	_, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	for _, path := range []string{"/stream", "/longpoll"} {
		got := make(chan string, 1)
		go func() {
			resp, err := (&http.Client{Transport: tr}).Get("http://allowed.test:" + port + path)
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			if path == "/longpoll" {
				got <- resp.Status
				return
			}
			b := make([]byte, len(first))
			if _, err := io.ReadFull(bufio.NewReader(resp.Body), b); err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- string(b)
		}()
		want := first
		if path == "/longpoll" {
			want = "200 OK"
		}
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("%s: got %.40q, want %.40q", path, g, want)
			}
		case <-time.After(waitBound):
			t.Fatalf("%s: nothing reached the client while the upstream response was open", path)
		}
	}
	close(release)
}

// BenchmarkPlainHTTP fetches a 1 MiB plain-http body through the proxy
// (keep-alive): the cost of passing each write on at once.
func BenchmarkPlainHTTP(b *testing.B) {
	body := strings.Repeat("x", 1<<20)
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = up.Serve(l) }()
	defer up.Close()
	u := "http://allowed.test:" + itoa(l.Addr().(*net.TCPAddr).Port) + "/"
	_, addr := startProxy(b, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(b)})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := hc.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(len(body)) {
			b.Fatalf("read %d bytes", n)
		}
	}
}
