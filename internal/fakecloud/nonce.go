package fakecloud

import (
	"sync"
	"time"
)

// nonceSet remembers nonces for a TTL, at most max of them; the oldest are
// forgotten first. mu guards every field.
type nonceSet struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	seen map[string]int64 // nonce → Unix ns first seen
	fifo []nonceEntry     // insertion order, from head
	head int
}

type nonceEntry struct {
	key string
	at  int64
}

func (s *nonceSet) init(ttl time.Duration, max int) {
	s.ttl, s.max = ttl, max
	s.seen = make(map[string]int64)
}

// use records key at now and reports whether it was fresh (not seen within
// the TTL).
func (s *nonceSet) use(key string, now time.Time) bool {
	ns := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(ns)
	if at, ok := s.seen[key]; ok && ns-at < int64(s.ttl) {
		return false
	}
	for len(s.seen) >= s.max && s.head < len(s.fifo) {
		s.dropOldestLocked()
	}
	s.seen[key] = ns
	s.fifo = append(s.fifo, nonceEntry{key, ns})
	return true
}

// pruneLocked forgets the nonces older than the TTL.
func (s *nonceSet) pruneLocked(ns int64) {
	for s.head < len(s.fifo) && ns-s.fifo[s.head].at >= int64(s.ttl) {
		s.dropOldestLocked()
	}
	if s.head > 0 && s.head*2 >= len(s.fifo) {
		n := copy(s.fifo, s.fifo[s.head:])
		clear(s.fifo[n:])
		s.fifo, s.head = s.fifo[:n], 0
	}
}

func (s *nonceSet) dropOldestLocked() {
	e := s.fifo[s.head]
	s.fifo[s.head] = nonceEntry{}
	s.head++
	if at, ok := s.seen[e.key]; ok && at == e.at {
		delete(s.seen, e.key)
	}
}

// len returns the number of nonces remembered.
func (s *nonceSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *nonceSet) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.seen)
	s.fifo, s.head = nil, 0
}
