package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pctab/pctab/internal/cli"
	"github.com/pctab/pctab/internal/testsuite"
	"github.com/pctab/pctab/toolchain"
)

// testsuiteCommand is "pctab-toolchain testsuite": Go's own test suite,
// stock and in runtime flavours (package internal/testsuite).
var testsuiteCommand = &cli.Command{
	Name:  "testsuite",
	Args:  "[-flavours LIST] [-batch N] [-timeout D] [-archive FILE [-acceptkeys KEYS]] [-report] -o DIR [PACKAGES]",
	Short: "run go test -short std cmd stock and in runtime flavours, and list the packages whose outcome differs",
	Long: "Testsuite runs go test -short -count=1 -json on PACKAGES (default: std cmd) with the\n" +
		"stock toolchain and with the patched one in each flavour of -flavours, and\n" +
		"prints the packages whose outcome (pass, fail, skip) differs between them, the\n" +
		"tests whose outcome differs within the packages every run finished, the\n" +
		"packages failing in all, and each run's totals; the table is also written to\n" +
		"DIR/table.txt. Each run's go test -json output goes to DIR/NAME.json (NAME: stock\n" +
		"or the flavour), batch by batch, the runs taking turns; a run that is stopped\n" +
		"resumes where it was: packages already finished in DIR are not run again.\n" +
		"A flavour's build tags go in GOFLAGS, so that the programs the tests build\n" +
		"with the go command get them too. -report prints the table of what DIR holds\n" +
		"without running anything.\n\n" +
		"-archive FILE keeps the runs' outcomes in FILE (gzip-compressed JSON lines,\n" +
		"small enough for a repository), so that a suite that takes longer than one\n" +
		"machine's session resumes on another: before running, the packages FILE holds\n" +
		"for a run of the same toolchain (the same Go release, patch key and tags) are\n" +
		"taken into DIR and not run again; afterwards, and when the command is\n" +
		"interrupted, DIR's outcomes are written back to FILE (with -report too).\n" +
		"-acceptkeys also takes the runs FILE holds for the toolchains of these patch\n" +
		"keys: use it only for a series whose later patches are shown to build those\n" +
		"runs' flavours as they were (docs/toolchain-testsuite.md says how).",
	Flags: func(fs *flag.FlagSet) cli.RunFunc {
		flavours := fs.String("flavours", "default,linear-cf-nocache", "comma-separated `names` of the flavours (toolchain.Flavours) to run besides stock")
		dir := fs.String("o", "", "`directory` of the runs' JSON files and the table (required)")
		batch := fs.Int("batch", 20, "`n` packages per go test command")
		timeout := fs.String("timeout", "20m", "go test -timeout of each package's tests")
		report := fs.Bool("report", false, "print the table of the runs in DIR without running anything")
		archive := fs.String("archive", "", "`file` of the runs' outcomes to resume from and to write back")
		acceptKeys := fs.String("acceptkeys", "", "comma-separated patch `keys` of earlier toolchains whose archived runs count as this one's")
		return func(env *cli.Env, args []string) error {
			if *dir == "" {
				return cli.Usagef("-o DIR is required")
			}
			if *batch < 1 {
				return cli.Usagef("-batch=%d: must be at least 1", *batch)
			}
			if d, err := time.ParseDuration(*timeout); err != nil || d < 0 {
				return cli.Usagef("-timeout=%s: want a duration such as 20m (0: none), as go test -timeout", *timeout)
			}
			var fls []toolchain.Flavour
			for _, name := range strings.Split(*flavours, ",") {
				fl, ok := flavourByName(name)
				if !ok || fl.Stock {
					return cli.Usagef("-flavours: unknown flavour %q (want some of %s)", name, flavourNames(slices.DeleteFunc(toolchain.Flavours(), func(fl toolchain.Flavour) bool { return fl.Stock })))
				}
				fls = append(fls, fl)
			}
			if len(args) == 0 {
				args = []string{"std", "cmd"}
			}
			tc, err := getToolchain(env)
			if err != nil {
				return err
			}
			pkgs, err := listPackages(tc, args)
			if err != nil {
				return err
			}
			runs := []testsuite.Run{stockRun(tc)}
			for _, fl := range fls {
				runs = append(runs, flavourRun(tc, fl))
			}
			if *archive != "" {
				if err := importArchive(env, *archive, *dir, archiveRuns(tc, runs, *acceptKeys)); err != nil {
					return err
				}
			}
			if !*report {
				fmt.Fprintf(env.Stderr, "pctab-toolchain: testsuite: %d packages, runs %s, in %s\n", len(pkgs), runNames(runs), *dir)
				// An interrupt stops the batch in progress, which then
				// runs again when the command is run again.
				ctx, stop := signal.NotifyContext(env.Ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
				o := testsuite.Options{Dir: *dir, Packages: pkgs, Runs: runs, Batch: *batch,
					TestArgs: []string{"-short", "-count=1", "-timeout=" + *timeout}, Log: env.Stderr}
				err := testsuite.Execute(ctx, o)
				if *archive != "" {
					err = cmp.Or(err, exportArchive(env, *archive, *dir, archiveRuns(tc, runs, "")))
				}
				if err != nil {
					return err
				}
			} else if *archive != "" {
				if err := exportArchive(env, *archive, *dir, archiveRuns(tc, runs, "")); err != nil {
					return err
				}
			}
			t, err := testsuite.Load(*dir, strings.Split(runNames(runs), ","), pkgs)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := t.Write(&buf); err != nil {
				return err
			}
			if !*report {
				if err := os.WriteFile(filepath.Join(*dir, "table.txt"), buf.Bytes(), 0o644); err != nil {
					return err
				}
			}
			_, err = env.Stdout.Write(buf.Bytes())
			return err
		}
	},
}

// runID says what run r of tc runs, for the archive: the Go release, the
// target, and for a flavour the patch key and GOFLAGS.
func runID(tc *toolchain.Toolchain, key string, r testsuite.Run) string {
	id := fmt.Sprintf("%s %s/%s", tc.Version, runtime.GOOS, runtime.GOARCH)
	if r.Name == "stock" {
		return id + " stock"
	}
	flags := ""
	for _, kv := range r.Env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			flags = v
		}
	}
	return fmt.Sprintf("%s key %s GOFLAGS=%s", id, key, flags)
}

