package cdpguard

// pageAttached tells the page observers that a page target got the
// guard's session (its setup starts; the page registry already has it).
func (g *Guard) pageAttached(targetID, sessionID string) {
	g.dialogs.Attach(sessionID, targetID)
	g.ctl.SetupPage(targetID, sessionID)
}

// pageGone is pageAttached's end: the target was destroyed (the page
// registry forgets it after them).
func (g *Guard) pageGone(targetID string) {
	g.rd.PageGone(targetID)
	g.worlds.PageGone(targetID)
	g.dialogs.Forget(targetID)
	g.ctl.PageGone(targetID)
}
