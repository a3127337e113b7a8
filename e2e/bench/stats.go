package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// result is one workload's figures; times in ms.
type result struct {
	Key            string    `json:"key"`
	Name           string    `json:"name"`
	Pairs          int       `json:"pairs"`
	Direct         []float64 `json:"directMs"`
	Guard          []float64 `json:"cdpguardMs"`
	Ratios         []float64 `json:"pairRatios"`
	DirectMedian   float64   `json:"directMedianMs"`
	GuardMedian    float64   `json:"cdpguardMedianMs"`
	RatioOfMedians float64   `json:"ratioOfMedians"`
	MedianRatio    float64   `json:"medianPairRatio"`
	Target         float64   `json:"targetRatio"`
	Met            bool      `json:"targetMet"`
	Error          string    `json:"error,omitzero"`
}

// memResult is cdpguard's resident memory with some idle users connected.
type memResult struct {
	Users    int     `json:"users"`
	RSSMB    float64 `json:"rssMB"`
	TargetMB float64 `json:"targetMB,omitzero"`
	Met      *bool   `json:"targetMet,omitzero"` // nil when the count has no target
}

// report is the whole run, as printed or written with -json.
type report struct {
	Chrome       string       `json:"chrome"`
	InProcess    bool         `json:"cdpguardInProcess"`
	Results      []result     `json:"results"`
	Memory       []memResult  `json:"memory,omitzero"`
	MemoryError  string       `json:"memoryError,omitzero"`
	MCP          *mcpReport   `json:"mcp,omitzero"`
	Tasks        *tasksReport `json:"tasks,omitzero"`
	RuntimeSec   float64      `json:"runtimeSeconds"`
	NoiseWarning string       `json:"note"`
	Baseline     string       `json:"baseline,omitzero"` // what the "direct" column is, when not direct Chromium
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// interleave runs warm unrecorded then n recorded pairs, alternating which
// side goes first so that neither always runs on a warmer machine.
func interleave(ctx context.Context, w workload, direct, guard measureFunc) (result, error) {
	r := result{Key: w.key, Name: w.name, Target: w.target}
	for i := -w.warm; i < w.pairs; i++ {
		order := []measureFunc{direct, guard}
		if i%2 != 0 {
			order = []measureFunc{guard, direct}
		}
		var got [2]float64
		for k, m := range order {
			v, err := m(ctx, i+w.warm)
			if err != nil {
				return r, fmt.Errorf("%s pair %d: %w", w.key, i, err)
			}
			got[k] = v
		}
		if i%2 != 0 {
			got[0], got[1] = got[1], got[0]
		}
		if i >= 0 {
			r.Direct = append(r.Direct, got[0])
			r.Guard = append(r.Guard, got[1])
			r.Ratios = append(r.Ratios, got[1]/got[0])
			r.Pairs++
		}
		fmt.Fprintf(os.Stderr, "  %-6s %3d  direct %9.1f ms  cdpguard %9.1f ms  ratio %.3f%s\n",
			w.key, i, got[0], got[1], got[1]/got[0], map[bool]string{true: "  (warm-up)"}[i < 0])
	}
	r.DirectMedian, r.GuardMedian = median(r.Direct), median(r.Guard)
	r.RatioOfMedians = r.GuardMedian / r.DirectMedian
	r.MedianRatio = median(r.Ratios)
	r.Met = r.MedianRatio <= r.Target
	return r, nil
}

func printTable(w io.Writer, rep report) {
	fmt.Fprintf(w, "\ncdpguard bench (chromium %s; cdpguard %s; interleaved pairs, alternating order)\n",
		rep.Chrome, map[bool]string{true: "in-process via cdpguard.Launch", false: "binary"}[rep.InProcess])
	if rep.Baseline != "" {
		fmt.Fprintf(w, "the direct column is %s\n", rep.Baseline)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tpairs\tdirect ms\tcdpguard ms\tratio of medians\tmedian pair ratio\ttarget\tmet\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t≤ %.2fx\tERROR: %s\t\n", r.Name, r.Target, oneLine(r.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.3fx\t%.3fx\t≤ %.2fx\t%s\t\n",
			r.Name, r.Pairs, r.DirectMedian, r.GuardMedian, r.RatioOfMedians, r.MedianRatio, r.Target, yesNo(r.Met))
	}
	for _, m := range rep.Memory {
		target := "-"
		met := "-"
		if m.TargetMB > 0 {
			target = fmt.Sprintf("< %.0f MB", m.TargetMB)
		}
		if m.Met != nil {
			met = yesNo(*m.Met)
		}
		fmt.Fprintf(tw, "cdpguard RSS, %d idle users\t-\t-\t%.1f MB\t-\t-\t%s\t%s\t\n", m.Users, m.RSSMB, target, met)
	}
	if rep.MemoryError != "" {
		fmt.Fprintf(tw, "cdpguard RSS\t-\t-\t-\t-\t-\t< 60 MB\tERROR: %s\t\n", oneLine(rep.MemoryError))
	}
	_ = tw.Flush()
	printMCP(w, rep.MCP)
	printTasks(w, rep.Tasks)
	fmt.Fprintf(w, "page load: accepted bar ≤ 1.30x (where the cost comes from: docs/decisions/2026-11-30-fetch-cost.md).\n")
	fmt.Fprintf(w, "runtime %.0f s. %s\n", rep.RuntimeSec, rep.NoiseWarning)
}

func writeJSON(w io.Writer, rep report) error {
	b, err := jsonv2.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
