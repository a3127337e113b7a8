package browser

import (
	"bufio"
	"strings"
	"testing"
)

// TestPipeConnOversize: a message over the limit no longer ends the
// connection: an answer becomes a CDP error for its id and session, an
// event is dropped, and the messages after it arrive.
func TestPipeConnOversize(t *testing.T) {
	c, _, peerW := pipePair(t)
	c.maxMsg = 1000
	big := strings.Repeat("x", 3*pipeReadBuffer) // the skipping path
	small := strings.Repeat("y", 2000)           // over the limit, within one buffer
	msgs := []string{
		`{"id":7,"result":{"result":{"type":"string","value":"` + big + `"}},"sessionId":"AB12"}`,
		`{"method":"Runtime.consoleAPICalled","params":{"v":"` + big + `"},"sessionId":"AB12"}`,
		`{"id":8,"result":{"v":"` + small + `"}}`,
		`{"method":"Runtime.consoleAPICalled","params":{"v":"` + small + `"}}`,
		`{"id":9,"result":{}}`,
	}
	go func() {
		w := bufio.NewWriter(peerW)
		for _, m := range msgs {
			_, _ = w.WriteString(m)
			_ = w.WriteByte(0)
		}
		_ = w.Flush()
		_ = peerW.Close()
	}()
	want := []string{
		`{"id":7,"error":{"code":-32000,"message":"cdpguard: the browser's answer was over the 1000-byte message limit and was dropped"},"sessionId":"AB12"}`,
		`{"id":8,"error":{"code":-32000,"message":"cdpguard: the browser's answer was over the 1000-byte message limit and was dropped"}}`,
		`{"id":9,"result":{}}`,
	}
	for i, w := range want {
		got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(got) != w {
			t.Fatalf("message %d: got %.300s, want %s", i, got, w)
		}
	}
}
