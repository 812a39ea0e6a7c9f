// Package textfmt holds the small formatting helpers of pctab's text reports.
package textfmt

import (
	"io"
	"strconv"
	"strings"
)

// Commas formats n with thousands separators: 1234567 is "1,234,567".
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ErrWriter wraps a writer and remembers its first error, after which it
// writes nothing. Report code can then print freely and check Err once.
type ErrWriter struct {
	W   io.Writer
	Err error
}

// Write writes p to the underlying writer unless an earlier write failed.
func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}

// GoVersion returns v, a binary's Go version, or "unknown Go version" if v
// is empty (a stripped build older than Go 1.13 records none).
func GoVersion(v string) string {
	if v == "" {
		return "unknown Go version"
	}
	return v
}
