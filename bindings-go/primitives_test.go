package polylock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// Segment IDs: never 0, never repeated across two generators of one tag and goroutines.
func TestSegment(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		tag := uniqueName("segment")
		if _, err := client.Segment(""); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("empty tag: %v, want ErrInvalidArgument", err)
		}
		first, err := client.Segment(tag, polylock.WithStep(100))
		if err != nil {
			t.Fatal(err)
		}
		second, err := client.Segment(tag)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var all []uint64
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(segment *polylock.Segment) {
				defer wg.Done()
				ids, err := segment.NextIDs(500)
				if err == nil {
					var id uint64
					id, err = segment.NextID()
					ids = append(ids, id)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, ids...)
				mu.Unlock()
			}([]*polylock.Segment{first, second}[g%2])
		}
		wg.Wait()
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		if len(all) != 4*501 || all[0] == 0 {
			t.Fatalf("%d IDs, smallest %d", len(all), all[0])
		}
		for i := 1; i < len(all); i++ {
			if all[i] == all[i-1] {
				t.Fatalf("ID %d handed out twice", all[i])
			}
		}
	})
}

// A leased worker id is held by one generator at a time; closed, it is free again with a
// greater epoch, and its next holder issues IDs above the last one's.
func TestLeasedSnowflake(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		ctx := context.Background()
		if _, err := client.LeaseSnowflake(ctx, 1024); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("worker 1024: %v, want ErrInvalidArgument", err)
		}
		generator, err := client.LeaseSnowflake(ctx, polylock.AnyWorker)
		if err != nil {
			t.Fatal(err)
		}
		worker, epoch, err := generator.Worker()
		if err != nil || worker > 1023 || epoch == 0 {
			t.Fatalf("worker %d epoch %d: %v", worker, epoch, err)
		}
		if _, err := client.LeaseSnowflake(ctx, int(worker)); !errors.Is(err, polylock.ErrTimeout) {
			t.Fatalf("second lease of worker %d: %v, want ErrTimeout", worker, err)
		}
		ids, err := generator.NextIDs(300)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("IDs not increasing: %d then %d", ids[i-1], ids[i])
			}
		}
		if got := (ids[0] >> 12) & 1023; got != worker {
			t.Fatalf("ID carries worker %d, want %d", got, worker)
		}
		if err := generator.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := generator.Next(); !errors.Is(err, polylock.ErrConnection) {
			t.Fatalf("Next after Close: %v, want ErrConnection", err)
		}
		again, err := client.LeaseSnowflake(ctx, int(worker))
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		_, newer, err := again.Worker()
		if err != nil || newer <= epoch {
			t.Fatalf("epoch %d after %d: %v", newer, epoch, err)
		}
		next, err := again.Next()
		if err != nil || next <= ids[len(ids)-1] {
			t.Fatalf("ID %d after %d: %v", next, ids[len(ids)-1], err)
		}
	})
}

// Versioned values: conflicts carry the current value and version, fenced writes the
// winning token.
func TestValue(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		ctx := context.Background()
		value, err := client.Value(uniqueName("value"))
		if err != nil {
			t.Fatal(err)
		}
		if found, err := value.Get(ctx); found != nil || err != nil {
			t.Fatalf("get before create: %v, %v", found, err)
		}
		v1, err := value.Create(ctx, []byte("one"))
		if err != nil {
			t.Fatal(err)
		}
		var e *polylock.Error
		if _, err := value.Create(ctx, []byte("uno")); !errors.Is(err, polylock.ErrConflict) || !errors.As(err, &e) ||
			!e.HasCurrent || string(e.CurrentValue) != "one" || e.CurrentVersion != v1 {
			t.Fatalf("create twice: %v (%+v)", err, e)
		}
		v2, err := value.CompareAndSet(ctx, v1, []byte("two"))
		if err != nil || v2 <= v1 {
			t.Fatalf("cas: %d, %v", v2, err)
		}
		if _, err := value.CompareAndSet(ctx, v1, []byte("dos")); !errors.As(err, &e) || e.Kind != polylock.ErrConflict ||
			string(e.CurrentValue) != "two" || e.CurrentVersion != v2 {
			t.Fatalf("stale cas: %v", err)
		}
		if _, err := value.WriteFenced(ctx, 10, []byte("ten")); err != nil {
			t.Fatal(err)
		}
		if _, err := value.WriteFenced(ctx, 9, []byte("nine")); !errors.Is(err, polylock.ErrFenced) ||
			!errors.As(err, &e) || e.WinningToken != 10 {
			t.Fatalf("lower token: %v", err)
		}
		found, err := value.Get(ctx)
		if err != nil || found == nil || string(found.Value) != "ten" || !found.Fenced || found.FencingToken != 10 {
			t.Fatalf("get: %+v, %v", found, err)
		}
		if err := value.Delete(ctx, found.Version); err != nil {
			t.Fatal(err)
		}
		if err := value.Delete(ctx, found.Version); !errors.As(err, &e) || e.Kind != polylock.ErrConflict || e.HasCurrent {
			t.Fatalf("delete twice: %v", err)
		}
	})
}

