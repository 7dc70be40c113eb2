package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"runtime"
)

// Value is a named versioned value: compare-and-set on a version that only grows
// (optimistic locking), and fenced writes that refuse a fencing token lower than one already
// accepted. Safe for concurrent use. A refused write is ErrConflict (Error.CurrentValue and
// Error.CurrentVersion say what is there now) or ErrFenced (Error.WinningToken).
//
// The calls are not interruptible in the C library: each checks ctx before it starts.
type Value struct {
	ptr  *C.polylock_value
	name string
}

// Versioned is a value as Get found it.
type Versioned struct {
	Value   []byte
	Version uint64
	// FencingToken is the highest token the value has accepted, when Fenced.
	Fenced       bool
	FencingToken uint64
}

// Value is a handle on the value name; making it reads nothing. ErrUnsupported where the
// backend keeps no versioned values.
func (c *Client) Value(name string) (*Value, error) {
	var ptr *C.polylock_value
	err := c.use(func(client *C.polylock_client) error {
		cName, err := cString(name, "the value name")
		if err != nil {
			return err
		}
		defer freeCString(cName)
		return call(func() C.polylock_status { return C.polylock_client_value(client, cName, &ptr) })
	})
	if err != nil {
		return nil, err
	}
	v := &Value{ptr: ptr, name: name}
	runtime.AddCleanup(v, func(ptr *C.polylock_value) { C.polylock_value_free(ptr) }, ptr)
	return v, nil
}

// Name is the value's name.
func (v *Value) Name() string { return v.name }

// Get reads the value: nil, nil when there is none.
func (v *Value) Get(ctx context.Context) (*Versioned, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the read was given up before it started")
	}
	var found C.polylock_versioned
	err := call(func() C.polylock_status { return C.polylock_value_get(v.ptr, &found) })
	runtime.KeepAlive(v)
	if err != nil {
		return nil, err
	}
	return goVersioned(&found), nil
}

// write runs one C write that reports a version.
func (v *Value) write(ctx context.Context, what string, f func(*C.uint64_t) C.polylock_status) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, contextError(err, "the "+what+" was given up before it started")
	}
	var version C.uint64_t
	err := call(func() C.polylock_status { return f(&version) })
	runtime.KeepAlive(v)
	return uint64(version), err
}

// Create creates the value; its first version. ErrConflict if it exists.
func (v *Value) Create(ctx context.Context, value []byte) (uint64, error) {
	return v.write(ctx, "create", func(version *C.uint64_t) C.polylock_status {
		data, length := cBytes(value)
		return C.polylock_value_create(v.ptr, data, length, version)
	})
}

// CompareAndSet replaces the value if it is still at version; the new version.
// ErrConflict, carrying the current value and version, if someone wrote first.
func (v *Value) CompareAndSet(ctx context.Context, version uint64, value []byte) (uint64, error) {
	return v.write(ctx, "compare-and-set", func(written *C.uint64_t) C.polylock_status {
		data, length := cBytes(value)
		return C.polylock_value_compare_and_set(v.ptr, C.uint64_t(version), data, length, written)
	})
}

// Delete removes the value if it is still at version. ErrConflict if it is not.
func (v *Value) Delete(ctx context.Context, version uint64) error {
	_, err := v.write(ctx, "delete", func(*C.uint64_t) C.polylock_status {
		return C.polylock_value_delete(v.ptr, C.uint64_t(version))
	})
	return err
}

// WriteFenced writes the value if token is at least the highest fencing token it has
// accepted (pass Hold.FencingToken of the lock that protects it); the new version.
// ErrFenced, carrying the winning token, if a higher token has written: the caller's lock
// was taken over, and nothing was written.
func (v *Value) WriteFenced(ctx context.Context, token uint64, value []byte) (uint64, error) {
	return v.write(ctx, "fenced write", func(written *C.uint64_t) C.polylock_status {
		data, length := cBytes(value)
		return C.polylock_value_write_fenced(v.ptr, C.uint64_t(token), data, length, written)
	})
}
