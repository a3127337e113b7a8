package firewall

import (
	"os"
	"strings"
	"testing"
)

// TestFirewallREADMEListsEveryRow keeps the README's tables in step with
// the two tables here.
func TestFirewallREADMEListsEveryRow(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skipf("README not found: %v", err)
	}
	readme := string(b)
	for _, row := range append(Rows(), AllowlistRows()...) {
		if !strings.Contains(readme, "`"+row+"`") {
			t.Errorf("README does not list %s", row)
		}
	}
}