// CAS increments from goroutines of two clients end at exactly the number made.
func TestValueCounter(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		clients := []*polylock.Client{connect(t, url), connect(t, url)}
		ctx := context.Background()
		name := uniqueName("counter")
		const goroutines, increments = 4, 10
		var retries atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(client *polylock.Client) {
				defer wg.Done()
				value, err := client.Value(name)
				if err != nil {
					t.Error(err)
					return
				}
				for done := 0; done < increments; {
					found, err := value.Get(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if found == nil {
						_, err = value.Create(ctx, []byte("1"))
					} else {
						var n int
						fmt.Sscan(string(found.Value), &n)
						_, err = value.CompareAndSet(ctx, found.Version, []byte(fmt.Sprint(n+1)))
					}
					switch {
					case err == nil:
						done++
					case errors.Is(err, polylock.ErrConflict):
						retries.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			}(clients[g%2])
		}
		wg.Wait()
		value, _ := clients[0].Value(name)
		found, err := value.Get(ctx)
		if err != nil || found == nil || string(found.Value) != fmt.Sprint(goroutines*increments) {
			t.Fatalf("counter: %+v, %v", found, err)
		}
		t.Logf("%d increments, %d retries", goroutines*increments, retries.Load())
	})
}

// Run: concurrent runs of one key run the work once; later runs replay; a failed run lets a
// retry run again; another fingerprint is ErrMismatch.
func TestIdempotencyRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		ctx := context.Background()
		keys, err := client.Idempotency(uniqueName("idem"))
		if err != nil {
			t.Fatal(err)
		}
		fingerprint, err := polylock.FingerprintOfJSON(`{"amount": 10, "card": "x"}`)
		if err != nil {
			t.Fatal(err)
		}
		same, _ := polylock.FingerprintOfJSON(`{"card":"x","amount":10}`)
		if !bytes.Equal(fingerprint, same) {
			t.Fatal("JSON fingerprints differ by key order")
		}
		var ran atomic.Int64
		var wg sync.WaitGroup
		results := make(chan error, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				response, err := keys.Run(ctx, "pay-1", same, func(ctx context.Context, token uint64) ([]byte, error) {
					ran.Add(1)
					time.Sleep(100 * time.Millisecond)
					return []byte(fmt.Sprintf("paid by %d", token)), nil
				})
				if err == nil && string(response) != "paid by 1" {
					err = fmt.Errorf("response %q", response)
				}
				if errors.Is(err, polylock.ErrInProgress) {
					var e *polylock.Error
					if !errors.As(err, &e) || e.RetryAfter <= 0 {
						err = fmt.Errorf("in progress without a retry-after: %v", err)
					} else {
						err = nil
					}
				}
				results <- err
			}()
		}
		wg.Wait()
		close(results)
		for err := range results {
			if err != nil {
				t.Fatal(err)
			}
		}
		if ran.Load() != 1 {
			t.Fatalf("the work ran %d times", ran.Load())
		}
		response, err := keys.Run(ctx, "pay-1", fingerprint, func(context.Context, uint64) ([]byte, error) {
			t.Fatal("ran again")
			return nil, nil
		})
		if err != nil || string(response) != "paid by 1" {
			t.Fatalf("replay: %q, %v", response, err)
		}
		other, _ := polylock.FingerprintOf([]byte("amount=11"))
		if _, err := keys.Run(ctx, "pay-1", other, nil); !errors.Is(err, polylock.ErrMismatch) {
			t.Fatalf("other fingerprint: %v, want ErrMismatch", err)
		}
		failure := errors.New("card declined")
		if _, err := keys.Run(ctx, "pay-2", other, func(context.Context, uint64) ([]byte, error) {
			return nil, failure
		}); !errors.Is(err, failure) {
			t.Fatalf("failing work: %v", err)
		}
		response, err = keys.Run(ctx, "pay-2", other, func(_ context.Context, token uint64) ([]byte, error) {
			return []byte(fmt.Sprint(token)), nil
		})
		if err != nil || string(response) != "2" {
			t.Fatalf("retry after a failure: %q, %v", response, err)
		}
	})
}

