//go:build linux

package rewrite_test

import (
	"bytes"
	"fmt"
	"log"
	"os"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/rewrite"
)

// This example rewrites the running test binary in replace mode and reads
// the rewritten pclntab back with objscan. (Options.Verify, or Check, would
// also compare every lookup with the original tables.)
func Example() {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		log.Fatal(err)
	}
	out, res, err := rewrite.Rewrite(data, rewrite.Options{Mode: rewrite.Replace, Variant: "spec"})
	if err != nil {
		log.Fatal(err)
	}
	f, err := objscan.NewFile(bytes.NewReader(out))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("magic %#x, %s mode, variant %s\n", f.Magic, f.Linear.Mode, f.Linear.Variant)
	fmt.Println("pclntab grew:", res.NewPclntab > res.OldPclntab)
	fmt.Println("functions:", len(f.Funcs) == res.Funcs)
	// Output:
	// magic 0xffffffe1, replace mode, variant spec
	// pclntab grew: true
	// functions: true
}
