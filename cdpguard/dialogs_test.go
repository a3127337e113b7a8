package cdpguard

import (
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/dialogs"
)

// TestDialogGrace: Config.DialogGrace zero is the one default, negative is
// "answer at once".
func TestDialogGrace(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: dialogs.DefaultGrace, -1: 0, 5 * time.Second: 5 * time.Second} {
		if got := dialogGrace(in); got != want {
			t.Errorf("dialogGrace(%v) = %v, want %v", in, got, want)
		}
	}
}
