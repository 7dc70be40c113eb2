package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"runtime"
	"sync"
)

// LeasedSnowflake makes Snowflake IDs (Twitter layout) on a worker id leased from the
// backend, so no two generators of one namespace issue the same ID whatever their clocks
// say: the lease is renewed by the watchdog, a high-water mark is kept beside it, and the
// generator stops issuing at its lease deadline. Safe for concurrent use; Close gives the
// id back.
type LeasedSnowflake struct {
	state *snowflakeState
}

// snowflakeState is apart from LeasedSnowflake so that a generator nobody closes can still
// be collected: its cleanup closes and frees the C generator.
type snowflakeState struct {
	mu  sync.Mutex
	ptr *C.polylock_leased_snowflake // nil once closed
}

// AnyWorker asks LeaseSnowflake for the lowest free worker id.
const AnyWorker = -1

// LeaseSnowflake leases worker id workerID (0..1023), or with AnyWorker the lowest free one,
// and makes a generator on it. ErrTimeout if the id asked for is leased by another
// generator; ErrUnsupported where the backend keeps no versioned values. Leasing is not
// interruptible in the C library: ctx is checked before it starts.
func (c *Client) LeaseSnowflake(ctx context.Context, workerID int) (*LeasedSnowflake, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "the lease was given up before it started")
	}
	var ptr *C.polylock_leased_snowflake
	err := c.use(func(client *C.polylock_client) error {
		return call(func() C.polylock_status { return C.polylock_snowflake_lease(client, C.int64_t(workerID), &ptr) })
	})
	if err != nil {
		return nil, err
	}
	s := &LeasedSnowflake{state: &snowflakeState{ptr: ptr}}
	runtime.AddCleanup(s, func(state *snowflakeState) { _ = state.close() }, s.state)
	return s, nil
}

func (s *LeasedSnowflake) with(f func(*C.polylock_leased_snowflake) error) error {
	defer runtime.KeepAlive(s)
	state := s.state
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.ptr == nil {
		return errorOf(ErrConnection, "the generator is closed; lease again")
	}
	return f(state.ptr)
}

// Next is the next ID. ErrLost when the lease ended under the call (the next call leases
// another id, unless one id was asked for); ErrExhausted when the clock cannot yet pass the
// previous holder's mark (Error.RetryAfter says when).
func (s *LeasedSnowflake) Next() (uint64, error) {
	var id C.uint64_t
	err := s.with(func(ptr *C.polylock_leased_snowflake) error {
		return call(func() C.polylock_status { return C.polylock_leased_snowflake_next(ptr, &id) })
	})
	return uint64(id), err
}

// NextIDs is count IDs in increasing order, all under one lease.
func (s *LeasedSnowflake) NextIDs(count int) ([]uint64, error) {
	if count < 0 {
		return nil, errorOf(ErrInvalidArgument, "a count of IDs must not be negative")
	}
	ids := make([]uint64, count)
	if count == 0 {
		return ids, nil
	}
	err := s.with(func(ptr *C.polylock_leased_snowflake) error {
		return call(func() C.polylock_status {
			return C.polylock_leased_snowflake_next_ids(ptr, C.size_t(count), (*C.uint64_t)(&ids[0]))
		})
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Worker is the worker id held now and its lease's epoch (which grows with every take of
// that id). ErrLost between a loss of the lease and the next call that leases again.
func (s *LeasedSnowflake) Worker() (workerID uint64, epoch uint64, err error) {
	var worker, leaseEpoch C.uint64_t
	err = s.with(func(ptr *C.polylock_leased_snowflake) error {
		return call(func() C.polylock_status { return C.polylock_leased_snowflake_worker(ptr, &worker, &leaseEpoch) })
	})
	return uint64(worker), uint64(leaseEpoch), err
}

// Close gives the worker id back now (so its next holder need not wait out the lease).
// Closing twice is harmless; later calls fail with ErrConnection.
func (s *LeasedSnowflake) Close() error {
	defer runtime.KeepAlive(s)
	return s.state.close()
}

func (state *snowflakeState) close() error {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.ptr == nil {
		return nil
	}
	err := call(func() C.polylock_status { return C.polylock_leased_snowflake_close(state.ptr) })
	C.polylock_leased_snowflake_free(state.ptr)
	state.ptr = nil
	return err
}
