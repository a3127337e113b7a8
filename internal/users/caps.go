package users

// Tabs returns the number of u's live tabs (pages in its contexts).
func (r *Registry) Tabs(u *User) int {
	live := r.targets.Live()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range live {
		if t.Page && r.owner[t.Context] == u {
			n++
		}
	}
	return n
}

// tabsInAll returns the number of live tabs (pages) in the contexts of
// all users.
func (r *Registry) tabsInAll() int {
	live := r.targets.Live()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range live {
		if t.Page && r.owner[t.Context] != nil {
			n++
		}
	}
	return n
}

// CreatedContexts returns the number of contexts u created besides the
// primary one the guard made for it.
func (r *Registry) CreatedContexts(u *User) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u.Primary == "" {
		return len(u.contexts)
	}
	return len(u.contexts) - 1
}

// OwnerOfContext returns the user whose context id is, or nil.
func (r *Registry) OwnerOfContext(id string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owner[id]
}

// TabStats returns the most tabs any user has open and how many users have
// at least limit open (limit <= 0: none), for metrics that need no series
// per user.
func (r *Registry) TabStats(limit int) (most, atLimit int) {
	live := r.targets.Live()
	r.mu.Lock()
	defer r.mu.Unlock()
	per := map[*User]int{}
	for _, t := range live {
		if !t.Page {
			continue
		}
		if u := r.owner[t.Context]; u != nil {
			per[u]++
		}
	}
	for _, n := range per {
		most = max(most, n)
		if limit > 0 && n >= limit {
			atLimit++
		}
	}
	return most, atLimit
}
