package fetchdomain

// InFlight returns how many paused requests are waiting for an answer (the
// cdpguard_pauses_in_flight gauge). Safe for concurrent use.
func (j *Judge) InFlight() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.inflight)
}
