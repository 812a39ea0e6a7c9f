package testbuild

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// GarbleVersion is the version of garble (mvdan.cc/garble) that builds
// with Config.Garble: the newest whose go.mod the local Go 1.26 accepts
// (v0.18.0 declares go 1.27) and that supports Go 1.26 (v0.17.0's linker
// patches are for go1.26).
const GarbleVersion = "v0.17.0"

// garbleModule is garble's module path.
const garbleModule = "mvdan.cc/garble"

// garbleBinary returns the path of garble at version, built by the local
// go command into the cache (the module from the module proxy, kept in
// the module cache), building it first if needed; only when download is
// set, since its module may need fetching.
func garbleBinary(ctx context.Context, env goEnv, version string, download bool) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	// garble refuses a toolchain newer than the Go that built it: one
	// build per local Go version.
	bindir := filepath.Join(dir, fmt.Sprintf("garble-%s-%s", version, env["GOVERSION"]))
	exe := filepath.Join(bindir, "garble")
	if env["GOHOSTOS"] == "windows" {
		exe += ".exe"
	}
	if _, err := os.Stat(exe); err == nil {
		if fi, err := os.Stat(bindir); err == nil {
			markUsed(bindir, fi)
		}
		return exe, nil
	}
	if !download {
		return "", fmt.Errorf("testbuild: %w: %s@%s is not built", ErrNeedsDownload, garbleModule, version)
	}
	locks := filepath.Join(dir, "locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		return "", fmt.Errorf("testbuild: creating cache directory: %w", err)
	}
	unlock, err := lockFile(filepath.Join(locks, filepath.Base(bindir)))
	if err != nil {
		return "", fmt.Errorf("testbuild: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+filepath.Base(bindir)+"-")
	if err != nil {
		return "", fmt.Errorf("testbuild: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", garbleModule+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(hostEnviron(env), "GOBIN="+tmp, "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testbuild: go install %s@%s: %w\n%s", garbleModule, version, err, bytes.TrimSpace(out.Bytes()))
	}
	if err := os.Rename(tmp, bindir); err != nil {
		return "", fmt.Errorf("testbuild: moving garble into the cache: %w", err)
	}
	return exe, nil
}

// hostEnviron is the environment of a go command that builds for the host
// with the local toolchain (inheritedEnviron, and no toolchain switch).
func hostEnviron(env goEnv) []string {
	return append(inheritedEnviron(env), "GOENV=off", "GOFLAGS=", "GOTOOLCHAIN=local")
}

// MimicGarble returns a copy of data, a Go 1.20+ ELF binary, with the two
// changes garble's linker makes to the pclntab (mvdan.cc/garble v0.17.0,
// internal/linker/patches): the pcHeader's magic replaced by magic, and,
// when key is not 0, each _func record's entryOff replaced by entryOff XOR
// nameOff*key (garble's runtime decrypts it; the functab is unchanged).
// It reads the ELF file with debug/elf alone, not with the code under
// test. The result does not run: its runtime expects Go's magic.
func MimicGarble(data []byte, magic, key uint32) ([]byte, error) {
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("MimicGarble: %w", err)
	}
	s := ef.Section(".gopclntab")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Offset+s.Size > uint64(len(data)) {
		return nil, errors.New("MimicGarble: no .gopclntab section with file data")
	}
	out := bytes.Clone(data)
	p := out[s.Offset : s.Offset+s.Size]
	o := ef.ByteOrder
	if len(p) < 8 || o.Uint32(p) != 0xfffffff1 {
		return nil, errors.New("MimicGarble: not a Go 1.20+ pclntab (magic 0xfffffff1)")
	}
	ps := uint64(p[7])
	if ps != 4 && ps != 8 || uint64(len(p)) < 8+8*ps {
		return nil, fmt.Errorf("MimicGarble: pointer size %d", ps)
	}
	word := func(off uint64) uint64 {
		if ps == 4 {
			return uint64(o.Uint32(p[off:]))
		}
		return o.Uint64(p[off:])
	}
	nfunc, ftab := word(8), word(8+7*ps)
	if ftab+8*nfunc > uint64(len(p)) {
		return nil, errors.New("MimicGarble: functab past the pclntab")
	}
	o.PutUint32(p, magic)
	if key == 0 {
		return out, nil
	}
	for i := uint64(0); i < nfunc; i++ {
		rec := ftab + uint64(o.Uint32(p[ftab+8*i+4:]))
		if rec+8 > uint64(len(p)) {
			return nil, fmt.Errorf("MimicGarble: record %d past the pclntab", i)
		}
		encrypt(p[rec:], o, key)
	}
	return out, nil
}

// encrypt encrypts the entryOff of the _func record at the start of rec
// as garble's linker does.
func encrypt(rec []byte, o binary.ByteOrder, key uint32) {
	entryOff, nameOff := o.Uint32(rec), o.Uint32(rec[4:])
	o.PutUint32(rec, entryOff^nameOff*key)
}
