package polylock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

func mustElection(t *testing.T, client *polylock.Client, name string) *polylock.Election {
	t.Helper()
	election, err := client.Election(name)
	if err != nil {
		t.Fatalf("election %q: %v", name, err)
	}
	return election
}

// observeUntil reads changes until the leader is value (nil: nobody leads), skipping
// states in between (nobody, between two leaders); the leader's term.
func observeUntil(t *testing.T, changes <-chan polylock.LeaderChange, value []byte) uint64 {
	t.Helper()
	for range 20 {
		change, open := within2(t, changes, fmt.Sprintf("a leader change to %q", value))
		if !open {
			t.Fatalf("the observation ended before the leader was %q", value)
		}
		if change.Err != nil {
			t.Fatalf("observe: %v", change.Err)
		}
		if value == nil && change.Leader == nil {
			return 0
		}
		if value != nil && change.Leader != nil && string(change.Leader.Value) == string(value) {
			return change.Leader.Term
		}
	}
	t.Fatalf("the observer never reported the leader %q", value)
	return 0
}

// within2 is within for a receive that also says whether the channel is still open.
func within2[T any](t *testing.T, ch <-chan T, what string) (T, bool) {
	t.Helper()
	select {
	case v, open := <-ch:
		return v, open
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: still waiting after 60s", what)
		panic("unreachable")
	}
}

