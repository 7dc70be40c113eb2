// Built by tests/release/run-tests.sh as a user's program that requires the polylock Go
// module at the released version, served from dist/go (a GOPROXY directory), linked against
// the released C tarball's libpolylock.a: take a lock on SQLite and on Redis through it.
//
//	lock_smoke VERSION NAME URL...
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

func main() {
	version, name, urls := os.Args[1], os.Args[2], os.Args[3:]
	if polylock.Version != version {
		fail(fmt.Errorf("polylock.Version is %s, expected %s", polylock.Version, version))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, url := range urls {
		client, err := polylock.Connect(ctx, url)
		if err != nil {
			fail(err)
		}
		lock, err := client.Lock(name)
		if err != nil {
			fail(err)
		}
		hold, err := lock.Acquire(ctx)
		if err != nil {
			fail(err)
		}
		token := hold.FencingToken()
		if err := hold.Release(); err != nil || token == 0 {
			fail(fmt.Errorf("release: %v (token %d)", err, token))
		}
		client.Close()
		fmt.Printf("go: polylock %s: locked and released on %s (token %d)\n", polylock.Version, strings.SplitN(url, ":", 2)[0], token)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "go:", err)
	os.Exit(1)
}
