package firewall

import "testing"

// TestAgentEvents: every row of the agent event table is read back, and an
// event not in it passes.
func TestAgentEvents(t *testing.T) {
	for m, want := range agentEvents {
		if got := AgentEvent(m); got != want || got == EvPass {
			t.Errorf("AgentEvent(%q) = %d, want %d", m, got, want)
		}
	}
	for _, m := range []string{"Page.frameNavigated", "Network.requestWillBeSent", "", "Target.targetCreatedX"} {
		if got := AgentEvent(m); got != EvPass {
			t.Errorf("AgentEvent(%q) = %d, want EvPass", m, got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = AgentEvent("Runtime.executionContextCreated") }); n != 0 {
		t.Errorf("AgentEvent allocates %v times", n)
	}
}