// One election seen from two clients: the leader's view, Observe following it, candidates
// refused by a try, a WithWait limit, a cancelled and a deadline-bound context, Proclaim,
// Resign handing over to a waiting candidate with a greater term, nothing left by the
// candidates that gave up, and a leader whose client closes losing.
func TestElection(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := boundedContext(t)
		first, second := connect(t, url), connect(t, url)
		name := uniqueName("election")
		a, b := mustElection(t, first, name), mustElection(t, second, name)
		if a.Name() != name {
			t.Fatalf("name %q", a.Name())
		}
		observing, stopObserving := context.WithCancel(ctx)
		changes, err := b.Observe(observing)
		if err != nil {
			t.Fatal(err)
		}
		observeUntil(t, changes, nil)
		if leader, err := b.Leader(ctx); leader != nil || err != nil {
			t.Fatalf("leader before any campaign: %v, %v", leader, err)
		}

		leadA, err := a.Campaign(ctx, []byte("a"), polylock.WithWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		termA := leadA.Term()
		if termA == 0 || !leadA.IsLeader() || leadA.IsLost() || leadA.IsSuspended() {
			t.Fatalf("leader a: term %d, leader %v, lost %v", termA, leadA.IsLeader(), leadA.IsLost())
		}
		if term := observeUntil(t, changes, []byte("a")); term != termA {
			t.Fatalf("observed term %d, want %d", term, termA)
		}
		if leader, err := b.Leader(ctx); err != nil || leader == nil || string(leader.Value) != "a" || leader.Term != termA {
			t.Fatalf("leader: %+v, %v", leader, err)
		}

		// Others do not lead while a does; none of these stays a candidate.
		if none, err := b.TryCampaign(ctx, []byte("late")); none != nil || err != nil {
			t.Fatalf("try while a leads: %v, %v", none, err)
		}
		if _, err := b.Campaign(ctx, []byte("late"), polylock.WithWait(150*time.Millisecond)); !errors.Is(err, polylock.ErrTimeout) {
			t.Fatalf("campaign with a wait: %v, want ErrTimeout", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		if _, err := b.Campaign(cancelled, []byte("late")); !errors.Is(err, polylock.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled campaign: %v", err)
		}
		short, stop := context.WithTimeout(ctx, 150*time.Millisecond)
		defer stop()
		if _, err := b.Campaign(short, []byte("late")); !errors.Is(err, polylock.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline-bound campaign: %v", err)
		}
		if _, err := b.Campaign(ctx, []byte("late"), polylock.WithLease(time.Second)); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("campaign with a lease: %v, want ErrInvalidArgument", err)
		}

		// Proclaim: a new value, the same term, seen by Leader and Observe.
		if err := leadA.Proclaim(ctx, []byte("a2")); err != nil {
			t.Fatal(err)
		}
		if term := observeUntil(t, changes, []byte("a2")); term != termA {
			t.Fatalf("proclaimed term %d, want %d", term, termA)
		}

		// A waiting candidate leads once a resigns, with a greater term; a was never lost.
		lostA := leadA.Lost()
		won := make(chan *polylock.Leadership, 1)
		go func() {
			leadership, err := b.Campaign(ctx, []byte("b"))
			if err != nil {
				t.Errorf("waiting candidate: %v", err)
			}
			won <- leadership
		}()
		time.Sleep(200 * time.Millisecond)
		if err := leadA.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := leadA.Resign(ctx); err != nil {
			t.Fatalf("second resign: %v", err)
		}
		if leadA.IsLeader() || leadA.IsLost() || leadA.Term() != termA {
			t.Fatalf("resigned: leader %v, lost %v, term %d", leadA.IsLeader(), leadA.IsLost(), leadA.Term())
		}
		if err := leadA.Proclaim(ctx, []byte("x")); !errors.Is(err, polylock.ErrNotOwner) {
			t.Fatalf("proclaim after resign: %v, want ErrNotOwner", err)
		}
		leadB := within(t, won, "the waiting candidate")
		if leadB == nil {
			t.FailNow()
		}
		if leadB.Term() <= termA {
			t.Fatalf("term %d after term %d", leadB.Term(), termA)
		}
		if term := observeUntil(t, changes, []byte("b")); term != leadB.Term() {
			t.Fatalf("observed term %d, want %d", term, leadB.Term())
		}
		select {
		case <-lostA:
			t.Fatal("a resigned leadership reported lost")
		default:
		}

		// b resigns: the candidates that gave up left nothing, so nobody leads.
		if err := leadB.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if leader, err := a.Leader(ctx); leader != nil || err != nil {
			t.Fatalf("leader after every resign: %+v, %v", leader, err)
		}

		// A leader whose client closes loses: Lost closes (that the core marks it lost is
		// checked by the C suite, which closes without freeing).
		leadC, err := a.Campaign(ctx, []byte("c"), polylock.WithWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if leadC.Term() <= leadB.Term() {
			t.Fatalf("term %d after term %d", leadC.Term(), leadB.Term())
		}
		observeUntil(t, changes, []byte("c"))
		lostC := leadC.Lost()
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		within(t, lostC, "the loss of a closed client's leadership")
		if err := leadC.Proclaim(ctx, []byte("late")); err == nil {
			t.Fatal("a closed client's leader proclaimed")
		}

		// Cancelling the observation's context closes its channel.
		stopObserving()
		for {
			if _, open := within2(t, changes, "the end of the observation"); !open {
				break
			}
		}
	})
}

// Candidates of two clients campaign in turns: never two leaders at once, and every new
// leader's term is greater than the one before.
func TestElectionOneLeader(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		clients := []*polylock.Client{connect(t, url), connect(t, url)}
		name := uniqueName("one-leader")
		elections := []*polylock.Election{mustElection(t, clients[0], name), mustElection(t, clients[1], name)}
		const candidates, terms = 4, 2
		var inside atomic.Int32
		var mu sync.Mutex
		var lastTerm uint64
		var wg sync.WaitGroup
		errs := make(chan error, candidates*terms*2)
		for c := range candidates {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				for range terms {
					leadership, err := elections[c%2].Campaign(ctx, []byte(fmt.Sprint("n", c)))
					if err != nil {
						errs <- err
						return
					}
					if inside.Add(1) != 1 {
						errs <- errors.New("two leaders at once")
					}
					mu.Lock()
					if leadership.Term() <= lastTerm {
						errs <- fmt.Errorf("term %d after term %d", leadership.Term(), lastTerm)
					}
					lastTerm = leadership.Term()
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					inside.Add(-1)
					if err := leadership.Resign(ctx); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// A latch set on one client, waited on from another: a timeout is no error, a cancelled or
// deadline-bound context is, and the second count-down releases the waiter.
func TestLatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := boundedContext(t)
		first, second := connect(t, url), connect(t, url)
		name := uniqueName("latch")
		latch, err := first.Latch(name)
		if err != nil {
			t.Fatal(err)
		}
		other, err := second.Latch(name)
		if err != nil {
			t.Fatal(err)
		}
		if latch.Name() != name {
			t.Fatalf("name %q", latch.Name())
		}
		if _, err := latch.TrySetCount(ctx, 0); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("count 0: %v, want ErrInvalidArgument", err)
		}
		if count, err := other.Count(ctx); count != 0 || err != nil {
			t.Fatalf("fresh count: %d, %v", count, err)
		}
		if reached, err := other.Await(ctx, 0); !reached || err != nil {
			t.Fatalf("await on an open latch: %v, %v", reached, err)
		}
		if set, err := latch.TrySetCount(ctx, 2); !set || err != nil {
			t.Fatalf("set: %v, %v", set, err)
		}
		if set, err := other.TrySetCount(ctx, 5); set || err != nil {
			t.Fatalf("set while closed: %v, %v", set, err)
		}
		if count, err := other.Count(ctx); count != 2 || err != nil {
			t.Fatalf("count: %d, %v", count, err)
		}
		if reached, err := other.Await(ctx, 150*time.Millisecond); reached || err != nil {
			t.Fatalf("await that runs out: %v, %v", reached, err)
		}
		// AwaitZero is the waiting form: ErrTimeout after the whole wait, not false.
		started := time.Now()
		if err := other.AwaitZero(ctx, 150*time.Millisecond); !errors.Is(err, polylock.ErrTimeout) {
			t.Fatalf("AwaitZero that runs out: %v, want ErrTimeout", err)
		}
		if waited := time.Since(started); waited < 140*time.Millisecond {
			t.Fatalf("AwaitZero ended after %v, before its 150ms", waited)
		}
		if err := other.AwaitZero(ctx, 0); !errors.Is(err, polylock.ErrTimeout) {
			t.Fatalf("AwaitZero(0) on a closed latch: %v, want ErrTimeout", err)
		}
		shortZero, stopZero := context.WithTimeout(ctx, 100*time.Millisecond)
		defer stopZero()
		if err := other.AwaitZero(shortZero, -1); !errors.Is(err, polylock.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline-bound AwaitZero: %v", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		if _, err := other.Await(cancelled, -1); !errors.Is(err, polylock.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled await: %v", err)
		}
		short, stop := context.WithTimeout(ctx, 150*time.Millisecond)
		defer stop()
		if _, err := other.Await(short, -1); !errors.Is(err, polylock.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline-bound await: %v", err)
		}

		released := make(chan bool, 1)
		go func() {
			reached, err := other.Await(ctx, -1)
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			released <- reached
		}()
		time.Sleep(100 * time.Millisecond)
		if err := latch.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-released:
			t.Fatal("the waiter was released at count 1")
		case <-time.After(100 * time.Millisecond):
		}
		if err := latch.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if !within(t, released, "the waiter") {
			t.Fatal("the waiter was not released at zero")
		}
		if err := other.AwaitZero(ctx, 0); err != nil {
			t.Fatalf("AwaitZero at zero: %v", err)
		}
		if err := latch.AwaitZero(ctx, -1); err != nil {
			t.Fatalf("AwaitZero without limit at zero: %v", err)
		}
		if err := other.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if count, err := other.Count(ctx); count != 0 || err != nil {
			t.Fatalf("count below zero: %d, %v", count, err)
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := latch.Count(ctx); !errors.Is(err, polylock.ErrConnection) {
			t.Fatalf("count on a closed client: %v, want ErrConnection", err)
		}
	})
}
