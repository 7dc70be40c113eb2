package polylock

// #include "polylock.h"
import "C"

import "sync"

// watcher is one goroutine blocked in polylock_hold_wait_lost for a Hold's Lost channel.
type watcher struct {
	cancel *C.polylock_cancel
	done   chan struct{}
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

// start waits for hold's loss in a goroutine and closes lost when it happens (or when the
// client closes, which ends every hold). Returns nil, with lost closed, after stopAll.
func (set *watcherSet) start(hold *C.polylock_hold, lost chan struct{}) *watcher {
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.stopped {
		close(lost)
		return nil
	}
	w := &watcher{done: make(chan struct{})}
	if err := call(func() C.polylock_status { return C.polylock_cancel_new(&w.cancel) }); err != nil {
		// Only an allocation failure; report loss by polling is not worth it: say lost never.
		return nil
	}
	set.all[w] = struct{}{}
	go func() {
		defer close(w.done)
		var isLost C.bool
		status := C.polylock_hold_wait_lost(hold, -1, w.cancel, &isLost)
		set.mu.Lock()
		delete(set.all, w)
		closing := set.stopped
		set.mu.Unlock()
		// Lost, or ended because the client closed (which ends every hold); not when the
		// hold was released, nor when the hold was collected.
		if (status == C.POLYLOCK_OK && bool(isLost)) || (status != C.POLYLOCK_OK && closing) {
			close(lost)
		}
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
// are lost, so their channels close).
func (set *watcherSet) stopAll() {
	set.mu.Lock()
	set.stopped = true
	running := make([]*watcher, 0, len(set.all))
	for w := range set.all {
		running = append(running, w)
	}
	set.mu.Unlock()
	for _, w := range running {
		C.polylock_cancel_fire(w.cancel)
		<-w.done
	}
}
