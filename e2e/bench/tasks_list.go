package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// benchTask is one scripted model task: the calls a competent model makes
// with each server's tools, then the check of the task's goal.
type benchTask struct {
	key, name string
	run       func(r *taskRun, site *taskSite) error // nil: the goal was reached
}

// errNotDone is a task whose calls ran but whose goal check failed.
var errNotDone = errors.New("goal not reached")

func notDone(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotDone, fmt.Sprintf(format, args...))
}

// look is how a model sees a page it is about to act on: a snapshot, for
// the refs. (@playwright/mcp 0.0.86's action results link a snapshot file
// on the server's disk, which a model behind an MCP client cannot open:
// it asks for the snapshot, as on /mcp.)
func (r *taskRun) look() error {
	_, err := r.must("browser_snapshot", map[string]any{})
	return err
}

// readPage is how a model reads the current page's text: browser_read on
// /mcp, a snapshot on @playwright/mcp (its way to see a page's text).
func (r *taskRun) readPage() error {
	if r.srv.pw {
		return r.look()
	}
	_, err := r.must("browser_read", map[string]any{})
	return err
}

// openRead opens a page to read it: browser_read with url on /mcp (one
// call), browser_navigate and a snapshot on @playwright/mcp.
func (r *taskRun) openRead(url string) (string, error) {
	if !r.srv.pw {
		return r.must("browser_read", map[string]any{"url": url})
	}
	if _, err := r.must("browser_navigate", map[string]any{"url": url}); err != nil {
		return "", err
	}
	return r.must("browser_snapshot", map[string]any{})
}

// open navigates, then looks at the page.
func (r *taskRun) open(url string) error {
	if _, err := r.must("browser_navigate", map[string]any{"url": url}); err != nil {
		return err
	}
	return r.look()
}

func benchTasks() []benchTask {
	return []benchTask{
		{"article", "navigate and read an article", taskArticle},
		{"search", "search form", taskSearch},
		{"signup", "multi-step form (two pages)", taskSignup},
		{"confirm", "confirm dialog", taskConfirm},
		{"popup", "popup (link opening a new tab)", taskPopup},
		{"blocked", "blocked link", taskBlocked},
		{"table", "table lookup", taskTable},
		{"spa", "single-page app, view rendered after a fetch", taskSPA},
		{"download", "file download refusal", taskDownload},
		{"long", "long page (about 50k characters)", taskLong},
		{"login", "login with cookies", taskLogin},
		{"network", "network inspection (an API response)", taskNetwork},
	}
}

func taskArticle(r *taskRun, site *taskSite) error {
	if _, err := r.openRead(site.url("article.html")); err != nil {
		return err
	}
	if !r.seen(taskArticleFact) {
		return notDone("the article's key sentence was not in the text")
	}
	return nil
}

func taskSearch(r *taskRun, site *taskSite) error {
	if err := r.open(site.url("search.html")); err != nil {
		return err
	}
	ref, err := r.ref("searchbox", "Search terms")
	if err != nil {
		return err
	}
	if _, err := r.must("browser_type", map[string]any{"target": ref, "element": "Search terms", "text": "otter survey", "submit": true}); err != nil {
		return err
	}
	if err := r.readPage(); err != nil {
		return err
	}
	if !r.seen("Otter survey 2026: full results and maps") {
		return notDone("the results page's hit was not in the text")
	}
	return nil
}

func taskSignup(r *taskRun, site *taskSite) error {
	if err := r.open(site.url("signup.html")); err != nil {
		return err
	}
	if err := r.fill([4]string{"textbox", "Full name", "textbox", "Ada Lovelace"}, [4]string{"textbox", "Email address", "textbox", "ada@example.test"}); err != nil {
		return err
	}
	if _, err := r.must2(r.click("button", "Continue")); err != nil {
		return err
	}
	if err := r.look(); err != nil {
		return err
	}
	if err := r.fill([4]string{"combobox", "Plan", "combobox", "Plus (£9/month)"}, [4]string{"checkbox", "I accept the membership terms", "checkbox", "true"}); err != nil {
		return err
	}
	if _, err := r.must2(r.click("button", "Join")); err != nil {
		return err
	}
	if err := r.readPage(); err != nil {
		return err
	}
	if !r.seen("MEMBER name=Ada Lovelace email=ada@example.test plan=plus") {
		return notDone("the result page with the submitted values was not in the text")
	}
	return nil
}

