package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// defaultBinaries are tried in order on PATH when LaunchOptions.Path is "".
var defaultBinaries = [...]string{"chromium", "chromium-browser", "google-chrome"}

const (
	// exitGrace is how long Close lets Chrome shut down by itself after its
	// pipe closed before killing its process group.
	exitGrace = 2 * time.Second
	// reapWait bounds each wait of Close after a SIGKILL.
	reapWait = 3 * time.Second
	// stderrTail is how much of Chrome's last output a start-up error quotes.
	stderrTail = 2048
)

// LaunchOptions configures Launch. The zero value launches the first Chrome
// on PATH, headless, in a fresh profile that Close removes.
type LaunchOptions struct {
	// Path is the chrome binary; "" = first of chromium, chromium-browser,
	// google-chrome on PATH.
	Path string
	// Headed shows a window; otherwise --headless and --disable-gpu are set.
	Headed bool
	// UserDataDir is the profile directory; "" = a fresh temp dir removed on
	// Close, or by the next Launch on this machine if this process is
	// killed outright (profile.go).
	UserDataDir string
	// Flags are the user's extra flags, each one whole flag like
	// "--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND" (never
	// split on commas). Launch refuses those CheckFlags refuses.
	Flags []string
	// GuardFlags are cdpguard's own flags (e.g. --proxy-server=...), merged
	// after Flags, so they win.
	GuardFlags []string
	// Stderr receives Chrome's stdout and stderr (nil = discard).
	Stderr io.Writer
	// MaxMessage bounds one message read from the browser; zero means
	// MaxMessageSize.
	MaxMessage int
	// Log receives the one line of a sweep that removed the profiles of
	// cdpguard processes that died without their Close (nil: no log).
	Log *slog.Logger
	// OnOversize, if set, is told of each message over MaxMessage the
	// pipe skipped, by what became of it: "answer" (a CDP error for its
	// id), "requestPaused" (failed by the judge) or "event" (dropped). It
	// runs on the reading goroutine and must not block.
	OnOversize func(kind string)
}

// Process is a Chrome launched by Launch with its one pipe connection.
type Process struct {
	cmd     *exec.Cmd
	conn    Conn
	pipe    *pipeConn
	profile *profile // the fresh profile Close removes, if Launch made one
	version *Version

	done    chan struct{}
	exitErr error // written before done is closed

	stderrR    *os.File
	stderrDone chan struct{}
	tail       *tailWriter

	closeOnce sync.Once
	closeErr  error
}

// Launch starts Chrome with --remote-debugging-pipe and returns once it has
// answered Browser.getVersion on the pipe. ctx bounds start-up only: the
// browser lives until Close, until it exits, or until this process dies
// (Linux: Pdeathsig). On any error nothing is left running.
func Launch(ctx context.Context, opts LaunchOptions) (*Process, error) {
	path, err := findBinary(opts.Path)
	if err != nil {
		return nil, err
	}
	if err := CheckFlags(opts.Flags); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch chrome: %w", err)
	}
	p := &Process{
		done:       make(chan struct{}),
		stderrDone: make(chan struct{}),
		tail:       &tailWriter{max: stderrTail},
	}
	if opts.UserDataDir == "" {
		prof, err := newProfile(os.TempDir(), opts.Log)
		if err != nil {
			return nil, err
		}
		p.profile, opts.UserDataDir = prof, prof.dir
	}
	if err := p.start(path, BuildArgs(opts), opts.Stderr); err != nil {
		p.removeTemp()
		return nil, err
	}
	p.pipe.onOversize = opts.OnOversize // before the handshake's first read
	if opts.MaxMessage > 0 {
		p.pipe.maxMsg = opts.MaxMessage
	}
	v, pending, err := handshake(ctx, p.pipe, func() { killGroup(p.cmd) })
	if err != nil {
		_ = p.Close()
		if tail := p.tail.String(); tail != "" {
			return nil, fmt.Errorf("%w (chrome output: %s)", err, tail)
		}
		return nil, err
	}
	p.version = v
	p.conn = withReplay(p.pipe, pending)
	return p, nil
}

