package rewrite

import (
	"bytes"
	"os"
	"testing"

	"github.com/pctab/pctab/internal/testbuild"
	"github.com/pctab/pctab/objscan"
)

// FuzzRewrite runs the ELF reader and both modes on arbitrary bytes (seeded
// with synthetic ELF binaries of every pclntab layout, in
// testdata/fuzz/FuzzRewrite, and with stripped builds by Go 1.15 and Go
// 1.16, whose pclntabs replace mode converts, and a Go 1.18 PIE, whose
// pcHeader.textStart relocation it moves, when their toolchains are in
// the module cache): nothing may panic, and whatever a mode writes (and
// replace mode in cfps-varint-pcln) must be ELF that objscan opens and
// Check passes.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	for _, cfg := range []testbuild.Config{
		{Archive: "features", Toolchain: "go1.15.15", Ldflags: "-s -w"},
		{Archive: "features", Toolchain: "go1.16.15", Ldflags: "-s -w"},
		{Archive: "features", Toolchain: "go1.18.10", Ldflags: "-s -w", BuildMode: "pie"},
	} {
		// Compile, not Build: a missing toolchain leaves the seed out
		// rather than skipping the target.
		path, err := testbuild.Compile(f.Context(), cfg)
		if err != nil {
			f.Logf("no %s %s seed: %v", cfg.Toolchain, cfg.BuildMode, err)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := parseELF(data)
		if err != nil {
			return
		}
		// Writing the parsed headers back must reproduce a readable file.
		out := bytes.Clone(data)
		e.writeTables(out)
		if _, err := parseELF(out); err != nil {
			t.Fatalf("headers written back do not parse: %v", err)
		}
		for _, opt := range []Options{{Mode: Append}, {Mode: Replace}, {Mode: Replace, Variant: objscan.LinearVarintPCLnName, Derived: true}} {
			opt.Workers = 1
			mode := opt.Mode
			out, _, err := Rewrite(data, opt)
			if err != nil {
				continue
			}
			rf, err := objscan.NewFile(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("%s mode wrote a file objscan rejects: %v", mode, err)
			}
			orig, err := objscan.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s mode rewrote a file objscan rejects: %v", mode, err)
			}
			if res, err := Check(rf, orig, 1); err != nil || !res.OK() {
				t.Fatalf("%s mode: Check: %v %+v", mode, err, res)
			}
		}
	})
}

// FuzzMachOPEHeaders runs the Mach-O and PE header readers on arbitrary
// bytes: the code-signature reader and re-signer, the PE layout reader,
// both formats' before/after checks and both modes must not panic.
func FuzzMachOPEHeaders(f *testing.F) {
	f.Add([]byte("MZ"))
	f.Add([]byte("\xcf\xfa\xed\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parsePELayout(data)
		CheckCodeSignature(data)
		resignMachO(bytes.Clone(data))
		machoResign(data, data, uint64(len(data)), 0, uint64(len(data)))
		samePESections(data, data)
		sameMachOSections(data, data)
		for _, mode := range []Mode{Append, Replace} {
			if _, _, err := Rewrite(data, Options{Mode: mode, Workers: 1}); err == nil {
				t.Logf("%s mode accepted %d bytes", mode, len(data))
			}
		}
	})
}
