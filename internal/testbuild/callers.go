package testbuild

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Callers is the parsed output of the callers program (and of the generics
// program, which prints the same format): what the Go runtime itself
// reported for several stacks, to compare independent symbolization with.
type Callers struct {
	Meta   CallersMeta
	Stacks []CallersStack
}

// CallersMeta describes the process that printed the stacks.
type CallersMeta struct {
	Kind      string `json:"kind"`      // always "meta"
	GoVersion string `json:"goVersion"` // runtime.Version()
	GOOS      string `json:"goos"`      // runtime.GOOS
	GOARCH    string `json:"goarch"`    // runtime.GOARCH
	// MainName and MainEntry are the name and run-time entry PC of the
	// function main.main. MainEntry minus the static address of main.main
	// in the binary is the load offset of a position-independent binary.
	MainName  string `json:"mainName"`
	MainEntry uint64 `json:"mainEntry"`
}

// CallersStack is one captured stack.
type CallersStack struct {
	Kind string `json:"kind"` // always "stack"
	// Name identifies the stack in the program, such as "mid-inlined".
	Name string `json:"name"`
	// Skip is the skip argument passed to runtime.Callers.
	Skip int `json:"skip"`
	// PCs are the PCs runtime.Callers returned, innermost first: return
	// addresses, plus one "virtual" PC per inlined frame, which is one past
	// the PC the inline tree records for the call site (the parent PC). So
	// len(PCs) equals len(Frames); that holds for every toolchain in
	// Targets.
	PCs []uint64 `json:"pcs"`
	// PCInfo has one entry per element of PCs, describing PCs[i]-1.
	PCInfo []CallersPC `json:"pcInfo"`
	// Frames are the frames runtime.CallersFrames made of PCs, innermost
	// first.
	Frames []CallersFrame `json:"frames"`
}

// CallersPC is what runtime.FuncForPC reports for one PC, which is a raw
// PC of runtime.Callers minus one.
type CallersPC struct {
	PC uint64 `json:"pc"`
	// Function is FuncForPC(PC).Name(): the innermost function at PC,
	// inlined or not. It is empty if FuncForPC returned nil.
	Function string `json:"function"`
	// Entry is FuncForPC(PC).Entry(): the entry of the outermost (real)
	// function, even when Function is inlined.
	Entry uint64 `json:"entry"`
	// File and Line are FuncForPC(PC).FileLine(PC).
	File string `json:"file"`
	Line int    `json:"line"`
}

// CallersFrame is one runtime.Frame.
type CallersFrame struct {
	// PC is Frame.PC: the PC the runtime looked up, normally the raw PC
	// minus one (inside the call instruction or the inline mark).
	PC uint64 `json:"pc"`
	// Function is Frame.Function, the name of the (possibly inlined)
	// function, as printed in tracebacks: generic shape arguments are
	// shown as "[...]".
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	// Entry is Frame.Entry: the entry PC of the real function that holds
	// PC, which for an inlined frame is the function it was inlined into.
	Entry uint64 `json:"entry"`
	// FuncName is Frame.Func.Name(), empty when Frame.Func is nil.
	FuncName string `json:"funcName"`
	// Inlined reports whether the frame is an inlined call: Frame.Func is
	// nil and Frame.Function is not empty.
	Inlined bool `json:"inlined"`
}

// ParseCallers parses the JSON lines printed by the callers program: one
// "meta" line followed by "stack" lines.
func ParseCallers(data []byte) (*Callers, error) {
	var c Callers
	sawMeta := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, fmt.Errorf("callers output line %d: %w", n, err)
		}
		switch kind.Kind {
		case "meta":
			if sawMeta {
				return nil, fmt.Errorf("callers output line %d: second meta line", n)
			}
			sawMeta = true
			if err := json.Unmarshal(line, &c.Meta); err != nil {
				return nil, fmt.Errorf("callers output line %d: %w", n, err)
			}
		case "stack":
			var s CallersStack
			if err := json.Unmarshal(line, &s); err != nil {
				return nil, fmt.Errorf("callers output line %d: %w", n, err)
			}
			if len(s.PCInfo) != len(s.PCs) {
				return nil, fmt.Errorf("callers output line %d: stack %q has %d PCs but %d PC infos", n, s.Name, len(s.PCs), len(s.PCInfo))
			}
			c.Stacks = append(c.Stacks, s)
		default:
			return nil, fmt.Errorf("callers output line %d: unknown kind %q", n, kind.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading callers output: %w", err)
	}
	if !sawMeta {
		return nil, errors.New("callers output: no meta line")
	}
	return &c, nil
}

// Stack returns the stack called name.
func (c *Callers) Stack(name string) (*CallersStack, bool) {
	for i := range c.Stacks {
		if c.Stacks[i].Name == name {
			return &c.Stacks[i], true
		}
	}
	return nil, false
}

// Functions returns the Function of every frame, innermost first.
func (s *CallersStack) Functions() []string {
	fs := make([]string, len(s.Frames))
	for i, f := range s.Frames {
		fs[i] = f.Function
	}
	return fs
}
