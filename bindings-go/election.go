package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// Election is a handle on one named leader election: candidates Campaign with a value, one
// of them leads at a time, and each new leader's Term is a fencing token greater than
// every earlier leader's. On etcd it is etcd's own concurrency.Election layout (so
// `etcdctl elect` and Go services using clientv3/concurrency take part), on ZooKeeper
// Curator's LeaderLatch; elsewhere a lease record beside a lock. Making the handle holds
// nothing; it is safe to share between goroutines.
type Election struct {
	ptr    *C.polylock_election
	client *Client
	name   string
}

// Leader is an election's leader: the value it campaigned with or last proclaimed, and its
// term.
type Leader struct {
	Value []byte
	Term  uint64
}

// LeaderChange is one item of Observe: the leader after a change (nil: nobody leads), or
// the error that ended the observation (then the channel closes).
type LeaderChange struct {
	Leader *Leader
	Err    error
}

// Election is a handle on the election name. ErrUnsupported where the backend has no
// elections (RedLock).
func (c *Client) Election(name string) (*Election, error) {
	var ptr *C.polylock_election
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the election name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		return call(func() C.polylock_status { return C.polylock_client_election(client, cName, &ptr) })
	})
	if err != nil {
		return nil, err
	}
	e := &Election{ptr: ptr, client: c, name: name}
	runtime.AddCleanup(e, func(ptr *C.polylock_election) { C.polylock_election_free(ptr) }, ptr)
	return e, nil
}

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Campaign waits until this candidate leads, with value as the leader's value. Each call
// is a candidate of its own. The wait ends with ErrTimeout when WithWait's limit (0: one
// try) or ctx's deadline comes first, and with ErrCancelled when ctx is cancelled; either
// way no candidacy is left behind. WithLease is refused: a leadership lives as long as the
// client's session or watchdog lease keeps it, until Resign.
func (e *Election) Campaign(ctx context.Context, value []byte, options ...AcquireOption) (*Leadership, error) {
	defer runtime.KeepAlive(e)
	settings, err := acquireSettingsOf(options)
	if err != nil {
		return nil, err
	}
	if settings.leaseSet {
		return nil, errorOf(ErrInvalidArgument, "a campaign takes no lease: the leadership lasts until Resign or loss")
	}
	var ptr *C.polylock_leadership
	_, err = waitBounded(ctx, settings.wait, func(waitMs C.int64_t, cancel *C.polylock_cancel) C.polylock_status {
		data, length := cBytes(value)
		return C.polylock_election_campaign(e.ptr, data, length, waitMs, cancel, &ptr)
	})
	if err != nil {
		return nil, err
	}
	return newLeadership(e.client, ptr), nil
}

// TryCampaign tries once (or waits up to WithWait): nil, nil when another candidate still
// leads.
func (e *Election) TryCampaign(ctx context.Context, value []byte, options ...AcquireOption) (*Leadership, error) {
	leadership, err := e.Campaign(ctx, value, append([]AcquireOption{WithWait(0)}, options...)...)
	if isTimeoutOnly(err, ctx) {
		return nil, nil
	}
	return leadership, err
}

// Leader is the current leader: nil, nil when nobody leads. Not interruptible in the C
// library: ctx is checked before the call.
func (e *Election) Leader(ctx context.Context) (*Leader, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the read was given up before it started")
	}
	var found C.polylock_leader
	err := call(func() C.polylock_status { return C.polylock_election_leader(e.ptr, &found) })
	runtime.KeepAlive(e)
	if err != nil {
		return nil, err
	}
	return goLeader(&found), nil
}

// goLeader copies a leader the C library filled in (nil when nobody leads) and frees it.
func goLeader(found *C.polylock_leader) *Leader {
	value := goBytes(&found.value)
	if !bool(found.found) {
		return nil
	}
	return &Leader{Value: value, Term: uint64(found.term)}
}

// Observe sends the leader now, then the leader after every change (a new leader, a
// proclaimed value, nobody leading: Leader nil), until ctx is done or the client closes;
// then the channel closes. An error (say, the store unreachable) is sent as the last item.
// The observation holds an OS thread, blocked in the C library, while it waits.
func (e *Election) Observe(ctx context.Context) (<-chan LeaderChange, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the observation was given up before it started")
	}
	var observer *C.polylock_observer
	err := call(func() C.polylock_status { return C.polylock_election_observe(e.ptr, &observer) })
	runtime.KeepAlive(e)
	if err != nil {
		return nil, err
	}
	changes := make(chan LeaderChange)
	w := e.client.watchers.spawn(func(w *watcher, finished func() bool) {
		defer close(changes)
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			C.polylock_cancel_fire(w.cancel)
			close(fired)
		})
		for {
			var found C.polylock_leader
			err := call(func() C.polylock_status {
				return C.polylock_observer_next(observer, C.POLYLOCK_WAIT_FOREVER, w.cancel, &found)
			})
			change := LeaderChange{Err: err}
			if err == nil {
				change.Leader = goLeader(&found)
			} else if errors.Is(err, ErrCancelled) {
				break // ctx is done or the client is closing: no error to report
			}
			stopped := false
			select {
			case changes <- change:
			case <-ctx.Done():
				stopped = true
			case <-w.stopping:
				stopped = true
			}
			if err != nil || stopped {
				break
			}
		}
		finished()
		if !stop() {
			<-fired // fired, or firing: wait before the token is freed
		}
		C.polylock_observer_free(observer)
		C.polylock_cancel_free(w.cancel)
	})
	if w == nil {
		C.polylock_observer_free(observer)
		return nil, errorOf(ErrConnection, "the client is closed; connect again")
	}
	return changes, nil
}

