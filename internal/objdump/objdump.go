// Package objdump runs the Go disassembler, `go tool objdump`, on a binary
// and parses the call instructions it prints. It is the independent truth
// that pctab's tests hold their own call-site decoding to (internal/callsites,
// lookupbench's return addresses, runtimeshim/synth's call graph).
package objdump

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// A Call is one call instruction as objdump prints it.
type Call struct {
	Addr uint64 // address of the instruction
	Len  int    // its length in bytes (its encoding's hex digits / 2)
	// Target is the callee objdump names, without an offset ("+0x10")
	// and without the "(SB)" suffix; "" when objdump prints no symbol.
	// Assembly functions keep their ABI suffix (".abi0").
	Target string
	// TargetAddr is the callee's address when objdump prints an address
	// instead of a symbol (on 386, a target inside a function such as
	// runtime.duffcopy), else 0.
	TargetAddr uint64
	// Operand is the operand as printed: a symbol, an address, or a
	// register or memory operand for an indirect call.
	Operand string
	Line    string // the whole line, for error messages
}

// Ret returns the call's return address: the address after it.
func (c Call) Ret() uint64 { return c.Addr + uint64(c.Len) }

// line matches a CALL in objdump's output: file:line, address, encoding,
// then the operand.
var (
	line   = regexp.MustCompile(`^\s*\S+\s+0x([0-9a-f]+)\s+([0-9a-f]+)\s+CALL\s+(.*?)\s*$`)
	offset = regexp.MustCompile(`\+0x[0-9a-f]+$`)
	addr   = regexp.MustCompile(`^0x([0-9a-f]+)$`)
)

// Calls runs `goBin tool objdump [args] bin` (args such as "-s", `^main\.`)
// and returns every call instruction it prints, in its order.
func Calls(ctx context.Context, goBin, bin string, args ...string) ([]Call, error) {
	cmd := exec.CommandContext(ctx, goBin, append(append([]string{"tool", "objdump"}, args...), bin)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("objdump: go tool objdump %s: %w: %s", bin, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return Parse(out)
}

// Parse returns the call instructions of objdump's output.
func Parse(out []byte) ([]Call, error) {
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		a, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("objdump: line %d: address: %w", n, err)
		}
		c := Call{Addr: a, Len: len(m[2]) / 2, Operand: m[3], Line: text}
		if sym, ok := strings.CutSuffix(m[3], "(SB)"); ok {
			c.Target = offset.ReplaceAllString(sym, "")
		} else if am := addr.FindStringSubmatch(m[3]); am != nil {
			if c.TargetAddr, err = strconv.ParseUint(am[1], 16, 64); err != nil {
				return nil, fmt.Errorf("objdump: line %d: target: %w", n, err)
			}
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}
