package readers

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// A Probe is what a reader's copy of debug/gosym read from one binary,
// as its probe command printed it.
type Probe struct {
	Err    string      // the error building the table, if any
	Funcs  []ProbeFunc // every function of the table
	PCs    []ProbePC   // PCToLine at the sampled PCs
	Deltas []string    // stack deltas, "ADDRESS INFO" (the eBPF profiler's probe)
	Info   []string    // what the reader reports about the binary, "KEY\tVALUE" (gore's probe)
}

// A ProbeFunc is one function of the table and its inlined calls.
type ProbeFunc struct {
	Name       string
	Entry, End uint64
	Inlined    []string // NAME@PARENTPC, or an "inline-error: ..." entry
}

// A ProbePC is what PCToLine returned at PC.
type ProbePC struct {
	PC    uint64
	Entry uint64 // entry of the function the probe was sampling
	Func  string // "?" when PCToLine found no function
	File  string
	Line  int
}

// ReadProbe runs b's probe on binary, sampling every step-th PC.
func ReadProbe(ctx context.Context, b *Build, binary string, step int) (*Probe, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, b.Probe, binary, strconv.Itoa(step))
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("readers: %s probe %s: %w\n%s", b.Reader.Name, binary, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return parseProbe(out.Bytes())
}

func parseProbe(data []byte) (*Probe, error) {
	p := &Probe{}
	n := 0
	var entry uint64
	err := scanLines(data, func(line string) error {
		n++
		f := strings.Split(line, "\t")
		bad := func() error { return fmt.Errorf("readers: probe output line %d: malformed %q", n, line) }
		switch f[0] {
		case "error":
			if len(f) != 2 {
				return bad()
			}
			p.Err = f[1]
		case "info":
			if len(f) != 3 {
				return bad()
			}
			p.Info = append(p.Info, f[1]+"\t"+f[2])
		case "delta":
			if len(f) != 3 {
				return bad()
			}
			p.Deltas = append(p.Deltas, f[1]+" "+f[2])
		case "funcs":
			if len(f) != 2 {
				return bad()
			}
		case "func":
			if len(f) < 4 {
				return bad()
			}
			e, err1 := strconv.ParseUint(f[2], 0, 64)
			end, err2 := strconv.ParseUint(f[3], 0, 64)
			if err1 != nil || err2 != nil {
				return bad()
			}
			p.Funcs = append(p.Funcs, ProbeFunc{Name: f[1], Entry: e, End: end, Inlined: f[4:]})
			entry = e
		case "pc":
			if len(f) != 5 {
				return bad()
			}
			pc, err1 := strconv.ParseUint(f[1], 0, 64)
			line, err2 := strconv.Atoi(f[4])
			if err1 != nil || err2 != nil {
				return bad()
			}
			p.PCs = append(p.PCs, ProbePC{PC: pc, Entry: entry, Func: f[2], File: f[3], Line: line})
		default:
			return bad()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// A Comparison is the result of [Diff].
type Comparison struct {
	Funcs   int      // functions compared (name, entry, end, inlined calls)
	Inlined int      // inlined calls compared
	Deltas  int      // stack deltas compared
	Info    int      // report lines compared
	PCs     int      // PCs compared (function, file, line)
	Padding int      // PCs skipped: past the end of the twin's varint tables
	NoTable int      // PCs skipped: of functions without line tables
	Differ  int      // differences found
	Diffs   []string // the first differences
}

// maxDiffs bounds Comparison.Diffs.
const maxDiffs = 20

// Diff compares what a reader read from a binary with linear tables (got)
// with what it read from the binary's stock twin (want): the same
// functions with the same inlined calls, and the same function, file and
// line at every sampled PC, and the same report lines (Info), in order. A
// PC at which the twin's line table has ended
// (line <= 0: the alignment padding after a function's code, where the
// derived format carries the last value on) is counted in Padding, not
// compared. So are, in NoTable, the PCs of the functions whose entries
// noTable holds: functions without line and file tables (such as
// go:textfipsstart), where debug/gosym and its copies read the table at
// offset 0, another function's, and the linear decoders answer -1 as the
// runtime does.
func Diff(got, want *Probe, noTable map[uint64]bool) (*Comparison, error) {
	c := &Comparison{}
	add := func(format string, args ...any) {
		c.Differ++
		if len(c.Diffs) < maxDiffs {
			c.Diffs = append(c.Diffs, fmt.Sprintf(format, args...))
		}
	}
	if want.Err != "" {
		return nil, fmt.Errorf("readers: the probe of the stock twin failed: %s", want.Err)
	}
	if len(want.Funcs) == 0 {
		return nil, errNoFuncs
	}
	if got.Err != "" {
		add("error: %s", got.Err)
	}
	if len(got.Funcs) != len(want.Funcs) {
		add("%d functions, want %d", len(got.Funcs), len(want.Funcs))
	}
	for i := 0; i < min(len(got.Funcs), len(want.Funcs)); i++ {
		g, w := got.Funcs[i], want.Funcs[i]
		c.Funcs++
		c.Inlined += len(w.Inlined)
		if g.Name != w.Name || g.Entry != w.Entry || g.End != w.End {
			add("function %d: %s [%#x, %#x), want %s [%#x, %#x)", i, g.Name, g.Entry, g.End, w.Name, w.Entry, w.End)
		}
		if strings.Join(g.Inlined, " ") != strings.Join(w.Inlined, " ") {
			add("%s: inlined %v, want %v", w.Name, g.Inlined, w.Inlined)
		}
	}
	c.Deltas = len(want.Deltas)
	if strings.Join(got.Deltas, "\n") != strings.Join(want.Deltas, "\n") {
		add("%d stack deltas, want %d", len(got.Deltas), len(want.Deltas))
	}
	c.Info = len(want.Info)
	for i := range max(len(got.Info), len(want.Info)) {
		g, w := "(none)", "(none)"
		if i < len(got.Info) {
			g = got.Info[i]
		}
		if i < len(want.Info) {
			w = want.Info[i]
		}
		if g != w {
			add("report line %d: %q, want %q", i+1, g, w)
		}
	}
	gotPC := make(map[uint64]ProbePC, len(got.PCs))
	for _, p := range got.PCs {
		gotPC[p.PC] = p
	}
	for _, w := range want.PCs {
		if noTable[w.Entry] {
			c.NoTable++
			continue
		}
		if w.Line <= 0 {
			c.Padding++
			continue
		}
		c.PCs++
		g, ok := gotPC[w.PC]
		if !ok {
			add("pc %#x: not sampled, want %s %s:%d", w.PC, w.Func, w.File, w.Line)
			continue
		}
		if g != w {
			add("pc %#x: %s %s:%d, want %s %s:%d", w.PC, g.Func, g.File, g.Line, w.Func, w.File, w.Line)
		}
	}
	return c, nil
}
