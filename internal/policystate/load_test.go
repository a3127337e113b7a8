package policystate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLoad: the file is the policy's one source, and its groupHeader may
// not be the session header; without a file, Allow and Block are parsed.
func TestLoad(t *testing.T) {
	if s, _, err := Load(Source{Allow: []string{"a.test"}}); err != nil || !s.Default().Policy.Decide("https://a.test/").Allowed {
		t.Fatalf("Load(Allow) = %v", err)
	}
	file := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(file, []byte("groupHeader: X-User\nallow: [a.test]\ngroups:\n  staff: {allow: [wiki.test]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *FieldError
	if _, _, err := Load(Source{File: file, Allow: []string{"b.test"}}); !errors.As(err, &fe) || fe.Field != "Allow" {
		t.Errorf("Allow with a file: %v, want a FieldError for Allow", err)
	}
	if _, _, err := Load(Source{File: file, Allow: []string{" "}, SessionHeader: "x-user"}); !errors.As(err, &fe) || fe.Field != "PolicyFile" {
		t.Errorf("groupHeader = session header: %v, want a FieldError for PolicyFile", err)
	}
	if _, _, err := Load(Source{File: file, SessionHeader: "X-Session"}); err != nil {
		t.Errorf("a good file: %v", err)
	}
}
