package polylock_test

import (
	"errors"
	"testing"

	polylock "example.invalid/polylock/bindings-go"
)

// Readers share, a writer excludes readers and writers; where the backend has no
// read-write locks, making the handle is ErrUnsupported.
func TestRWLock(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := boundedContext(t)
		client := connect(t, url)
		rw, err := client.RWLock(uniqueName("rw"))
		if errors.Is(err, polylock.ErrUnsupported) {
			t.Logf("no read-write locks here: %v", err)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		reader1, err := rw.Read().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reader2, err := rw.Read().TryAcquire(ctx)
		if err != nil || reader2 == nil {
			t.Fatalf("a second reader: %v, %v", reader2, err)
		}
		if writer, err := rw.Write().TryAcquire(ctx); writer != nil || err != nil {
			t.Fatalf("a writer beside readers: %v, %v", writer, err)
		}
		mustRelease(t, reader1)
		mustRelease(t, reader2)
		writer, err := rw.Write().TryAcquire(ctx)
		if err != nil || writer == nil {
			t.Fatalf("the writer after the readers: %v, %v", writer, err)
		}
		if writer.FencingToken() <= reader2.FencingToken() && writer.FencingToken() <= reader1.FencingToken() {
			t.Fatalf("writer token %d not above the readers'", writer.FencingToken())
		}
		if reader, err := rw.Read().TryAcquire(ctx); reader != nil || err != nil {
			t.Fatalf("a reader beside the writer: %v, %v", reader, err)
		}
		nested, err := writer.Reenter()
		if err != nil || nested.FencingToken() != writer.FencingToken() {
			t.Fatalf("write re-entry: %v", err)
		}
		mustRelease(t, nested)
		mustRelease(t, writer)
	})
}

// N permits, each its own hold with its own id and token; the next waits for a release.
func TestSemaphore(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := boundedContext(t)
		client := connect(t, url)
		name := uniqueName("semaphore")
		pool, err := client.Semaphore(name, 2)
		if errors.Is(err, polylock.ErrUnsupported) {
			t.Logf("no semaphores here: %v", err)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.Semaphore(name, 0); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("zero permits: %v", err)
		}
		first, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		second, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if first.PermitID() == 0 || first.PermitID() == second.PermitID() {
			t.Fatalf("permit ids %d and %d", first.PermitID(), second.PermitID())
		}
		if second.FencingToken() <= first.FencingToken() {
			t.Fatalf("tokens %d then %d", first.FencingToken(), second.FencingToken())
		}
		if third, err := pool.TryAcquire(ctx); third != nil || err != nil {
			t.Fatalf("a third permit of two: %v, %v", third, err)
		}
		if _, err := first.Reenter(); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("re-entering a permit: %v", err)
		}
		mustRelease(t, first)
		third, err := pool.TryAcquire(ctx)
		if err != nil || third == nil {
			t.Fatalf("a permit after a release: %v, %v", third, err)
		}
		other, err := client.Semaphore(name, 3)
		if err == nil {
			if _, err = other.TryAcquire(ctx); !errors.Is(err, polylock.ErrInvalidArgument) {
				t.Fatalf("another count for the same name: %v", err)
			}
		}
		mustRelease(t, second)
		mustRelease(t, third)
	})
}
