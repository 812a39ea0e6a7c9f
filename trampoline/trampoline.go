// Package trampoline labels CPU samples through stack frames, after
// Rockset's trampoline histories: work runs through one of N distinct
// trampoline functions, each with its own address, and a short history
// records which label held which trampoline from when to when. A sampled
// stack that passes through a trampoline then names its label, and the
// labelled work pays one extra call, no allocation and no context.
//
// Go's own mechanism, runtime/pprof.Do and SetGoroutineLabels, allocates a
// context and a label set per call and pays on every task whether or not a
// sample is taken. Here the cost moves to New and Close, which run once per
// label (a query, a request), not once per task.
//
// Labels are resolved after the fact, from the binary (which objscan reads
// for the trampolines' PC ranges), the history (WriteHistory) and the
// samples: package github.com/pctab/pctab/trampoline/resolve does it for
// pprof CPU profiles and for execution traces with CPU samples, and writes
// a pprof profile with the labels on its samples.
//
// The trampolines and their free list are process-wide, as the code they
// are made of: a trampoline bound twice at once would make its samples
// ambiguous. This is the package's one piece of global state.
//
// Bindings are timed on CLOCK_MONOTONIC, the clock of Go's execution
// traces on Linux. Where there is none, on every GOOS that is not unix
// and on aix (golang.org/x/sys/unix cannot read it there), New returns
// ErrUnsupported (and a nil Label, which runs work unlabelled) rather
// than a history whose times match nothing.
package trampoline

//go:generate go run ./gen -n 1024 -o trampolines_gen.go

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrExhausted is returned by New when all N trampolines are bound. The nil
// *Label it returns alongside still runs work (unlabelled), so a caller can
// ignore the error and lose only attribution.
var ErrExhausted = errors.New("trampoline: all trampolines are bound")

// ErrUnsupported is returned by New where bindings cannot be timed on the
// clock of Go's execution traces: every GOOS that is not unix, and aix.
// It wraps errors.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("trampoline: labels are not supported on this platform: %w", errors.ErrUnsupported)

// A Label is a key and value bound to one trampoline until Close.
type Label struct {
	idx   int
	entry int // index of its binding in the history
}

// Do runs f through the label's trampoline: samples taken while f runs
// carry the label. On a nil Label it runs f directly.
func (l *Label) Do(f func()) {
	if l == nil {
		f()
		return
	}
	call(l.idx, f)
}

// Trampoline returns the number of the label's trampoline, or -1 for nil.
func (l *Label) Trampoline() int {
	if l == nil {
		return -1
	}
	return l.idx
}

// Binding is one entry of the history: a label held trampoline Trampoline
// from Start to End. Times are recorded on two clocks: the monotonic clock
// (CLOCK_MONOTONIC, which is also the clock of Go's execution traces on
// Linux) for matching timestamped samples, and the wall clock for a pprof
// profile's TimeNanos, which has only a start and a duration.
type Binding struct {
	Trampoline int    `json:"trampoline"`
	Key        string `json:"key"`
	Value      string `json:"value"`
	StartMono  int64  `json:"start_mono_ns"`
	EndMono    int64  `json:"end_mono_ns"` // 0 while bound
	StartUnix  int64  `json:"start_unix_ns"`
	EndUnix    int64  `json:"end_unix_ns"` // 0 while bound
}

// HistorySchemaVersion is the schema_version of WriteHistory's JSON.
const HistorySchemaVersion = 1

// MaxTrampolines is the most trampolines a history can name: trampoline
// functions are named by four decimal digits (t0000 to t9999), so no binary
// holds more. ReadHistory refuses a larger count, which would otherwise
// size the resolver's index.
const MaxTrampolines = 10000

// ErrBadHistory is wrapped by the errors ReadHistory returns for a history
// that decodes but whose counts or trampoline numbers are out of range.
var ErrBadHistory = errors.New("trampoline: malformed history")

// History is what WriteHistory writes.
type History struct {
	SchemaVersion int       `json:"schema_version"`
	Trampolines   int       `json:"trampolines"`
	Bindings      []Binding `json:"bindings"`
}

