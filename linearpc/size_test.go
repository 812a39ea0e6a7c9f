package linearpc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/internal/testenv"
	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/pcvalue"
	"github.com/pctab/pctab/varintpc"
)

// kindTab is a distinct table of a real binary as the pctab toolchain's
// linker encodes it (derived lengths), with the kind of its first
// reference and its varint bytes (0 if another kind's reference counted
// them).
type kindTab struct {
	kind   int // 0 pcsp, 1 pcfile, 2 pcln, 3+ PCDATA id (8: any higher)
	t      pcvalue.Table
	varint int
}

var sizeKinds = []string{"pcsp", "pcfile", "pcln", "UnsafePoint", "StackMapIndex", "InlTreeIndex", "ArgLiveIndex", "PanicBounds", "other"}

// derivedTables returns the tables of the binary at path as the linker
// encodes them with derived lengths (rewrite's buildTables): each covers the
// units up to the next function's entry, extended with -1 to the
// function's longest table.
func derivedTables(tb testing.TB, path string) []kindTab {
	f, err := objscan.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	dec := map[uint32]pcvalue.Table{}
	vb := map[uint32]int{}
	for _, tab := range f.Tabs {
		t, _, err := varintpc.Decode(tab.Data)
		if err != nil {
			tb.Fatal(err)
		}
		dec[tab.Offset] = t
		vb[tab.Offset] = len(tab.Data)
	}
	type key struct{ off, n, ext uint32 }
	seen := map[key]bool{}
	counted := map[uint32]bool{}
	var out []kindTab
	q := uint64(f.PCQuantum)
	for i := range f.Funcs {
		fn := &f.Funcs[i]
		n := uint32((fn.End - fn.Entry) / q)
		ext := uint32(fn.Size / q)
		for j, off := range append([]uint32{fn.PCSP, fn.PCFile, fn.PCLn}, fn.PCData...) {
			if off == 0 || n == 0 || ext == 0 || seen[key{off, n, ext}] {
				continue
			}
			seen[key{off, n, ext}] = true
			t := dec[off]
			if t.Len < ext {
				t.Runs = append(append([]pcvalue.Run(nil), t.Runs...), pcvalue.Run{PC: t.Len, Value: -1})
				t.Len = ext
			}
			t.Len = n
			v := 0
			if !counted[off] {
				counted[off] = true
				v = vb[off]
			}
			out = append(out, kindTab{min(j, 8), t, v})
		}
	}
	return out
}

// TestSizeByKind prints, for the local toolchain's go, gofmt and compile
// binaries, where compact-fast's bytes go (index, headers, escaped counts,
// start values, PCs, deltas) and each compact variant's size per table
// kind (docs/size.md), and checks that the palette variants are never
// larger than compact-fast for any kind.
func TestSizeByKind(t *testing.T) {
	testenv.SkipUnlessLong(t, "encodes every table of three real binaries in four variants")
	root := filepath.Dir(filepath.Dir(testbuild.GoBinary()))
	names := []string{"compact", "compact-fast", "cf-palette", "cf-palette-short"}
	for _, path := range []string{filepath.Join(root, "bin", "go"), filepath.Join(root, "bin", "gofmt"), filepath.Join(root, "pkg", "tool", "linux_amd64", "compile")} {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		tabs := derivedTables(t, path)
		var sets [9]map[string]*Set
		var varint [9]int
		var parts [9][6]int // index, headers, escaped counts, start values, PCs, deltas
		for k := range sets {
			sets[k] = map[string]*Set{}
			for _, n := range names {
				sets[k][n] = NewSet(variantByName(t, n))
			}
		}
		cf := variantByName(t, "compact-fast")
		seenCF := map[string]bool{}
		for _, x := range tabs {
			varint[x.kind] += x.varint
			for _, n := range names {
				sets[x.kind][n].Add(x.t)
			}
			enc := cf.Encode(x.t)
			if seenCF[string(enc)] {
				continue
			}
			seenCF[string(enc)] = true
			cfParts(&parts[x.kind], x.t)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\n%s\n\n| table kind | varint | index | headers | escaped counts | start values | PCs | deltas |\n|---|---:|---:|---:|---:|---:|---:|---:|\n", filepath.Base(path))
		for k := range sets {
			if varint[k] > 0 {
				p := parts[k]
				fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", sizeKinds[k], varint[k], p[0], p[1], p[2], p[3], p[4], p[5])
			}
		}
		fmt.Fprintf(&b, "\n| table kind | varint | %s |\n|---|---:|---:|---:|---:|---:|\n", strings.Join(names, " | "))
		for k := range sets {
			if varint[k] == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %d |", sizeKinds[k], varint[k])
			for _, n := range names {
				s := sets[k][n].Size()
				fmt.Fprintf(&b, " %d (%+.1f%%) |", s, 100*float64(s-varint[k])/float64(varint[k]))
			}
			b.WriteString("\n")
			if c, p, ps := sets[k]["compact-fast"].Size(), sets[k]["cf-palette"].Size(), sets[k]["cf-palette-short"].Size(); p > c || ps > p {
				t.Errorf("%s %s: compact-fast %d, cf-palette %d, cf-palette-short %d bytes: a palette variant is larger", path, sizeKinds[k], c, p, ps)
			}
		}
		// A mix by table kind: pcln in varint (as the stock linker
		// writes it), every other kind in cf-palette-short.
		mix := varint[2]
		for k := range sets {
			if k != 2 {
				mix += sets[k]["cf-palette-short"].Size()
			}
		}
		tv := 0
		for _, v := range varint {
			tv += v
		}
		fmt.Fprintf(&b, "\nmix, pcln varint and the rest cf-palette-short: %d bytes, %+d against varint's %d (%+.2f%% of the file's %d bytes)\n",
			mix, mix-tv, tv, 100*float64(mix-tv)/float64(fileSize(t, path)), fileSize(t, path))
		t.Log(b.String())
	}
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// cfParts adds the bytes of t's compact-fast encoding to parts: index,
// headers, escaped counts, start values, PCs, deltas. Constant chunks
// shared within the table count once.
func cfParts(parts *[6]int, t pcvalue.Table) {
	chs := changes(nil, t)
	nc := int((t.Len + ChunkUnits - 1) / ChunkUnits)
	consts := map[int32]bool{}
	var offs []int64
	j := 0
	var cur int32
	body := 0
	for c := range nc {
		start := uint32(c) * ChunkUnits
		for j < len(chs) && chs[j].pc <= start {
			cur = chs[j].val
			j++
		}
		k := j
		for k < len(chs) && chs[k].pc < start+ChunkUnits {
			k++
		}
		offs = append(offs, int64(body))
		if k == j {
			if consts[cur] {
				continue
			}
			consts[cur] = true
		}
		n := k - j
		enc := appendCFChunk(nil, cur, chs[j:k], start)
		body += len(enc)
		esc := 0
		if n > cfEsc-1 {
			esc = 1
		}
		w0 := codeLen(width0(cur + 1))
		parts[1]++
		parts[2] += esc
		parts[3] += w0
		parts[4] += n
		parts[5] += len(enc) - 1 - esc - w0 - n
		if k > j {
			cur = chs[k-1].val
		}
		j = k
	}
	parts[0] += indexLen(offs, false)
}
