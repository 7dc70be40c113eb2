package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"runtime"
	"time"
)

// Latch is a handle on one named countdown latch, shared through the store: one side sets
// a count, others count it down, anyone waits for zero. On Redis it is Redisson's
// RCountDownLatch layout, so a Redisson service and a Go one share a latch. Nothing is
// owned and nothing expires. Safe for concurrent use.
type Latch struct {
	ptr  *C.polylock_latch
	name string
}

// Latch is a handle on the latch name; making it reads nothing. ErrUnsupported where the
// backend has no latches (RedLock).
func (c *Client) Latch(name string) (*Latch, error) {
	var ptr *C.polylock_latch
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the latch name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		return call(func() C.polylock_status { return C.polylock_client_latch(client, cName, &ptr) })
	})
	if err != nil {
		return nil, err
	}
	l := &Latch{ptr: ptr, name: name}
	runtime.AddCleanup(l, func(ptr *C.polylock_latch) { C.polylock_latch_free(ptr) }, ptr)
	return l, nil
}

// Name is the latch's name.
func (l *Latch) Name() string { return l.name }

// TrySetCount sets the count if the latch is open (at zero, or never set): whether it was
// set (Redisson's trySetCount). ErrInvalidArgument for a count of 0. Not interruptible in
// the C library: ctx is checked before the call (as for CountDown and Count).
func (l *Latch) TrySetCount(ctx context.Context, count uint64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, contextError(err, "setting the count was given up before it started")
	}
	var set C.bool
	err := call(func() C.polylock_status { return C.polylock_latch_try_set_count(l.ptr, C.uint64_t(count), &set) })
	runtime.KeepAlive(l)
	return bool(set), err
}

// CountDown takes one off the count (never below zero); the waiters are released when it
// reaches zero.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return contextError(err, "the count-down was given up before it started")
	}
	err := call(func() C.polylock_status { return C.polylock_latch_count_down(l.ptr) })
	runtime.KeepAlive(l)
	return err
}

// Count is the count now (0: the latch is open).
func (l *Latch) Count(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, contextError(err, "the read was given up before it started")
	}
	var count C.uint64_t
	err := call(func() C.polylock_status { return C.polylock_latch_count(l.ptr, &count) })
	runtime.KeepAlive(l)
	return uint64(count), err
}

// AwaitZero is the waiting form of Await: nil once the count is zero, ErrTimeout when
// timeout ran out first (a negative timeout: no limit besides ctx; 0: only a look). The
// context ends the wait too: with ErrCancelled when cancelled (also matching
// context.Canceled), with ErrTimeout when its deadline passes (also matching
// context.DeadlineExceeded).
func (l *Latch) AwaitZero(ctx context.Context, timeout time.Duration) error {
	_, err := waitBounded(ctx, timeout, func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return C.polylock_latch_await_zero(l.ptr, waitMs, cancel)
	})
	runtime.KeepAlive(l)
	return err
}

// Await is the try form of AwaitZero: true once the count is zero, false when timeout ran
// out first (a negative timeout: no limit besides ctx). The context ends the wait too: with
// ErrCancelled when cancelled (also matching context.Canceled), with ErrTimeout when its
// deadline passes (also matching context.DeadlineExceeded).
func (l *Latch) Await(ctx context.Context, timeout time.Duration) (bool, error) {
	var reached C.bool
	deadlineBound, err := waitBounded(ctx, timeout, func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return C.polylock_latch_await(l.ptr, waitMs, cancel, &reached)
	})
	runtime.KeepAlive(l)
	if err != nil {
		return false, err
	}
	if !bool(reached) && deadlineBound {
		// The context's deadline was the limit: a deadline is an error, as for every wait.
		return false, contextError(context.DeadlineExceeded, "the latch wait ran out")
	}
	return bool(reached), nil
}
