package polylock

// RedLock over a list of independent Redis servers, as redlock(servers, name) is in Python,
// Node and Java: the redlock:// URL comes from the core's one builder, through the C library.

// #include <stdlib.h>
// #include "polylock.h"
import "C"

import (
	"context"
	"unsafe"
)

// ConnectRedLock connects to the RedLock backend over the independent Redis servers, each
// "host:port" or "redis://[user:password@]host:port" (one set of credentials for all).
// RedLock has token locks only (Lock(name, WithKind(KindToken))) and no fencing tokens.
// ErrInvalidArgument for an empty list or an unusable entry (shown redacted); waits and
// ctx as Connect.
func ConnectRedLock(ctx context.Context, servers []string) (*Client, error) {
	return connectWith(ctx, func(out **C.polylock_client) error {
		list, free, err := cStrings(servers, "a RedLock server")
		if err != nil {
			return err
		}
		defer free()
		return call(func() C.polylock_status {
			return C.polylock_redlock_connect(list, C.size_t(len(servers)), out)
		})
	})
}

// RedLock is a RedLock lock on a client of its own: a *Lock (token kind) whose holds have
// no fencing token (their FencingToken only tells this client's holds apart: a majority of
// independent servers keeps no counter that only grows). Close it when done.
type RedLock struct {
	*Lock
	client *Client
}

// NewRedLock is the RedLock lock name over the independent Redis servers (as
// ConnectRedLock takes them): held while a majority granted it and its validity lasts.
func NewRedLock(ctx context.Context, servers []string, name string) (*RedLock, error) {
	client, err := ConnectRedLock(ctx, servers)
	if err != nil {
		return nil, err
	}
	lock, err := client.Lock(name, WithKind(KindToken))
	if err != nil {
		client.Close()
		return nil, err
	}
	return &RedLock{Lock: lock, client: client}, nil
}

// Close closes the lock's client, which gives back its holds.
func (r *RedLock) Close() error {
	return r.client.Close()
}

// cStrings is list as a C array of C strings for the length of one call (free frees it).
// The array lives in C memory, so that C may read it whatever Go's pointer rules say.
func cStrings(list []string, what string) (**C.char, func(), error) {
	if len(list) == 0 {
		return nil, func() {}, nil
	}
	array := (*[1 << 20]*C.char)(C.calloc(C.size_t(len(list)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:len(list):len(list)]
	free := func() {
		for _, s := range array {
			if s != nil {
				freeCString(s)
			}
		}
		C.free(unsafe.Pointer(&array[0]))
	}
	for i, s := range list {
		text, err := cString(s, what)
		if err != nil {
			free()
			return nil, func() {}, err
		}
		array[i] = text
	}
	return &array[0], free, nil
}
