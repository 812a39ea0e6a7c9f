package objscan

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// A segment is a range of the loaded image that is backed by file bytes.
type segment struct {
	name     string
	addr     uint64 // virtual address
	size     uint64 // size in memory
	off      int64  // file offset
	filesize uint64 // bytes present in the file
	exec     bool   // holds code
	write    bool   // writable data
	r        io.ReaderAt
	// mem, if not nil, is an image built in memory (a WebAssembly
	// module's linear memory) that r reads, not the file: off is an
	// offset in it.
	mem []byte
}

// image is the container-format view of a binary: what objscan needs from
// ELF, Mach-O, PE, XCOFF, Plan 9 a.out or WebAssembly, and nothing more.
type image struct {
	format   string // "elf", "macho", "pe", "xcoff", "plan9" or "wasm"
	goos     string
	goarch   string
	order    binary.ByteOrder
	ptrSize  int
	sections []segment         // named sections with file bytes, sorted by address
	syms     map[string]uint64 // loaded by sym on first use
	loadSyms func() map[string]uint64
	textSect uint64 // address of the first executable section, a last-resort text base
	fileSize int64  // size of the file, or the largest int64 if unknown
	gccgo    bool   // has gccgo's .go_export section: no pclntab to find
	interp   string // an ELF file's program interpreter (PT_INTERP), if any
}

// wantSyms are the symbols objscan looks up, when the binary has a symbol
// table. Keeping the set small keeps memory bounded on huge symbol tables.
var wantSyms = map[string]bool{
	"runtime.pclntab": true, "runtime.epclntab": true,
	"pclntab": true, "epclntab": true,
	"runtime.text": true, "runtime.etext": true,
	"runtime.firstmoduledata": true,
	"go:func.*":               true, "go.func.*": true,
	"runtime.findfunctab":  true,
	"runtime.text.1":       true,
	"runtime.buildVersion": true,
}

// sym returns the address of a symbol from wantSyms.
func (im *image) sym(name string) (uint64, bool) {
	if im.syms == nil {
		if im.loadSyms != nil {
			im.syms = im.loadSyms()
		} else {
			im.syms = map[string]uint64{}
		}
	}
	v, ok := im.syms[name]
	return v, ok
}

// buildVersion returns the Go version the runtime.buildVersion string
// holds ("go1.12.17"), or "" if the binary has no such symbol or the string
// is not a Go version. Binaries before Go 1.13 have no build info, and
// their pclntab layout depends on the version.
func (im *image) buildVersion() string {
	addr, ok := im.sym("runtime.buildVersion")
	if !ok && im.format == "wasm" {
		return im.wasmVersion()
	}
	if !ok || im.order == nil || (im.ptrSize != 4 && im.ptrSize != 8) {
		return ""
	}
	hdr, err := im.readAddr(addr, 2*uint64(im.ptrSize))
	if err != nil {
		return ""
	}
	word := func(b []byte) uint64 {
		if im.ptrSize == 4 {
			return uint64(im.order.Uint32(b))
		}
		return im.order.Uint64(b)
	}
	ptr, n := word(hdr), word(hdr[im.ptrSize:])
	if n == 0 || n > 64 {
		return ""
	}
	b, err := im.readAddr(ptr, n)
	if err != nil {
		return ""
	}
	v := string(b)
	if goMinor(v) < 0 {
		return ""
	}
	return v
}

// section returns the first section with one of the given names.
func (im *image) section(names ...string) *segment {
	for _, n := range names {
		for i := range im.sections {
			if im.sections[i].name == n {
				return &im.sections[i]
			}
		}
	}
	return nil
}

// sectionAt returns the section that holds addr in its file-backed part.
func (im *image) sectionAt(addr uint64) *segment {
	i := sort.Search(len(im.sections), func(i int) bool {
		s := &im.sections[i]
		return s.addr+s.filesize > addr
	})
	for ; i < len(im.sections); i++ {
		s := &im.sections[i]
		if s.addr <= addr && addr < s.addr+s.filesize {
			return s
		}
		if s.addr > addr {
			break
		}
	}
	return nil
}

// readAddr reads n bytes at virtual address addr. It fails if the range is
// not backed by one section's file bytes.
func (im *image) readAddr(addr uint64, n uint64) ([]byte, error) {
	return im.readAddrInto(nil, addr, n)
}

