package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// redlockNodes is how many independent redis-servers the RedLock comparison votes over.
const redlockNodes = 3

// benchRedLock compares RedLock lock+unlock pairs over three private redis-servers (ports
// above 30000, started and stopped here): polylock's Go binding on a redlock:// URL beside
// redsync v4 with one go-redis pool per server, both in the same token layout.
func benchRedLock(ctx context.Context, seconds float64, rounds int) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Println("redlock: no redis-server on PATH; skipped")
		return
	}
	base := 33000 + (os.Getpid()%2000)*redlockNodes
	var addresses []string
	for i := 0; i < redlockNodes; i++ {
		port := base + i
		server := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--loglevel", "warning")
		must(struct{}{}, server.Start())
		defer func() {
			server.Process.Kill()
			server.Wait()
		}()
		addresses = append(addresses, fmt.Sprintf("127.0.0.1:%d", port))
	}
	var pools []redis.Pool
	for _, address := range addresses {
		redisClient := goredislib.NewClient(&goredislib.Options{Addr: address})
		defer redisClient.Close()
		deadline := time.Now().Add(10 * time.Second)
		for redisClient.Ping(ctx).Err() != nil {
			if time.Now().After(deadline) {
				must(struct{}{}, fmt.Errorf("redis-server on %s did not start", address))
			}
			time.Sleep(20 * time.Millisecond)
		}
		pools = append(pools, goredis.NewPool(redisClient))
	}
	url := fmt.Sprintf("redlock://%s,%s,%s", addresses[0], addresses[1], addresses[2])
	client := must(polylock.Connect(ctx, url))
	defer client.Close()
	rs := redsync.New(pools...)
	redsyncProgram := program{"redsync (3 nodes)", func(names []string) ([]pair, error) {
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
	compare(ctx, "redlock", polylockProgram(client, polylock.KindToken), redsyncProgram, seconds, rounds)
}
