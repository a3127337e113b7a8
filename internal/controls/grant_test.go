package controls

import (
	"strings"
	"testing"
)

func TestClickRefusal(t *testing.T) {
	for payload, want := range map[string]string{
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session"}`: "",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":null,"label":"Allow h for this session"}`: "", // no IntersectionObserver v2
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Close"}`:                    "text was changed",
		`{"action":"allow","trusted":false,"active":true,"armed":true,"visible":true}`:                                   "not a trusted input event",
		`{"action":"allow","trusted":true,"active":false,"armed":true,"visible":true}`:                                   "no user activation",
		`{"action":"allow","trusted":true,"active":true,"armed":false,"visible":true}`:                                   "before it was shown",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":false}`:                                   "covered",
		`{"action":"grant","trusted":true,"active":true,"armed":true}`:                                                   "unknown action",
		`{"action":"allow","trusted":true,"trusted":true}`:                                                               "unreadable", // duplicate keys
		`not json`: "unreadable",
	} {
		got := clickRefusal(payload, "Allow h for this session")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("clickRefusal(%s) = %q, want %q", payload, got, want)
		}
	}
}
