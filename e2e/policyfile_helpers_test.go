package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// endpointFromFile is endpoint with guardConfig's policy (allow, block,
// instructions) moved into a policy file, so a suite run on it checks the
// guard under a policy loaded from a file. TestLeaks uses it: every other
// guarded suite covers the flags.
func endpointFromFile(t *testing.T) string {
	t.Helper()
	if directMode() {
		return startChromium(t).URL
	}
	cfg := guardConfig(t)
	quote := func(list []string) string {
		b, _ := json.Marshal(list) // a JSON array is a YAML flow sequence
		return string(b)
	}
	if cfg.Block == nil {
		cfg.Block = []string{}
	}
	ins, _ := json.Marshal(cfg.Instructions)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, path, "allow: "+quote(cfg.Allow)+"\nblock: "+quote(cfg.Block)+"\ninstructions: "+string(ins)+"\n")
	cfg.Allow, cfg.Block, cfg.Instructions = nil, nil, ""
	cfg.PolicyFile = path
	return cdptest.StartGuard(t, cfg).URL()
}

// policyFileServeArgs is serveArgs with the policy from a file.
func policyFileServeArgs(t *testing.T, chrome, path string) []string {
	t.Helper()
	args := serveArgs(chrome)
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--allow" {
			return append(append(args[:i:i], "--policy-file", path), args[i+2:]...)
		}
	}
	t.Fatalf("serveArgs %v has no --allow to replace", args)
	return nil
}

// fleetPolicyChange changes the file under the running instances: every
// instance shows the new list (the snapshot its decisions read) within
// the bound, and no user loses their tab.
func fleetPolicyChange(t *testing.T, insts []*lbInstance, users []string, lbURL, path string) {
	t.Helper()
	wrote := writePolicyFile(t, path, "allow: ["+testhosts.AllowedName+", fleet-added.test]\n")
	var slowest time.Duration
	for _, in := range insts {
		took := waitPolicy(t, in.url, "", "", `"fleet-added.test"`, "").Sub(wrote)
		slowest = max(slowest, took)
	}
	t.Logf("policy file write → all %d instances enforce it: %v (default 500 ms poll)", len(insts), slowest.Round(time.Millisecond))
	for _, u := range users {
		if !listed(t, lbURL, u, "1") {
			t.Errorf("%s lost its tab when the policy file changed", u)
		}
	}
}
