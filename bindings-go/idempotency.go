package polylock

// #include "polylock.h"
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// Idempotency is the idempotency keys of one namespace: "do this once" for a retried
// request, a redelivered message, a job two workers picked. Run does it all; Begin and the
// Ticket are the step-by-step form. Safe for concurrent use.
//
// The calls are not interruptible in the C library: each checks ctx before it starts.
type Idempotency struct {
	ptr *C.polylock_idempotency
}

// IdempotencyOption changes Client.Idempotency.
type IdempotencyOption func(*idempotencySettings)

type idempotencySettings struct {
	retention, inProgressTTL time.Duration
}

// WithRetention is how long a completed key replays its response (default 24 h).
func WithRetention(retention time.Duration) IdempotencyOption {
	return func(s *idempotencySettings) { s.retention = retention }
}

// WithInProgressTTL is how long an attempt may run without Ticket.Extend before another
// attempt may take the key over (default 60 s).
func WithInProgressTTL(ttl time.Duration) IdempotencyOption {
	return func(s *idempotencySettings) { s.inProgressTTL = ttl }
}

// Idempotency is the idempotency keys of namespace. ErrUnsupported where the backend keeps
// no versioned values.
func (c *Client) Idempotency(namespace string, options ...IdempotencyOption) (*Idempotency, error) {
	var settings idempotencySettings
	for _, option := range options {
		option(&settings)
	}
	if settings.retention < 0 || settings.inProgressTTL < 0 {
		return nil, errorOf(ErrInvalidArgument, "an idempotency retention or in-progress TTL must not be negative")
	}
	var ptr *C.polylock_idempotency
	err := c.use(func(client *C.polylock_client) error {
		cNamespace, err := cString(namespace, "the idempotency namespace")
		if err != nil {
			return err
		}
		defer freeCString(cNamespace)
		return call(func() C.polylock_status {
			return C.polylock_client_idempotency(client, cNamespace,
				C.uint64_t(millisRoundedUp(settings.retention)), C.uint64_t(millisRoundedUp(settings.inProgressTTL)), &ptr)
		})
	})
	if err != nil {
		return nil, err
	}
	i := &Idempotency{ptr: ptr}
	runtime.AddCleanup(i, func(ptr *C.polylock_idempotency) { C.polylock_idempotency_free(ptr) }, ptr)
	return i, nil
}

// Outcome is what Begin found.
type Outcome int

const (
	// Acquired: this caller runs the work, and must Complete (or Abandon) the Ticket.
	Acquired Outcome = iota
	// Replay: an attempt finished before; Response is its stored response.
	Replay
	// InProgress: another attempt is under way; it may be taken over after RetryAfter (409).
	InProgress
	// Mismatch: the key was used before with another fingerprint (422).
	Mismatch
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "Acquired"
	case Replay:
		return "Replay"
	case InProgress:
		return "InProgress"
	case Mismatch:
		return "Mismatch"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Began is Begin's result.
type Began struct {
	Outcome Outcome
	// Ticket, when Acquired.
	Ticket *Ticket
	// Response, when Replay: the bytes the finished attempt completed with.
	Response []byte
	// RetryAfter, when InProgress.
	RetryAfter time.Duration
}

// Begin claims key for this attempt, or says why not. fingerprint identifies the payload (a
// hash of it, at most 1024 bytes; see FingerprintOf and FingerprintOfJSON): the key used
// again with another fingerprint is Mismatch.
func (i *Idempotency) Begin(ctx context.Context, key string, fingerprint []byte) (*Began, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, "begin was given up before it started")
	}
	cKey, err := cString(key, "the idempotency key")
	if err != nil {
		return nil, err
	}
	defer freeCString(cKey)
	var found C.polylock_begin
	err = call(func() C.polylock_status {
		data, length := cBytes(fingerprint)
		return C.polylock_idempotency_begin(i.ptr, cKey, data, length, &found)
	})
	runtime.KeepAlive(i)
	if err != nil {
		return nil, err
	}
	began := &Began{Response: goBytes(&found.response),
		RetryAfter: time.Duration(found.retry_after_ms) * time.Millisecond}
	switch found.outcome {
	case C.POLYLOCK_BEGIN_ACQUIRED:
		began.Outcome = Acquired
		began.Ticket = newTicket(found.ticket, key)
	case C.POLYLOCK_BEGIN_REPLAY:
		began.Outcome = Replay
	case C.POLYLOCK_BEGIN_IN_PROGRESS:
		began.Outcome = InProgress
	default:
		began.Outcome = Mismatch
	}
	return began, nil
}