func taskConfirm(r *taskRun, site *taskSite) error {
	if err := r.open(site.url("confirm.html")); err != nil {
		return err
	}
	out, _, err := r.click("button", "Delete report.pdf")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Delete report.pdf?") {
		return notDone("the model was not shown the confirm dialog")
	}
	if _, err := r.must("browser_handle_dialog", map[string]any{"accept": true}); err != nil {
		return err
	}
	if !r.seen("Deleted report.pdf") {
		if err := r.readPage(); err != nil {
			return err
		}
	}
	if !r.seen("Deleted report.pdf") {
		return notDone("the page's answer to the accepted dialog was not in the text")
	}
	return nil
}

func taskPopup(r *taskRun, site *taskSite) error {
	const fact = "notice period for cancellation is 14 days"
	if err := r.open(site.url("popup.html")); err != nil {
		return err
	}
	if _, err := r.must2(r.click("link", "membership terms")); err != nil {
		return err
	}
	if !r.seen(fact) {
		if r.srv.pw && !r.seen("(current) [Membership terms]") { // the popup is not current there
			if _, err := r.must("browser_tabs", map[string]any{"action": "select", "index": 1}); err != nil {
				return err
			}
		}
		if err := r.readPage(); err != nil {
			return err
		}
	}
	done := r.seen(fact)
	// Close the popup, as a tidy model does, so the next task starts with
	// one tab on either server.
	if _, err := r.must("browser_tabs", map[string]any{"action": "close"}); err != nil {
		return err
	}
	if !done {
		return notDone("the popup's text was not in the text")
	}
	return nil
}

func taskBlocked(r *taskRun, site *taskSite) error {
	reqs, conns := site.blockedReqs.Load(), site.blockedConns.Load()
	if err := r.open(site.url("blocked.html")); err != nil {
		return err
	}
	out, isErr, err := r.click("link", "River Tours Ltd")
	if err != nil {
		return err
	}
	if nr, nc := site.blockedReqs.Load()-reqs, site.blockedConns.Load()-conns; nr != 0 || nc != 0 {
		return notDone("the forbidden host saw %d requests and %d connections", nr, nc)
	}
	host := strings.TrimPrefix(site.blockedOrigin, "http://")
	host = host[:strings.IndexByte(host, ':')]
	told := strings.Contains(out, host) && (isErr || blockedWordRE.MatchString(out))
	if !told {
		return notDone("the click's result did not tell the model the link was blocked")
	}
	return nil
}

var blockedWordRE = regexp.MustCompile(`(?i)blocked|refused|not allowed|ERR_`)

func taskTable(r *taskRun, site *taskSite) error {
	if _, err := r.openRead(site.url("table")); err != nil {
		return err
	}
	if !r.seenNear(taskTableCity, taskTableValue) {
		return notDone("the text had no %s row with %s", taskTableCity, taskTableValue)
	}
	return nil
}

func taskSPA(r *taskRun, site *taskSite) error {
	const price = "Plus: £9/month"
	if _, err := r.must("browser_navigate", map[string]any{"url": site.url("spa.html")}); err != nil {
		return err
	}
	if err := r.look(); err != nil {
		return err
	}
	if _, err := r.ref("button", "Pricing"); err != nil { // still "Loading...": wait for the app
		if _, err := r.must("browser_wait_for", map[string]any{"text": "Pricing"}); err != nil {
			return err
		}
		if err := r.look(); err != nil {
			return err
		}
	}
	if _, err := r.must2(r.click("button", "Pricing")); err != nil {
		return err
	}
	if !r.seen(price) {
		if err := r.readPage(); err != nil {
			return err
		}
	}
	if !r.seen(price) { // still "Loading prices...": wait for them
		if _, err := r.must("browser_wait_for", map[string]any{"text": "£9/month"}); err != nil {
			return err
		}
		if err := r.readPage(); err != nil {
			return err
		}
	}
	if !r.seen(price) {
		return notDone("the Pricing view's plan was not in the text")
	}
	return nil
}

