package admission

import (
	"time"

	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/shares"
)

// shareGrace is how long a user's fairness share outlives the user's last
// connection: the time its rate bucket takes to refill from empty (its
// capacity is two seconds of the rate), so that reconnecting never buys a
// user a fresh bucket, while memory follows the users connected now rather
// than every user key ever seen.
const shareGrace = 2 * time.Second

// newShares returns the table of per-user relay shares: one rate limit and
// one window of in-flight commands over all of a user's connections, so
// that a user cannot get around the per-connection limit by opening more
// connections, nor slow another user's tab set-up by flooding the browser.
func newShares() *shares.Table[*relay.Share] {
	return shares.New(func() *relay.Share { return relay.NewShare(0, 0) }, shareGrace)
}
