package e2e

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// suiteOrder lists the parallel suites longest first, by their seconds in
// the parallel phase of a whole run (2026-12-03: SideChannels 111, Reader
// 101, Differential 65, RedTeamPage 54, ...). go test releases paused
// parallel tests in no set order, and a long suite that happened to start
// last ran nearly alone at the end while a core sat idle (Reader started at
// 233 s of a 330 s run). Starting the longest first (the LPT rule) leaves
// the short ones to fill the end. A suite missing here starts after these.
var suiteOrder = []string{
	"TestSideChannels", "TestReader", "TestDifferential", "TestRedTeamPage",
	"TestRedTeam", "TestLeaks", "TestControlsHeaded", "TestMCPServer",
	"TestSelfReach", "TestPolicyFileReload", "TestHAProxyScaleOut",
	"TestControls", "TestMCP", "TestFirewallClients", "TestClients",
	"TestIsolation", "TestServeLifecycle", "TestHeaded", "TestAttach",
	"TestSIGKILLTakesBrowserDown", "TestRedTeamStuckDialog",
	"TestDialogsNeverHang", "TestEgressProxyVectors", "TestIsolationIdle",
	"TestIsolationRequireHeader",
}

// arrivalWait bounds how long the first suite to resume waits for the
// others before the gate picks among those that arrived: every paused
// suite resumes at once, within milliseconds, unless something is wrong.
const arrivalWait = 2 * time.Second

// suiteGate runs the parallel suites limit at a time in suiteOrder. Each
// suite registers while go test still runs the top-level tests one by one
// (before t.Parallel), so when the parallel phase starts the gate knows
// every suite that will ask; it waits (at most arrivalWait) until all have
// arrived, then always starts the earliest in suiteOrder among those
// waiting.
//
// Concurrency: mu guards every field; cond (on mu) is broadcast when a
// slot frees. all is closed, once, when every registered suite has
// arrived. go test's own -parallel is set above the number of suites
// (main_test.go), so that go test never holds a suite the gate would pick.
type suiteGate struct {
	mu         sync.Mutex
	cond       *sync.Cond
	limit      int
	running    int
	registered int
	started    int
	waiting    map[string]bool
	all        chan struct{}
	allOnce    sync.Once
}

// gate is the e2e binary's one suite gate; TestMain sets its limit.
var gate = newSuiteGate(suitesAtOnce)

func newSuiteGate(limit int) *suiteGate {
	g := &suiteGate{limit: limit, waiting: map[string]bool{}, all: make(chan struct{})}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// parallelSuite is t.Parallel for a top-level suite: the suite then waits
// for its turn at the gate and gives its slot back when it ends. It logs
// the wait, which go test counts in the suite's elapsed time and
// scripts/testreport takes off again ("suite gate: waited 12.50s").
func parallelSuite(t *testing.T) {
	gate.register()
	t.Parallel()
	start := time.Now()
	gate.acquire(t.Name())
	t.Logf("suite gate: waited %.2fs for a slot", time.Since(start).Seconds())
	t.Cleanup(gate.release)
}

func (g *suiteGate) register() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.registered++
}

func (g *suiteGate) acquire(name string) {
	g.mu.Lock()
	g.waiting[name] = true
	if len(g.waiting)+g.started >= g.registered {
		g.allOnce.Do(func() { close(g.all) })
	}
	g.mu.Unlock()

	select {
	case <-g.all:
	case <-time.After(arrivalWait):
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	for g.running >= g.limit || g.next() != name {
		g.cond.Wait()
	}
	delete(g.waiting, name)
	g.started++
	g.running++
	g.cond.Broadcast() // the next in order may be waiting on a free slot
}

func (g *suiteGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.cond.Broadcast()
}

// next is the waiting suite that goes first: the earliest in suiteOrder,
// then by name. The caller holds mu.
func (g *suiteGate) next() string {
	best, bestRank := "", len(suiteOrder)+1
	for name := range g.waiting {
		rank := slices.Index(suiteOrder, name)
		if rank < 0 {
			rank = len(suiteOrder)
		}
		if rank < bestRank || (rank == bestRank && name < best) {
			best, bestRank = name, rank
		}
	}
	return best
}

// TestSuiteGateOrder: suites that arrive in any order start in suiteOrder,
// limit at a time.
func TestSuiteGateOrder(t *testing.T) {
	g := newSuiteGate(1)
	names := []string{"TestIsolationIdle", "TestZZNotListed", "TestReader", "TestSideChannels"}
	for range names {
		g.register()
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, n := range names { // the reverse of suiteOrder, and one unlisted
		wg.Go(func() {
			g.acquire(n)
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
			g.release()
		})
	}
	wg.Wait()
	want := []string{"TestSideChannels", "TestReader", "TestIsolationIdle", "TestZZNotListed"}
	if !slices.Equal(order, want) {
		t.Errorf("started %v, want %v", order, want)
	}
}
