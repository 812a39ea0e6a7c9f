package objscan

import (
	"bytes"
	"encoding/binary"
	"runtime/debug"
)

// buildInfoMagic starts the build info blob the linker writes (see
// cmd/link/internal/ld.(*Link).buildinfo and debug/buildinfo).
var buildInfoMagic = []byte("\xff Go buildinf:")

const (
	buildInfoHeaderSize = 32       // magic, pointer size, flags, two pointers
	buildInfoSearch     = 64 << 10 // how far into a data section the blob is looked for
	buildInfoMaxString  = 1 << 20  // the longest version or module string read
)

// scanBuildInfo is debug/buildinfo's search for the build info blob, for
// the files it does not read: an ELF file without section headers whose
// build info is not at the start of its first writable segment (a PIE's
// is in the second), or an XCOFF file without a symbol table (-s). It
// looks at the 16-byte-aligned offsets of the first 64 KiB of each
// writable section, as the linker puts the blob at the start of the data,
// and returns the Go version and the module string; "" if none is found.
func (im *image) scanBuildInfo() (vers, mod string) {
	for i := range im.sections {
		s := &im.sections[i]
		if !s.write || s.exec {
			continue
		}
		data, err := im.readAddr(s.addr, min(s.filesize, buildInfoSearch))
		if err != nil {
			continue
		}
		for off := 0; ; {
			j := bytes.Index(data[off:], buildInfoMagic)
			if j < 0 {
				break
			}
			at := off + j
			off = at + 1
			if at%16 != 0 {
				continue
			}
			if vers, mod, ok := im.decodeBuildInfo(s.addr + uint64(at)); ok {
				return vers, mod
			}
		}
	}
	return "", ""
}

// decodeBuildInfo decodes the build info blob at addr: its version and
// module strings inline after the header (Go 1.18 and later), or
// pointed at by the header's two pointers (before).
func (im *image) decodeBuildInfo(addr uint64) (vers, mod string, ok bool) {
	hdr, err := im.readAddr(addr, buildInfoHeaderSize)
	if err != nil {
		return "", "", false
	}
	ptrSize, flags := int(hdr[14]), hdr[15]
	if flags&2 != 0 { // inline strings
		var next uint64
		if vers, next, ok = im.varintString(addr + buildInfoHeaderSize); !ok {
			return "", "", false
		}
		if mod, _, ok = im.varintString(next); !ok {
			return "", "", false
		}
	} else {
		var order binary.ByteOrder = binary.LittleEndian
		if flags&1 != 0 {
			order = binary.BigEndian
		}
		if ptrSize != 4 && ptrSize != 8 {
			return "", "", false
		}
		word := func(b []byte) uint64 {
			if ptrSize == 4 {
				return uint64(order.Uint32(b))
			}
			return order.Uint64(b)
		}
		if vers, ok = im.goString(word(hdr[16:]), ptrSize, word); !ok {
			return "", "", false
		}
		if mod, ok = im.goString(word(hdr[16+ptrSize:]), ptrSize, word); !ok {
			return "", "", false
		}
	}
	// The module string is framed by 16-byte sentinels, as debug/buildinfo
	// strips them.
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	return vers, mod, goMinor(vers) >= 0
}

// varintString reads a string of at most buildInfoMaxString bytes,
// prefixed by its length as a uvarint, at addr; it returns the string
// and the address after it.
func (im *image) varintString(addr uint64) (string, uint64, bool) {
	b, err := im.readAddr(addr, binary.MaxVarintLen64)
	if err != nil {
		// The string may end closer than MaxVarintLen64 bytes before the
		// end of its section.
		if b, err = im.readAddr(addr, 1); err != nil {
			return "", 0, false
		}
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > buildInfoMaxString {
		return "", 0, false
	}
	if n == 0 {
		return "", addr + uint64(k), true
	}
	s, err := im.readAddr(addr+uint64(k), n)
	if err != nil {
		return "", 0, false
	}
	return string(s), addr + uint64(k) + n, true
}

// goString reads the Go string whose header (data pointer and length) is
// at addr.
func (im *image) goString(addr uint64, ptrSize int, word func([]byte) uint64) (string, bool) {
	hdr, err := im.readAddr(addr, uint64(2*ptrSize))
	if err != nil {
		return "", false
	}
	n := word(hdr[ptrSize:])
	if n > buildInfoMaxString {
		return "", false
	}
	if n == 0 {
		return "", true // a GOPATH build's module string: its pointer may be nil
	}
	s, err := im.readAddr(word(hdr), n)
	if err != nil {
		return "", false
	}
	return string(s), true
}

// buildSettings returns the GOOS and GOARCH build settings of a module
// string, "" for each it does not record (before Go 1.18).
func buildSettings(mod string) (goos, goarch string) {
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return "", ""
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	return goos, goarch
}
