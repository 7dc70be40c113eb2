package polylock

// #include <stdlib.h>
// #include "polylock.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
)

// MultiLock is several mutexes of one client acquired as one: always in the one canonical
// order (so two multi-locks over the same names never deadlock), under one wait for the
// whole set, and with everything taken given back on failure. Making it holds nothing.
type MultiLock struct {
	ptr    *C.polylock_multi_lock
	client *Client
	names  []string
}

// MultiLock is a multi-lock over the mutexes names (the backend's default lock kind).
// ErrInvalidArgument for no names, a bad name or a name given twice.
func (c *Client) MultiLock(names ...string) (*MultiLock, error) {
	var ptr *C.polylock_multi_lock
	err := c.use(func(client *C.polylock_client) error {
		array, free, err := cStrings(names, "a lock name")
		if err != nil {
			return err
		}
		defer free()
		return call(func() C.polylock_status {
			return C.polylock_client_multi_lock(client, array, C.size_t(len(names)), &ptr)
		})
	})
	if err != nil {
		return nil, err
	}
	m := &MultiLock{ptr: ptr, client: c, names: append([]string(nil), names...)}
	runtime.AddCleanup(m, func(ptr *C.polylock_multi_lock) { C.polylock_multi_lock_free(ptr) }, ptr)
	return m, nil
}

// Names are the names as given.
func (m *MultiLock) Names() []string { return append([]string(nil), m.names...) }

// Acquire takes every part as one new owner, within one wait for the whole multi-lock
// (WithWait, or ctx's deadline: ErrTimeout), each part with WithLease's lease if given.
// ctx's cancellation ends the wait with ErrCancelled. On any failure nothing is left held.
func (m *MultiLock) Acquire(ctx context.Context, options ...AcquireOption) (*MultiHold, error) {
	defer runtime.KeepAlive(m)
	var ptr *C.polylock_multi_hold
	err := acquireBounded(ctx, options, func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return C.polylock_multi_lock_acquire(m.ptr, waitMs, leaseMs, cancel, &ptr)
	})
	if err != nil {
		return nil, err
	}
	return newMultiHold(ptr), nil
}

// TryAcquire tries once (or waits up to WithWait): nil, nil when a part stayed taken.
func (m *MultiLock) TryAcquire(ctx context.Context, options ...AcquireOption) (*MultiHold, error) {
	hold, err := m.Acquire(ctx, append([]AcquireOption{WithWait(0)}, options...)...)
	if isTimeoutOnly(err, ctx) {
		return nil, nil
	}
	return hold, err
}

// Part is one lock of a held multi-lock.
type Part struct {
	Name string
	// FencingToken is this part's token (of its own name's counter); HasFencingToken is
	// false on RedLock, which has none (a majority of independent counters is no order).
	FencingToken    uint64
	HasFencingToken bool
}

// MultiHold is one acquisition of every part of a multi-lock. Release it once, usually
// with `defer hold.Release()`; any goroutine may.
type MultiHold struct {
	state *multiHoldState
	parts []Part
}

type multiHoldState struct {
	mu  sync.Mutex
	ptr *C.polylock_multi_hold // nil once freed
}

func newMultiHold(ptr *C.polylock_multi_hold) *MultiHold {
	count := int(C.polylock_multi_hold_count(ptr))
	parts := make([]Part, 0, count)
	for i := 0; i < count; i++ {
		var name *C.char
		var token C.uint64_t
		var hasToken C.bool
		if C.polylock_multi_hold_part(ptr, C.size_t(i), &name, &token, &hasToken) == C.POLYLOCK_OK {
			parts = append(parts, Part{Name: C.GoString(name), FencingToken: uint64(token), HasFencingToken: bool(hasToken)})
		}
	}
	h := &MultiHold{state: &multiHoldState{ptr: ptr}, parts: parts}
	runtime.AddCleanup(h, func(s *multiHoldState) { s.free() }, h.state)
	return h
}

// Parts are the parts in the canonical order they were taken in.
func (h *MultiHold) Parts() []Part { return append([]Part(nil), h.parts...) }

// IsLost reports whether the store no longer has some part.
func (h *MultiHold) IsLost() bool {
	defer runtime.KeepAlive(h)
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ptr != nil && bool(C.polylock_multi_hold_is_lost(s.ptr))
}

// Release gives every part back, even if one fails: ErrLost if a part was lost meanwhile,
// ErrNotOwner if the hold was released already.
func (h *MultiHold) Release() error {
	defer runtime.KeepAlive(h)
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return errorOf(ErrNotOwner, "this multi-lock hold was already released; acquire again")
	}
	err := call(func() C.polylock_status { return C.polylock_multi_hold_release(s.ptr) })
	C.polylock_multi_hold_free(s.ptr)
	s.ptr = nil
	return err
}

// free is the cleanup of a hold nobody released: the C hold releases in the background.
func (s *multiHoldState) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.polylock_multi_hold_free(s.ptr)
		s.ptr = nil
	}
}
