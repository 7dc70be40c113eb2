package polylock

// #include "polylock.h"
import "C"

import (
	"runtime"
	"sync"
)

// Hold is one acquisition, and its owner: the goroutine that has it may hand it to another
// goroutine, which may release it (goroutines have no identity, so the owner is the hold,
// not the goroutine). Release it exactly once, usually with `defer hold.Release()`.
type Hold struct {
	state *holdState
	token uint64
}

// holdState is what the C hold and its loss watcher share; it is apart from Hold so that a
// Hold nobody releases can still be collected (its cleanup stops the watcher, then frees
// the C hold, which releases it in the background).
type holdState struct {
	client *Client
	mu     sync.Mutex
	ptr    *C.polylock_hold // nil once freed
	// lost closes when the hold is lost (made on the first call to Lost).
	lost    chan struct{}
	watcher *watcher // nil until Lost is first called
}

func newHold(client *Client, ptr *C.polylock_hold) *Hold {
	state := &holdState{client: client, ptr: ptr}
	h := &Hold{state: state, token: uint64(C.polylock_hold_fencing_token(ptr))}
	runtime.AddCleanup(h, func(s *holdState) { s.free() }, state)
	return h
}

// FencingToken is strictly greater than the token of every earlier hold of this name, on
// every backend: pass it to the storage you protect and have it refuse older tokens.
func (h *Hold) FencingToken() uint64 {
	return h.token
}

// PermitID is a semaphore permit's id (0 for a lock).
func (h *Hold) PermitID() uint64 {
	var id uint64
	h.state.with(func(ptr *C.polylock_hold) { id = uint64(C.polylock_hold_permit_id(ptr)) })
	return id
}

// IsLost reports whether the store no longer has this hold (lease ran out, renewal failed,
// session ended, client closed).
func (h *Hold) IsLost() bool {
	lost := false
	h.state.with(func(ptr *C.polylock_hold) { lost = bool(C.polylock_hold_is_lost(ptr)) })
	runtime.KeepAlive(h)
	return lost
}

// Lost is closed when the hold is lost: its lease ran out, the watchdog could not renew it,
// the backend session ended, or the client was closed. It never closes for a hold released
// normally. The first call starts a goroutine that waits in the C library (holding an OS
// thread) until the hold is lost or released.
func (h *Hold) Lost() <-chan struct{} {
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost != nil {
		return s.lost
	}
	s.lost = make(chan struct{})
	if s.ptr == nil {
		// Released already: never lost from now on.
		return s.lost
	}
	ptr := s.ptr
	s.watcher = s.client.watchers.start(func(cancel *C.polylock_cancel, isLost *C.bool) C.polylock_status {
		return C.polylock_hold_wait_lost(ptr, C.POLYLOCK_WAIT_FOREVER, cancel, isLost)
	}, s.lost)
	return s.lost
}

// Release gives this acquisition back. ErrLost if the hold was lost meanwhile (someone else
// may have taken the lock), ErrNotOwner if it was released already. The lock is free once
// every hold of its owner (see Reenter) is released.
func (h *Hold) Release() error {
	s := h.state
	s.mu.Lock()
	defer s.mu.Unlock()
	defer runtime.KeepAlive(h)
	if s.ptr == nil {
		return errorOf(ErrNotOwner, "this hold was already released; acquire again")
	}
	err := call(func() C.polylock_status { return C.polylock_hold_release(s.ptr) })
	s.freeLocked()
	return err
}

// Reenter takes the same hold once more, as the same owner (reentrancy): at once, with the
// same fencing token. Each hold is released on its own. ErrLost if this hold was lost
// (never a fresh hold), ErrNotOwner if it was released, ErrInvalidArgument for a permit.
func (h *Hold) Reenter() (*Hold, error) {
	var again *C.polylock_hold
	var err error = errorOf(ErrNotOwner, "this hold was already released; acquire again")
	h.state.with(func(ptr *C.polylock_hold) {
		err = call(func() C.polylock_status { return C.polylock_hold_reenter(ptr, &again) })
	})
	runtime.KeepAlive(h)
	if err != nil {
		return nil, err
	}
	return newHold(h.state.client, again), nil
}

// with runs f on the C hold if it is not freed yet.
func (s *holdState) with(f func(*C.polylock_hold)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		f(s.ptr)
	}
}

// free is the cleanup of a Hold nobody released: the C hold releases in the background.
func (s *holdState) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeLocked()
}

func (s *holdState) freeLocked() {
	if s.ptr == nil {
		return
	}
	if s.watcher != nil {
		// A released hold ends the C wait by itself; a freed one needs the watcher gone
		// before the memory is.
		s.watcher.stopAndWait()
		s.watcher = nil
	}
	C.polylock_hold_free(s.ptr)
	s.ptr = nil
}
