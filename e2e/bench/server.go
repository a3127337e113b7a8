package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// site is the local test server, reached by both browsers as allowed.test
// (mapped to 127.0.0.1). Subresource URLs carry a token, so every page load
// fetches 200 URLs neither browser has seen.
type site struct {
	srv  *http.Server
	base string // http://allowed.test:PORT
	png  []byte
	stop context.CancelFunc
	ctx  context.Context
}

func startSite(host string) (*site, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("site listen: %w", err)
	}
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("site png: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &site{png: buf.Bytes(), ctx: ctx, stop: stop}
	s.base = fmt.Sprintf("http://%s:%d", host, ln.Addr().(*net.TCPAddr).Port)
	mux := http.NewServeMux()
	mux.HandleFunc("/load", s.serveLoad)
	mux.HandleFunc("/r/", s.serveResource)
	mux.HandleFunc("/shot", s.serveShot)
	mux.HandleFunc("/blank", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, "text/html", []byte("<!doctype html><title>blank</title><p>bench</p>"))
	})
	mux.HandleFunc("/ws", s.serveEcho)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// close stops the server and every echo connection, bounded.
func (s *site) close() {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// loadURL is the 200-subresource page for one iteration.
func (s *site) loadURL(token string, n int) string {
	return fmt.Sprintf("%s/load?t=%s&n=%d", s.base, token, n)
}

// maxDelay bounds the per-response delay a URL may ask for.
const maxDelay = 5 * time.Second

// delayedLoadURL is the same page with the document and every subresource
// answered after delay, as if each were one network round trip away.
func (s *site) delayedLoadURL(token string, n int, delay time.Duration) string {
	return fmt.Sprintf("%s/load?t=%s&n=%d&d=%d", s.base, token, n, delay.Microseconds())
}

// delay waits for the d query parameter (microseconds, at most maxDelay),
// or until the request ends. It reports the parameter ("" when none) to
// pass on to subresource URLs, and false when the request should stop.
func delay(w http.ResponseWriter, r *http.Request) (string, bool) {
	q := r.URL.Query().Get("d")
	if q == "" {
		return "", true
	}
	us, err := strconv.ParseInt(q, 10, 64)
	if err != nil || us < 0 || time.Duration(us)*time.Microsecond > maxDelay {
		http.Error(w, "bad delay", http.StatusBadRequest)
		return "", false
	}
	t := time.NewTimer(time.Duration(us) * time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return "?d=" + q, true
	case <-r.Context().Done():
		return "", false
	}
}

func writeBody(w http.ResponseWriter, ctype string, b []byte) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// serveLoad writes a page with n distinct subresources: half images, a
// quarter scripts, a quarter stylesheets.
func (s *site) serveLoad(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("t")
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 || n > 10000 || strings.ContainsAny(tok, "<>\"'&/") {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	d, ok := delay(w, r)
	if !ok {
		return
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>load</title>\n")
	for k := 0; k < n; k++ {
		switch k % 4 {
		case 2:
			fmt.Fprintf(&b, "<script src=\"/r/%s/%d.js%s\"></script>\n", tok, k, d)
		case 3:
			fmt.Fprintf(&b, "<link rel=stylesheet href=\"/r/%s/%d.css%s\">\n", tok, k, d)
		}
	}
	b.WriteString("</head><body>\n")
	for k := 0; k < n; k += 4 {
		fmt.Fprintf(&b, "<img src=\"/r/%s/%d.png%s\"><img src=\"/r/%s/%d.png%s\">\n", tok, k, d, tok, k+1, d)
	}
	b.WriteString("</body></html>\n")
	writeBody(w, "text/html; charset=utf-8", []byte(b.String()))
}

func (s *site) serveResource(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	base, ext, _ := strings.Cut(name, ".")
	k, err := strconv.Atoi(base)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if _, ok := delay(w, r); !ok {
		return
	}
	switch ext {
	case "png":
		writeBody(w, "image/png", s.png)
	case "js":
		writeBody(w, "text/javascript", fmt.Appendf(nil, "window.__n=(window.__n||0)+1;var v%d=%d;\n", k, k))
	case "css":
		writeBody(w, "text/css", fmt.Appendf(nil, ".c%d{color:#%06x;margin:%dpx}\n", k, k*9973%0xffffff, k%7))
	default:
		http.NotFound(w, r)
	}
}

// serveShot writes a 1920x3000 page with enough structure (gradients,
// text, borders) that encoding its screenshot is real work.
func (s *site) serveShot(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><style>
html,body{margin:0;width:1920px;height:3000px;overflow:hidden;font:16px sans-serif}
.row{height:30px;border-bottom:1px solid #999;white-space:nowrap}
</style></head><body>`)
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, `<div class=row style="background:linear-gradient(90deg,hsl(%d,70%%,80%%),hsl(%d,60%%,40%%))">row %d: the quick brown fox jumps over the lazy dog %d times</div>`,
			i*37%360, i*53%360, i, i*i)
	}
	b.WriteString("</body></html>")
	writeBody(w, "text/html; charset=utf-8", []byte(b.String()))
}

// serveEcho echoes every WebSocket message until the peer closes.
func (s *site) serveEcho(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	for {
		typ, msg, err := c.Read(s.ctx)
		if err != nil {
			if s := websocket.CloseStatus(err); s != websocket.StatusNormalClosure && s != websocket.StatusGoingAway && !errors.Is(err, context.Canceled) {
				_ = c.Close(websocket.StatusInternalError, "read failed")
			}
			return
		}
		if err := c.Write(s.ctx, typ, msg); err != nil {
			return
		}
	}
}
