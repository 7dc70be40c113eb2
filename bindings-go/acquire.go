package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"errors"
	"math"
	"time"
)

// acquireHold runs one blocking C acquisition (start) bounded by the options and ctx:
//   - the wait passed to C is the shorter of WithWait and the time to ctx's deadline, so a
//     deadline ends the wait inside the core, as a timeout;
//   - when ctx can be cancelled, a polylock_cancel is fired by context.AfterFunc when ctx
//     is done, and the core ends the wait with CANCELLED, leaving nothing held.
//
// The C call blocks its OS thread (as every cgo call does); the goroutine that called
// Acquire waits on it.
func acquireHold(ctx context.Context, owner *Client, options []AcquireOption,
	start func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel, out **C.polylock_hold) C.polylock_status,
) (*Hold, error) {
	var ptr *C.polylock_hold
	err := acquireBounded(ctx, options, func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return start(waitMs, leaseMs, cancel, &ptr)
	})
	if err != nil {
		return nil, err
	}
	return newHold(owner, ptr), nil
}

// acquireBounded is acquireHold for any acquisition (a multi-lock's too): start is the one
// blocking C call, given the wait, the lease and the cancel token.
func acquireBounded(ctx context.Context, options []AcquireOption,
	start func(waitMs, leaseMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status,
) error {
	settings, err := acquireSettingsOf(options)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return contextError(err, "the acquisition was given up before it started")
	}
	leaseMs := C.int64_t(C.POLYLOCK_LEASE_WATCHDOG)
	if settings.leaseSet {
		// Rounded up: a lease under 1 ms reaches the core as 1 ms, which refuses it.
		leaseMs = C.int64_t(millisRoundedUp(settings.lease))
	}
	_, err = waitBounded(ctx, settings.wait, func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return start(waitMs, leaseMs, cancel)
	})
	return err
}

// waitBounded runs one blocking C wait (start) bounded by wait (negative: no limit) and
// ctx, as acquireBounded describes; deadlineBound says whether ctx's deadline was the
// limit passed to C (so that a wait that says "ran out" means the deadline passed).
func waitBounded(ctx context.Context, wait time.Duration,
	start func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status,
) (deadlineBound bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, contextError(err, "the wait was given up before it started")
	}
	waitMs := millisRoundedUp(wait)
	if deadline, ok := ctx.Deadline(); ok {
		// Rounded up, so that the core's wait never ends before the context does.
		untilDeadline := millisRoundedUp(max(time.Until(deadline), 0))
		if waitMs < 0 || untilDeadline < waitMs {
			waitMs, deadlineBound = untilDeadline, true
		}
	}

	var cancel *C.polylock_cancel
	stopWatching := func() {}
	if ctx.Done() != nil {
		if err := call(func() C.polylock_status { return C.polylock_cancel_new(&cancel) }); err != nil {
			return deadlineBound, err
		}
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			C.polylock_cancel_fire(cancel)
			close(fired)
		})
		stopWatching = func() {
			if !stop() {
				<-fired // fired, or firing: wait before the token is freed
			}
			C.polylock_cancel_free(cancel)
		}
	}
	err = call(func() C.polylock_status {
		if waitMs < 0 {
			return start(C.POLYLOCK_WAIT_FOREVER, cancel)
		}
		return start(C.int64_t(waitMs), cancel)
	})
	stopWatching()
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			switch {
			case e.Kind == ErrTimeout && deadlineBound:
				// The context's deadline was the limit: say so in both vocabularies.
				e.cause = context.DeadlineExceeded
			case e.Kind == ErrCancelled && ctx.Err() != nil:
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					e.Kind = ErrTimeout
					e.Status = int(C.POLYLOCK_TIMEOUT)
					e.Message += " (the context's deadline passed)"
				}
				e.cause = ctx.Err()
			}
		}
		return deadlineBound, err
	}
	return deadlineBound, nil
}

// millisRoundedUp is d in whole milliseconds, rounded up; negative stays -1 (no limit).
func millisRoundedUp(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	return min(int64(ms), math.MaxInt64)
}

// contextError is the error for a context that ended before the C library was asked:
// ErrTimeout for a deadline, ErrCancelled otherwise, and the context's error too.
func contextError(ctxErr error, message string) error {
	kind := ErrCancelled
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		kind = ErrTimeout
	}
	e := errorOf(kind, message+": "+ctxErr.Error())
	e.cause = ctxErr
	return e
}
