package main

import (
	"embed"
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// taskFixtures are the task bench's pages; header.html and footer.html are
// put in at <!--HEADER--> and <!--FOOTER-->, {{BLOCKED}} becomes the
// forbidden host's origin.
//
//go:embed testdata/tasks
var taskFixtures embed.FS

// Facts the task checks look for in what the model was given.
const (
	taskArticleFact = "rose to 412 in the 2026 survey"
	taskTableCity   = "Lyon"
	taskTableValue  = "522,250"
	taskLongFact    = "kept for 400 days"
	taskOrderID     = "A-1042"
	taskStatsVisits = "18342"
	taskCookieName  = "gazette_session"
	taskCookieValue = "s-7f3a9c"
)

// taskSite serves the task pages as allowed.test and a forbidden host
// (blocked.test, a real listener that must see no request).
type taskSite struct {
	srv, forbidden *http.Server
	base           string       // http://allowed.test:PORT
	blockedOrigin  string       // http://blocked.test:PORT
	blockedReqs    atomic.Int64 // requests the forbidden host answered
	blockedConns   atomic.Int64 // connections to it (a preconnect is one)
	downloads      atomic.Int64 // requests for the CSV report
}

func startTaskSite() (*taskSite, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("task site listen: %w", err)
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("forbidden listen: %w", err)
	}
	s := &taskSite{
		base:          fmt.Sprintf("http://%s:%d", siteHost, ln.Addr().(*net.TCPAddr).Port),
		blockedOrigin: fmt.Sprintf("http://blocked.test:%d", fl.Addr().(*net.TCPAddr).Port),
	}
	s.srv = &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	s.forbidden = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.blockedReqs.Add(1)
		writeBody(w, "text/html", []byte("<!doctype html><title>River Tours</title><p>FORBIDDEN-PAGE-LOADED</p>"))
	})}
	// A connection counts as a hit too: a blocked request must not even connect.
	s.forbidden.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.blockedConns.Add(1)
		}
	}
	go func() { _ = s.srv.Serve(ln) }()
	go func() { _ = s.forbidden.Serve(fl) }()
	return s, nil
}

func (s *taskSite) close() {
	_ = s.srv.Close()
	_ = s.forbidden.Close()
}

func (s *taskSite) url(path string) string { return s.base + "/tasks/" + path }

// page reads a fixture with its header and footer put in.
func (s *taskSite) page(name string) ([]byte, error) {
	b, err := taskFixtures.ReadFile("testdata/tasks/" + name)
	if err != nil {
		return nil, err
	}
	head, _ := taskFixtures.ReadFile("testdata/tasks/header.html")
	foot, _ := taskFixtures.ReadFile("testdata/tasks/footer.html")
	out := strings.NewReplacer("<!--HEADER-->", string(head), "<!--FOOTER-->", string(foot), "{{BLOCKED}}", s.blockedOrigin).Replace(string(b))
	return []byte(out), nil
}

// wrap puts a generated body in the site's page frame.
func (s *taskSite) wrap(title, body string) []byte {
	head, _ := taskFixtures.ReadFile("testdata/tasks/header.html")
	foot, _ := taskFixtures.ReadFile("testdata/tasks/footer.html")
	return fmt.Appendf(nil, "<!doctype html><html lang=en><head><meta charset=utf-8><title>%s</title></head><body>\n%s<main>\n%s\n</main>\n%s</body></html>\n",
		html.EscapeString(title), head, body, foot)
}

