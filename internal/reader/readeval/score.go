package readeval

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
)

// word is a token as the AEB's evaluate.py counts one (Python's \w+ with
// re.UNICODE).
var word = regexp.MustCompile(`[\p{L}\p{N}\p{M}_]+`)

// Tokens returns the words of s, case kept (as the AEB metric does).
func Tokens(s string) []string { return word.FindAllString(s, -1) }

// Counts are the true positive, false positive and false negative shingles
// of one page, normalised to sum to 1 so that long pages weigh no more than
// short ones (as the AEB metric does).
type Counts struct{ TP, FP, FN float64 }

// Match counts the n-word shingles of pred against truth (n = 4 is the AEB
// metric; n = 1 is single words).
func Match(truth, pred string, n int) Counts {
	t := shingles(Tokens(truth), n)
	p := shingles(Tokens(pred), n)
	var c Counts
	for k, tc := range t {
		pc := p[k]
		c.TP += float64(min(tc, pc))
		c.FN += float64(max(0, tc-pc))
	}
	for k, pc := range p {
		c.FP += float64(max(0, pc-t[k]))
	}
	if s := c.TP + c.FP + c.FN; s > 0 {
		c.TP, c.FP, c.FN = c.TP/s, c.FP/s, c.FN/s
	}
	return c
}

func shingles(toks []string, n int) map[string]int {
	m := map[string]int{}
	for i := 0; i < max(1, len(toks)-n+1); i++ {
		if i >= len(toks) {
			break
		}
		m[strings.Join(toks[i:min(i+n, len(toks))], "\x00")]++
	}
	return m
}

// PageF1 is one page's F1 from its counts.
func PageF1(c Counts) float64 {
	if c.TP == 0 {
		return 0
	}
	return 2 * c.TP / (2*c.TP + c.FP + c.FN)
}

// Metrics are a set of pages' scores: precision and recall are the means
// over pages (a page with no output counts for recall only), F1 their
// harmonic mean, each with the standard deviation of 1,000 bootstrap
// resamples of the pages.
type Metrics struct {
	N                 int
	F1, P, R          float64
	F1Err, PErr, RErr float64
}

func aggregate(cs []Counts) (f1, p, r float64) {
	var ps, rs float64
	var np, nr int
	for _, c := range cs {
		if c.TP+c.FP > 0 {
			np++
			if !(c.FP == 0 && c.FN == 0) {
				ps += c.TP / (c.TP + c.FP)
			} else {
				ps++
			}
		}
		if c.TP+c.FN > 0 {
			nr++
			if !(c.FP == 0 && c.FN == 0) {
				rs += c.TP / (c.TP + c.FN)
			} else {
				rs++
			}
		}
	}
	if np > 0 {
		p = ps / float64(np)
	}
	if nr > 0 {
		r = rs / float64(nr)
	}
	if p+r > 0 {
		f1 = 2 * p * r / (p + r)
	}
	return f1, p, r
}

// Score aggregates per-page counts; the bootstrap uses a fixed seed so that
// a run is reproducible.
func Score(cs []Counts) Metrics {
	m := Metrics{N: len(cs)}
	m.F1, m.P, m.R = aggregate(cs)
	if len(cs) < 2 {
		return m
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const rounds = 1000
	var sf, sp, sr, qf, qp, qr float64
	sample := make([]Counts, len(cs))
	for range rounds {
		for i := range sample {
			sample[i] = cs[rng.IntN(len(cs))]
		}
		f, p, r := aggregate(sample)
		sf, sp, sr = sf+f, sp+p, sr+r
		qf, qp, qr = qf+f*f, qp+p*p, qr+r*r
	}
	sd := func(s, q float64) float64 { return math.Sqrt(max(0, q/rounds-(s/rounds)*(s/rounds))) }
	m.F1Err, m.PErr, m.RErr = sd(sf, qf), sd(sp, qp), sd(sr, qr)
	return m
}

// HeldOut reports whether a page belongs to the held-out third: a fixed
// hash (FNV-1a of corpus/id) modulo 3, so that the split never depends on
// what is being tuned.
func HeldOut(p Page) bool {
	h := fnv.New32a()
	h.Write([]byte(p.Corpus + "/" + p.ID))
	return h.Sum32()%3 == 0
}
