// Package stackreport measures the stackcompress DAG on real Go stacks and
// compares it with the Go execution tracer's stack table, Superluminal's
// design and Pyroscope's stack tree. It computes every number of
// "pctab-stats stacks".
//
// [Measure] takes a corpus of recorded stacks (package stackinput) and
// reports:
//   - stacks and frames, and the raw bytes at 8 B per frame;
//   - the full-stack dedup bytes, each unique stack costed as the Go tracer
//     stores it, 72 B + 8 B×(n+1) ([TracerStackBytes]): over the whole
//     input, per trace generation (the runtime resets its table at each),
//     and, given the physical frames of each sample ([Options.Physical]),
//     with the PCs the runtime really stores, which are physical return PCs
//     for frame-pointer unwound stacks and logical PCs for CPU samples;
//   - for each [Variant], a frame kind and a stackcompress.Layout: nodes,
//     DAG bytes and bytes per node, the node map's peak bytes and mean
//     probe length, the share of lookups the coherency cache saves, and the
//     insert throughput in frames per second;
//
// and it checks that every sample's stack round-trips, from the builder and
// from the DAG file. [WriteFile] writes one variant's DAG to a file and reads
// every stack back under a memory budget.
//
// The package documentation of stackcompress holds the numbers for the
// net/http test trace.
package stackreport
