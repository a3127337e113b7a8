package users

// PrimaryOf returns the key and primary context of the user whose context
// holds targetID. ok is false when the target is unknown or in no live
// user's context (Chrome's default context, or a user already retired):
// session state keyed by the primary context (grants) is then nobody's.
func (r *Registry) PrimaryOf(targetID string) (key, primary string, ok bool) {
	c, ok := r.targets.ContextOf(targetID)
	if !ok {
		return "", "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.owner[c]
	if u == nil || u.Primary == "" {
		return "", "", false
	}
	return u.Key, u.Primary, true
}
