package readpage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// ParseQuery reads GET /read's query: url (needed), offset and maxChars
// (numbers ≥ 0). Its errors are the 400 answer's text.
func ParseQuery(q url.Values) (Params, error) {
	p := Params{URL: q.Get("url")}
	if p.URL == "" {
		return Params{}, errors.New("cdpguard: /read needs a url parameter")
	}
	for _, f := range []struct {
		key string
		n   *int
	}{{"offset", &p.Offset}, {"maxChars", &p.MaxChars}} {
		if s := q.Get(f.key); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return Params{}, fmt.Errorf("cdpguard: /read: %s must be a number ≥ 0", f.key)
			}
			*f.n = n
		}
	}
	return p, nil
}

// ServeHTTP answers GET /read?url=...&offset=...&maxChars=... with a
// Result as JSON, read in the reader tab of the request's user
// (Deps.UserKey); 503 while the guard is not ready (Deps.Ready).
func (r *Reader) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		http.Error(w, "cdpguard: use GET for /read", http.StatusMethodNotAllowed)
		return
	}
	if !r.d.Ready() {
		http.Error(w, "cdpguard: not ready", http.StatusServiceUnavailable)
		return
	}
	p, err := ParseQuery(req.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key, ok := r.d.UserKey(w, req)
	if !ok {
		return
	}
	r.Serve(req.Context(), w, key, p)
}

// Serve answers GET /read for the user of key with p read in the user's
// reader tab (Read), as JSON: 403 for a URL the policy blocks, naming the
// host and the reachable origins, 502 for a read that failed. ctx is the
// request's; the read is bounded by Bound.
func (r *Reader) Serve(ctx context.Context, w http.ResponseWriter, key string, p Params) {
	ctx, cancel := context.WithTimeout(ctx, r.Bound())
	defer cancel()
	res, err := r.Read(ctx, key, p.URL, p.Offset, p.MaxChars)
	if errors.Is(err, ErrRefused) {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, "cdpguard: /read: "+err.Error(), http.StatusBadGateway)
		return
	}
	b, err := jsonv2.Marshal(res)
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(b)
}
