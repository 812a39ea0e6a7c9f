package forest

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// NewReserved returns an empty forest whose storage is address space
// reserved up front for maxLeaves leaves, where the platform allows it (an
// anonymous mapping that reserves no memory, on Linux): appends fill it a
// page at a time as they touch it, so the forest never copies itself and
// its memory grows with its leaves. Elsewhere it returns a forest like
// New's. Appending past maxLeaves moves the forest to the Go heap, as New's
// forest grows.
//
// T must hold no pointers, since the garbage collector does not scan the
// mapping: NewReserved returns an error if it does, or if the address
// space cannot be reserved. Close releases the mapping.
func NewReserved[T any](maxLeaves int, combine func(a, b T) T, identity T) (*Forest[T], error) {
	if maxLeaves <= 0 {
		return nil, fmt.Errorf("forest: reserving %d leaves", maxLeaves)
	}
	typ := reflect.TypeFor[T]()
	if hasPointers(typ) {
		return nil, fmt.Errorf("forest: cannot reserve storage for %v: it holds pointers", typ)
	}
	size := unsafe.Sizeof(identity)
	f := New(combine, identity)
	if size == 0 {
		return f, nil
	}
	n := 2 * uint64(maxLeaves)
	if n > uint64(min(1<<47, math.MaxInt))/uint64(size) {
		return nil, fmt.Errorf("forest: reserving %d leaves of %d bytes is more than the address space", maxLeaves, size)
	}
	mem, release, err := reserve(int(n * uint64(size)))
	if err != nil {
		return nil, fmt.Errorf("forest: reserving %d leaves of %d bytes: %w", maxLeaves, size, err)
	}
	if mem != nil {
		f.vals = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), n)[:0]
		f.release = release
	}
	return f, nil
}

// Close releases a forest's reserved storage; the forest must not be used
// afterwards. It does nothing for a forest New returned.
func (f *Forest[T]) Close() error {
	r := f.release
	f.release, f.vals = nil, nil
	if r == nil {
		return nil
	}
	return r()
}

// hasPointers reports whether values of t hold pointers the garbage
// collector would need to see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
