// Package rewrite rewrites Go binaries (ELF, Mach-O and PE) so that their
// PC-value tables are in the linear-index format of golang/go#61984
// (package linearpc), to measure what the format really costs in a binary
// and to give tools a binary to work on. Command rewrite-binary is its command-line front end.
//
// # Modes
//
// [Replace] rebuilds the pclntab: the pcHeader gets the magic
// objscan.LinearMagic (no Go runtime accepts it: a stock runtime stops with
// "invalid function symbol table") and a 16-byte variant name; the pctab
// holds the linear encodings, deduplicated by content (tables shared in the
// varint pctab stay shared, and the encoder shares constant chunks within a
// table); every _func record gets the function's length in PC-quantum units,
// which the linear format needs out of band, as a uint32 after nfuncdata,
// and its table offsets point into the new pctab. Function names, the CU
// and file tables, the funcdata (go:func.*) and findfunctab are copied
// unchanged. The format is specified in objscan's linear.go, which reads it.
//
// The format is Go 1.20's pclntab layout, so older layouts are converted:
// Go 1.18-1.19 records get Go 1.20's startLine field (0). Go 1.2-1.17
// records, which hold absolute entry PCs and funcdata pointers, get entry
// offsets and uint32 funcdata offsets from moduledata.text (which the
// pcHeader's textStart word also holds; absent funcdata become
// objscan.NoFuncData), and the ftab's pointer pairs become uint32 pairs.
// A Go 1.16-1.17 table's names, CU and file tables are copied; a Go
// 1.2-1.15 table, which has neither, gets a funcnametab, a filetab and one
// compilation unit that maps file number i to file i, so pcfile values and
// inline trees name the same files, and the inline trees, which stay in
// the release's format outside the pclntab, get their name offsets
// rewritten to index the new funcnametab (see convertPclntab). The Go
// 1.5-1.15 moduledata, whose first words are the pclntable, ftab and
// filetab slices, is updated to point at the new table, functab and
// cutab.
//
// Because the new pclntab is larger and code addresses must not change,
// the new table gets a new address above every other segment, and the old
// table's bytes leave the file (what follows them moves back), so the file
// size is the real cost:
//
//   - ELF: the new .gopclntab, with the sections that followed it in its
//     segment (in Go 1.26 .typelink and .itablink; in PIEs and external
//     links also the dynamic-linking sections or .eh_frame_hdr and
//     .eh_frame), moves to a new PT_LOAD segment. In the file it stays
//     right after .rodata, where the linker puts it, and everything after
//     it moves by the growth rounded up to the page alignment. Dynamic
//     relocations, .dynamic's addresses, PT_GNU_EH_FRAME and the unwind
//     tables' PC-relative pointers follow the moved sections (dynlink.go),
//     and the program header table moves into the new segment when the
//     linker left no room for another entry. A Go 1.18-1.25 PIE's
//     .data.rel.ro.gopclntab moves the same way (relro.go).
//   - Mach-O (darwin/amd64, darwin/arm64): __TEXT ends where __gopclntab
//     started; the new table is a new segment, MachOPclntabSegment, before
//     __DWARF and __LINKEDIT; every file offset in the load commands, the
//     symbols' section numbers and the ad-hoc code signature are updated.
//   - PE (windows/amd64, arm64, 386): .rdata is split around the table;
//     the new table is a new last section, PEPclntabSection. The base
//     relocation of a Go 1.18-1.25 pcHeader.textStart moves with it.
//
// The moduledata's pointers to the table (pcHeader, funcnametab, cutab,
// filetab, pctab, pclntable, ftab, findfunctab, gofunc, epclntab, and
// typelinks and itablinks when they move) and the lengths of its pctab and
// pclntable slices are updated, and so are the symbols defined in the
// moved bytes. DWARF is not updated (it does not describe the pclntab).
// Converting a Go 1.2-1.17 pclntab needs its moduledata (Go 1.5 and
// later) and a table without dynamic relocations (not a PIE's
// .data.rel.ro.gopclntab, not a PE file's, whose base relocations fix up
// its absolute pointers). A Go 1.18-1.25 table has one absolute word,
// pcHeader.textStart, which the loader relocates in a PIE or shared build:
// the linker puts the table in .data.rel.ro.gopclntab, at the end of the
// RELRO part of the writable data (the tests rewrite internally and
// externally linked PIEs and a c-shared library; -buildmode=shared is
// untested). Replace mode moves it as it moves
// .gopclntab, to a new PT_LOAD that is writable (the loader writes the
// word), moves the word's dynamic relocation to the new pcHeader, and ends
// PT_GNU_RELRO where the old segment now ends, rounded up to the page with
// zero-fill memory so that no page it protected loses protection. The new
// segment is not RELRO (ELF has one PT_GNU_RELRO range, and the new
// segment lies above .data and .bss), so the new table stays writable at
// run time; a Result note says so. A PIE linked by an external linker
// has no such section: ld merges .data.rel.ro.gopclntab into the end of
// .data.rel.ro, before .dynamic, .got and .data in the same segment, which
// keep their addresses. The table is then split off the section (into a
// section of its own, also named .data.rel.ro, appended to the section
// table, with runtime.pclntab and runtime.epclntab) and the segment is
// split around it: the part before keeps its bytes and runs on as
// zero-fill memory to the page where the table ended, which PT_GNU_RELRO
// still covers (the loader's mprotect fails on unmapped pages), and a new
// PT_LOAD maps the rest at its addresses (relro.go). A table that does
// not end its section is refused. In a PE file with base relocations, a Go 1.18-1.25 table's
// textStart word has one too; replace mode turns it into a padding
// (ABSOLUTE) entry and adds a block for the new pcHeader's word at the end
// of the directory, in .reloc's file alignment padding, or, when that has
// fewer than the block's 12 bytes, in one more file alignment unit of
// .reloc (a Result part counts it). The .shstrtab
// that Go 1.2-1.7 linkers put after .gopclntab in its segment moves to the
// end of the file. A layout replace
// mode cannot rewrite gets an error that says why.
//
// [Append] leaves every loaded byte alone and adds a non-allocated section,
// objscan.LinearSection, holding a header, every function's length, an
// index from (varint table offset, function length) to linear offset, and
// the linear tables. The binary runs as before.
//
// # Function lengths
//
// A linear table needs its function's length. Replace mode stores one
// uint32 per function, in its _func record; records stay aligned to the
// pointer size as the linker aligns them, so on 64-bit targets the field
// costs 8 bytes for a record that had no padding and 0 for one that had 4.
// The size account reports the real cost. A table shorter than its
// function's longest table (which the linker emits for a few assembly
// functions on some architectures) is extended to the function's length
// with the value -1, what the runtime's non-strict lookup returns past a
// varint table's end; Result.PaddedTables counts them.
//
// # Size account
//
// A [Result] gives the input and output sizes and splits the difference into
// [Part]s that add up to it exactly. [EstimateFor] computes pctab-stats'
// estimate (package report: linear minus varint table bytes, plus 4 bytes
// per function) and [Gap] explains the difference between the real change
// and the estimate item by item: padding in the pctab, record alignment, the
// header's variant name, the funcdata's realignment, and the rounding of
// later segments to the page alignment, which makes the real file size move
// in whole pages (4 KiB on linux/amd64, 64 KiB on linux/arm64).
//
// # Verification
//
// [Check] compares a rewritten binary with the binary it was made from: at
// every PC of every function, every linear table's lookup must equal the
// original varint lookup, the stored encodings must be exactly what the
// encoder produces, and every other _func field, name table, funcdata byte
// and moduledata-derived address must be preserved. [SameLoadedImage]
// checks that append mode changed no loaded byte.
package rewrite
