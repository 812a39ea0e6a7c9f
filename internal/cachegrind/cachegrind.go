// Package cachegrind counts the instructions a program executes, in all and
// per source file, by running it under valgrind's cachegrind tool
// (--cache-sim=no) and reading the profile it writes.
//
// Instruction counts do not depend on the machine's load: they are the
// evidence behind pctab-toolchain's instr and libbench -instructions.
package cachegrind

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrFormat is returned, wrapped with the line, for a profile that is not
// in cachegrind's output format.
var ErrFormat = errors.New("cachegrind: malformed profile")

// A Profile is a program's instruction count ("Ir"), in all and per
// source file.
type Profile struct {
	Total  int64
	ByFile map[string]int64 // as the profile names it: the path the compiler recorded
}

// Sum returns the instructions of the files for which keep is true.
func (p *Profile) Sum(keep func(file string) bool) int64 {
	var n int64
	for f, c := range p.ByFile {
		if keep(f) {
			n += c
		}
	}
	return n
}

// A Cmd is a program to run under cachegrind.
type Cmd struct {
	Path string
	Args []string
	Dir  string
	Env  []string // the environment; nil means the current one
}

// Run runs c under valgrind's cachegrind (instruction counts only) and
// returns the program's standard output and its profile.
//
// Run sets GODEBUG=cpu.rdtscp=off (after any GODEBUG settings of c.Env):
// on processors with RDTSCP, such as AMD EPYC, the Go runtime's cputicks
// executes it, and valgrind 3.19 stops the program at that instruction
// ("unrecognised instruction"); without it cputicks uses RDTSC.
func Run(ctx context.Context, c Cmd) (stdout []byte, p *Profile, err error) {
	tmp, err := os.MkdirTemp("", "pctab-cachegrind-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "cachegrind.out")
	args := append([]string{"--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=" + out, c.Path}, c.Args...)
	cmd := exec.CommandContext(ctx, "valgrind", args...)
	cmd.Dir, cmd.Env = c.Dir, withGODEBUG(c.Env, "cpu.rdtscp=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err = cmd.Output()
	if err != nil {
		return stdout, nil, fmt.Errorf("cachegrind: %s: %w\n%s%s", c.Path, err, stdout, stderr.Bytes())
	}
	f, err := os.Open(out)
	if err != nil {
		return stdout, nil, err
	}
	defer f.Close()
	p, err = Parse(f)
	if err != nil {
		return stdout, nil, fmt.Errorf("%s: %w", out, err)
	}
	return stdout, p, nil
}

// withGODEBUG returns env (the current environment if nil) with setting
// added to its GODEBUG variable, after the settings it has.
func withGODEBUG(env []string, setting string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	val := setting
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			// The last GODEBUG= entry is the one exec uses; keep its value.
			val = setting
			if v != "" {
				val = v + "," + setting
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+val)
}

// Parse reads a profile in cachegrind's output format whose first event
// is Ir (what --cache-sim=no writes): "fl=", "fi=" and "fe=" lines name the
// current source file, "fn=" lines the function, and every other line
// after them is a line number followed by its counts. The "summary:" line
// must agree with the sum of the counts.
func Parse(r io.Reader) (*Profile, error) {
	p := &Profile{ByFile: map[string]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	names := map[string]string{} // each file's name, allocated once
	file, summary, lineNo := "", int64(-1), 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		switch {
		case len(line) == 0, hasPrefix(line, "fn="), hasPrefix(line, "desc:"), hasPrefix(line, "cmd:"),
			hasPrefix(line, "version:"), hasPrefix(line, "creator:"), hasPrefix(line, "pid:"):
		case hasPrefix(line, "fl="), hasPrefix(line, "fi="), hasPrefix(line, "fe="):
			var ok bool
			if file, ok = names[string(line[3:])]; !ok {
				file = string(line[3:])
				names[file] = file
			}
		case hasPrefix(line, "events:"):
			if ev := bytes.Fields(line[len("events:"):]); len(ev) == 0 || string(ev[0]) != "Ir" {
				return nil, fmt.Errorf("%w: line %d: first event is not Ir: %q", ErrFormat, lineNo, line)
			}
		case hasPrefix(line, "summary:"):
			n, ok := count(bytes.TrimSpace(line[len("summary:"):]))
			if !ok {
				return nil, fmt.Errorf("%w: line %d: %q", ErrFormat, lineNo, line)
			}
			summary = n
		default:
			// "LINE COUNT [COUNT...]"
			_, rest, ok := bytes.Cut(line, []byte(" "))
			rest, _, _ = bytes.Cut(rest, []byte(" "))
			n, okN := count(rest)
			if !ok || !okN || p.Total > math.MaxInt64-n {
				return nil, fmt.Errorf("%w: line %d: %q", ErrFormat, lineNo, line)
			}
			p.ByFile[file] += n
			p.Total += n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cachegrind: line %d: %w", lineNo+1, err)
	}
	if summary < 0 {
		return nil, fmt.Errorf("%w: no summary line", ErrFormat)
	}
	if summary != p.Total {
		return nil, fmt.Errorf("%w: summary %d, counts sum to %d", ErrFormat, summary, p.Total)
	}
	return p, nil
}

func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// count parses a non-negative decimal count.
func count(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
