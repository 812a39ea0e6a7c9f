package tracestore

import (
	"encoding/binary"
	"fmt"
	"os"
)

// laneIDs maps the lanes' numbers in the build (the order in which the
// build met them) to their numbers in the store, 4 bytes a lane. It holds
// the map in memory when it fits its share of the memory limit, else in a
// temporary file, read and written through a cache of that share: pages
// of idPageLanes lanes in a two-way set-associative cache. A lane's
// number in the build follows its first span's end, close to its
// goroutine's creation, as its number in the store follows the
// goroutine's ID, and the spans of the lanes live at one time fall in a
// few pages, so that the cache seldom misses.
type laneIDs struct {
	n    int64    // lanes
	mem  []uint32 // in memory: the store's number plus one, 0 for none yet
	f    *os.File // else the file of pages, and its cache
	sets []idCacheSet
	// misses counts the pages read from the file.
	misses int64
	buf    [4 * idPageLanes]byte
}

// idPageLanes is the lanes of a page of a laneIDs file (4 KiB).
const idPageLanes = 1024

type idPage struct {
	idx   int64 // page number; -1 for none
	dirty bool
	v     [idPageLanes]uint32
}

// An idCacheSet is a set of the cache: two pages and which was used least
// recently.
type idCacheSet struct {
	p   [2]*idPage
	lru int
}

// newLaneIDs returns a map of n lanes that holds about mem bytes, its file
// if it needs one in dir.
func newLaneIDs(n int64, mem int64, dir string) (*laneIDs, error) {
	m := &laneIDs{n: n}
	if n*4 <= mem {
		m.mem = make([]uint32, n)
		return m, nil
	}
	f, err := os.CreateTemp(dir, "laneids-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	pages := (n + idPageLanes - 1) / idPageLanes
	if err := f.Truncate(pages * idPageLanes * 4); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("tracestore: %w", err)
	}
	m.f = f
	m.sets = make([]idCacheSet, max(1, mem/(2*idPageLanes*4)))
	return m, nil
}

// memLaneIDs returns a map held in memory with the store's numbers ids.
func memLaneIDs(ids []uint32) *laneIDs {
	m := &laneIDs{n: int64(len(ids)), mem: make([]uint32, len(ids))}
	for i, x := range ids {
		m.mem[i] = x + 1
	}
	return m
}

// release drops the map's memory; it must not be used after.
func (m *laneIDs) release() { m.mem, m.sets = nil, nil }

func (m *laneIDs) close() {
	if m.f != nil {
		m.f.Close()
		os.Remove(m.f.Name())
		m.f = nil
	}
}

// slot returns where lane old's entry is.
func (m *laneIDs) slot(old uint32) (*uint32, *idPage, error) {
	if int64(old) >= m.n {
		return nil, nil, fmt.Errorf("tracestore: lane %d of %d", old, m.n)
	}
	if m.mem != nil {
		return &m.mem[old], nil, nil
	}
	idx := int64(old) / idPageLanes
	s := &m.sets[idx%int64(len(m.sets))]
	for i, p := range s.p {
		if p != nil && p.idx == idx {
			s.lru = 1 - i
			return &p.v[old%idPageLanes], p, nil
		}
	}
	p := s.p[s.lru]
	if p == nil {
		p = &idPage{}
		s.p[s.lru] = p
	} else if p.dirty {
		for i, x := range p.v {
			binary.LittleEndian.PutUint32(m.buf[4*i:], x)
		}
		if _, err := m.f.WriteAt(m.buf[:], p.idx*idPageLanes*4); err != nil {
			return nil, nil, fmt.Errorf("%w: lane numbers: %w", errWrite, err)
		}
	}
	buf := m.buf[:]
	if _, err := m.f.ReadAt(buf, idx*idPageLanes*4); err != nil {
		return nil, nil, fmt.Errorf("tracestore: reading back lane numbers: %w", err)
	}
	for i := range p.v {
		p.v[i] = binary.LittleEndian.Uint32(buf[4*i:])
	}
	p.idx, p.dirty = idx, false
	m.misses++
	s.lru = 1 - s.lru
	return &p.v[old%idPageLanes], p, nil
}

// set records that lane old is lane id in the store.
func (m *laneIDs) set(old, id uint32) error {
	e, p, err := m.slot(old)
	if err != nil {
		return err
	}
	if *e != 0 || id == ^uint32(0) {
		return fmt.Errorf("tracestore: lane %d numbered twice", old)
	}
	*e = id + 1
	if p != nil {
		p.dirty = true
	}
	return nil
}

// get returns lane old's number in the store.
func (m *laneIDs) get(old uint32) (uint32, error) {
	e, _, err := m.slot(old)
	if err != nil {
		return 0, err
	}
	if *e == 0 {
		return 0, fmt.Errorf("tracestore: lane %d has no number in the store", old)
	}
	return *e - 1, nil
}
