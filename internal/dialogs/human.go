package dialogs

// SetHuman makes every dialog wait out the grace, not only those an agent
// listens for: with cdpguard's controls on, a human may be watching the
// page and answer it in the browser's own UI. onAnswer, if set, is told
// (sessionID, dialog type, why) each time the guard answers a dialog, so
// the controls can show it; it must not block. Call it before the first
// dialog.
func (h *Handler) SetHuman(on bool, onAnswer func(sessionID, typ, why string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.human = on
	h.onAnswer = onAnswer
}
