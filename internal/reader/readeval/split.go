package readeval

import (
	"errors"
	"fmt"
)

// ErrHeldOut is returned when held-out pages are asked for without final:
// they are scored once, at the end, never while tuning.
var ErrHeldOut = errors.New("readeval: the held-out pages are scored only in a final run (-final)")

// Set names which pages a run scores.
type Set string

// The sets a run can score.
const (
	Tune       Set = "tune"    // the two thirds used while tuning
	HeldOutSet Set = "heldout" // the third kept for the final check
	All        Set = "all"
)

// Select returns the pages of set, at most limit per corpus (0: all),
// spread evenly over each corpus. Held-out pages (set heldout or all) are
// refused unless final is set.
func Select(pages []Page, set Set, final bool, limit int) ([]Page, error) {
	switch set {
	case Tune:
	case HeldOutSet, All:
		if !final {
			return nil, ErrHeldOut
		}
	default:
		return nil, fmt.Errorf("readeval: unknown set %q (tune, heldout, all)", set)
	}
	byCorpus := map[string][]Page{}
	var order []string
	for _, p := range pages {
		keep := set == All || (set == Tune) != HeldOut(p)
		if !keep {
			continue
		}
		if _, ok := byCorpus[p.Corpus]; !ok {
			order = append(order, p.Corpus)
		}
		byCorpus[p.Corpus] = append(byCorpus[p.Corpus], p)
	}
	var out []Page
	for _, c := range order {
		ps := byCorpus[c]
		if limit > 0 && len(ps) > limit {
			step := float64(len(ps)) / float64(limit)
			picked := make([]Page, 0, limit)
			for i := range limit {
				picked = append(picked, ps[int(float64(i)*step)])
			}
			ps = picked
		}
		out = append(out, ps...)
	}
	return out, nil
}
