package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
)

// Lock is a handle on one named mutex. Making it holds nothing; it is safe to share between
// goroutines. Every Acquire is an owner of its own, so goroutines sharing one *Lock exclude
// each other like separate processes do; Hold.Reenter is the way to take a hold again as
// the same owner.
type Lock struct {
	ptr    *C.polylock_lock
	client *Client
	name   string
	kind   Kind
}

func newLock(client *Client, ptr *C.polylock_lock, name string, kind Kind) *Lock {
	l := &Lock{ptr: ptr, client: client, name: name, kind: kind}
	runtime.AddCleanup(l, func(ptr *C.polylock_lock) { C.polylock_lock_free(ptr) }, ptr)
	return l
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// Kind is the lock's layout.
func (l *Lock) Kind() Kind { return l.kind }

// Acquire waits for the lock and holds it. The wait ends with ErrTimeout when WithWait's
// limit or ctx's deadline comes first (a deadline's error also matches
// context.DeadlineExceeded), and with ErrCancelled when ctx is cancelled (also matching
// context.Canceled); either way nothing is left held. Options: WithWait, WithLease.
func (l *Lock) Acquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	defer runtime.KeepAlive(l)
	return acquireHold(ctx, l.client, options,
		func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel, out **C.polylock_hold) C.polylock_status {
			return C.polylock_lock_acquire_hold(l.ptr, waitMs, leaseMs, cancel, out)
		})
}

// IsLocked says whether anyone, of any client, process or language, holds the lock in the
// store right now (Redisson's isLocked): a fact of the moment it answered. Not
// interruptible in the C library: ctx is checked before the call.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, contextError(err, "the read was given up before it started")
	}
	var locked C.bool
	err := call(func() C.polylock_status { return C.polylock_lock_is_locked(l.ptr, &locked) })
	runtime.KeepAlive(l)
	return bool(locked), err
}

// TryAcquire tries once (or waits up to WithWait): nil, nil when the lock stayed taken.
func (l *Lock) TryAcquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	return tryOnce(l.Acquire, ctx, options)
}

// tryOnce is TryAcquire for every primitive: a wait of 0 unless one is given, and a wait
// that ran out is no error.
func tryOnce(acquire func(context.Context, ...AcquireOption) (*Hold, error), ctx context.Context,
	options []AcquireOption) (*Hold, error) {
	hold, err := acquire(ctx, append([]AcquireOption{WithWait(0)}, options...)...)
	if isTimeoutOnly(err, ctx) {
		return nil, nil
	}
	return hold, err
}

// isTimeoutOnly: the wait ran out, and not because ctx ended.
func isTimeoutOnly(err error, ctx context.Context) bool {
	return errors.Is(err, ErrTimeout) && ctx.Err() == nil
}

// RWLock is a handle on one named read-write lock: many readers or one writer. A waiting
// writer is not starved by a stream of readers (on SQLite and mem).
type RWLock struct {
	ptr    *C.polylock_rwlock
	client *Client
	name   string
}

func newRWLock(client *Client, ptr *C.polylock_rwlock, name string) *RWLock {
	rw := &RWLock{ptr: ptr, client: client, name: name}
	runtime.AddCleanup(rw, func(ptr *C.polylock_rwlock) { C.polylock_rwlock_free(ptr) }, ptr)
	return rw
}

// Name is the lock's name.
func (rw *RWLock) Name() string { return rw.name }

// Read is the shared side.
func (rw *RWLock) Read() *RWSide { return &RWSide{rw: rw, write: false} }

// Write is the exclusive side.
func (rw *RWLock) Write() *RWSide { return &RWSide{rw: rw, write: true} }

// RWSide is one side of a read-write lock; each Acquire is an owner of its own, as with Lock.
type RWSide struct {
	rw    *RWLock
	write bool
}

// Acquire takes this side; waits, options and errors as Lock.Acquire.
func (side *RWSide) Acquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	defer runtime.KeepAlive(side.rw)
	return acquireHold(ctx, side.rw.client, options,
		func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel, out **C.polylock_hold) C.polylock_status {
			if side.write {
				return C.polylock_rwlock_write_acquire_hold(side.rw.ptr, waitMs, leaseMs, cancel, out)
			}
			return C.polylock_rwlock_read_acquire_hold(side.rw.ptr, waitMs, leaseMs, cancel, out)
		})
}

// TryAcquire tries once (or waits up to WithWait): nil, nil when the side stayed taken.
func (side *RWSide) TryAcquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	return tryOnce(side.Acquire, ctx, options)
}

// Semaphore is a handle on one named semaphore of N permits; each permit is a Hold of its
// own, with its own lease, fencing token and Lost channel.
type Semaphore struct {
	ptr     *C.polylock_semaphore
	client  *Client
	name    string
	permits uint32
}

func newSemaphore(client *Client, ptr *C.polylock_semaphore, name string, permits uint32) *Semaphore {
	s := &Semaphore{ptr: ptr, client: client, name: name, permits: permits}
	runtime.AddCleanup(s, func(ptr *C.polylock_semaphore) { C.polylock_semaphore_free(ptr) }, ptr)
	return s
}

// Name is the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Permits is the permit count this handle was made with.
func (s *Semaphore) Permits() uint32 { return s.permits }

// Acquire takes a permit; waits, options and errors as Lock.Acquire.
func (s *Semaphore) Acquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	defer runtime.KeepAlive(s)
	return acquireHold(ctx, s.client, options,
		func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel, out **C.polylock_hold) C.polylock_status {
			return C.polylock_semaphore_acquire_hold(s.ptr, waitMs, leaseMs, cancel, out)
		})
}

// TryAcquire tries once (or waits up to WithWait): nil, nil when no permit was free.
func (s *Semaphore) TryAcquire(ctx context.Context, options ...AcquireOption) (*Hold, error) {
	return tryOnce(s.Acquire, ctx, options)
}
