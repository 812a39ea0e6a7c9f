package stackinput

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/google/pprof/profile"
)

// ErrTooLarge is wrapped by the error for an input that would cost more
// than MaxCost of its size: a compressed input that decompresses to more,
// or a profile whose decoding would allocate more.
var ErrTooLarge = errors.New("input too large for its size")

// The budget of an input of n bytes: it may decompress to at most
// CostRatio*n + CostSlack bytes, and its decoding may allocate at most as
// much (as estimated by pprofCost, which overestimates real profiles about
// three times). pprof's own profiles compress about 3 to 10 times and cost
// about 20 times their compressed size to decode (about 60 times by the
// estimate); a gzip bomb compresses about 1000 times, and a profile of
// empty messages costs about 100 times its decompressed size.
const (
	CostRatio = 128
	CostSlack = 8 << 20
)

// MaxCost returns the budget of an input of n bytes, without overflowing.
func MaxCost(n int64) int64 {
	if n < 0 {
		n = 0
	}
	if n > (1<<63-1-CostSlack)/CostRatio {
		return 1<<63 - 1
	}
	return CostRatio*n + CostSlack
}

// isGzip reports whether data starts with the gzip magic.
func isGzip(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// gunzip decompresses data, reading at most limit bytes of output. The
// error for a larger output wraps ErrDecompressedTooLarge and says where
// the limit was reached.
func gunzip(data []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gzip header: %w", err)
	}
	// The gzip trailer holds the size modulo 2^32: a good first guess for
	// the buffer, within the limit, that spares the copies of growing it.
	var out bytes.Buffer
	if len(data) >= 4 {
		out.Grow(int(min(int64(binary.LittleEndian.Uint32(data[len(data)-4:])), limit)))
	}
	n, err := io.Copy(&out, io.LimitReader(zr, limit))
	if err != nil {
		return nil, fmt.Errorf("decompressing %d bytes, after %d bytes of output: %w", len(data), n, err)
	}
	if n == limit {
		// Anything left is over the limit.
		var one [1]byte
		if k, _ := zr.Read(one[:]); k > 0 {
			return nil, fmt.Errorf("%w: %d gzip bytes decompress to more than %d bytes (the limit is %d times the input plus %d MiB)",
				ErrTooLarge, len(data), limit, CostRatio, CostSlack>>20)
		}
	}
	return out.Bytes(), nil
}

// ParsePprof reads a pprof profile, gzipped or not, as
// github.com/google/pprof/profile.Parse does, but within a budget of
// MaxCost of the input's size: the decompressed size, and the allocation
// that decoding the protocol buffer will cost (estimated by a scan of its
// fields before decoding), so a small gzip bomb, or a small profile of many
// empty messages, costs no more than a small multiple of its size. The
// errors for inputs over the budget wrap ErrTooLarge. A gzipped profile
// whose contents are gzipped again is refused: pprof writes one layer.
func ParsePprof(r io.Reader) (*profile.Profile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("stackinput: reading pprof profile: %w", err)
	}
	budget := MaxCost(int64(len(data)))
	if isGzip(data) {
		data, err = gunzip(data, budget)
		if err != nil {
			return nil, fmt.Errorf("stackinput: pprof profile: %w", err)
		}
		if isGzip(data) {
			return nil, errors.New("stackinput: pprof profile: gzip inside gzip (pprof writes one layer)")
		}
	}
	if cost, off := pprofCost(data, budget); cost > budget {
		return nil, fmt.Errorf("stackinput: pprof profile: %w: decoding its %d bytes would allocate more than %d bytes (at byte %d; the limit is %d times the input plus %d MiB)",
			ErrTooLarge, len(data), budget, off, CostRatio, CostSlack>>20)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("stackinput: reading pprof profile: %w", err)
	}
	return p, nil
}

