package polylock

// #include "polylock.h"
import "C"

import "sync"

// watcher is one goroutine blocked in the C library on behalf of a channel: a Hold's or a
// Leadership's Lost (polylock_*_wait_lost), or an election's Observe
// (polylock_observer_next).
type watcher struct {
	cancel *C.polylock_cancel
	done   chan struct{}
	// stopping closes when the client closes, so that a goroutine blocked on a send to a
	// reader that went away still ends.
	stopping chan struct{}
}

// watcherSet is a client's watchers, so that Close can stop them before it frees the C
// client (which waits for every call in flight).
type watcherSet struct {
	mu      sync.Mutex
	stopped bool
	all     map[*watcher]struct{}
}

func newWatcherSet() *watcherSet {
	return &watcherSet{all: map[*watcher]struct{}{}}
}

// start waits for a loss in a goroutine (wait is the C call, given the watcher's cancel
// token) and closes lost when it happens, or when the client closes, which ends every hold
// and leadership. Returns nil, with lost closed, after stopAll.
func (set *watcherSet) start(wait func(cancel *C.polylock_cancel, isLost *C.bool) C.polylock_status,
	lost chan struct{}) *watcher {
	w := set.spawn(func(w *watcher, finished func() bool) {
		var isLost C.bool
		status := wait(w.cancel, &isLost)
		closing := finished()
		// Lost, or ended because the client closed (which ends every hold); not when the
		// hold was released, nor when the hold was collected.
		if (status == C.POLYLOCK_OK && bool(isLost)) || (status != C.POLYLOCK_OK && closing) {
			close(lost)
		}
	})
	if w == nil {
		set.mu.Lock()
		stopped := set.stopped
		set.mu.Unlock()
		if stopped {
			close(lost)
		}
	}
	return w
}

// spawn runs body in a goroutine registered with the set: body calls finished once its C
// wait has ended (finished says whether the client is closing); stopAll fires the
// watcher's token and waits for body to return. Nil, and body not run, once the set is
// stopped or when no token could be made.
func (set *watcherSet) spawn(body func(w *watcher, finished func() bool)) *watcher {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.stopped {
		return nil
	}
	w := &watcher{done: make(chan struct{}), stopping: make(chan struct{})}
	if err := call(func() C.polylock_status { return C.polylock_cancel_new(&w.cancel) }); err != nil {
		// Only an allocation failure: no watch (the channel never closes).
		return nil
	}
	set.all[w] = struct{}{}
	go func() {
		defer close(w.done)
		body(w, func() bool {
			set.mu.Lock()
			defer set.mu.Unlock()
			delete(set.all, w)
			return set.stopped
		})
	}()
	return w
}

// stopAndWait ends the wait and waits for the goroutine; the token is then freed.
func (w *watcher) stopAndWait() {
	C.polylock_cancel_fire(w.cancel)
	<-w.done
	C.polylock_cancel_free(w.cancel)
}

// stopAll is Close's: no new watchers, and every running one ends (holds of a closed client
// are lost, so their channels close). Tokens are fired under the lock, so a watcher that
// has finished (and left the set) may free its own.
func (set *watcherSet) stopAll() {
	set.mu.Lock()
	set.stopped = true
	running := make([]*watcher, 0, len(set.all))
	for w := range set.all {
		close(w.stopping)
		C.polylock_cancel_fire(w.cancel)
		running = append(running, w)
	}
	set.mu.Unlock()
	for _, w := range running {
		<-w.done
	}
}
