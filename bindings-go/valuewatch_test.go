package polylock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// expectChange waits (up to 10 s) for the next state and checks it is want (nil: deleted).
func expectChange(t *testing.T, watch *polylock.ValueWatch, want *string) *polylock.Versioned {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state, ok, err := watch.Changed(ctx)
	if err != nil || !ok {
		t.Fatalf("changed: %v, ok %v, err %v", state, ok, err)
	}
	if want == nil && state != nil || want != nil && (state == nil || string(state.Value) != *want) {
		t.Fatalf("changed to %+v, want %v", state, want)
	}
	return state
}

func ptr(s string) *string { return &s }

func TestValueWatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		name := uniqueName("value-watch")
		value, err := connect(t, url).Value(name)
		if err != nil {
			t.Fatal(err)
		}
		writer, err := connect(t, url).Value(name)
		if err != nil {
			t.Fatal(err)
		}
		watch, err := value.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Close()
		if watch.Current() != nil || watch.Name() != name || watch.IsClosed() {
			t.Fatalf("a new watch of nothing: %+v %q %v", watch.Current(), watch.Name(), watch.IsClosed())
		}

		// The context's deadline bounds the wait: ErrTimeout and context.DeadlineExceeded.
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		start := time.Now()
		state, ok, err := watch.Changed(short)
		cancel()
		if !errors.Is(err, polylock.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || state != nil || ok {
			t.Fatalf("a bounded wait with no change: %v, %v, %v", state, ok, err)
		}
		if waited := time.Since(start); waited < 90*time.Millisecond || waited > 5*time.Second {
			t.Fatalf("the 100 ms wait took %v", waited)
		}

		// Another client's writes, a change made while nobody waited included.
		v1, err := writer.Create(ctx, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		if state := expectChange(t, watch, ptr("x")); state.Version != v1 || watch.Current().Version != v1 {
			t.Fatalf("version %d, current %+v, want %d", state.Version, watch.Current(), v1)
		}
		v2, err := writer.WriteFenced(ctx, 5, []byte("fenced"))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if state := expectChange(t, watch, ptr("fenced")); state.Version != v2 || !state.Fenced || state.FencingToken != 5 {
			t.Fatalf("fenced change: %+v", state)
		}
		if err := writer.Delete(ctx, v2); err != nil {
			t.Fatal(err)
		}
		expectChange(t, watch, nil)
		if watch.Current() != nil {
			t.Fatalf("current after delete: %+v", watch.Current())
		}

		// A cancelled context ends the wait; the watch stays open and sees the next change.
		cancellable, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		if _, _, err := watch.Changed(cancellable); !errors.Is(err, polylock.ErrCancelled) ||
			!errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait: %v", err)
		}
		if _, _, err := watch.Changed(cancellable); !errors.Is(err, polylock.ErrCancelled) {
			t.Fatalf("a wait on a done context: %v", err)
		}
		if watch.IsClosed() {
			t.Fatal("a cancel closed the watch")
		}
		if _, err := writer.Create(ctx, []byte("z")); err != nil {
			t.Fatal(err)
		}
		expectChange(t, watch, ptr("z"))

		// Close from another goroutine ends a wait without limit, and every later one.
		type result struct {
			state *polylock.Versioned
			ok    bool
			err   error
		}
		ended := make(chan result)
		go func() {
			state, ok, err := watch.Changed(ctx)
			ended <- result{state, ok, err}
		}()
		time.Sleep(150 * time.Millisecond)
		if err := watch.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-ended:
			if got.ok || got.err != nil || got.state != nil {
				t.Fatalf("a wait ended by Close: %+v", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end the wait")
		}
		if _, ok, err := watch.Changed(ctx); ok || err != nil || !watch.IsClosed() {
			t.Fatalf("Changed after Close: ok %v, %v", ok, err)
		}
		if err := watch.Close(); err != nil {
			t.Fatalf("Close twice: %v", err)
		}
		if current := watch.Current(); current == nil || string(current.Value) != "z" {
			t.Fatalf("current after Close: %+v", current)
		}

		done, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := value.Watch(done); !errors.Is(err, polylock.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch on a done context: %v", err)
		}
	})
}

// Closing the client ends a watch's wait (ErrConnection) instead of waiting for it.
func TestValueWatchClientClose(t *testing.T) {
	client, err := polylock.Connect(context.Background(), backends()[0].url)
	if err != nil {
		t.Fatal(err)
	}
	value, err := client.Value(uniqueName("value-watch-close"))
	if err != nil {
		t.Fatal(err)
	}
	watch, err := value.Watch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error)
	go func() {
		_, _, err := watch.Changed(context.Background())
		ended <- err
	}()
	time.Sleep(150 * time.Millisecond)
	closed := make(chan error)
	go func() { closed <- client.Close() }()
	select {
	case err := <-ended:
		if !errors.Is(err, polylock.ErrConnection) {
			t.Fatalf("a wait ended by the client's Close: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the client's Close did not end the wait")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, _, err := watch.Changed(context.Background()); !errors.Is(err, polylock.ErrConnection) {
		t.Fatalf("Changed after the client's Close: %v", err)
	}
	if err := watch.Close(); !errors.Is(err, polylock.ErrConnection) {
		t.Fatalf("Close after the client's Close: %v", err)
	}
}
