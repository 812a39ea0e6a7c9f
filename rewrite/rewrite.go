package rewrite

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/verify"
)

// Mode selects how Rewrite stores the linear tables.
type Mode string

// The rewrite modes.
const (
	// Replace rebuilds the pclntab with every table in the linear format.
	// The result is not runnable by a stock runtime; its size is what the
	// linear format costs.
	Replace Mode = "replace"
	// Append keeps the pclntab and adds the linear tables in a new,
	// non-loaded section. The result runs unchanged.
	Append Mode = "append"
)

// Options control Rewrite.
type Options struct {
	Mode    Mode   // Replace or Append; "" means Replace
	Variant string // linearpc variant name; "" means "spec"
	// Derived (replace mode) derives function lengths from the functab,
	// at no cost in bytes, instead of storing them in the _func records
	// (objscan.LinearDerivedMagic, as the pctab toolchain writes by
	// default).
	Derived bool
	// Verify runs Check on the output before returning it (and, in append
	// mode, SameLoadedImage): a rewrite whose output fails it fails.
	Verify  bool
	Workers int // goroutines for Verify; 0 means GOMAXPROCS
}

// Check returns an error if the options contradict each other or name an
// unknown mode or variant, whatever binary they would rewrite: Rewrite
// checks them first, and a command can check them before it reads
// anything.
func (opt Options) Check() error {
	mode := opt.Mode
	if mode == "" {
		mode = Replace
	}
	if mode != Replace && mode != Append {
		return fmt.Errorf("rewrite: unknown mode %q (want %q or %q)", opt.Mode, Replace, Append)
	}
	_, pclnVarint, err := ResolveVariant(opt.Variant)
	if err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	if pclnVarint && (mode != Replace || !opt.Derived) {
		return fmt.Errorf("rewrite: %s needs replace mode with derived lengths, the layout the pctab toolchain writes", opt.Variant)
	}
	if opt.Derived && mode != Replace {
		return errors.New("rewrite: derived function lengths need replace mode (append mode keeps the varint pclntab and stores the lengths in its section)")
	}
	return nil
}

// Part is one contribution to the size difference between the input and
// the output. The parts of a Result add up to its DeltaBytes.
type Part struct {
	Name string `json:"name"`
	Old  int64  `json:"old_bytes"`
	New  int64  `json:"new_bytes"`
	Note string `json:"note,omitempty"`

	kind string // kindTables, kindOutOfBand or ""
}

// Delta is the part's contribution to the size difference.
func (p Part) Delta() int64 { return p.New - p.Old }

