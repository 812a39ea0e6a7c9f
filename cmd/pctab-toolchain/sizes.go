package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pctab/pctab/objscan"
	"github.com/pctab/pctab/toolchain"
)

// runSizes builds each package with the patched toolchain and its twin and
// prints file and pclntab sizes, and checks each pair.
func runSizes(ctx context.Context, get func() (*toolchain.Toolchain, error), pkgs []string, w io.Writer) error {
	if len(pkgs) == 0 {
		pkgs = []string{"cmd/gofmt", "cmd/go"}
	}
	tc, err := get()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "pctab-toolchain-sizes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(w, "%-12s %12s %12s %8s %12s %12s %8s  %s\n", "package", "twin file", "linear file", "file", "twin pctab", "linear pctab", "pclntab", "check")
	for _, pkg := range pkgs {
		name := strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_")
		if name == "" {
			name = "main"
		}
		lin, twin := filepath.Join(dir, name+".linear"), filepath.Join(dir, name+".twin")
		for _, o := range []toolchain.BuildOptions{
			{Dir: tc.GOROOT + "/src", Package: pkg, Out: lin},
			{Dir: tc.TwinGOROOT + "/src", Package: pkg, Out: twin, Twin: true},
		} {
			if !strings.HasPrefix(pkg, "cmd/") {
				o.Dir, _ = os.Getwd()
			}
			if err := tc.GoBuild(ctx, o); err != nil {
				return err
			}
		}
		fl, err := objscan.Open(lin)
		if err != nil {
			return err
		}
		ft, err := objscan.Open(twin)
		if err != nil {
			fl.Close()
			return err
		}
		res, err := toolchain.Check(fl, ft)
		status := "ok"
		switch {
		case err != nil:
			status = err.Error()
		case !res.OK():
			status = fmt.Sprintf("FAIL %d mismatches", res.Mismatches)
		}
		sl, st := fileSize(lin), fileSize(twin)
		fmt.Fprintf(w, "%-12s %12d %12d %8s %12d %12d %8s  %s\n", pkg, st, sl, pct(sl, st),
			ft.Sizes.PCTab, fl.Sizes.PCTab, pct(fl.Sizes.Total, ft.Sizes.Total), status)
		fl.Close()
		ft.Close()
	}
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// pct formats the change from b to a in percent.
func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", 100*float64(a-b)/float64(b))
}
