package worlds

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestNamedVerdict: a command refused or answered by a later rule ends its
// note at once; one that goes to the browser ends it with its reply.
func TestNamedVerdict(t *testing.T) {
	ended := 0
	wv := NamedVerdict(func() { ended++ })
	if v := WithNamed(wv, relay.Verdict{Refuse: "no"}); v.Refuse != "no" || ended != 1 {
		t.Errorf("refused: %+v, ended %d", v, ended)
	}
	v := WithNamed(wv, relay.Verdict{})
	if ended != 1 || v.OnReply == nil {
		t.Fatalf("forwarded: ended %d before the reply, hook %v", ended, v.OnReply != nil)
	}
	v.OnReply([]byte(`{}`), nil)
	if ended != 2 {
		t.Errorf("the reply did not end the note (%d)", ended)
	}
	if v := WithNamed(NamedVerdict(nil), relay.Verdict{Params: []byte(`{}`)}); string(v.Params) != `{}` || v.OnReply != nil {
		t.Errorf("without controls: %+v", v)
	}
}