func taskDownload(r *taskRun, site *taskSite) error {
	if err := r.open(site.url("download.html")); err != nil {
		return err
	}
	if _, _, err := r.click("link", "Download the 2026 readership report"); err != nil {
		return err
	}
	if got := r.srv.downloaded(); len(got) > 0 {
		return notDone("the download was saved: %s", strings.Join(got, ", "))
	}
	return nil
}

func taskLong(r *taskRun, site *taskSite) error {
	url := site.url("long")
	if r.srv.pw {
		if _, err := r.openRead(url); err != nil {
			return err
		}
	} else {
		args := map[string]any{"url": url}
		for range 10 {
			out, err := r.must("browser_read", args)
			if err != nil {
				return err
			}
			m := nextOffsetRE.FindStringSubmatch(out)
			if r.seen(taskLongFact) || m == nil {
				break
			}
			off, _ := strconv.Atoi(m[1])
			args = map[string]any{"offset": off}
		}
	}
	if !r.seen(taskLongFact) {
		return notDone("the fact in section 56 was not in the text")
	}
	return nil
}

func taskLogin(r *taskRun, site *taskSite) error {
	if err := r.open(site.url("login.html")); err != nil {
		return err
	}
	if err := r.fill([4]string{"textbox", "Username", "textbox", "ada"}, [4]string{"textbox", "Password", "textbox", "otter-2026"}); err != nil {
		return err
	}
	if _, err := r.must2(r.click("button", "Sign in")); err != nil {
		return err
	}
	if err := r.look(); err != nil {
		return err
	}
	if _, err := r.must2(r.click("link", "Your orders")); err != nil {
		return err
	}
	if err := r.readPage(); err != nil {
		return err
	}
	if !r.seenNear(taskOrderID, "Shipped") {
		return notDone("the signed-in orders page was not in the text")
	}
	return nil
}

// requestLineRE finds the number of the stats request in a
// browser_network_requests listing ("3. [GET] …/api/stats…" or "[3] …").
var requestLineRE = regexp.MustCompile(`(?m)^\D{0,4}(\d+)\D[^\n]*/tasks/api/stats`)

// statsDoneRE finds the stats request answered in a listing, as either
// server prints it ("… => [200] OK", "… Fetch [200]").
var statsDoneRE = regexp.MustCompile(`/tasks/api/stats[^\n]*\[200\]`)

func taskNetwork(r *taskRun, site *taskSite) error {
	if _, err := r.must("browser_navigate", map[string]any{"url": site.url("network.html")}); err != nil {
		return err
	}
	list, err := r.must("browser_network_requests", map[string]any{})
	if err != nil {
		return err
	}
	if !statsDoneRE.MatchString(list) { // the page's scripts not done yet (no stats request, or pending)
		if _, err := r.must("browser_wait_for", map[string]any{"text": "Figures for the last 7 days"}); err != nil {
			return err
		}
		if list, err = r.must("browser_network_requests", map[string]any{}); err != nil {
			return err
		}
	}
	m := requestLineRE.FindStringSubmatch(list)
	if m == nil {
		return notDone("no stats request in the listing")
	}
	n, _ := strconv.Atoi(m[1])
	detail, err := r.must("browser_network_request", map[string]any{"index": n})
	if err != nil {
		return err
	}
	if !r.seen(taskStatsVisits) && strings.Contains(detail, "response-body") { // the body is a part of its own
		if _, err := r.must("browser_network_request", map[string]any{"index": n, "part": "response-body"}); err != nil {
			return err
		}
	}
	if !r.seen(taskStatsVisits) {
		return notDone("the stats response's visits were not in the text")
	}
	return nil
}

// must2 turns a call's result into must's: a tool error ends the task.
func (r *taskRun) must2(text string, isErr bool, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if isErr {
		return text, fmt.Errorf("tool error: %.200s", text)
	}
	return text, nil
}
