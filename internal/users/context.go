package users

// ContextOf returns the browser context targetID is in, as last reported
// by Chrome; ok is false for a target the registry never saw.
func (r *Registry) ContextOf(targetID string) (contextID string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.targets[targetID]
	return c, ok
}

// PrimaryOf returns the key and primary context of the user whose context
// holds targetID. ok is false when the target is unknown or in no live
// user's context (Chrome's default context, or a user already retired):
// session state keyed by the primary context (grants) is then nobody's.
func (r *Registry) PrimaryOf(targetID string) (key, primary string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.targets[targetID]
	if !ok {
		return "", "", false
	}
	u := r.owner[c]
	if u == nil || u.Primary == "" {
		return "", "", false
	}
	return u.Key, u.Primary, true
}