// archiveRuns names runs for the archive, with the IDs they would have
// with the toolchains of the comma-separated patch keys as accepted ones.
func archiveRuns(tc *toolchain.Toolchain, runs []testsuite.Run, keys string) []testsuite.ArchiveRun {
	var ar []testsuite.ArchiveRun
	for _, r := range runs {
		a := testsuite.ArchiveRun{Name: r.Name, ID: runID(tc, tc.Key, r)}
		for _, k := range strings.Split(keys, ",") {
			if k != "" && r.Name != "stock" {
				a.Accept = append(a.Accept, runID(tc, k, r))
			}
		}
		ar = append(ar, a)
	}
	return ar
}

// importArchive takes the outcomes of the archive at path, if it exists,
// into dir. It fails if the archive holds a run it does not take: another
// toolchain's, or a flavour this command does not run.
func importArchive(env *cli.Env, path, dir string, runs []testsuite.ArchiveRun) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	res, err := testsuite.ReadArchive(data, dir, runs)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var skipped []string
	for _, r := range res {
		if r.Skipped != "" {
			skipped = append(skipped, fmt.Sprintf("run %s: %s", r.Run, r.Skipped))
		} else {
			fmt.Fprintf(env.Stderr, "pctab-toolchain: testsuite: %s: run %s: %d packages taken\n", path, r.Run, r.Packages)
		}
	}
	if len(skipped) > 0 {
		// Writing the archive back would lose those runs.
		return fmt.Errorf("%s holds runs this command does not take, which writing it back would lose (give -acceptkeys if the toolchains build the same, or another -archive file):\n\t%s", path, strings.Join(skipped, "\n\t"))
	}
	return nil
}

// exportArchive writes dir's outcomes of runs to the archive at path,
// replacing it: the archive holds the runs of the last command that wrote
// it (a run of another toolchain could not resume this command's).
func exportArchive(env *cli.Env, path, dir string, runs []testsuite.ArchiveRun) error {
	var buf bytes.Buffer
	if err := testsuite.WriteArchive(&buf, dir, runs); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "pctab-toolchain: testsuite: wrote %s (%d bytes)\n", path, buf.Len())
	return nil
}

// flavourByName returns the flavour of toolchain.Flavours called name.
func flavourByName(name string) (toolchain.Flavour, bool) {
	for _, fl := range toolchain.Flavours() {
		if fl.Name == name {
			return fl, true
		}
	}
	return toolchain.Flavour{}, false
}

func runNames(runs []testsuite.Run) string {
	var s []string
	for _, r := range runs {
		s = append(s, r.Name)
	}
	return strings.Join(s, ",")
}

// stockRun is the suite run with the local, unpatched toolchain.
func stockRun(tc *toolchain.Toolchain) testsuite.Run {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOROOT", "GOTOOLCHAIN", "GOFLAGS", "PATH":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOTOOLCHAIN=local", "GOFLAGS=", "PATH="+withGoBin(tc.StockRoot))
	return testsuite.Run{Name: "stock", Go: tc.StockGoCommand(), Env: env}
}

// flavourRun is the suite run with the patched toolchain in flavour fl,
// whose tags go in GOFLAGS so that what the tests build gets them too.
func flavourRun(tc *toolchain.Toolchain, fl toolchain.Flavour) testsuite.Run {
	extra := []string{"PATH=" + withGoBin(tc.GOROOT)}
	if len(fl.Tags) > 0 {
		extra = append(extra, "GOFLAGS=-tags="+strings.Join(fl.Tags, ","))
	}
	return testsuite.Run{Name: fl.Name, Go: tc.GoCommand(false), Env: tc.Env(false, extra...)}
}

// withGoBin returns $PATH with goroot's bin directory first, for the tests
// that run "go" from PATH.
func withGoBin(goroot string) string {
	return filepath.Join(goroot, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
}

// listPackages returns the import paths of patterns, as the stock go
// command lists them, the packages that read or write the PC-value tables
// first (so that a partial run covers them): the runtime's, debug/...,
// the linker's and the tools that read binaries.
func listPackages(tc *toolchain.Toolchain, patterns []string) ([]string, error) {
	cmd := exec.Command(tc.StockGoCommand(), append([]string{"list", "-e", "-f", "{{.ImportPath}}"}, patterns...)...)
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w\n%s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	var first, rest []string
	for _, p := range strings.Fields(string(out)) {
		if readsTables(p) {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(first)+len(rest) == 0 {
		return nil, fmt.Errorf("go list %s: no packages", strings.Join(patterns, " "))
	}
	return append(first, rest...), nil
}

// readsTables reports whether package p is one the change touches or one
// that reads a binary's PC-value tables.
func readsTables(p string) bool {
	for _, pre := range []string{"runtime", "debug/", "cmd/link", "internal/trace", "cmd/internal/objfile", "internal/runtime/"} {
		if p == strings.TrimSuffix(pre, "/") || strings.HasPrefix(p, strings.TrimSuffix(pre, "/")+"/") {
			return true
		}
	}
	switch p {
	case "cmd/addr2line", "cmd/objdump", "cmd/pprof", "cmd/trace", "internal/abi":
		return true
	}
	return false
}