// Begin and a Ticket step by step: a crashed attempt is taken over after its TTL, and its
// ticket can no longer complete.
func TestIdempotencyTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		ctx := context.Background()
		keys, err := client.Idempotency(uniqueName("takeover"), polylock.WithInProgressTTL(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		first, err := keys.Begin(ctx, "job", []byte("fp"))
		if err != nil || first.Outcome != polylock.Acquired || first.Ticket.Token() != 1 {
			t.Fatalf("first begin: %+v, %v", first, err)
		}
		busy, err := keys.Begin(ctx, "job", []byte("fp"))
		if err != nil || busy.Outcome != polylock.InProgress || busy.RetryAfter <= 0 {
			t.Fatalf("second begin: %+v, %v", busy, err)
		}
		time.Sleep(450 * time.Millisecond)
		second, err := keys.Begin(ctx, "job", []byte("fp"))
		if err != nil || second.Outcome != polylock.Acquired || second.Ticket.Token() != 2 {
			t.Fatalf("takeover: %+v, %v", second, err)
		}
		if err := first.Ticket.Complete(ctx, []byte("late")); !errors.Is(err, polylock.ErrLost) {
			t.Fatalf("complete of a taken-over ticket: %v, want ErrLost", err)
		}
		if err := second.Ticket.Complete(ctx, []byte("fresh")); err != nil {
			t.Fatal(err)
		}
		replay, err := keys.Begin(ctx, "job", []byte("fp"))
		if err != nil || replay.Outcome != polylock.Replay || string(replay.Response) != "fresh" {
			t.Fatalf("replay: %+v, %v", replay, err)
		}
	})
}

// Multi-locks in opposite orders under contention all finish (no deadlock) and exclude each
// other; a wait that runs out leaves nothing held.
func TestMultiLock(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		ctx := boundedContext(t)
		base := uniqueName("multi")
		a, b, c := base+":a", base+":b", base+":c"
		if _, err := client.MultiLock(); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("no names: %v", err)
		}
		if _, err := client.MultiLock(a, a); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("a name twice: %v", err)
		}
		forward, err := client.MultiLock(a, b, c)
		if err != nil {
			t.Fatal(err)
		}
		backward, err := client.MultiLock(c, b, a)
		if err != nil {
			t.Fatal(err)
		}
		var inside, overlaps atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(locks *polylock.MultiLock) {
				defer wg.Done()
				for round := 0; round < 10; round++ {
					hold, err := locks.Acquire(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					inside.Add(-1)
					if err := hold.Release(); err != nil {
						t.Error(err)
					}
				}
			}([]*polylock.MultiLock{forward, backward}[g%2])
		}
		wg.Wait()
		if overlaps.Load() != 0 {
			t.Fatalf("%d overlapping holds", overlaps.Load())
		}

		hold, err := backward.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		parts := hold.Parts()
		if len(parts) != 3 || parts[0].Name != a || parts[2].Name != c || !parts[1].HasFencingToken || parts[1].FencingToken == 0 {
			t.Fatalf("parts: %+v", parts)
		}
		d := base + ":d"
		partial, err := client.MultiLock(d, b)
		if err != nil {
			t.Fatal(err)
		}
		if none, err := partial.TryAcquire(ctx, polylock.WithWait(150*time.Millisecond)); none != nil || err != nil {
			t.Fatalf("while b is held: %v, %v", none, err)
		}
		dHold, err := mustLock(t, client, d).TryAcquire(ctx)
		if err != nil || dHold == nil {
			t.Fatalf("d was left held: %v", err)
		}
		mustRelease(t, dHold)
		if err := hold.Release(); err != nil {
			t.Fatal(err)
		}
		if err := hold.Release(); !errors.Is(err, polylock.ErrNotOwner) {
			t.Fatalf("release twice: %v", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		blocker, err := forward.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		if _, err := backward.Acquire(cancelled); !errors.Is(err, polylock.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled acquire: %v", err)
		}
		if err := blocker.Release(); err != nil {
			t.Fatal(err)
		}
	})
}
