package polylock

// #include <stdlib.h>
// #include "polylock.h"
import "C"

import (
	"context"
	"sync"
)

// Client is a connection to one backend, named by URL. Safe for concurrent use; close it
// with Close.
type Client struct {
	// mu: calls that use ptr take it for reading; Close takes it for writing.
	mu     sync.RWMutex
	ptr    *C.polylock_client
	closed bool
	// watchers are the Hold.Lost waits in flight, stopped by Close before it frees the C
	// client (whose free waits for every call in flight).
	watchers *watcherSet
}

// Connect opens the backend the URL names: "sqlite://app.db", "redis://host:6379",
// "etcd://h1:2379,h2:2379", "zk://host:2181", "postgres://...", "mysql://...", "mem://";
// options ride in the query string ("?namespace=orders&lease=30s"). An empty url means
// $POLYLOCK_URL, else "sqlite://polylock.db".
//
// Connecting is not interruptible in the C library: if ctx ends first, Connect returns at
// once with ErrCancelled (or ErrTimeout for a deadline), and the connection that is still
// being made is closed when it completes.
func Connect(ctx context.Context, url string) (*Client, error) {
	return connectWith(ctx, func(out **C.polylock_client) error {
		var text *C.char
		if url != "" {
			var err error
			if text, err = cString(url, "the URL"); err != nil {
				return err
			}
			defer freeCString(text)
		}
		return call(func() C.polylock_status { return C.polylock_connect(text, out) })
	})
}

// connectWith runs one C connect (open) in a goroutine, bounded by ctx as Connect says.
func connectWith(ctx context.Context, open func(out **C.polylock_client) error) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "connect was given up before it started")
	}
	type result struct {
		ptr *C.polylock_client
		err error
	}
	done := make(chan result, 1)
	go func() {
		var ptr *C.polylock_client
		err := open(&ptr)
		done <- result{ptr, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return &Client{ptr: r.ptr, watchers: newWatcherSet()}, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				C.polylock_client_free(r.ptr)
			}
		}()
		return nil, contextError(ctx.Err(), "connect was given up")
	}
}

// Close gives back every hold of this client (its holds' Lost channels close), stops its
// watchdogs and its runtime. Later calls on the client, its handles and holds fail with
// ErrConnection. Closing twice is harmless. Acquisitions still waiting end first (with
// ErrConnection).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	err := call(func() C.polylock_status { return C.polylock_client_close(c.ptr) })
	c.watchers.stopAll()
	C.polylock_client_free(c.ptr)
	c.ptr = nil
	return err
}

// use runs f with the C client, or fails with ErrConnection once the client is closed.
func (c *Client) use(f func(*C.polylock_client) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errorOf(ErrConnection, "the client is closed; connect again")
	}
	return f(c.ptr)
}

// Lock is a handle on the mutex name; making it holds nothing. Options: WithKind.
func (c *Client) Lock(name string, options ...LockOption) (*Lock, error) {
	settings := lockSettings{kind: KindReentrant}
	for _, option := range options {
		option(&settings)
	}
	var ptr *C.polylock_lock
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the lock name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		cKind, err := cString(string(settings.kind), "the lock kind")
		if err != nil {
			return err
		}
		defer freeCString(cKind)
		return call(func() C.polylock_status { return C.polylock_client_lock_kind(client, cName, cKind, &ptr) })
	})
	if err != nil {
		return nil, err
	}
	return newLock(c, ptr, name, settings.kind), nil
}

// RWLock is a handle on the read-write lock name, with its Read and Write sides.
// ErrUnsupported where the backend has none.
func (c *Client) RWLock(name string) (*RWLock, error) {
	var ptr *C.polylock_rwlock
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the lock name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		return call(func() C.polylock_status { return C.polylock_client_rwlock(client, cName, &ptr) })
	})
	if err != nil {
		return nil, err
	}
	return newRWLock(c, ptr, name), nil
}

// Semaphore is a handle on the semaphore name of permits permits (the count is fixed by the
// name's first use; another count fails when acquiring, with ErrInvalidArgument).
// ErrUnsupported where the backend has none.
func (c *Client) Semaphore(name string, permits uint32) (*Semaphore, error) {
	var ptr *C.polylock_semaphore
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the semaphore name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		return call(func() C.polylock_status {
			return C.polylock_client_semaphore(client, cName, C.uint32_t(permits), &ptr)
		})
	})
	if err != nil {
		return nil, err
	}
	return newSemaphore(c, ptr, name, permits), nil
}
