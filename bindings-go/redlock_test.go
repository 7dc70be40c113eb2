package polylock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// redlockServers starts n private redis-servers on ports above 30000 (apart per process)
// and stops them when the test ends.
func redlockServers(t *testing.T, n int, base int) []string {
	t.Helper()
	var addresses []string
	for i := 0; i < n; i++ {
		port := base + i
		server := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--loglevel", "warning")
		if err := server.Start(); err != nil {
			t.Fatalf("redis-server: %v", err)
		}
		t.Cleanup(func() {
			server.Process.Kill()
			server.Wait()
		})
		addresses = append(addresses, fmt.Sprintf("127.0.0.1:%d", port))
	}
	for _, address := range addresses {
		client := goredislib.NewClient(&goredislib.Options{Addr: address})
		deadline := time.Now().Add(10 * time.Second)
		for client.Ping(context.Background()).Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("redis-server on %s did not start", address)
			}
			time.Sleep(20 * time.Millisecond)
		}
		client.Close()
	}
	return addresses
}

// RedLock through its URL over three private servers: token locks exclude each other and a
// redsync mutex over the same three servers, multi-lock parts carry no fencing token, and
// read-write locks are refused.
func TestRedLock(t *testing.T) {
	base := 32000 + (os.Getpid()%2000)*3
	addresses := redlockServers(t, 3, base)
	url := fmt.Sprintf("redlock://%s,%s,%s", addresses[0], addresses[1], addresses[2])
	client := connect(t, url)
	other := connect(t, url)
	ctx := boundedContext(t)
	name := uniqueName("redlock")

	if _, err := client.Lock(name); !errors.Is(err, polylock.ErrUnsupported) {
		t.Fatalf("reentrant kind on RedLock: %v, want ErrUnsupported", err)
	}
	if _, err := client.RWLock(name); !errors.Is(err, polylock.ErrUnsupported) {
		t.Fatalf("rw lock on RedLock: %v, want ErrUnsupported", err)
	}
	// Nor does RedLock keep elections or latches: a majority of independent servers keeps no record.
	if _, err := client.Election(name); !errors.Is(err, polylock.ErrUnsupported) {
		t.Fatalf("election on RedLock: %v, want ErrUnsupported", err)
	}
	if _, err := client.Latch(name); !errors.Is(err, polylock.ErrUnsupported) {
		t.Fatalf("latch on RedLock: %v, want ErrUnsupported", err)
	}
	lock := mustLock(t, client, name, polylock.WithKind(polylock.KindToken))
	otherLock := mustLock(t, other, name, polylock.WithKind(polylock.KindToken))
	hold, err := lock.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if none, err := otherLock.TryAcquire(ctx, polylock.WithWait(150*time.Millisecond)); none != nil || err != nil {
		t.Fatalf("second holder: %v, %v", none, err)
	}

	// redsync over the same three servers sees the polylock hold, and the other way round.
	var pools []redis.Pool
	for _, address := range addresses {
		redisClient := goredislib.NewClient(&goredislib.Options{Addr: address})
		t.Cleanup(func() { redisClient.Close() })
		pools = append(pools, goredis.NewPool(redisClient))
	}
	mutex := redsync.New(pools...).NewMutex(name, redsync.WithTries(1), redsync.WithExpiry(30*time.Second))
	if err := mutex.LockContext(ctx); err == nil {
		t.Fatal("redsync locked while polylock holds")
	}
	mustRelease(t, hold)
	if err := mutex.LockContext(ctx); err != nil {
		t.Fatalf("redsync after polylock's release: %v", err)
	}
	if none, err := otherLock.TryAcquire(ctx); none != nil || err != nil {
		t.Fatalf("polylock while redsync holds: %v, %v", none, err)
	}
	if ok, err := mutex.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync unlock: %v, %v", ok, err)
	}
	again, err := otherLock.Acquire(ctx, polylock.WithWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, again)

	multi, err := client.MultiLock(name+":b", name+":a")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := multi.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range parts.Parts() {
		if part.HasFencingToken {
			t.Fatalf("RedLock part %s has a fencing token", part.Name)
		}
	}
	if err := parts.Release(); err != nil {
		t.Fatal(err)
	}

	// NewRedLock(servers, name): the same lock from the list, on a client of its own; the
	// list's rules are the core's (redacted messages included).
	for _, bad := range [][]string{nil, {"rediss://127.0.0.1:1"}, {"redis://u:Sekr3t-9@127.0.0.1:1", "redis://u:0ther-9@127.0.0.1:2"}} {
		_, err := polylock.NewRedLock(ctx, bad, name)
		if !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Fatalf("NewRedLock(%q): %v, want ErrInvalidArgument", bad, err)
		}
		if strings.Contains(err.Error(), "Sekr3t") || strings.Contains(err.Error(), "0ther") {
			t.Fatalf("a password in the message: %v", err)
		}
	}
	servers := []string{"redis://" + addresses[0], addresses[1], addresses[2]}
	listed, err := polylock.NewRedLock(ctx, servers, name)
	if err != nil {
		t.Fatal(err)
	}
	if listed.Kind() != polylock.KindToken || listed.Name() != name {
		t.Fatalf("NewRedLock made %s %q", listed.Kind(), listed.Name())
	}
	held, err := listed.Acquire(ctx, polylock.WithWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if none, err := otherLock.TryAcquire(ctx, polylock.WithWait(100*time.Millisecond)); none != nil || err != nil {
		t.Fatalf("the URL client's lock while NewRedLock's holds: %v, %v", none, err)
	}
	// Closing the lock's client gives its hold back.
	if err := listed.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the hold of a closed RedLock is not lost")
	}
	after, err := otherLock.Acquire(ctx, polylock.WithWait(5*time.Second))
	if err != nil {
		t.Fatalf("after NewRedLock's Close: %v", err)
	}
	mustRelease(t, after)
	client2, err := polylock.ConnectRedLock(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	defer client2.Close()
	if _, err := client2.Lock(name); !errors.Is(err, polylock.ErrUnsupported) {
		t.Fatalf("reentrant kind on ConnectRedLock's client: %v, want ErrUnsupported", err)
	}
}