// readAddrInto is readAddr reading into buf's storage when it is large
// enough.
func (im *image) readAddrInto(buf []byte, addr uint64, n uint64) ([]byte, error) {
	s := im.sectionAt(addr)
	if s == nil {
		return nil, fmt.Errorf("address %#x is not in any section with file data", addr)
	}
	if n > s.addr+s.filesize-addr {
		return nil, fmt.Errorf("%d bytes at address %#x run past the end of section %s", n, addr, s.name)
	}
	// A hostile section header can claim more bytes than the file has:
	// check before allocating.
	if off := s.off + int64(addr-s.addr); s.mem == nil && (off < 0 || n > uint64(im.fileSize) || off > im.fileSize-int64(n)) {
		return nil, fmt.Errorf("%w: %d bytes at address %#x (section %s) lie outside the %d-byte file", ErrTruncated, n, addr, s.name, im.fileSize)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := s.r.ReadAt(buf, s.off+int64(addr-s.addr)); err != nil {
		return nil, fmt.Errorf("reading %d bytes at address %#x (section %s): %w", n, addr, s.name, err)
	}
	return buf, nil
}

// A window keeps the last stretch of a section that [image.view] read.
type window struct {
	addr uint64
	buf  []byte
}

// windowSize is how much [image.view] reads at once.
const windowSize = 64 << 10

// view is readAddr for many small reads close together, such as the
// inline trees: it reads up to windowSize bytes from addr at once into w,
// within addr's section, and answers later reads inside them from w. The
// bytes are valid until the next call with w.
func (im *image) view(w *window, addr, n uint64) ([]byte, error) {
	if addr >= w.addr && n <= uint64(len(w.buf)) && addr-w.addr <= uint64(len(w.buf))-n {
		return w.buf[addr-w.addr:][:n], nil
	}
	s := im.sectionAt(addr)
	if s == nil || n >= windowSize || n > s.addr+s.filesize-addr {
		return im.readAddr(addr, n) // too big for a window, or an error to report
	}
	buf, err := im.readAddrInto(w.buf, addr, min(windowSize, s.addr+s.filesize-addr))
	if err != nil {
		// The window may reach bytes a short file lacks: read just n.
		w.buf = w.buf[:0]
		return im.readAddr(addr, n)
	}
	w.addr, w.buf = addr, buf
	return buf[:n], nil
}

// data returns a section's file bytes. It refuses sections whose claimed
// size exceeds the file, so a hostile header cannot force a huge allocation.
func (s *segment) data(fileSize int64) ([]byte, error) {
	if s.mem == nil && (s.off < 0 || s.filesize > uint64(fileSize) || s.off > fileSize-int64(s.filesize)) {
		return nil, fmt.Errorf("%w: section %s: %d bytes at file offset %#x lie outside the %d-byte file", ErrTruncated, s.name, s.filesize, s.off, fileSize)
	}
	buf := make([]byte, s.filesize)
	if _, err := s.r.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("section %s: reading %d bytes at file offset %#x: %w", s.name, s.filesize, s.off, err)
	}
	return buf, nil
}

func openImage(r io.ReaderAt, size int64) (*image, error) {
	im, err := openFormat(&edgeReader{r: r, size: size}, size)
	if err != nil {
		return nil, err
	}
	// The edge reader serves the container parsers only: later reads,
	// which may run concurrently, go to r itself.
	for i := range im.sections {
		if im.sections[i].mem == nil {
			im.sections[i].r = r
		}
	}
	im.fileSize = size
	return im, nil
}

// ErrTruncated is wrapped by the errors for a file that ends before what
// its headers describe: a read of the container's headers that runs past
// the end of the file, or a section or segment that lies outside it.
var ErrTruncated = errors.New("file is truncated")

// edgeReader records the last read that failed, the one a debug/* parser
// gave up on, so that its io.EOF can say where the file ended.
type edgeReader struct {
	r      io.ReaderAt
	size   int64 // the file's size, or the largest int64 if unknown
	failed bool
	off    int64 // offset and length of the last failed read
	n      int
}

func (e *edgeReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := e.r.ReadAt(p, off)
	if err != nil {
		e.failed, e.off, e.n = true, off, len(p)
	}
	return n, err
}

// truncated rewrites err, an error from a debug/* parser reading r, into
// one that says what was read where, and wraps ErrTruncated, when it comes
// from a read past the end of the file (io.EOF or io.ErrUnexpectedEOF).
//
// debug/pe formats some of its read errors with %v, which loses io.EOF: a
// failed read that reached past the end of a file of known size counts as
// the cause too.
func truncated(err error, r io.ReaderAt) error {
	er, ok := r.(*edgeReader)
	if !ok || !er.failed {
		return err
	}
	past := er.size != 1<<63-1 && (er.off < 0 || er.off > er.size || int64(er.n) > er.size-er.off)
	if !past && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	what := "file"
	if er.size != 1<<63-1 {
		what = fmt.Sprintf("%d-byte file", er.size)
	}
	return fmt.Errorf("%w: a %d-byte read at offset %#x runs past the end of the %s (%w)", ErrTruncated, er.n, er.off, what, err)
}

