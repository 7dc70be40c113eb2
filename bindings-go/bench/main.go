// Command bench measures lock+unlock pairs per second of polylock's Go binding beside the
// library a Go team would pick instead, in the same run, and prints ratios (never a
// pass/fail threshold):
//
//   - Redis: polylock (kind token, redsync's own SET NX PX layout; and the default
//     reentrant kind) beside redsync v4, single node, on a go-redis pool;
//   - etcd: polylock beside go.etcd.io/etcd/client/v3/concurrency.Mutex on one session;
//   - RedLock (issue 18): polylock on a redlock:// URL beside redsync v4 over the same three
//     private redis-servers (redlock.go starts them on ports above 30000).
//
// Workloads: 1 goroutine on one name, and 8 goroutines on a name each. Programs are
// interleaved for POLYLOCK_BENCH_ROUNDS rounds (default 2) of POLYLOCK_BENCH_SECONDS each
// (default 1); the best round is kept. polylock holds with a 30 s lease, as redsync's expiry.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

const lease = 30 * time.Second

// pair is one lock+unlock of worker w; it returns an error to stop the run.
type pair func(ctx context.Context) error

// program makes one pair function per worker, each on its own name.
type program struct {
	name    string
	workers func(names []string) ([]pair, error)
}

func main() {
	seconds := envFloat("POLYLOCK_BENCH_SECONDS", 1)
	rounds := int(envFloat("POLYLOCK_BENCH_ROUNDS", 2))
	ctx := context.Background()
	fmt.Printf("lock+unlock pairs/s, best of %d interleaved rounds of %gs, lease %s\n", rounds, seconds, lease)
	fmt.Printf("%-8s %-28s %-22s %12s %-22s %12s %8s\n", "backend", "workload", "polylock", "pairs/s", "peer", "pairs/s", "ratio")
	benchRedLock(ctx, seconds, rounds)
	if url := os.Getenv("POLYLOCK_TEST_REDIS_URL"); url != "" {
		client := must(polylock.Connect(ctx, url))
		defer client.Close()
		options := must(goredislib.ParseURL(url))
		redisClient := goredislib.NewClient(options)
		defer redisClient.Close()
		rs := redsync.New(goredis.NewPool(redisClient))
		redsyncProgram := program{"redsync", func(names []string) ([]pair, error) {
			var pairs []pair
			for _, name := range names {
				mutex := rs.NewMutex(name, redsync.WithExpiry(lease))
				pairs = append(pairs, func(ctx context.Context) error {
					if err := mutex.LockContext(ctx); err != nil {
						return err
					}
					_, err := mutex.UnlockContext(ctx)
					return err
				})
			}
			return pairs, nil
		}}
		for _, kind := range []polylock.Kind{polylock.KindToken, polylock.KindReentrant} {
			compare(ctx, "redis", polylockProgram(client, kind), redsyncProgram, seconds, rounds)
		}
	}
	if url := os.Getenv("POLYLOCK_TEST_ETCD_URL"); url != "" {
		client := must(polylock.Connect(ctx, url))
		defer client.Close()
		etcd := must(clientv3.New(clientv3.Config{
			Endpoints:   strings.Split(strings.TrimPrefix(url, "etcd://"), ","),
			DialTimeout: 5 * time.Second,
		}))
		defer etcd.Close()
		etcdProgram := program{"concurrency.Mutex", func(names []string) ([]pair, error) {
			var pairs []pair
			for _, name := range names {
				// A session per worker: etcd's layout allows one key per lease and name.
				session, err := concurrency.NewSession(etcd)
				if err != nil {
					return nil, err
				}
				mutex := concurrency.NewMutex(session, name)
				pairs = append(pairs, func(ctx context.Context) error {
					if err := mutex.Lock(ctx); err != nil {
						return err
					}
					return mutex.Unlock(ctx)
				})
			}
			return pairs, nil
		}}
		compare(ctx, "etcd", polylockProgram(client, polylock.KindReentrant), etcdProgram, seconds, rounds)
	}
}

func polylockProgram(client *polylock.Client, kind polylock.Kind) program {
	return program{"polylock " + string(kind), func(names []string) ([]pair, error) {
		var pairs []pair
		for _, name := range names {
			lock, err := client.Lock(name, polylock.WithKind(kind))
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, func(ctx context.Context) error {
				hold, err := lock.Acquire(ctx, polylock.WithLease(lease))
				if err != nil {
					return err
				}
				return hold.Release()
			})
		}
		return pairs, nil
	}}
}

// compare runs both programs on both workloads, interleaved, and prints the best rounds.
func compare(ctx context.Context, backend string, ours, peer program, seconds float64, rounds int) {
	for _, workers := range []int{1, 8} {
		workload := "1 goroutine, one name"
		if workers > 1 {
			workload = fmt.Sprintf("%d goroutines, a name each", workers)
		}
		best := map[string]float64{}
		for round := range rounds {
			for _, p := range []program{ours, peer} {
				names := make([]string, workers)
				for i := range names {
					names[i] = fmt.Sprintf("go-bench:%s:%d:%d:%d:%d", strings.ReplaceAll(p.name, " ", "-"),
						os.Getpid(), time.Now().UnixNano(), round, i)
				}
				rate := must(run(ctx, p, names, seconds))
				best[p.name] = max(best[p.name], rate)
			}
		}
		fmt.Printf("%-8s %-28s %-22s %12.0f %-22s %12.0f %8.2f\n", backend, workload, ours.name, best[ours.name],
			peer.name, best[peer.name], best[ours.name]/best[peer.name])
	}
}

// run calls every worker's pair in a loop of its own for the given time; pairs per second.
func run(ctx context.Context, p program, names []string, seconds float64) (float64, error) {
	pairs, err := p.workers(names)
	if err != nil {
		return 0, err
	}
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	start := time.Now()
	var wg sync.WaitGroup
	for _, one := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := one(ctx); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("%s: %w", p.name, err) })
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds(), firstErr
}

func must[T any](value T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	return value
}

func envFloat(name string, otherwise float64) float64 {
	if text := os.Getenv(name); text != "" {
		if value, err := strconv.ParseFloat(text, 64); err == nil && value > 0 {
			return value
		}
	}
	return otherwise
}
