package cdpguard_test

import (
	"context"
	"fmt"
	"log"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// Example makes a chromedp test hermetic: the browser it drives can reach
// only the hosts the test names. (Run by TestExample, which skips without a
// browser.)
func Example() {
	ctx := context.Background()
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow:   []string{"allowed.test"},
		HostMap: []string{"*.test=127.0.0.1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	actx, cancel := remote.NewAllocator(ctx, g.URL())
	defer cancel()
	tctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// evil.test is not on the allowlist: the guard answers the navigation
	// with an explanation page, and nothing reaches the host.
	if err := chromedp.Do(tctx, chromedp.Navigate("http://evil.test/")); err != nil {
		log.Fatal(err)
	}
	text, err := chromedp.Run(tctx, chromedp.Text("h1"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
}
