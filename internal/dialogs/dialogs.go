// Package dialogs keeps JavaScript dialogs from hanging a page. The guard
// enables the Page domain on every page it attaches, and answers each
// Page.javascriptDialogOpening after a grace period: alert, confirm and
// prompt are dismissed; beforeunload is accepted so that navigation proceeds.
package dialogs

import (
	"log/slog"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Sender sends a CDP command without awaiting its reply.
type Sender interface {
	Send(sessionID, method string, params any) error
}

// Handler answers dialogs. Its zero grace answers at once.
type Handler struct {
	send  Sender
	grace time.Duration
	log   *slog.Logger

	mu     sync.Mutex
	timers map[*time.Timer]struct{}
	closed bool
}

// New returns a Handler that answers after grace.
func New(send Sender, grace time.Duration, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{send: send, grace: grace, log: log, timers: map[*time.Timer]struct{}{}}
}

// Opening takes a Page.javascriptDialogOpening event on the guard's session
// sessionID. It does not block.
func (h *Handler) Opening(sessionID string, params []byte) {
	var p struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		URL     string `json:"url"`
	}
	if err := jsonv2.Unmarshal(params, &p); err != nil {
		h.log.Warn("unreadable dialog event; dismissing", "err", err)
	}
	accept := p.Type == "beforeunload"
	answer := func() {
		// An agent may have answered first; Chrome then says "No dialog is
		// showing", which is harmless.
		if err := h.send.Send(sessionID, "Page.handleJavaScriptDialog", map[string]any{"accept": accept}); err != nil {
			h.log.Debug("dialog answer failed", "err", err)
		}
		h.log.Info("dialog answered", "type", p.Type, "accept", accept, "url", p.URL)
	}
	if h.grace <= 0 {
		answer()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(h.grace, func() {
		h.mu.Lock()
		delete(h.timers, t)
		h.mu.Unlock()
		answer()
	})
	h.timers[t] = struct{}{}
}

// Close stops pending answers.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for t := range h.timers {
		t.Stop()
	}
	h.timers = nil
}

// LateAnswer rewrites the reply to an agent's Page.handleJavaScriptDialog:
// if the guard already answered the dialog, Chrome replies "No dialog is
// showing", which crashes older Playwright; the agent gets success instead.
func LateAnswer(result, errRaw []byte) ([]byte, []byte) {
	if len(errRaw) > 0 {
		return []byte("{}"), nil
	}
	return result, errRaw
}