// start creates the pipes and starts the process.
func (p *Process) start(path string, args []string, stderr io.Writer) (err error) {
	var files []*os.File // closed on return: the child has its own copies
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("create chrome pipe: %w", err)
		}
		files = append(files, r, w)
		return r, w, nil
	}
	cmdR, cmdW, err := pipe() // we write commands, Chrome reads fd 3
	if err != nil {
		return err
	}
	respR, respW, err := pipe() // Chrome writes fd 4, we read replies
	if err != nil {
		return err
	}
	outR, outW, err := pipe() // Chrome's stdout and stderr
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{cmdR, respW}
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.SysProcAttr = sysProcAttr()
	p.cmd = cmd

	started := make(chan error, 1)
	go p.run(started)
	if err := <-started; err != nil {
		return fmt.Errorf("start chrome %s: %w", path, err)
	}
	// Keep our ends; the deferred loop closes the child's ends.
	files = []*os.File{cmdR, respW, outW}
	p.pipe = newPipeConn(respR, cmdW)
	p.stderrR = outR
	if stderr == nil {
		stderr = io.Discard
	}
	go func() {
		defer close(p.stderrDone)
		_, _ = io.Copy(io.MultiWriter(stderr, p.tail), outR)
	}()
	return nil
}

// run starts Chrome and waits for it on one locked OS thread. On Linux
// Pdeathsig fires when the *thread* that forked the child exits, not the
// process, and Go retires a thread whose goroutine ends locked to it: the
// forking goroutine keeps its thread locked and blocked in Wait for as long
// as Chrome lives, so no other goroutine can run there and end locked.
// Once Chrome is gone it unlocks before it returns, because ending locked
// would retire the thread, and other goroutines may have forked children
// with Pdeathsig on it before run took it (in CI this killed a browser an
// e2e test had started: TestRunKeepsItsThread). chromedp's allocator does
// the same (go.dev/issue/27505).
func (p *Process) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := p.cmd.Start(); err != nil {
		close(p.done)
		started <- err
		return
	}
	started <- nil
	p.exitErr = p.cmd.Wait()
	close(p.done)
}

// findBinary resolves LaunchOptions.Path.
func findBinary(path string) (string, error) {
	if path != "" {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %w", ErrBrowserNotFound, path, err)
		}
		return found, nil
	}
	for _, name := range defaultBinaries {
		if found, err := exec.LookPath(name); err == nil {
			return found, nil
		}
	}
	return "", fmt.Errorf("%w on PATH (tried %s); set the path explicitly", ErrBrowserNotFound, strings.Join(defaultBinaries[:], ", "))
}

// Conn returns the pipe connection to the browser.
func (p *Process) Conn() Conn { return p.conn }

// Pid returns Chrome's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Version returns what the browser answered to Browser.getVersion at start-up
// (WebKitVersion and WebSocketDebuggerURL are empty: the pipe has neither).
func (p *Process) Version() *Version { return p.version }

// Done is closed when the chrome process exits.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how Chrome exited (nil for status 0); call it after Done.
func (p *Process) ExitErr() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Close closes the pipe, gives Chrome a short grace to exit, kills its whole
// process group (renderers and zygotes too), waits for it, and removes the
// temporary user-data-dir. Idempotent; later calls return the first result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.close() })
	return p.closeErr
}

func (p *Process) close() error {
	var errs []error
	conn := Conn(p.pipe)
	if p.conn != nil {
		conn = p.conn // also drops messages not yet replayed
	}
	if p.pipe != nil {
		if err := conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close chrome pipe: %w", err))
		}
	}
	if p.cmd.Process != nil {
		select {
		case <-p.done:
		case <-time.After(exitGrace):
		}
		// Always: children may outlive the main process.
		killGroup(p.cmd)
		select {
		case <-p.done:
		case <-time.After(reapWait):
			errs = append(errs, fmt.Errorf("chrome pid %d did not exit after SIGKILL", p.cmd.Process.Pid))
		}
		if err := waitGroupGone(p.cmd, reapWait); err != nil {
			errs = append(errs, err)
		}
	}
	if p.stderrR != nil {
		select {
		case <-p.stderrDone:
		case <-time.After(reapWait):
			// A straggler still holds the write end; stop copying.
			_ = p.stderrR.Close()
			<-p.stderrDone
		}
		_ = p.stderrR.Close()
	}
	if err := p.removeTemp(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p *Process) removeTemp() error {
	if p.profile == nil {
		return nil
	}
	return p.profile.remove()
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