// pool is the process-wide state: the free trampolines in FIFO order (a
// trampoline freed last is reused last, which keeps the bindings of one
// trampoline far apart in time and profiles without timestamps
// unambiguous for as long as possible) and the history.
type pool struct {
	mu      sync.Mutex
	free    []int // FIFO: taken from the front, returned to the back
	history []Binding
}

var global = newPool()

func newPool() *pool {
	p := &pool{free: make([]int, N)}
	for i := range p.free {
		p.free[i] = i
	}
	return p
}

// clocks returns the monotonic and wall-clock times now.
func clocks() (mono, wall int64, err error) {
	mono, err = monotonic()
	return mono, time.Now().UnixNano(), err
}

// New binds key=value to a free trampoline and records the binding, with
// its start time, in the history. It returns ErrExhausted (and a nil Label,
// which runs work unlabelled) when all N trampolines are bound, and
// ErrUnsupported (and a nil Label) where there is no CLOCK_MONOTONIC to
// record: on every GOOS that is not unix (windows, plan9, js, wasip1;
// on windows Go's traces time by the processor's tick counter) and on aix.
func New(key, value string) (*Label, error) { return global.bind(key, value) }

func (p *pool) bind(key, value string) (*Label, error) {
	mono, wall, err := clocks()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return nil, ErrExhausted
	}
	idx := p.free[0]
	p.free = p.free[1:]
	p.history = append(p.history, Binding{Trampoline: idx, Key: key, Value: value, StartMono: mono, StartUnix: wall})
	return &Label{idx: idx, entry: len(p.history) - 1}, nil
}

// Close records the end of the binding and returns the trampoline to the
// pool. Work still running through the label after Close may be
// attributed to the trampoline's next label.
func (l *Label) Close() error {
	if l == nil {
		return nil
	}
	return global.release(l)
}

func (p *pool) release(l *Label) error {
	mono, wall, err := clocks()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &p.history[l.entry]
	if b.EndMono != 0 || b.EndUnix != 0 {
		return fmt.Errorf("trampoline: label %s=%s on trampoline %d closed twice", b.Key, b.Value, b.Trampoline)
	}
	b.EndMono, b.EndUnix = mono, wall
	p.free = append(p.free, l.idx)
	return nil
}

// Snapshot returns a copy of the history so far.
func Snapshot() History {
	global.mu.Lock()
	defer global.mu.Unlock()
	return History{SchemaVersion: HistorySchemaVersion, Trampolines: N, Bindings: append([]Binding(nil), global.history...)}
}

// WriteHistory writes the history so far as JSON (schema_version 1, the
// fields of History and Binding), for the resolver.
func WriteHistory(w io.Writer) error {
	h := Snapshot()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "\t")
	return enc.Encode(h)
}

// ReadHistory reads what WriteHistory wrote. It checks the trampoline count
// (at most MaxTrampolines) and that every binding names one of them; the
// errors for a history that breaks these rules wrap ErrBadHistory.
func ReadHistory(r io.Reader) (History, error) {
	var h History
	dec := json.NewDecoder(r)
	if err := dec.Decode(&h); err != nil {
		return History{}, fmt.Errorf("trampoline: reading history: %w", err)
	}
	if h.SchemaVersion != HistorySchemaVersion {
		return History{}, fmt.Errorf("trampoline: history schema_version %d, want %d", h.SchemaVersion, HistorySchemaVersion)
	}
	if h.Trampolines < 0 || h.Trampolines > MaxTrampolines {
		return History{}, fmt.Errorf("%w: trampolines %d is out of range [0, %d]", ErrBadHistory, h.Trampolines, MaxTrampolines)
	}
	for i, b := range h.Bindings {
		if b.Trampoline < 0 || b.Trampoline >= h.Trampolines {
			return History{}, fmt.Errorf("%w: binding %d names trampoline %d of %d", ErrBadHistory, i, b.Trampoline, h.Trampolines)
		}
	}
	return h, nil
}