func (s *taskSite) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /tasks/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !strings.HasSuffix(name, ".html") || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		b, err := s.page(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		writeBody(w, "text/html; charset=utf-8", b)
	})
	m.HandleFunc("GET /tasks/results", s.serveResults)
	m.HandleFunc("POST /tasks/signup/plan", s.serveSignupPlan)
	m.HandleFunc("POST /tasks/signup/done", s.serveSignupDone)
	m.HandleFunc("GET /tasks/table", s.serveTable)
	m.HandleFunc("GET /tasks/long", s.serveLong)
	m.HandleFunc("POST /tasks/login", s.serveLogin)
	m.HandleFunc("GET /tasks/account", s.serveAccount)
	m.HandleFunc("GET /tasks/orders", s.serveOrders)
	m.HandleFunc("GET /tasks/report.csv", func(w http.ResponseWriter, _ *http.Request) {
		s.downloads.Add(1)
		w.Header().Set("Content-Disposition", `attachment; filename="readership-2026.csv"`)
		writeBody(w, "text/csv", []byte("month,readers\njan,41200\nfeb,40870\nmar,43010\n"))
	})
	m.HandleFunc("GET /tasks/api/plans", func(w http.ResponseWriter, r *http.Request) {
		select { // a real API's latency: the view renders after it
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		writeBody(w, "application/json", []byte(`[{"name":"Basic","price":"£4/month","note":"web only"},{"name":"Plus","price":"£9/month","note":"web and app, no ads"},{"name":"Print","price":"£19/month","note":"Saturday paper delivered"}]`))
	})
	m.HandleFunc("GET /tasks/api/me", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, "application/json", []byte(`{"id":"u-5521","name":"Ada","plan":"plus"}`))
	})
	m.HandleFunc("GET /tasks/api/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, "application/json", []byte(`{"range":"7d","visits":`+taskStatsVisits+`,"articlesRead":57,"minutes":212}`))
	})
	return m
}

