//go:build (!unix && !windows) || pctab_nommap

package mapfile

import "os"

// Supported says whether Map maps files in this build.
const Supported = false

func mapFile(*os.File, int) (*Mapping, error) { return nil, ErrUnsupported }

// dontNeed does nothing: nothing is mapped.
func dontNeed([]byte) {}
