package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pctab/pctab/internal/plots"
	"github.com/pctab/pctab/lookupbench"
	"github.com/pctab/pctab/objscan"
)

// writePlots writes -svg's plots of one binary to dir.
func writePlots(dir string, res binResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	date := time.Now().UTC().Format("2006-01-02")
	type file struct {
		name string
		svg  func(*bytes.Buffer) error
	}
	var files []file
	if r := res.size; r != nil {
		sub := fmt.Sprintf("pctab-stats -svg · %s (%s/%s, %s, %d functions) · %s", res.name, r.GOOS, r.GOARCH, orDash(r.GoVersion), r.Functions, date)
		// The pctab toolchain's tables, when the report sized the variants.
		variant := "spec"
		if r.Variants != nil {
			variant = objscan.LinearVarintPCLnVariant
		}
		c, err := plots.Kinds(r, variant, fmt.Sprintf("Table bytes per kind: varint to linear (%s)", variant), sub)
		if err != nil {
			return err
		}
		files = append(files, file{res.name + ".table-kinds.svg", func(b *bytes.Buffer) error { return c.WriteSVG(b) }})
	}
	if o := res.offsets; o != nil {
		p := plots.Offsets(o, "Lookup time against the PC's offset into its function", offsetSubtitle(res.name, o, date))
		files = append(files, file{res.name + ".lookup-offset.svg", func(b *bytes.Buffer) error { return p.WriteSVG(b) }})
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := f.svg(&b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// offsetSubtitle says what timed an Offsets result: the binary, the host,
// the rounds and how loaded the machine was.
func offsetSubtitle(bin string, r *lookupbench.Result, date string) string {
	h := r.Host
	s := fmt.Sprintf("pctab-stats -bench -svg · %s · %s/%s %s, GOMAXPROCS %d\nhot-shuffled sets of %d pairs per bucket · %d rounds of %s · %s",
		bin, h.GOOS, h.GOARCH, h.CPU, h.GOMAXPROCS, groupSamples(r), r.Count, r.BenchTime, date)
	if r.WallPerCPU > 1.05 {
		s += fmt.Sprintf(" · loaded machine: wall/CPU %.2f", r.WallPerCPU)
	}
	return s
}

func groupSamples(r *lookupbench.Result) int {
	for _, g := range r.Groups {
		if g.Samples > 0 {
			return g.Samples
		}
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
