package firewall

import "testing"

// TestReservedRefusal: names of the guard's worlds and binding are refused
// in the params of their rows, however spelt; others pass.
func TestReservedRefusal(t *testing.T) {
	cases := []struct {
		method, params string
		refuse         bool
	}{
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"cdpguard_reader_00ff"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldN\u0061me":"cdpguard_controls_00ff"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"cdpguard_guess"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"__playwright_utility_world__"}`, false},
		{"Page.addScriptToEvaluateOnNewDocument", `{"source":"1","worldName":"cdpguard_controls_00ff"}`, true},
		{"Page.addScriptToEvaluateOnNewDocument", `{"source":"1"}`, false},
		{"Runtime.addBinding", `{"name":"cdpguard_0011"}`, true},
		{"Runtime.addBinding", `{"name":"x","executionContextName":"cdpguard_controls_00ff"}`, true},
		{"Runtime.addBinding", `{"name":"__playwright__binding__"}`, false},
		{"Runtime.removeBinding", `{"name":"cdpguard_0011"}`, true},
		{"Runtime.addBinding", `{"name":"a","name":"cdpguard_0011"}`, true}, // duplicate keys: unreadable
		{"Runtime.addBinding", `{"name":"cdpguard_0011","name":"a"}`, true},
		{"Runtime.addBinding", ``, false},
	}
	for _, c := range cases {
		r, _ := Lookup(c.method, false)
		if r.Action != RefuseReserved {
			t.Fatalf("%s: action %v, want RefuseReserved", c.method, r.Action)
		}
		if got := ReservedRefusal([]byte(c.params), r.Params) != ""; got != c.refuse {
			t.Errorf("%s %s: refused %v, want %v", c.method, c.params, got, c.refuse)
		}
	}
	if r, _ := Lookup("Runtime.evaluate", false); r.Action == RefuseReserved {
		t.Error("Runtime.evaluate (an expression may mention the names) is RefuseReserved")
	}
}
