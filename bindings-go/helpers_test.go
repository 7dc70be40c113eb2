package polylock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// backend is one store the suite runs against: SQLite always, and every server whose
// POLYLOCK_TEST_<NAME>_URL is set (tests/services/services.sh env exports them).
type backend struct {
	label string
	url   string
}

var sqliteDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "polylock-go-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sqliteDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func backends() []backend {
	all := []backend{{"sqlite", "sqlite://" + filepath.Join(sqliteDir, "go-tests.db")}}
	var servers []backend
	for _, variable := range os.Environ() {
		name, value, _ := strings.Cut(variable, "=")
		if strings.HasPrefix(name, "POLYLOCK_TEST_") && strings.HasSuffix(name, "_URL") && value != "" {
			label := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(name, "POLYLOCK_TEST_"), "_URL"))
			servers = append(servers, backend{label, value})
		}
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].label < servers[j].label })
	return append(all, servers...)
}

// eachBackend runs test once per backend, in parallel subtests (they wait on I/O).
func eachBackend(t *testing.T, test func(t *testing.T, url string)) {
	for _, b := range backends() {
		t.Run(b.label, func(t *testing.T) {
			t.Parallel()
			test(t, b.url)
		})
	}
}

var nameCounter atomic.Int64

// uniqueName never repeats, across runs and processes, so tests on shared servers never
// meet each other's locks.
func uniqueName(test string) string {
	return fmt.Sprintf("go-test:%s:%d:%d:%d", test, os.Getpid(), time.Now().UnixNano(), nameCounter.Add(1))
}

func connect(t *testing.T, url string) *polylock.Client {
	t.Helper()
	client, err := polylock.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		if err := client.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return client
}

func mustLock(t *testing.T, client *polylock.Client, name string, options ...polylock.LockOption) *polylock.Lock {
	t.Helper()
	lock, err := client.Lock(name, options...)
	if err != nil {
		t.Fatalf("lock %q: %v", name, err)
	}
	return lock
}

// within waits for ch, failing the test if it takes longer than a generous guard (a hang,
// not a timing claim).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: still waiting after 60s", what)
		panic("unreachable")
	}
}

func mustRelease(t *testing.T, hold *polylock.Hold) {
	t.Helper()
	if err := hold.Release(); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// boundedContext ends after a generous guard, so that a wait that never ends fails the test
// with ErrTimeout (and the backend's name) instead of hanging the suite: not a timing claim.
func boundedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