// openFormat reads the container format of the file in r, of size bytes.
func openFormat(r io.ReaderAt, size int64) (*image, error) {
	if size == 0 {
		return nil, errors.New("empty file (0 bytes): pctab reads " + formatsRead + " binaries")
	}
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return nil, fmt.Errorf("reading file magic: %w", truncated(err, r))
	}
	switch {
	case bytes.Equal(magic[:], []byte(elf.ELFMAG)):
		return openELF(r)
	case bytes.HasPrefix(magic[:], []byte("MZ")):
		return openPE(r)
	case binary.BigEndian.Uint16(magic[:]) == xcoffMagic64:
		return openXCOFF(r, size)
	}
	if _, ok := plan9Arch[binary.BigEndian.Uint32(magic[:])]; ok {
		return openPlan9(r, size)
	}
	if bytes.Equal(magic[:], []byte(wasmMagic)) {
		return openWasm(r, size)
	}
	le := binary.LittleEndian.Uint32(magic[:])
	be := binary.BigEndian.Uint32(magic[:])
	for _, m := range []uint32{macho.Magic32, macho.Magic64} {
		if le == m || be == m {
			return openMachO(r)
		}
	}
	if be == macho.MagicFat || be == magicFat64 {
		if err := fatError(r, be == magicFat64); err != nil {
			return nil, err
		}
	}
	if name := otherFormat(magic[:]); name != "" {
		return nil, fmt.Errorf("unsupported file format (magic % x): %s; pctab reads %s", magic, name, formatsRead)
	}
	return nil, fmt.Errorf("unrecognized file format (magic % x): pctab reads %s", magic, formatsRead)
}

// formatsRead names the container formats openFormat reads, for errors.
const formatsRead = "ELF, Mach-O, PE, XCOFF, Plan 9 a.out and WebAssembly"

// magicFat64 is the magic of a universal Mach-O file whose fat_arch
// records hold 64-bit offsets and sizes (fat_arch_64).
const magicFat64 = 0xcafebabf

// maxFatArches is one more than the most architectures a universal Mach-O
// file is taken to hold: a file starting with 0xcafebabe and a larger count
// is a Java class file (whose version fields are there), as file(1) tells
// them apart.
const maxFatArches = 20

// fatError returns the error for the universal (fat) Mach-O file in r:
// pctab reads thin files, and the error lists the architectures inside,
// with the offset and size of each, so that one can be extracted. It
// returns nil for a file that starts with the fat magic but is no
// universal file (a Java class file), for otherFormat to name.
func fatError(r io.ReaderAt, wide bool) error {
	var hdr [8]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return fmt.Errorf("Mach-O universal header: %w", truncated(err, r))
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if n == 0 || n >= maxFatArches {
		return nil
	}
	size := int64(20) // fat_arch: cputype, cpusubtype, offset, size, align
	if wide {
		size = 32 // fat_arch_64: 64-bit offset and size, and a reserved word
	}
	buf := make([]byte, int64(n)*size)
	if _, err := r.ReadAt(buf, 8); err != nil {
		return fmt.Errorf("Mach-O universal header: %d architectures: %w", n, truncated(err, r))
	}
	arches := make([]string, n)
	for i := range arches {
		a := buf[int64(i)*size:]
		cpu := macho.Cpu(binary.BigEndian.Uint32(a))
		off, sz := uint64(binary.BigEndian.Uint32(a[8:])), uint64(binary.BigEndian.Uint32(a[12:]))
		if wide {
			off, sz = binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(a[16:])
		}
		name, ok := machoArch[cpu]
		if !ok {
			name = fmt.Sprintf("cpu %#x", uint32(cpu))
		}
		arches[i] = fmt.Sprintf("%s (%d bytes at offset %#x)", name, sz, off)
	}
	return fmt.Errorf("unsupported file format: a universal (fat) Mach-O file of %d architectures, %s; pctab reads %s files, not universal ones: extract one architecture (lipo -thin, or copy its bytes) and read that", n, strings.Join(arches, ", "), formatsRead)
}

