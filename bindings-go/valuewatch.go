package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"runtime"
)

// ValueWatch is the changes of one value, from Value.Watch: each Changed gives the value's
// next state after the one it last gave, so a change made while nobody waited is the next
// Changed's answer. Safe for concurrent use: one Changed waits at a time (the others queue,
// each within its own context), Current answers at once, and Close from any goroutine ends a
// Changed in progress. A Changed holds an OS thread, blocked in the C library, while it
// waits. The sharing, bounding and closing are the core's (kit::value_watch).
type ValueWatch struct {
	ptr  *C.polylock_watch
	name string
}

// Watch starts watching the value: the watch's Current is the value now.
func (v *Value) Watch(ctx context.Context) (*ValueWatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the watch was given up before it started")
	}
	var ptr *C.polylock_watch
	err := call(func() C.polylock_status { return C.polylock_value_watch(v.ptr, &ptr) })
	runtime.KeepAlive(v)
	if err != nil {
		return nil, err
	}
	w := &ValueWatch{ptr: ptr, name: v.name}
	runtime.AddCleanup(w, func(ptr *C.polylock_watch) { C.polylock_watch_free(ptr) }, ptr)
	return w, nil
}

// Name is the watched value's name.
func (w *ValueWatch) Name() string { return w.name }

// Changed waits for the value's next state: the new state, or nil once the value is
// deleted; ok is false once the watch is closed (by Close, also during the wait).
//
// The wait lasts as long as ctx: when ctx is done first, the error is ErrCancelled (also
// matching context.Canceled) or ErrTimeout (also matching context.DeadlineExceeded), and the
// watch stays open: nothing is missed, the next Changed gives the change. ErrConnection
// once the client is closed.
func (w *ValueWatch) Changed(ctx context.Context) (state *Versioned, ok bool, err error) {
	var step C.polylock_watch_step
	deadlineBound, err := waitBounded(ctx, -1, func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		return C.polylock_watch_changed(w.ptr, waitMs, cancel, &step)
	})
	runtime.KeepAlive(w)
	if err != nil {
		return nil, false, err
	}
	switch step.outcome {
	case C.POLYLOCK_WATCH_CHANGED:
		return goVersioned(&step.state), true, nil
	case C.POLYLOCK_WATCH_DELETED:
		return nil, true, nil
	case C.POLYLOCK_WATCH_CLOSED:
		return nil, false, nil
	}
	// NO_CHANGE: the only bound given was the context's deadline.
	if deadlineBound || ctx.Err() != nil {
		return nil, false, contextError(context.DeadlineExceeded, "no change of value '"+w.name+"' before the context's deadline")
	}
	return nil, false, errorOf(ErrInternal, "a wait on value '"+w.name+"' without a limit ran out")
}

// Current is the state this watch last gave: the value when the watch started, or the last
// change Changed returned; nil when there was none (or it was deleted). It answers at once,
// also while a Changed waits.
func (w *ValueWatch) Current() *Versioned {
	var found C.polylock_versioned
	err := call(func() C.polylock_status { return C.polylock_watch_current(w.ptr, &found) })
	runtime.KeepAlive(w)
	if err != nil {
		return nil // only for a nil handle, which a ValueWatch never has
	}
	return goVersioned(&found)
}

// Close ends the watch, from any goroutine: a Changed in progress returns ok false, as every
// later one does, and the store's change feed is let go of. Closing twice is harmless.
// ErrConnection if the client was closed first (its watches ended with it).
func (w *ValueWatch) Close() error {
	err := call(func() C.polylock_status { return C.polylock_watch_close(w.ptr) })
	runtime.KeepAlive(w)
	return err
}

// IsClosed says whether Close was called.
func (w *ValueWatch) IsClosed() bool {
	closed := bool(C.polylock_watch_is_closed(w.ptr))
	runtime.KeepAlive(w)
	return closed
}

// goVersioned copies a state the C library filled in (its bytes freed either way): nil when
// there is none.
func goVersioned(found *C.polylock_versioned) *Versioned {
	value := goBytes(&found.value)
	if !bool(found.found) {
		return nil
	}
	return &Versioned{Value: value, Version: uint64(found.version), Fenced: bool(found.fenced),
		FencingToken: uint64(found.fencing_token)}
}
