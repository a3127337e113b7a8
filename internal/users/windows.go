package users

// Window ids are small sequential integers that Chrome never reuses, and a
// window shows the tabs of one browser context only, so a window learned
// from one of a user's targets stays that user's: a user may name only the
// windows of its own targets (Browser.getWindowBounds, setWindowBounds,
// setContentsSize).

// AddWindow records that window shows target; the window belongs to the
// target's context. Unknown targets are ignored.
func (r *Registry) AddWindow(targetID string, window int64) {
	c, ok := r.targets.ContextOf(targetID)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows[window] = c
}

// OwnsWindow reports whether window shows a target of one of u's contexts.
func (r *Registry) OwnsWindow(u *User, window int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.windows[window]
	return ok && r.owner[c] == u
}

// forgetWindows drops the windows of a disposed context; r.mu is held.
func (r *Registry) forgetWindows(contextID string) {
	for w, c := range r.windows {
		if c == contextID {
			delete(r.windows, w)
		}
	}
}