func (s *taskSite) serveResults(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	titles := []string{
		"Ferry timetable changes from Monday", "Council approves new footbridge at Marlow",
		"Flood defences tested after record rainfall", "Rowing club celebrates its 150th year",
		"Market hall reopens after restoration", "Kingfishers return to the Wey",
		"Water quality: what the new figures mean", "Otter survey 2026: full results and maps",
		"Otters and anglers: sharing the river", "Letters: the otter debate",
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<h1>Results for “%s”</h1>\n<ol>\n", html.EscapeString(q))
	n := 0
	for i, t := range titles {
		for _, word := range strings.Fields(strings.ToLower(q)) {
			if strings.Contains(strings.ToLower(t), strings.TrimSuffix(word, "s")) {
				fmt.Fprintf(&b, "<li><a href=\"/tasks/article.html#a%d\">%s</a><p>Published %d November 2026. %s</p></li>\n", i, html.EscapeString(t), i+1, html.EscapeString(t))
				n++
				break
			}
		}
	}
	fmt.Fprintf(&b, "</ol>\n<p>%d results</p>", n)
	writeBody(w, "text/html; charset=utf-8", s.wrap("Search results | Riverside Gazette", b.String()))
}

func (s *taskSite) serveSignupPlan(w http.ResponseWriter, r *http.Request) {
	name, email := r.PostFormValue("name"), r.PostFormValue("email")
	if name == "" || email == "" {
		writeBody(w, "text/html; charset=utf-8", s.wrap("Join the Gazette: step 1 of 2", "<p role=alert>Please give your name and email address.</p><p><a href=\"/tasks/signup.html\">Back</a></p>"))
		return
	}
	body := fmt.Sprintf(`<h1>Become a member</h1><p>Step 2 of 2: your plan, %s</p>
<form action="/tasks/signup/done" method="post">
<input type="hidden" name="name" value="%s"><input type="hidden" name="email" value="%s">
<p><label for="plan">Plan</label> <select id="plan" name="plan"><option value="basic">Basic (£4/month)</option><option value="plus">Plus (£9/month)</option><option value="print">Print (£19/month)</option></select></p>
<p><label><input type="checkbox" name="terms" value="yes"> I accept the membership terms</label></p>
<button type="submit">Join</button>
</form>`, html.EscapeString(name), html.EscapeString(name), html.EscapeString(email))
	writeBody(w, "text/html; charset=utf-8", s.wrap("Join the Gazette: step 2 of 2", body))
}

func (s *taskSite) serveSignupDone(w http.ResponseWriter, r *http.Request) {
	f := func(k string) string { return html.EscapeString(r.PostFormValue(k)) }
	if r.PostFormValue("terms") != "yes" {
		writeBody(w, "text/html; charset=utf-8", s.wrap("Join the Gazette", "<p role=alert>Please accept the membership terms.</p>"))
		return
	}
	writeBody(w, "text/html; charset=utf-8", s.wrap("Welcome to the Gazette", fmt.Sprintf(
		"<h1>Welcome, %s</h1><p>MEMBER name=%s email=%s plan=%s</p><p>Your membership card is on its way.</p>", f("name"), f("name"), f("email"), f("plan"))))
}

// tableCities are the table lookup's rows (city, country, population, area
// km², founded).
var tableCities = [][5]string{
	{"Amsterdam", "Netherlands", "931,298", "219", "1275"}, {"Antwerp", "Belgium", "536,079", "204", "726"},
	{"Barcelona", "Spain", "1,660,122", "101", "15 BC"}, {"Basel", "Switzerland", "177,595", "24", "44 BC"},
	{"Bergen", "Norway", "291,940", "465", "1070"}, {"Bologna", "Italy", "392,203", "141", "196 BC"},
	{"Bordeaux", "France", "261,804", "49", "300 BC"}, {"Bratislava", "Slovakia", "475,503", "367", "907"},
	{"Bruges", "Belgium", "119,125", "138", "900"}, {"Brno", "Czechia", "398,510", "230", "1243"},
	{"Cologne", "Germany", "1,084,831", "405", "38 BC"}, {"Cork", "Ireland", "224,004", "187", "600"},
	{"Dresden", "Germany", "563,311", "328", "1206"}, {"Edinburgh", "United Kingdom", "514,990", "264", "1124"},
	{"Florence", "Italy", "360,930", "102", "59 BC"}, {"Gdańsk", "Poland", "486,345", "262", "997"},
	{"Geneva", "Switzerland", "203,856", "16", "121 BC"}, {"Genoa", "Italy", "558,745", "243", "500 BC"},
	{"Ghent", "Belgium", "265,086", "156", "630"}, {"Gothenburg", "Sweden", "607,882", "448", "1621"},
	{"Graz", "Austria", "298,479", "128", "1128"}, {"Hamburg", "Germany", "1,964,021", "755", "808"},
	{"Kraków", "Poland", "804,237", "327", "1257"}, {"Leipzig", "Germany", "619,879", "298", "1165"},
	{"Lille", "France", "236,234", "35", "1066"}, {"Ljubljana", "Slovenia", "295,504", "164", "1144"},
	{"Lyon", "France", "522,250", "48", "43 BC"}, {"Malmö", "Sweden", "362,133", "158", "1275"},
	{"Marseille", "France", "873,076", "241", "600 BC"}, {"Munich", "Germany", "1,512,491", "311", "1158"},
	{"Naples", "Italy", "909,048", "119", "600 BC"}, {"Nantes", "France", "320,732", "65", "70 BC"},
	{"Nice", "France", "348,085", "72", "350 BC"}, {"Porto", "Portugal", "231,962", "41", "300 BC"},
	{"Rotterdam", "Netherlands", "655,468", "324", "1270"}, {"Salzburg", "Austria", "155,021", "66", "696"},
	{"Seville", "Spain", "681,998", "140", "8th c. BC"}, {"Strasbourg", "France", "290,576", "78", "12 BC"},
	{"Toulouse", "France", "504,078", "118", "3rd c. BC"}, {"Turin", "Italy", "841,600", "130", "28 BC"},
	{"Utrecht", "Netherlands", "361,924", "99", "47"}, {"Valencia", "Spain", "807,693", "135", "138 BC"},
	{"Wrocław", "Poland", "674,132", "293", "1000"}, {"Zagreb", "Croatia", "767,131", "641", "1094"},
	{"Zürich", "Switzerland", "423,193", "88", "15 BC"},
}

func (s *taskSite) serveTable(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	b.WriteString("<h1>European cities: facts and figures</h1><p>Populations are for the city proper, latest census.</p>\n")
	b.WriteString("<table><caption>Cities by name</caption><thead><tr><th>City</th><th>Country</th><th>Population</th><th>Area (km²)</th><th>Founded</th></tr></thead><tbody>\n")
	for _, c := range tableCities {
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", c[0], c[1], c[2], c[3], c[4])
	}
	b.WriteString("</tbody></table>")
	writeBody(w, "text/html; charset=utf-8", s.wrap("European cities | Riverside Gazette", b.String()))
}

// serveLong is a staff handbook of 60 sections (about 50,000 characters of
// text); the fact the task looks for is in section 56.
func (s *taskSite) serveLong(w http.ResponseWriter, _ *http.Request) {
	topics := []string{"Working hours", "Leave", "Expenses", "Travel", "Equipment", "Security", "Training", "Health and safety", "Conduct", "Sources"}
	var b strings.Builder
	b.WriteString("<h1>Newsroom handbook</h1><nav aria-label=Contents><ol>")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "<li><a href=\"#s%d\">%d. %s</a></li>", i, i, sectionTitle(topics, i))
	}
	b.WriteString("</ol></nav>\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "<section id=s%d><h2>%d. %s</h2>\n", i, i, sectionTitle(topics, i))
		for p := range 3 {
			fmt.Fprintf(&b, "<p>Paragraph %d.%d. Staff should follow the guidance in this section and ask their editor when a case is not covered. "+
				"Records of decisions made under it are kept with the desk that made them, reviewed each quarter by the standards team, and summarised in the annual report to the board. "+
				"Exceptions need written approval from the managing editor.</p>\n", i, p+1)
		}
		if i == 56 {
			b.WriteString("<p>Interview recordings and notes are " + taskLongFact + " after publication, then deleted unless a legal hold applies.</p>\n")
		}
		b.WriteString("</section>\n")
	}
	writeBody(w, "text/html; charset=utf-8", s.wrap("Newsroom handbook | Riverside Gazette", b.String()))
}

