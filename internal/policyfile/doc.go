// Package policyfile reads cdpguard's policy file (--policy-file): the
// allowlist, blocklist and instructions as YAML, optionally with named
// groups that a request header selects. It compiles the file into a [Set],
// an immutable snapshot the guard swaps atomically on reload, and it
// watches the file so that a change (an edit in place, a rename over it, or
// a Kubernetes ConfigMap volume's symlink swap) reaches the guard within a
// poll interval. Entries are validated by internal/policy, so a file and
// the --allow flag accept exactly the same language and give the same
// errors, here with the line of the entry.
//
// The file:
//
//	allow: [example.com, "*.wikipedia.org"]
//	block: [ads.example.com]
//	instructions: Ask the operator to add a site.
//	groupHeader: X-Cdpguard-Group   # which request header selects a group
//	unknownGroup: default           # or "refuse": a user of an unknown group is refused
//	groups:
//	  staff: {allow: [wiki.internal.example], instructions: "..."}
//
// A group's allow, block and instructions each replace the top level's for
// that group's users when the group names them; a key the group leaves out
// is taken from the top level (so a group that only widens allow still gets
// the top-level blocklist). The top level is the default group. A list a
// group takes from the top level is the top level's compiled list, shared
// (so groups cost memory for what they write, not for what they inherit),
// and a file is bounded in bytes (MaxBytes) and in entries (MaxEntries).
package policyfile
