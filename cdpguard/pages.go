package cdpguard

// pageAttached tells the page observers that a page target got the guard's session
// (its setup starts); pageGone, that it is gone. Both keep this order.
func (g *Guard) pageAttached(targetID, sessionID string) {
	g.judge.AddPage(targetID)
	g.rd.PageAttached(targetID, sessionID)
	g.scopes.PageAttached(sessionID, targetID)
	g.dialogs.Attach(sessionID, targetID)
	g.ctl.SetupPage(targetID, sessionID)
}

// pageGone is pageAttached's end: the target was destroyed.
func (g *Guard) pageGone(targetID string) {
	g.judge.RemovePage(targetID)
	g.rd.PageGone(targetID)
	g.worlds.PageGone(targetID)
	g.scopes.PageGone(targetID)
	g.dialogs.Forget(targetID)
	g.ctl.PageGone(targetID)
}
