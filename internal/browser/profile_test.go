//go:build linux

package browser

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepProfiles: a sweep removes exactly the fresh profiles whose owner
// is gone (its lock file closed, or its process killed) and nothing else: a
// live owner's, one without a lock file, a symbolic link, a lock file that
// is a link, another user's, another name.
func TestSweepProfiles(t *testing.T) {
	tmp := t.TempDir()
	live, err := newProfile(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.remove() }()
	closed, err := newProfile(tmp, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.lock.Close() // its owner is gone; the directory stays

	// A real process holds the next one's lock, and is killed: the test
	// binary itself as a lock holder (lockHolderEnv), one process whose
	// reaping by Wait closes its descriptors.
	killed := mkdir(t, tmp, profilePrefix+"killed")
	lockFile := filepath.Join(killed, profileLock)
	write(t, lockFile)
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), lockHolderEnv+"="+lockFile)
	holder.Stderr = os.Stderr
	stdin, err := holder.StdinPipe() // held open: the holder waits on it
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close() }()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	var reaped bool
	kill := func() {
		if !reaped {
			reaped = true
			_ = holder.Process.Kill()
			_ = holder.Wait()
		}
	}
	defer kill()
	said := make(chan string, 1)
	go func() { // ends with the holder's stdout
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != "locked\n" {
			t.Fatalf("lock holder said %q, want \"locked\"", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lock holder did not take the lock within 30s")
	}
	waitLocked(t, lockFile)

	noLock := mkdir(t, tmp, profilePrefix+"nolock")
	outside := mkdir(t, t.TempDir(), "target")
	write(t, filepath.Join(outside, profileLock))
	link := filepath.Join(tmp, profilePrefix+"link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	linkedLock := mkdir(t, tmp, profilePrefix+"linkedlock")
	if err := os.Symlink(filepath.Join(outside, profileLock), filepath.Join(linkedLock, profileLock)); err != nil {
		t.Fatal(err)
	}
	otherName := mkdir(t, tmp, "chrome-profile")
	write(t, filepath.Join(otherName, profileLock))
	kept := []string{live.dir, killed, noLock, outside, link, linkedLock, otherName}
	if os.Getuid() == 0 {
		otherUser := mkdir(t, tmp, profilePrefix+"otheruser")
		write(t, filepath.Join(otherUser, profileLock))
		if err := os.Chown(otherUser, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, otherUser)
	}

	if n := sweepProfiles(tmp); n != 1 {
		t.Errorf("first sweep removed %d, want 1 (the closed one)", n)
	}
	gone(t, closed.dir)
	for _, d := range kept {
		there(t, d)
	}

	kill()
	var logged bytes.Buffer // the next launch's sweep, and its one log line
	next, err := newProfile(tmp, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.remove() }()
	if line := logged.String(); strings.Count(line, "\n") != 1 || !strings.Contains(line, "level=WARN") || !strings.Contains(line, "profiles=1 ") {
		t.Errorf("sweep after the kill logged %q, want one warning naming 1 profile", line)
	}
	gone(t, killed)
	for _, d := range kept[2:] {
		there(t, d)
	}
	there(t, live.dir)
	if err := live.remove(); err != nil {
		t.Fatal(err)
	}
	gone(t, live.dir)
}

func mkdir(t *testing.T, parent, name string) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitLocked waits until another process holds path's lock.
func waitLocked(t *testing.T, path string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got := tryLock(f)
		_ = f.Close() // lets go of it again if we got it
		if !got {
			return
		}
	}
	t.Fatal("flock(1) did not take the lock within 10s")
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

func there(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("%s was removed: %v", path, err)
	}
}
