package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"

	"github.com/pctab/pctab/tracestore"
	"github.com/pctab/pctab/tracestore/view"
)

// Serve a store of this process's trace, and read its metadata and first
// lane through the API the page uses.
func ExampleHandler() {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		panic(err)
	}
	time.Sleep(time.Millisecond)
	trace.Stop()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("view-example-%d", os.Getpid()))
	defer os.RemoveAll(dir)
	if _, err := tracestore.Build(&buf, dir, tracestore.Options{}); err != nil {
		panic(err)
	}
	s, err := tracestore.Open(dir)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	// httptest serves on a loopback address, which the handler allows.
	srv := httptest.NewServer(view.Handler(s))
	defer srv.Close()
	get := func(path string, v any) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			panic(err)
		}
	}
	var meta view.Meta
	get("/api/meta", &meta)
	fmt.Println("schema", meta.SchemaVersion == view.SchemaVersion, "lanes", meta.Lanes == s.NumLanes(), "events", meta.Events > 0)
	var page view.LanePage
	get("/api/lanes?from=0&n=1", &page)
	fmt.Println("first lane:", page.Lanes[0].Track == s.Lane(0).Track.String())
	// Output:
	// schema true lanes true events true
	// first lane: true
}
