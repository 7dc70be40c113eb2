package polylock_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// A polylock Go holder of kind token (the `SET NX PX` string) and a redsync mutex (single
// node, go-redis pool) on the same Redis name exclude each other, both ways.
func TestInteropRedsync(t *testing.T) {
	url := os.Getenv("POLYLOCK_TEST_REDIS_URL")
	if url == "" {
		t.Skip("POLYLOCK_TEST_REDIS_URL is not set")
	}
	options, err := goredislib.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	redisClient := goredislib.NewClient(options)
	t.Cleanup(func() { redisClient.Close() })
	sync := redsync.New(goredis.NewPool(redisClient))
	ctx := context.Background()
	client := connect(t, url)
	name := uniqueName("redsync")
	lock := mustLock(t, client, name, polylock.WithKind(polylock.KindToken))
	mutex := sync.NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(30*time.Second))

	// polylock holds: redsync is refused.
	hold, err := lock.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var taken *redsync.ErrTaken
	if err := mutex.LockContext(ctx); !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
		t.Fatalf("redsync while polylock holds: %v, want taken", err)
	}
	mustRelease(t, hold)
	if err := mutex.LockContext(ctx); err != nil {
		t.Fatalf("redsync after polylock's release: %v", err)
	}

	// redsync holds: polylock is refused, then waits, and gets the lock once redsync unlocks.
	if other, err := lock.TryAcquire(ctx); other != nil || err != nil {
		t.Fatalf("polylock while redsync holds: %v, %v", other, err)
	}
	granted := make(chan error, 1)
	go func() {
		hold, err := lock.Acquire(ctx, polylock.WithWait(30*time.Second))
		if err == nil {
			err = hold.Release()
		}
		granted <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync unlock: %v, %v", ok, err)
	}
	if err := within(t, granted, "polylock after redsync's unlock"); err != nil {
		t.Fatal(err)
	}
}
