package mcpserver

import (
	"strings"
	"testing"
)

// TestWriteBlocks: the listing shows the blocks since the tab's last
// navigation, the same refusal repeated once with its count, and counts
// the earlier ones; all shows every kept block.
func TestWriteBlocks(t *testing.T) {
	bg := blockEntry{URL: "content-autofill.googleapis.com:443", Reason: "not in the allowlist", ResourceType: "Connection"}
	var blocks []blockEntry
	for i := range 5 {
		b := bg
		b.seq = i + 1
		blocks = append(blocks, b)
	}
	blocks = append(blocks,
		blockEntry{URL: "http://forbidden.test/x", Reason: "not in the allowlist", ResourceType: "Document", seq: 6},
		blockEntry{URL: "content-autofill.googleapis.com:443", Reason: "not in the allowlist", ResourceType: "Connection", seq: 7})

	var b strings.Builder
	earlier := writeBlocks(&b, blocks, 5, false)
	got := b.String()
	if earlier != 5 {
		t.Errorf("earlier = %d, want 5", earlier)
	}
	for _, want := range []string{"Blocked by cdpguard: 2 request(s).", "BLOCKED Document http://forbidden.test/x (host forbidden.test)", "BLOCKED Connection content-autofill.googleapis.com:443"} {
		if !strings.Contains(got, want) {
			t.Errorf("since the mark: no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "times") {
		t.Errorf("since the mark the background block is there once:\n%s", got)
	}

	b.Reset()
	if earlier := writeBlocks(&b, blocks, 5, true); earlier != 0 {
		t.Errorf("all: earlier = %d, want 0", earlier)
	}
	if got := b.String(); !strings.Contains(got, "Blocked by cdpguard: 7 request(s).") || !strings.Contains(got, "googleapis.com:443 (host content-autofill.googleapis.com:443): not in the allowlist (6 times)") || strings.Count(got, "\n") != 3 {
		t.Errorf("all: want 7 blocks on 2 lines, the repeated one counted:\n%s", got)
	}

	b.Reset()
	if earlier := writeBlocks(&b, blocks, 7, false); earlier != 7 || b.Len() != 0 {
		t.Errorf("nothing since the mark: earlier %d, listing %q", earlier, b.String())
	}
}
