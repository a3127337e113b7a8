//go:build !unix

package browser

import "os"

// canLock: no sweep where flock(2) is missing; a profile left by a
// cdpguard killed outright stays in the temporary directory.
const canLock = false

func tryLock(*os.File) bool { return false }

func ownedByMe(string) bool { return false }

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
