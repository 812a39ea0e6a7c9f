package rewrite

import (
	"fmt"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/report"
)

// Estimate is pctab-stats' estimate of what the linear format costs
// (package report): the linear tables minus the varint tables, plus a uint32
// function length per function.
type Estimate struct {
	Variant        string  `json:"variant"`
	VarintBytes    int64   `json:"varint_bytes"`
	LinearBytes    int64   `json:"linear_bytes"`
	OutOfBandBytes int64   `json:"out_of_band_bytes"`
	Bytes          int64   `json:"bytes"`   // LinearBytes - VarintBytes + OutOfBandBytes
	Percent        float64 `json:"percent"` // of the file
}

// EstimateFor computes report's estimate for f in the named variant. With
// derived set the function lengths cost nothing out of band (replace mode's
// derived lengths).
func EstimateFor(f *objscan.File, variant string, derived bool) (*Estimate, error) {
	v, pclnVarint, err := ResolveVariant(variant)
	if err != nil {
		return nil, err
	}
	r, err := report.Compute(f, report.Options{Variants: !v.IsSpec()})
	if err != nil {
		return nil, fmt.Errorf("estimate: %w", err)
	}
	est := &Estimate{Variant: v.Name, VarintBytes: r.Tables.VarintBytes, LinearBytes: r.Tables.LinearBytes,
		OutOfBandBytes: r.OutOfBandBytes, Percent: r.FileDeltaPercent}
	if !v.IsSpec() {
		rows := r.Variants
		name := v.Name
		if pclnVarint && r.Mix != nil {
			rows, name = []report.VariantRow{*r.Mix}, r.Mix.Name
		}
		est.Variant = name
		found := false
		for _, row := range rows {
			if row.Name == name {
				est.LinearBytes, est.Percent, found = row.Bytes, row.FileDeltaPercent, true
			}
		}
		if !found {
			return nil, fmt.Errorf("estimate: report has no row for variant %s", name)
		}
	}
	if derived {
		est.Percent -= 100 * float64(est.OutOfBandBytes) / float64(r.FileBytes)
		est.OutOfBandBytes = 0
	}
	est.Bytes = est.LinearBytes - est.VarintBytes + est.OutOfBandBytes
	return est, nil
}

// GapItem is one reason the real size difference differs from the estimate.
type GapItem struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Gap explains res.DeltaBytes - est.Bytes: the items add up to it exactly.
// Each part of res contributes its size change, minus what the estimate
// already counts for it (the table bytes for the tables, the function
// lengths for the records).
func Gap(res *Result, est *Estimate) []GapItem {
	var items []GapItem
	add := func(name string, n int64) {
		if n != 0 {
			items = append(items, GapItem{name, n})
		}
	}
	add("linear tables stored minus estimated (padded or differently deduplicated tables)", res.LinearBytes-est.LinearBytes)
	add("varint tables estimated minus found", est.VarintBytes-res.VarintBytes)
	for _, p := range res.Parts {
		switch p.kind {
		case kindTables:
			// The part holds the linear tables and replaces (in replace
			// mode) the varint ones: the rest is padding.
			rest := p.Delta() - res.LinearBytes
			if res.Mode == Replace {
				rest += res.VarintBytes
			}
			add(p.Name+": padding and rounding", rest)
		case kindOutOfBand:
			if est.OutOfBandBytes == 0 {
				add(p.Name, p.Delta())
			} else {
				add(p.Name+": beyond 4 bytes per function", p.Delta()-est.OutOfBandBytes)
			}
		default:
			add(p.Name, p.Delta())
		}
	}
	if res.Mode == Append {
		add("varint tables kept (append mode stores both formats)", res.VarintBytes)
	}
	return items
}

// Part kinds that Gap treats specially.
const (
	kindTables    = "tables"
	kindOutOfBand = "out-of-band"
)