// otherFormat names the container formats of files that are not ELF,
// Mach-O or PE but that a Go toolchain writes (or that are often mistaken
// for a binary), from their first four bytes; "" if none.
func otherFormat(magic []byte) string {
	be := binary.BigEndian.Uint32(magic)
	switch {
	case bytes.Equal(magic, []byte("!<ar")):
		return "an ar archive (a -buildmode=c-archive library or a compiled package), not a linked binary"
	case be>>16 == 0x01df:
		return "a 32-bit XCOFF file (AIX), which Go does not write"
	case bytes.HasPrefix(magic, []byte("#!")):
		return "a script, not a binary"
	case be == macho.MagicFat:
		return "a Java class file" // a universal Mach-O file is taken by fatError
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return "gzip-compressed data; decompress it first"
	case bytes.Equal(magic, []byte{0xfd, '7', 'z', 'X'}):
		return "xz-compressed data; decompress it first"
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd-compressed data; decompress it first"
	case bytes.HasPrefix(magic, []byte("BZh")):
		return "bzip2-compressed data; decompress it first"
	case bytes.Equal(magic, []byte("PK\x03\x04")):
		return "a zip archive; extract the binary first"
	}
	return ""
}

// safely runs a debug/* parser call that may panic on hostile input. The
// standard library's parsers are robust on most inputs but not all.
func safely[T any](what string, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: malformed file (parser failed: %v)", what, p)
		}
	}()
	return f()
}

var elfArch = map[elf.Machine]string{
	elf.EM_X86_64: "amd64", elf.EM_386: "386", elf.EM_AARCH64: "arm64", elf.EM_ARM: "arm",
	elf.EM_RISCV: "riscv64", elf.EM_S390: "s390x", elf.EM_LOONGARCH: "loong64",
}

func openELF(r io.ReaderAt) (*image, error) {
	f, err := safely("ELF", func() (*elf.File, error) { return elf.NewFile(r) })
	if err != nil {
		return nil, fmt.Errorf("ELF: %w", truncated(err, r))
	}
	im := &image{format: "elf", order: f.ByteOrder, goos: "linux"}
	im.goarch = elfArch[f.Machine]
	switch f.Machine {
	case elf.EM_PPC64:
		im.goarch = "ppc64"
		if f.ByteOrder == binary.LittleEndian {
			im.goarch = "ppc64le"
		}
	case elf.EM_MIPS:
		im.goarch = "mips"
		if f.Class == elf.ELFCLASS64 {
			im.goarch = "mips64"
		}
		if f.ByteOrder == binary.LittleEndian {
			im.goarch += "le"
		}
	}
	if im.goarch == "" {
		im.goarch = strings.ToLower(strings.TrimPrefix(f.Machine.String(), "EM_"))
	}
	switch f.OSABI {
	case elf.ELFOSABI_FREEBSD:
		im.goos = "freebsd"
	case elf.ELFOSABI_NETBSD:
		im.goos = "netbsd"
	case elf.ELFOSABI_OPENBSD:
		im.goos = "openbsd"
	}
	im.ptrSize = 8
	if f.Class == elf.ELFCLASS32 {
		im.ptrSize = 4
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP && p.Filesz > 0 && p.Filesz <= 256 {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				im.interp = string(bytes.TrimRight(b, "\x00"))
			}
		}
	}
	for _, s := range f.Sections {
		if s.Name == ".go_export" {
			im.gccgo = true
		}
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		im.sections = append(im.sections, segment{
			name: s.Name, addr: s.Addr, size: s.Size, off: int64(s.Offset), filesize: s.Size,
			exec: s.Flags&elf.SHF_EXECINSTR != 0, write: s.Flags&elf.SHF_WRITE != 0, r: r,
		})
	}
	if len(im.sections) == 0 {
		// No section headers (e.g. sstrip): fall back to the program headers.
		for i, p := range f.Progs {
			if p.Type != elf.PT_LOAD || p.Filesz == 0 {
				continue
			}
			im.sections = append(im.sections, segment{
				name: fmt.Sprintf("PT_LOAD#%d", i), addr: p.Vaddr, size: p.Memsz, off: int64(p.Off), filesize: p.Filesz,
				exec: p.Flags&elf.PF_X != 0, write: p.Flags&elf.PF_W != 0, r: r,
			})
		}
	}
	// A big binary's symbol table costs megabytes to load, and objscan
	// rarely needs it: load it only when asked.
	im.loadSyms = func() map[string]uint64 {
		syms, _ := safely("ELF symbols", func() ([]elf.Symbol, error) { return f.Symbols() })
		m := make(map[string]uint64)
		for _, s := range syms {
			if wantSyms[s.Name] {
				if _, dup := m[s.Name]; !dup {
					m[s.Name] = s.Value
				}
			}
		}
		return m
	}
	im.finish()
	return im, nil
}

