package cdpguard

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// BenchmarkCommandPipeline measures the guard's judgement of one agent
// command on a page session, the firewall row's look-up and every stage
// (agentPipeline.Intercept), without the relay around it: Runtime.evaluate
// (no row: every stage passes it) and Page.navigate (its row's URL check).
func BenchmarkCommandPipeline(b *testing.B) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		g.stop()
		g.wg.Wait()
	})
	u := &users.User{Key: "alice"}
	p := commandPipeline{g}.For(&agentState{User: u, Iso: isolation.NewConn(u)})
	for _, cmd := range []relay.Command{
		{Method: "Runtime.evaluate", Params: []byte(`{"expression":"1+1","returnByValue":true}`), SessionID: "S1"},
		{Method: "Page.navigate", Params: []byte(`{"url":"http://allowed.test/"}`), SessionID: "S1"},
	} {
		b.Run(cmd.Method, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := p.Intercept(b.Context(), nil, cmd); v.Refuse != "" || v.Local != nil {
					b.Fatalf("%s judged %+v, want passed", cmd.Method, v)
				}
			}
		})
	}
}
