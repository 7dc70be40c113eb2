package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"encoding/json"
)

// LockStatus is what Client.Status found about a mutex, whoever holds it (the CLI's
// `polylock status --json`, decoded). Fields the backend's layout cannot tell are nil.
type LockStatus struct {
	// Name and Kind are the lock's; Backend is the backend's name ("redis", "sqlite", ...).
	Name    string `json:"name"`
	Kind    Kind   `json:"kind"`
	Backend string `json:"backend"`
	// Held says whether anyone holds it now.
	Held bool `json:"held"`
	// Holder is the holder's id as the layout records it.
	Holder *string `json:"holder"`
	// FencingToken is the current hold's token; TokenCounter the name's last token handed out.
	FencingToken *uint64 `json:"fencing_token"`
	TokenCounter *uint64 `json:"token_counter"`
	// RemainingLeaseMs is what is left of the hold's lease (nil: no hold, or no expiry);
	// LeaseExpires is false for a hold the store keeps while its session lives.
	RemainingLeaseMs *uint64 `json:"remaining_lease_ms"`
	LeaseExpires     bool    `json:"lease_expires"`
	// Waiters is how many wait for it, where the backend can count them.
	Waiters *uint64 `json:"waiters"`
	// Layout names the layout read; Details are its further facts, by label.
	Layout  string            `json:"layout"`
	Details map[string]string `json:"details"`
}

// LockEntry is one lock Client.List found: its name, kind and whether it is held.
type LockEntry struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	Held bool   `json:"held"`
}

// kindArgument is the C kind argument: NULL for none (the backend's default), which the
// caller frees with freeCString when not nil.
func kindArgument(kind []Kind) (*C.char, error) {
	switch len(kind) {
	case 0:
		return nil, nil
	case 1:
		return cString(string(kind[0]), "the lock kind")
	default:
		return nil, errorOf(ErrInvalidArgument, "give at most one lock kind")
	}
}

// Status says who holds the mutex name (of kind, default the backend's), any holder of any
// client or language, as far as the backend's layout tells. Not interruptible in the C
// library: ctx is checked before the call.
func (c *Client) Status(ctx context.Context, name string, kind ...Kind) (*LockStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the status read was given up before it started")
	}
	var bytes C.polylock_bytes
	err := c.use(func(client *C.polylock_client) error {
		return withNameAndKind(name, kind, func(cName, cKind *C.char) error {
			return call(func() C.polylock_status { return C.polylock_client_status_json(client, cName, cKind, &bytes) })
		})
	})
	if err != nil {
		return nil, err
	}
	var status LockStatus
	if err := json.Unmarshal(goBytes(&bytes), &status); err != nil {
		return nil, errorOf(ErrInternal, "the status JSON does not decode: "+err.Error())
	}
	return &status, nil
}

// List is the mutexes whose name starts with prefix, sorted by name (held or not, as the
// backend keeps them). ErrUnsupported where the backend cannot enumerate its locks. Not
// interruptible in the C library: ctx is checked before the call.
func (c *Client) List(ctx context.Context, prefix string) ([]LockEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the list was given up before it started")
	}
	var bytes C.polylock_bytes
	err := c.use(func(client *C.polylock_client) error {
		cPrefix, err := cString(prefix, "the prefix")
		if err != nil {
			return err
		}
		defer freeCString(cPrefix)
		return call(func() C.polylock_status { return C.polylock_client_list_json(client, cPrefix, &bytes) })
	})
	if err != nil {
		return nil, err
	}
	entries := []LockEntry{}
	if err := json.Unmarshal(goBytes(&bytes), &entries); err != nil {
		return nil, errorOf(ErrInternal, "the list JSON does not decode: "+err.Error())
	}
	return entries, nil
}

// ForceUnlock removes the mutex name (of kind, default the backend's) whoever holds it and
// wakes its waiters (Redisson's forceUnlock): whether there was a hold. Dangerous: the
// holder is not stopped, and learns of its loss only at its next renewal or release (this
// client's own holds at once). Not interruptible: ctx is checked before the call.
func (c *Client) ForceUnlock(ctx context.Context, name string, kind ...Kind) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, contextError(err, "the force-unlock was given up before it started")
	}
	var removed C.bool
	err := c.use(func(client *C.polylock_client) error {
		return withNameAndKind(name, kind, func(cName, cKind *C.char) error {
			return call(func() C.polylock_status { return C.polylock_client_force_unlock(client, cName, cKind, &removed) })
		})
	})
	return bool(removed), err
}

// withNameAndKind runs f with name and the optional kind as C strings (cKind nil for the
// backend's default), freed after it.
func withNameAndKind(name string, kind []Kind, f func(cName, cKind *C.char) error) error {
	cName, err := cString(name, "the lock name")
	if err != nil {
		return err
	}
	defer freeCString(cName)
	cKind, err := kindArgument(kind)
	if err != nil {
		return err
	}
	if cKind != nil {
		defer freeCString(cKind)
	}
	return f(cName, cKind)
}