var machoArch = map[macho.Cpu]string{
	macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64", macho.Cpu386: "386", macho.CpuArm: "arm",
	macho.CpuPpc64: "ppc64",
}

func openMachO(r io.ReaderAt) (*image, error) {
	f, err := safely("Mach-O", func() (*macho.File, error) { return macho.NewFile(r) })
	if err != nil {
		return nil, fmt.Errorf("Mach-O: %w", truncated(err, r))
	}
	im := &image{format: "macho", order: f.ByteOrder, goos: "darwin", goarch: machoArch[f.Cpu]}
	if im.goarch == "" {
		im.goarch = strings.ToLower(f.Cpu.String())
	}
	im.ptrSize = 8
	if f.Magic == macho.Magic32 {
		im.ptrSize = 4
	}
	for _, s := range f.Sections {
		if s.Size == 0 || s.Offset == 0 || s.Flags&0xff == 1 /* S_ZEROFILL */ || s.Flags&0xff == 0x12 /* S_THREAD_LOCAL_ZEROFILL */ {
			continue
		}
		exec := s.Flags&0x80000000 != 0 || s.Flags&0x400 != 0 // S_ATTR_PURE_INSTRUCTIONS, S_ATTR_SOME_INSTRUCTIONS
		im.sections = append(im.sections, segment{
			name: s.Name, addr: s.Addr, size: s.Size, off: int64(s.Offset), filesize: s.Size,
			exec: exec, write: s.Seg == "__DATA", r: r,
		})
	}
	im.syms = make(map[string]uint64)
	if f.Symtab != nil {
		for _, s := range f.Symtab.Syms {
			name := strings.TrimPrefix(s.Name, "_")
			if wantSyms[name] {
				if _, dup := im.syms[name]; !dup {
					im.syms[name] = s.Value
				}
			}
		}
	}
	im.finish()
	return im, nil
}

var peArch = map[uint16]string{
	pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_I386: "386",
	pe.IMAGE_FILE_MACHINE_ARM64: "arm64", pe.IMAGE_FILE_MACHINE_ARMNT: "arm",
}

func openPE(r io.ReaderAt) (*image, error) {
	f, err := safely("PE", func() (*pe.File, error) { return pe.NewFile(r) })
	if err != nil {
		return nil, fmt.Errorf("PE: %w", truncated(err, r))
	}
	im := &image{format: "pe", order: binary.LittleEndian, goos: "windows", goarch: peArch[f.Machine]}
	if im.goarch == "" {
		im.goarch = fmt.Sprintf("pe-machine-%#x", f.Machine)
	}
	var imageBase uint64
	switch oh := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		imageBase = uint64(oh.ImageBase)
		im.ptrSize = 4
	case *pe.OptionalHeader64:
		imageBase = oh.ImageBase
		im.ptrSize = 8
	default:
		return nil, errors.New("PE: no optional header")
	}
	for _, s := range f.Sections {
		n := uint64(min(s.Size, s.VirtualSize))
		if s.VirtualSize == 0 {
			n = uint64(s.Size)
		}
		if n == 0 {
			continue
		}
		im.sections = append(im.sections, segment{
			name: s.Name, addr: imageBase + uint64(s.VirtualAddress), size: uint64(s.VirtualSize),
			off: int64(s.Offset), filesize: n,
			exec:  s.Characteristics&pe.IMAGE_SCN_CNT_CODE != 0,
			write: s.Characteristics&pe.IMAGE_SCN_MEM_WRITE != 0, r: r,
		})
	}
	im.syms = make(map[string]uint64)
	for _, s := range f.Symbols {
		if !wantSyms[s.Name] || s.SectionNumber <= 0 || int(s.SectionNumber) > len(f.Sections) {
			continue
		}
		if _, dup := im.syms[s.Name]; !dup {
			im.syms[s.Name] = imageBase + uint64(f.Sections[s.SectionNumber-1].VirtualAddress) + uint64(s.Value)
		}
	}
	im.finish()
	return im, nil
}

func (im *image) finish() {
	sort.SliceStable(im.sections, func(i, j int) bool { return im.sections[i].addr < im.sections[j].addr })
	for _, s := range im.sections {
		if s.exec {
			im.textSect = s.addr
			break
		}
	}
}
