package users

// OwnerKey returns the key of the user whose context holds targetID, for
// log lines; ok is false when the target is unknown or in no user's context.
func (r *Registry) OwnerKey(targetID string) (key string, ok bool) {
	c, ok := r.targets.ContextOf(targetID)
	if !ok {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.owner[c]
	if u == nil {
		return "", false
	}
	return u.Key, true
}