// Leadership is one won campaign: the proof of leading, for one term. Any goroutine may use
// it. Resign it when done, usually with `defer leadership.Resign(ctx)`; one nobody resigns
// is resigned in the background once collected.
type Leadership struct {
	state *leadershipState
	term  uint64
}

// leadershipState is apart from Leadership so that a Leadership nobody resigns can still be
// collected (its cleanup stops the watcher, then frees the C leadership, which resigns).
type leadershipState struct {
	client *Client
	mu     sync.Mutex
	ptr    *C.polylock_leadership // nil once resigned and freed
	// lostAtEnd is whether it had been lost when it was resigned.
	lostAtEnd bool
	lost      chan struct{} // made on the first call to Lost
	watcher   *watcher
}

func newLeadership(client *Client, ptr *C.polylock_leadership) *Leadership {
	state := &leadershipState{client: client, ptr: ptr}
	l := &Leadership{state: state, term: uint64(C.polylock_leadership_term(ptr))}
	runtime.AddCleanup(l, func(s *leadershipState) { s.free() }, state)
	return l
}

// Term is a fencing token strictly greater than every earlier leader's term of this
// election: pass it to the storage the leader writes, and have it refuse older terms.
func (l *Leadership) Term() uint64 { return l.term }

// IsLeader is true until the leadership is resigned or lost; once false, never true again.
func (l *Leadership) IsLeader() bool {
	leading := false
	l.state.with(func(ptr *C.polylock_leadership) { leading = bool(C.polylock_leadership_is_leader(ptr)) })
	runtime.KeepAlive(l)
	return leading
}

// IsLost reports whether the store no longer has this leader (lease passed, session ended,
// taken over, client closed).
func (l *Leadership) IsLost() bool {
	s := l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	defer runtime.KeepAlive(l)
	if s.ptr == nil {
		return s.lostAtEnd
	}
	return bool(C.polylock_leadership_is_lost(s.ptr))
}

// IsSuspended reports ZooKeeper's SUSPENDED: the connection is down and the backend cannot
// tell yet whether this is still the leader. Act as "not sure".
func (l *Leadership) IsSuspended() bool {
	suspended := false
	l.state.with(func(ptr *C.polylock_leadership) { suspended = bool(C.polylock_leadership_is_suspended(ptr)) })
	runtime.KeepAlive(l)
	return suspended
}

// Lost is closed when the leadership is lost: its session ended, its lease passed, another
// leader took over, or the client was closed. It never closes for a leadership resigned
// normally. The first call starts a goroutine that waits in the C library (holding an OS
// thread) until the leadership is lost or resigned.
func (l *Leadership) Lost() <-chan struct{} {
	s := l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	defer runtime.KeepAlive(l)
	if s.lost != nil {
		return s.lost
	}
	s.lost = make(chan struct{})
	if s.ptr == nil {
		if s.lostAtEnd {
			close(s.lost)
		}
		return s.lost
	}
	ptr := s.ptr
	s.watcher = s.client.watchers.start(func(cancel *C.polylock_cancel, isLost *C.bool) C.polylock_status {
		return C.polylock_leadership_wait_lost(ptr, C.POLYLOCK_WAIT_FOREVER, cancel, isLost)
	}, s.lost)
	return s.lost
}

// Proclaim replaces the leader's value, without a new election or term. ErrLost if this is
// no longer the leader, ErrNotOwner once resigned. Not interruptible in the C library.
func (l *Leadership) Proclaim(ctx context.Context, value []byte) error {
	if err := ctx.Err(); err != nil {
		return contextError(err, "the proclaim was given up before it started")
	}
	err := error(errorOf(ErrNotOwner, "this leadership was resigned"))
	l.state.with(func(ptr *C.polylock_leadership) {
		err = call(func() C.polylock_status {
			data, length := cBytes(value)
			return C.polylock_leadership_proclaim(ptr, data, length)
		})
	})
	runtime.KeepAlive(l)
	return err
}

// Resign stops leading, so that the next candidate leads. Resigning twice is harmless;
// ErrLost if the leadership had been lost before (someone else may lead already). Not
// interruptible in the C library: ctx is checked before the call.
func (l *Leadership) Resign(ctx context.Context) error {
	s := l.state
	s.mu.Lock()
	defer s.mu.Unlock()
	defer runtime.KeepAlive(l)
	if s.ptr == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return contextError(err, "the resign was given up before it started")
	}
	err := call(func() C.polylock_status { return C.polylock_leadership_resign(s.ptr) })
	s.lostAtEnd = bool(C.polylock_leadership_is_lost(s.ptr))
	s.freeLocked()
	return err
}

// with runs f on the C leadership if it is not freed yet.
func (s *leadershipState) with(f func(*C.polylock_leadership)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		f(s.ptr)
	}
}

// free is the cleanup of a Leadership nobody resigned: the C leadership resigns in the
// background.
func (s *leadershipState) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeLocked()
}

func (s *leadershipState) freeLocked() {
	if s.ptr == nil {
		return
	}
	if s.watcher != nil {
		s.watcher.stopAndWait()
		s.watcher = nil
	}
	C.polylock_leadership_free(s.ptr)
	s.ptr = nil
}
