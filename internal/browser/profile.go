package browser

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

const (
	// profilePrefix starts the name of every fresh profile directory Launch
	// creates in the temporary directory.
	profilePrefix = "cdpguard-chrome-"
	// profileLock is the file in a fresh profile directory that its owner
	// holds an exclusive lock on for as long as it lives. The kernel drops
	// the lock when the owner dies, however it dies, so an unlocked one
	// marks a directory nobody will remove.
	profileLock = "cdpguard.lock"
)

// profile is a fresh profile directory and the open file that holds its
// lock.
type profile struct {
	dir  string
	lock *os.File
}

// newProfile sweeps the temporary directory of profiles left by cdpguard
// processes that died without their Close (SIGKILL, the OOM killer, a power
// cut: a profile is tens of megabytes, and a daemon that restarts in a loop
// would fill the disk), then creates a fresh one in it, locked. A sweep
// that removed any says so on log (nil: no log).
func newProfile(tmp string, log *slog.Logger) (*profile, error) {
	if n := sweepProfiles(tmp); n > 0 && log != nil {
		log.Warn("removed browser profiles left by cdpguard processes that died without closing", "profiles", n, "dir", tmp)
	}
	dir, err := os.MkdirTemp(tmp, profilePrefix)
	if err != nil {
		return nil, fmt.Errorf("create chrome user-data-dir: %w", err)
	}
	lock, err := lockProfile(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("lock chrome user-data-dir: %w", err)
	}
	return &profile{dir: dir, lock: lock}, nil
}

// lockProfile creates dir's lock file already locked: it is created and
// locked under another name and renamed into place (the lock stays with the
// file), so a sweep never finds profileLock unlocked while its owner lives.
// Where locks are not supported it returns a nil file and no sweep removes
// the directory.
func lockProfile(dir string) (*os.File, error) {
	if !canLock {
		return nil, nil
	}
	tmp := filepath.Join(dir, profileLock+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if !tryLock(f) {
		_ = f.Close()
		return nil, errors.New("lock held by another process")
	}
	if err := os.Rename(tmp, filepath.Join(dir, profileLock)); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// remove deletes the directory, then lets go of its lock.
func (p *profile) remove() error {
	err := os.RemoveAll(p.dir)
	if p.lock != nil {
		_ = p.lock.Close()
	}
	if err != nil {
		return fmt.Errorf("remove chrome user-data-dir: %w", err)
	}
	return nil
}

// sweepProfiles removes each directory in tmp named like a fresh profile,
// owned by this user and not a symbolic link, whose lock file it can lock:
// its owner is gone. A directory without a lock file is left alone (one
// being created, or an older cdpguard's), as is everything it cannot lock,
// read or remove. It returns how many it removed.
func sweepProfiles(tmp string) int {
	if !canLock {
		return 0
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		// The entry's type is lstat's: a symbolic link is not a directory.
		if !strings.HasPrefix(e.Name(), profilePrefix) || !e.IsDir() {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if !ownedByMe(dir) {
			continue
		}
		f, err := openNoFollow(filepath.Join(dir, profileLock))
		if err != nil {
			continue
		}
		if tryLock(f) && os.RemoveAll(dir) == nil {
			removed++
		}
		_ = f.Close()
	}
	return removed
}