// Run does work once for key: it runs work if this call claims the key (completing the key
// with work's result, or abandoning it if work fails, so that a retry runs again), or
// returns the response the attempt that finished stored. Another attempt under way is
// ErrInProgress (Error.RetryAfter says when it may be taken over); the key used with
// another fingerprint is ErrMismatch. work gets the attempt's token, which grows with every
// attempt that takes the key (usable with Value.WriteFenced).
//
// The response is stored in the form every binding's run helper uses (the core's codec), so
// a Python or Node service sharing the namespace replays it too; a response another language
// stored as JSON comes back as its JSON text.
func (i *Idempotency) Run(ctx context.Context, key string, fingerprint []byte,
	work func(ctx context.Context, token uint64) ([]byte, error)) ([]byte, error) {
	began, err := i.Begin(ctx, key, fingerprint)
	if err != nil {
		return nil, err
	}
	switch began.Outcome {
	case Replay:
		response, _, err := decodeResponse(began.Response)
		return response, err
	case InProgress:
		e := errorOf(ErrInProgress, fmt.Sprintf(
			"idempotency key '%s' is being worked on by another attempt; retry after %dms", key,
			began.RetryAfter.Milliseconds()))
		e.RetryAfter = began.RetryAfter
		return nil, e
	case Mismatch:
		return nil, errorOf(ErrMismatch, fmt.Sprintf(
			"idempotency key '%s' was used before with another payload (a different fingerprint)", key))
	}
	ticket := began.Ticket
	response, workErr := work(ctx, ticket.Token())
	if workErr != nil {
		// Abandoning lets a retry run again; if the key was taken over meanwhile, there is
		// nothing left to abandon and work's error is the news.
		_ = ticket.Abandon(context.WithoutCancel(ctx))
		return nil, workErr
	}
	stored, err := encodeResponse(response)
	if err != nil {
		_ = ticket.Abandon(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := ticket.Complete(context.WithoutCancel(ctx), stored); err != nil {
		return nil, err
	}
	return response, nil
}

// FingerprintOf is the fingerprint of a payload of bytes, as every binding computes it: the
// bytes up to 1024 of them, else their SHA-256.
func FingerprintOf(payload []byte) ([]byte, error) {
	return fingerprint(payload, false)
}

// FingerprintOfJSON is the fingerprint of a structured payload given as JSON text:
// canonicalised (key order and spacing do not matter), then hashed, as every binding does.
func FingerprintOfJSON(json string) ([]byte, error) {
	return fingerprint([]byte(json), true)
}

func fingerprint(payload []byte, isJSON bool) ([]byte, error) {
	var out C.polylock_bytes
	err := call(func() C.polylock_status {
		data, length := cBytes(payload)
		return C.polylock_idempotency_fingerprint(data, length, C.bool(isJSON), &out)
	})
	if err != nil {
		return nil, err
	}
	return goBytes(&out), nil
}

func encodeResponse(response []byte) ([]byte, error) {
	var out C.polylock_bytes
	err := call(func() C.polylock_status {
		data, length := cBytes(response)
		return C.polylock_idempotency_encode_response(data, length, false, &out)
	})
	if err != nil {
		return nil, err
	}
	return goBytes(&out), nil
}

func decodeResponse(stored []byte) (body []byte, isJSON bool, err error) {
	var out C.polylock_bytes
	var json C.bool
	err = call(func() C.polylock_status {
		data, length := cBytes(stored)
		return C.polylock_idempotency_decode_response(data, length, &json, &out)
	})
	if err != nil {
		return nil, false, err
	}
	return goBytes(&out), bool(json), nil
}

// Ticket is one attempt's claim on a key: Complete it with the response to replay, or
// Abandon it so a retry runs again; Extend it while the work runs longer than the
// in-progress TTL. A ticket whose attempt was taken over fails with ErrLost.
type Ticket struct {
	state *ticketState
	key   string
}

type ticketState struct {
	ptr *C.polylock_ticket
}

func newTicket(ptr *C.polylock_ticket, key string) *Ticket {
	t := &Ticket{state: &ticketState{ptr: ptr}, key: key}
	runtime.AddCleanup(t, func(s *ticketState) { s.freeOnce() }, t.state)
	return t
}

func (s *ticketState) freeOnce() {
	if s.ptr != nil {
		C.polylock_ticket_free(s.ptr)
		s.ptr = nil
	}
}

// Key is the ticket's idempotency key.
func (t *Ticket) Key() string { return t.key }

// Token grows with every attempt that takes the key.
func (t *Ticket) Token() uint64 {
	var token C.uint64_t
	_ = call(func() C.polylock_status { return C.polylock_ticket_token(t.state.ptr, &token) })
	runtime.KeepAlive(t)
	return uint64(token)
}

func (t *Ticket) step(ctx context.Context, what string, f func(*C.polylock_ticket) C.polylock_status) error {
	if err := ctx.Err(); err != nil {
		return contextError(err, what+" was given up before it started")
	}
	err := call(func() C.polylock_status { return f(t.state.ptr) })
	runtime.KeepAlive(t)
	return err
}

// Complete stores response for every later Begin of this key to replay. ErrLost if another
// attempt took the key over (its result stands).
func (t *Ticket) Complete(ctx context.Context, response []byte) error {
	return t.step(ctx, "complete", func(ptr *C.polylock_ticket) C.polylock_status {
		data, length := cBytes(response)
		return C.polylock_ticket_complete(ptr, data, length)
	})
}

// Abandon gives the key up (the work failed): the next Begin runs again.
func (t *Ticket) Abandon(ctx context.Context) error {
	return t.step(ctx, "abandon", func(ptr *C.polylock_ticket) C.polylock_status { return C.polylock_ticket_abandon(ptr) })
}

// Extend keeps the key for another in-progress TTL from now.
func (t *Ticket) Extend(ctx context.Context) error {
	return t.step(ctx, "extend", func(ptr *C.polylock_ticket) C.polylock_status { return C.polylock_ticket_extend(ptr) })
}
