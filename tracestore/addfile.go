package tracestore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// AddFile lists file name of the store in directory dir in its manifest,
// with the file's size and CRC-32C, replacing an earlier entry of that
// name: a file that another writer adds to a built store, such as the
// label index of package tracestore/labels. An optional file may be
// removed again without the store failing to open (FileSum.Optional). The
// name must be a plain file name and not one of the store's own files.
// The manifest is replaced atomically.
func AddFile(dir, name string, optional bool) error {
	if !plainName(name) || name == fileManifest || storeFile(name) {
		return fmt.Errorf("tracestore: %q is not a name another writer may add to a store", name)
	}
	data, err := os.ReadFile(filepath.Join(dir, fileManifest))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	var m Manifest
	if err := decodeManifest(data, &m); err != nil {
		return err
	}
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("tracestore: %s: schema_version %d, this writer knows %d", fileManifest, m.SchemaVersion, SchemaVersion)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	defer f.Close()
	h := crc32New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("tracestore: reading %s: %w", name, err)
	}
	sum := FileSum{Name: name, Bytes: n, CRC32: h.Sum32(), Optional: optional}
	files := m.Files[:0:0]
	for _, fs := range m.Files {
		if fs.Name != name {
			files = append(files, fs)
		}
	}
	m.Files = append(files, sum)
	if err := m.checkCounts(); err != nil {
		return err
	}
	tmp := fileManifest + ".tmp"
	if err := writeManifestAs(dir, tmp, &m); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, tmp), filepath.Join(dir, fileManifest)); err != nil {
		os.Remove(filepath.Join(dir, tmp))
		return fmt.Errorf("tracestore: %w", err)
	}
	return nil
}

// storeFiles returns the files Build writes besides the manifest, in the
// manifest's order.
func storeFiles() []string {
	return []string{fileEvents, filePages, fileStacks, fileFrames, fileStrings, fileLanes, fileLaneIdx, fileSpans, fileBlocks, fileForest, fileAttrs, fileAttrIdx, fileFuncIdx, fileLineIdx}
}

// storeFile reports whether name is one of the files Build writes.
func storeFile(name string) bool {
	if name == fileCoarse {
		return true
	}
	for _, f := range storeFiles() {
		if f == name {
			return true
		}
	}
	return false
}

// writeManifestAs writes m into dir as file name.
func writeManifestAs(dir, name string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("tracestore: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("tracestore: writing %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("tracestore: syncing %s: %w", name, err)
	}
	return f.Close()
}
