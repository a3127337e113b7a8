package pages

// The registry's look-ups. Each takes the registry's lock alone and
// returns; none calls out.

// TargetOf returns the page target of the guard's session sessionID; ok is
// false for any other session (an agent's, a worker's, a page already
// destroyed).
func (r *Registry) TargetOf(sessionID string) (targetID string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	targetID, ok = r.sessions[sessionID]
	return targetID, ok
}

// SessionOf returns the guard's session on page targetID, "" when the
// guard has none (not a page, not set up, or destroyed).
func (r *Registry) SessionOf(targetID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.targets[targetID]; t != nil {
		return t.session
	}
	return ""
}

// PageOf returns the page that holds subframe frameID, "" when the guard
// saw no such subframe attach (a page's main frame is the page itself).
func (r *Registry) PageOf(frameID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames[frameID]
}

// ContextOf returns the browser context targetID is in, as last reported
// by Chrome; a destroyed target is still answered for Keep. ok is false for
// a target the registry never saw in a context.
func (r *Registry) ContextOf(targetID string) (contextID string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.targets[targetID]; t != nil && t.context != "" {
		return t.context, true
	}
	return "", false
}

// NotWeb returns why a target is not web content, or "" when it is (or is
// unknown).
func (r *Registry) NotWeb(targetID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.targets[targetID]; t != nil {
		return t.notWeb
	}
	return ""
}

// Live returns the targets not destroyed whose context is known.
func (r *Registry) Live() []Target {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Target, 0, len(r.targets))
	for id, t := range r.targets {
		if !t.gone && t.context != "" {
			out = append(out, Target{ID: id, Context: t.context, Page: t.page})
		}
	}
	return out
}

// IsPage reports whether targetID is a live page (a tab): a page's main
// frame has its target's id, so the Fetch judge asks it whether a Document
// request is a top-level navigation.
func (r *Registry) IsPage(targetID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.targets[targetID]
	return t != nil && t.page && !t.gone
}

// Page returns the page of targetID, made when the registry first heard
// of the target; a destroyed one is still answered for Keep, so that a
// late event finds it. nil for a target the registry never heard of.
func (r *Registry) Page(targetID string) *Page {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.targets[targetID]
}

// PageOfSession returns the page on which sessionID is the guard's
// session, nil for any other session (an agent's, a worker's, a page
// already destroyed).
func (r *Registry) PageOfSession(sessionID string) *Page {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.sessions[sessionID]; ok {
		return r.targets[id]
	}
	return nil
}

// Ensure returns the page of targetID, making it if the registry had not
// heard of the target yet (a target event with no context); nil for "".
func (r *Registry) Ensure(targetID string) *Page {
	if targetID == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made(targetID)
}