// Result describes a rewrite: what was written and where the size
// difference comes from.
type Result struct {
	Mode      Mode   `json:"mode"`
	Variant   string `json:"variant"`
	Derived   bool   `json:"derived_lengths"` // function lengths derived from the functab (replace mode)
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`

	InBytes      int64   `json:"in_bytes"`
	OutBytes     int64   `json:"out_bytes"`
	DeltaBytes   int64   `json:"delta_bytes"`   // OutBytes - InBytes
	DeltaPercent float64 `json:"delta_percent"` // of InBytes

	Funcs         int    `json:"funcs"`
	VarintBytes   int64  `json:"varint_table_bytes"`    // distinct varint tables, terminators included
	LinearBytes   int64  `json:"linear_table_bytes"`    // distinct linear encodings (the set, without padding), and cfps-varint-pcln's varint pcln tables
	LinearTables  int    `json:"linear_tables"`         // distinct linear encodings
	IndexEntries  int    `json:"index_entries"`         // distinct (varint table, function length) pairs
	PaddedTables  int    `json:"padded_tables"`         // encodings of tables extended to their function's length
	EmptyFuncRefs int    `json:"empty_func_table_refs"` // table references of functions covering no PCs (stored as "no table")
	OldPclntab    int64  `json:"old_pclntab_bytes"`
	NewPclntab    int64  `json:"new_pclntab_bytes"`    // replace mode
	SectionBytes  int64  `json:"linear_section_bytes"` // append mode
	Parts         []Part `json:"parts"`

	// Notes describe what the rewrite changed besides the parts, such as
	// the moduledata words and symbols it updated.
	Notes []string `json:"notes,omitempty"`

	// Verify is the result of Check, when Options.Verify is set.
	Verify *verify.Result `json:"verify,omitempty"`
}

// Rewrite rewrites the Go binary whose bytes are data and returns the new
// file's bytes. Replace mode needs an ELF executable (PIE or not,
// internally or externally linked), a 64-bit little-endian Mach-O file or a
// PE file, by Go 1.5 or later (Go 1.2-1.17 layouts are converted to Go
// 1.20's; their PIEs and PE files, whose tables the loader relocates, are
// refused); append mode works on any ELF Go binary objscan reads, and on
// 64-bit little-endian Mach-O and on PE files.
func Rewrite(data []byte, opt Options) ([]byte, *Result, error) {
	if opt.Mode == "" {
		opt.Mode = Replace
	}
	if err := opt.Check(); err != nil {
		return nil, nil, err
	}
	v, pclnVarint, err := ResolveVariant(opt.Variant)
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: %w", err)
	}
	f, err := objscan.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: reading the binary: %w", err)
	}
	if f.Linear != nil {
		return nil, nil, fmt.Errorf("rewrite: the binary was already rewritten (%s mode, variant %s)", f.Linear.Mode, f.Linear.Variant)
	}
	if f.Format != "elf" && f.Format != "macho" && f.Format != "pe" {
		// objscan reads XCOFF (aix/ppc64), Plan 9 a.out and WebAssembly
		// too; rewrite writes none of them.
		name := map[string]string{"xcoff": "XCOFF", "plan9": "Plan 9 a.out", "wasm": "WebAssembly"}[f.Format]
		return nil, nil, fmt.Errorf("rewrite: %s/%s: %s files are not supported: rewrite writes ELF, Mach-O and PE", f.GOOS, f.GOARCH, name)
	}
	if len(f.Funcs) == 0 || f.Sizes.FuncTab < 0 {
		// objscan refuses such tables; a rewrite of one would verify
		// nothing ("0 tables").
		return nil, nil, fmt.Errorf("rewrite: the pclntab has %d functions (functab of %d bytes): nothing to rewrite", len(f.Funcs), f.Sizes.FuncTab)
	}
	var e *elfFile
	if f.Format == "elf" {
		if e, err = parseELF(data); err != nil {
			return nil, nil, fmt.Errorf("rewrite: %w", err)
		}
	}
	lt, err := buildTables(f, v, opt.Derived, pclnVarint)
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: %w", err)
	}
	res := &Result{
		Mode: opt.Mode, Variant: lt.name(), Derived: opt.Derived, GOOS: f.GOOS, GOARCH: f.GOARCH, GoVersion: f.GoVersion,
		InBytes: int64(len(data)), Funcs: len(f.Funcs), VarintBytes: lt.varintBytes,
		LinearBytes: int64(lt.set.Size()) + lt.varintLn, LinearTables: lt.set.Len(), IndexEntries: len(lt.index),
		PaddedTables: lt.padded, EmptyFuncRefs: lt.emptyRefs, OldPclntab: int64(pclntabLen(f)),
	}
	var out []byte
	switch {
	case f.Format == "macho" && opt.Mode == Append:
		out, err = appendMachO(data, f, lt, res)
	case f.Format == "macho":
		out, err = replaceMachO(data, f, lt, res)
	case f.Format == "pe" && opt.Mode == Append:
		out, err = appendPE(data, f, lt, res)
	case f.Format == "pe":
		out, err = replacePE(data, f, lt, res)
	case opt.Mode == Append:
		out, err = appendMode(e, f, lt, res)
	default:
		out, err = replaceMode(e, f, lt, res)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: %s mode: %w", opt.Mode, err)
	}
	if f.Format == "elf" {
		if _, err := safeELF(out); err != nil {
			return nil, nil, fmt.Errorf("rewrite: internal error: the output is not valid ELF: %w", err)
		}
	}
	res.OutBytes = int64(len(out))
	res.DeltaBytes = res.OutBytes - res.InBytes
	res.DeltaPercent = 100 * float64(res.DeltaBytes) / float64(res.InBytes)
	var sum int64
	for _, p := range res.Parts {
		sum += p.Delta()
	}
	if sum != res.DeltaBytes {
		return nil, nil, fmt.Errorf("rewrite: internal error: size parts add up to %d bytes, the file grew by %d", sum, res.DeltaBytes)
	}
	if opt.Verify {
		if err := verifyOutput(f, data, out, res, opt.Workers); err != nil {
			return nil, nil, fmt.Errorf("rewrite: %s mode: %w", opt.Mode, err)
		}
	}
	return out, res, nil
}

// verifyOutput checks out, the rewrite of data (parsed as orig), and
// records the result in res.
func verifyOutput(orig *objscan.File, data, out []byte, res *Result, workers int) error {
	rf, err := objscan.NewFile(bytes.NewReader(out))
	if err != nil {
		return fmt.Errorf("verify: objscan cannot read the output: %w", err)
	}
	if rf.Linear == nil || rf.Linear.Mode != string(res.Mode) {
		return fmt.Errorf("verify: objscan does not see %s-mode linear tables in the output", res.Mode)
	}
	vr, err := Check(rf, orig, workers)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	res.Verify = vr
	if !vr.OK() {
		return fmt.Errorf("verify: %d mismatches, first: %s", vr.Mismatches, vr.Examples[0])
	}
	if res.Mode == Append {
		var err error
		switch orig.Format {
		case "macho":
			err = sameMachOSections(data, out)
		case "pe":
			err = samePESections(data, out)
		default:
			err = SameLoadedImage(data, out)
		}
		if err != nil {
			return fmt.Errorf("verify: the loaded image changed: %w", err)
		}
	}
	return nil
}

// RewriteFile rewrites the binary in, writing the result to out. The output
// is written to a temporary file in out's directory and renamed into place,
// so a failed run leaves no partial output. It keeps in's permission bits.
func RewriteFile(in, out string, opt Options) (*Result, error) {
	data, err := objscan.ReadFile(in) // refuses a named pipe or a device, which os.ReadFile would wait on or read forever
	if err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	b, res, err := Rewrite(data, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := writeFileAtomic(out, b, st.Mode().Perm()); err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	return res, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, renamed into place once complete.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// appendMode adds the linear tables to e as a non-allocated section. No
// loaded byte changes: the section's data, the grown section name table
// and, if it no longer fits where it was, the section header table go after
// the original contents.
func appendMode(e *elfFile, f *objscan.File, lt *linearTables, res *Result) ([]byte, error) {
	if e.section(objscan.LinearSection) >= 0 {
		return nil, fmt.Errorf("the binary already has a %s section", objscan.LinearSection)
	}
	sec, err := buildSection(f, lt)
	if err != nil {
		return nil, err
	}
	res.SectionBytes = int64(len(sec))
	data := e.data
	oldSize := uint64(len(data))
	oldShoff, oldShsize := e.shoff, uint64(len(e.sects))*e.shentsize
	// Drop the section header table and the section name table if they end
	// the file: they are written again below.
	cut := oldSize
	if oldShoff+oldShsize == cut && e.lastData(oldShoff) {
		cut = oldShoff
	}
	strs := &e.sects[e.shstrndx]
	strsOld := strs.Size
	strsCut := strs.Off+strs.Size == cut && e.lastData(strs.Off)
	if strsCut {
		cut = strs.Off
	}
	out := append([]byte(nil), data[:cut]...)
	names := append(append([]byte(nil), data[strs.Off:strs.Off+strs.Size]...), objscan.LinearSection...)
	names = append(names, 0)
	nameOff := uint32(strs.Size)
	strs.Off, strs.Size = uint64(len(out)), uint64(len(names))
	out = append(out, names...)
	secAt := alignUp(uint64(len(out)), 8)
	padBefore := secAt - uint64(len(out))
	out = appendZeros(out, secAt)
	out = append(out, sec...)
	e.sects = append(e.sects, elfSect{Name: objscan.LinearSection, NameOff: nameOff, Type: uint32(elf.SHT_PROGBITS),
		Off: secAt, Size: uint64(len(sec)), Addralign: 8})
	before := uint64(len(out))
	shoff, err := e.placeTables(before)
	if err != nil {
		return nil, err
	}
	if oldShoff+oldShsize <= cut {
		clear(out[oldShoff : oldShoff+oldShsize])
	}
	e.shoff = shoff
	out = appendZeros(out, shoff+uint64(len(e.sects))*e.shentsize)
	e.writeTables(out)

	strsPart := Part{Name: ".shstrtab", Old: int64(strsOld), New: int64(len(names)), Note: "rewritten in place with the new name"}
	if !strsCut {
		strsPart = Part{Name: ".shstrtab", New: int64(len(names)), Note: "a grown copy; the old table stays in the file, unused"}
	}
	res.Parts = append(sectionParts(f, lt, objscan.LinearSection),
		Part{Name: "alignment before the section", New: int64(padBefore)},
		strsPart,
	)
	res.Parts = append(res.Parts, headerTablePart(oldShoff, oldShsize, oldShoff >= cut, before, shoff, uint64(len(e.sects))*e.shentsize, uint64(len(out))))
	res.Notes = append(res.Notes, "no loaded byte and no program header changed")
	return out, nil
}

// headerTablePart measures what the section header table costs: the bytes
// appended to the output to hold it (from before, the output's size when
// the table was placed, to after, its final size; 0 when it went into the
// padding after the program headers), less the old table's bytes if they
// were dropped from the end of the file. Old bytes that stay in the file
// (cleared, unused) are counted on both sides. It is measured, not
// inferred, so the account's sum check can fail.
func headerTablePart(oldOff, oldSize uint64, dropped bool, before, newOff, newSize, after uint64) Part {
	kept := oldSize
	if dropped {
		kept = 0
	}
	p := Part{Name: "section header table", Old: int64(oldSize), New: int64(kept + (after - before))}
	p.Note = fmt.Sprintf("%d bytes at %#x, were %d bytes at %#x; ", newSize, newOff, oldSize, oldOff)
	switch {
	case after == before:
		p.Note += "placed in the padding after the program headers, so it costs no file bytes"
	case dropped:
		p.Note += "rewritten at the end of the file, alignment padding included"
	default:
		p.Note += "a new table at the end of the file (alignment included); the old one stays, cleared"
	}
	if !dropped && after == before {
		p.Note += "; the old one stays, cleared"
	}
	return p
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// lastData reports whether no section's bytes start after off.
func (e *elfFile) lastData(off uint64) bool {
	for i := range e.sects {
		s := &e.sects[i]
		if !s.nobits() && s.Size > 0 && s.Off > off {
			return false
		}
	}
	return true
}

// sortedSections returns the indexes of the sections sorted by address.
func sortedSections(e *elfFile, idx []int) []int {
	sort.Slice(idx, func(a, b int) bool { return e.sects[idx[a]].Addr < e.sects[idx[b]].Addr })
	return idx
}
