package users

// MarkWeb records whether a target is web content: why is "" for web
// content, or why it is not (firewall.NotWeb). A target's URL can change,
// so this is updated on every target event.
func (r *Registry) MarkWeb(targetID, why string) {
	if targetID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if why == "" {
		delete(r.nonWeb, targetID)
	} else {
		r.nonWeb[targetID] = why
	}
}

// NotWeb returns why a target is not web content, or "" when it is (or is
// unknown).
func (r *Registry) NotWeb(targetID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nonWeb[targetID]
}
