package policy_test

import (
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/internal/policy"
)

func ExampleParse() {
	p, err := policy.Parse(
		[]string{"example.com; *.example.com, https://api.test:8443"},
		[]string{"ads.example.com"},
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Origins())
	for _, u := range []string{
		"https://www.example.com/page",
		"https://ads.example.com/pixel",
		"http://example.com@evil.test/",
		"https://api.test:8443/v1",
		"http://api.test:8443/v1",
		"file:///etc/passwd",
		"about:blank",
	} {
		d := p.Decide(u)
		fmt.Printf("%-32s %-5v %s\n", u, d.Allowed, d.Reason)
	}

	_, err = policy.Parse([]string{"example.com/path"}, nil)
	fmt.Println(err, errors.Is(err, policy.ErrInvalidEntry))
	// Output:
	// [example.com *.example.com https://api.test:8443]
	// https://www.example.com/page     true  allowed by "*.example.com"
	// https://ads.example.com/pixel    false blocked by "ads.example.com"
	// http://example.com@evil.test/    false host "evil.test" is not in the allowlist
	// https://api.test:8443/v1         true  allowed by "https://api.test:8443"
	// http://api.test:8443/v1          false http on port 8443 is not allowed for host "api.test"
	// file:///etc/passwd               false scheme "file" is never allowed
	// about:blank                      true  scheme "about" does not touch the network
	// invalid allow entry "example.com/path": paths are not allowed true
}