// ReadPprof reads a pprof profile, gzipped or not (with ParsePprof's limit
// on decompression), and records the stack of every sample in profile
// order. Samples carry no goroutine or thread, so their keys are -1. The
// samples of a CPU profile (period type "cpu") are marked Trap.
func ReadPprof(r io.Reader) (*Corpus, error) {
	p, err := ParsePprof(r)
	if err != nil {
		return nil, err
	}
	c := NewCorpus("pprof profile")
	trap := p.PeriodType != nil && p.PeriodType.Type == "cpu"
	idx := make(map[*profile.Location]uint32)
	var locs []uint32
	for i, s := range p.Sample {
		locs = locs[:0]
		for j, l := range s.Location {
			if l == nil {
				return nil, fmt.Errorf("stackinput: pprof sample %d: location %d is missing", i, j)
			}
			k, ok := idx[l]
			if !ok {
				loc := Location{PC: l.Address}
				for _, ln := range l.Line {
					var name, file string
					if ln.Function != nil {
						name, file = ln.Function.Name, ln.Function.Filename
					}
					loc.Lines = append(loc.Lines, Line{Func: name, File: file, Line: ln.Line})
				}
				k = c.AddLocation(loc)
				idx[l] = k
			}
			locs = append(locs, k)
		}
		st, _ := c.AddStack(locs) // indices come from AddLocation
		c.Samples = append(c.Samples, Sample{Goroutine: -1, Thread: -1, Stack: st, Trap: trap})
	}
	return c, nil
}

// Upper bounds of what github.com/google/pprof/profile allocates to decode
// a profile, measured with runtime.MemStats on profiles made of one kind of
// field repeated (about 100 bytes for an empty top-level message, 85 for
// an empty string, 350 for a sample with one label), with a margin.
const (
	costMessage = 256 // a top-level message (sample, mapping, location, function, sample type)
	costField   = 160 // any other top-level field, and a string's header
	costNested  = 512 // a message inside a sample or location (a label, a line)
	costVarint  = 32  // an integer inside a sample or location
	costPacked  = 16  // a byte of packed integers inside a sample or location
)

// pprofCost estimates, from a scan of its protocol buffer fields, how many
// bytes decoding data as a profile allocates. It stops once the estimate
// exceeds budget and returns where. Data that is not a well-formed
// protocol buffer costs what was scanned: the decoder fails there, or on
// legacy text formats, whose parsers allocate in proportion to the input.
func pprofCost(data []byte, budget int64) (cost int64, off int) {
	cost = 2 * int64(len(data)) // the input and the decoder's copies of strings
	for off < len(data) && cost <= budget {
		key, n := binary.Uvarint(data[off:])
		if n <= 0 {
			return cost, off
		}
		field, wire := key>>3, key&7
		start := off
		off += n
		switch wire {
		case 0:
			_, n := binary.Uvarint(data[off:])
			if n <= 0 {
				return cost, start
			}
			off += n
			cost += costField
		case 1:
			off += 8
			cost += costField
		case 5:
			off += 4
			cost += costField
		case 2:
			l, n := binary.Uvarint(data[off:])
			if n <= 0 || l > uint64(len(data)-off-n) {
				return cost, start
			}
			off += n
			body := data[off : off+int(l)]
			off += int(l)
			switch field {
			case 1, 3, 5: // sample type, mapping, function
				cost += costMessage
			case 2, 4: // sample, location: their labels, lines and integers
				cost += costMessage + nestedCost(body)
			default: // strings and anything else
				cost += costField + int64(l)
			}
		default:
			return cost, start
		}
	}
	return cost, off
}

// nestedCost estimates the allocation for the fields of a sample or
// location message: each nested message, and each integer, packed or not.
func nestedCost(b []byte) int64 {
	var cost int64
	for off := 0; off < len(b); {
		key, n := binary.Uvarint(b[off:])
		if n <= 0 {
			return cost
		}
		off += n
		switch key & 7 {
		case 0:
			_, n := binary.Uvarint(b[off:])
			if n <= 0 {
				return cost
			}
			off += n
			cost += costVarint
		case 1:
			off += 8
			cost += costVarint
		case 5:
			off += 4
			cost += costVarint
		case 2:
			l, n := binary.Uvarint(b[off:])
			if n <= 0 || l > uint64(len(b)-off-n) {
				return cost
			}
			off += n
			// A nested message, or packed integers: at most one per byte.
			cost += max(costNested, costPacked*int64(l))
			off += int(l)
		default:
			return cost
		}
	}
	return cost
}
