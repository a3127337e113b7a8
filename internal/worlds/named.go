package worlds

import "github.com/cdpguard/cdpguard/internal/relay"

// NamedVerdict is the verdict Deps.Pass gives a command Command lets through:
// its reply ends the note of the ids it names.
func NamedVerdict(done func()) relay.Verdict {
	if done == nil {
		return relay.Verdict{}
	}
	return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		done()
		return result, errRaw
	}}
}

// WithNamed gives v, the verdict of the stages after Command, the
// reply hook of Command's verdict wv; a command those stages refuse or
// answer never reaches the browser, so its note ends now.
func WithNamed(wv, v relay.Verdict) relay.Verdict {
	if wv.OnReply == nil {
		return v
	}
	if v.Refuse != "" || v.Local != nil {
		wv.OnReply(nil, nil)
		return v
	}
	return relay.Combine(wv, v)
}
