package names

import "testing"

var sink int

func BenchmarkTop(b *testing.B) {
	for range b.N {
		sink++
	}
}

func BenchmarkTopLonger(b *testing.B) {
	for range b.N {
		sink += 2
	}
}

// BenchmarkGroup has sub-benchmarks whose names hold the characters a
// pattern must quote and a suffix that looks like GOMAXPROCS's.
func BenchmarkGroup(b *testing.B) {
	for _, name := range []string{"%s-stack-10", "%s-stack-1", "a.b", "x+y", "with space", "nested"} {
		b.Run(name, func(b *testing.B) {
			if name == "nested" {
				b.Run("inner", func(b *testing.B) {
					for range b.N {
						sink++
					}
				})
				return
			}
			for range b.N {
				sink++
			}
		})
	}
}