func sectionTitle(topics []string, i int) string {
	if i == 56 {
		return "Data retention"
	}
	return fmt.Sprintf("%s (part %d)", topics[i%len(topics)], i/len(topics)+1)
}

func (s *taskSite) serveLogin(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("user") != "ada" || r.PostFormValue("password") != "otter-2026" {
		writeBody(w, "text/html; charset=utf-8", s.wrap("Sign in | Riverside Gazette", "<h1>Sign in</h1><p role=alert>Wrong username or password.</p>"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: taskCookieName, Value: taskCookieValue, Path: "/tasks/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/tasks/account", http.StatusSeeOther)
}

func (s *taskSite) signedIn(r *http.Request) bool {
	c, err := r.Cookie(taskCookieName)
	return err == nil && c.Value == taskCookieValue
}

func (s *taskSite) serveAccount(w http.ResponseWriter, r *http.Request) {
	if !s.signedIn(r) {
		http.Redirect(w, r, "/tasks/login.html", http.StatusSeeOther)
		return
	}
	writeBody(w, "text/html; charset=utf-8", s.wrap("Your account | Riverside Gazette",
		`<h1>Your account</h1><p>Signed in as ada.</p><ul><li><a href="/tasks/orders">Your orders</a></li><li><a href="/tasks/index.html#settings">Settings</a></li><li><a href="/tasks/index.html#logout">Sign out</a></li></ul>`))
}

func (s *taskSite) serveOrders(w http.ResponseWriter, r *http.Request) {
	if !s.signedIn(r) {
		http.Redirect(w, r, "/tasks/login.html", http.StatusSeeOther)
		return
	}
	writeBody(w, "text/html; charset=utf-8", s.wrap("Your orders | Riverside Gazette",
		`<h1>Your orders</h1><table><thead><tr><th>Order</th><th>Date</th><th>Item</th><th>Status</th></tr></thead><tbody>
<tr><td>`+taskOrderID+`</td><td>2 December 2026</td><td>Gazette tote bag</td><td>Shipped</td></tr>
<tr><td>A-0977</td><td>14 October 2026</td><td>Gift membership</td><td>Delivered</td></tr>
</tbody></table>`))
}
