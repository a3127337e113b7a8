package users

import (
	"context"
	"errors"

	"github.com/cdpguard/cdpguard/internal/clip"
)

// ErrInUse is returned by DisposeNow when a connection still holds the user.
var ErrInUse = errors.New("the user has open connections")

// DisposeNow disposes key's contexts at once (the MCP tool browser_close),
// as the idle sweep would, unless a connection still holds the user: then
// it returns ErrInUse and the user keeps everything.
func (r *Registry) DisposeNow(ctx context.Context, key string) error {
	r.mu.Lock()
	u := r.users[key]
	if u == nil || u.Primary == "" {
		r.mu.Unlock()
		return nil
	}
	if u.conns > 0 {
		r.mu.Unlock()
		return ErrInUse
	}
	r.retire(key, u)
	ids := make([]string, 0, len(u.contexts))
	for id := range u.contexts {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, r.ctxs.Dispose(ctx, id))
	}
	r.log.Info("user's context disposed on request", "user", clip.String(key))
	return errors.Join(errs...)
}
