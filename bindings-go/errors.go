package polylock

// #include "polylock.h"
import "C"

import (
	"errors"
	"fmt"
	"time"
)

// The error kinds, one per C status (and per core ErrorKind). Every error this package
// returns matches exactly one of them with errors.Is; its message is the C library's.
var (
	// ErrTimeout: the wait ended before the hold was granted (a WithWait limit, a failed
	// try, or the context's deadline; then the error also matches context.DeadlineExceeded).
	ErrTimeout = errors.New("polylock: TIMEOUT")
	// ErrNotOwner: released by someone who does not hold it (say, a hold released twice).
	ErrNotOwner = errors.New("polylock: NOT_OWNER")
	// ErrLost: it was held, but the store no longer has it (lease ran out, session died).
	ErrLost = errors.New("polylock: LOST")
	// ErrConnection: unreachable, refused credentials, or the client is closed.
	ErrConnection = errors.New("polylock: CONNECTION")
	// ErrInvalidArgument: unusable input (empty name, bad URL, bad lease), or a use that
	// could deadlock.
	ErrInvalidArgument = errors.New("polylock: INVALID_ARGUMENT")
	// ErrBackend: the store answered something unexpected.
	ErrBackend = errors.New("polylock: BACKEND")
	// ErrInternal: a bug caught at the language boundary; please report it.
	ErrInternal = errors.New("polylock: INTERNAL")
	// ErrUnsupported: the backend does not offer this primitive or lock kind.
	ErrUnsupported = errors.New("polylock: UNSUPPORTED")
	// ErrCancelled: the caller gave up (its context was cancelled); nothing is left held.
	// The error also matches the context's own error (context.Canceled).
	ErrCancelled = errors.New("polylock: CANCELLED")
	// ErrConflict: a compare-and-set found another version than expected, or a value to
	// create already exists.
	ErrConflict = errors.New("polylock: CONFLICT")
	// ErrFenced: a fenced write carried a token lower than one the value already accepted.
	ErrFenced = errors.New("polylock: FENCED")
	// ErrExhausted: IDs are used up until the next range or lease renewal; retry later.
	ErrExhausted = errors.New("polylock: EXHAUSTED")
	// ErrInProgress: another attempt is working on this idempotency key now; retry later.
	ErrInProgress = errors.New("polylock: IN_PROGRESS")
	// ErrMismatch: the idempotency key was used before with another payload.
	ErrMismatch = errors.New("polylock: MISMATCH")
)

// ErrorKind is an error kind's number: the C status (polylock_status), the same number the
// core and every other surface give the kind. Error.Status holds it; ErrorKinds lists them.
type ErrorKind int

// The error kinds by number, in the order of the C header's enum.
const (
	KindTimeout         ErrorKind = C.POLYLOCK_TIMEOUT
	KindNotOwner        ErrorKind = C.POLYLOCK_NOT_OWNER
	KindLost            ErrorKind = C.POLYLOCK_LOST
	KindConnection      ErrorKind = C.POLYLOCK_CONNECTION
	KindInvalidArgument ErrorKind = C.POLYLOCK_INVALID_ARGUMENT
	KindBackend         ErrorKind = C.POLYLOCK_BACKEND
	KindInternal        ErrorKind = C.POLYLOCK_INTERNAL
	KindUnsupported     ErrorKind = C.POLYLOCK_UNSUPPORTED
	KindCancelled       ErrorKind = C.POLYLOCK_CANCELLED
	KindConflict        ErrorKind = C.POLYLOCK_CONFLICT
	KindFenced          ErrorKind = C.POLYLOCK_FENCED
	KindExhausted       ErrorKind = C.POLYLOCK_EXHAUSTED
	KindInProgress      ErrorKind = C.POLYLOCK_IN_PROGRESS
	KindMismatch        ErrorKind = C.POLYLOCK_MISMATCH
)

// ErrorKinds is every error kind, in the order of the C header's enum.
func ErrorKinds() []ErrorKind {
	kinds := make([]ErrorKind, len(statusTable))
	for i, entry := range statusTable {
		kinds[i] = ErrorKind(entry.status)
	}
	return kinds
}

// String is the kind's name, as the C library and every surface spell it ("TIMEOUT").
func (k ErrorKind) String() string { return statusName(int(k)) }

// Err is the kind's sentinel (ErrTimeout for KindTimeout), for errors.Is; nil for a number
// that is no kind.
func (k ErrorKind) Err() error {
	for _, entry := range statusTable {
		if entry.status == int(k) {
			return entry.err
		}
	}
	return nil
}

// statusTable is the one map from C statuses to Go errors; errors_test.go checks it against
// the header's enum (numbers and names).
var statusTable = []struct {
	status int
	name   string
	err    error
}{
	{int(C.POLYLOCK_TIMEOUT), "TIMEOUT", ErrTimeout},
	{int(C.POLYLOCK_NOT_OWNER), "NOT_OWNER", ErrNotOwner},
	{int(C.POLYLOCK_LOST), "LOST", ErrLost},
	{int(C.POLYLOCK_CONNECTION), "CONNECTION", ErrConnection},
	{int(C.POLYLOCK_INVALID_ARGUMENT), "INVALID_ARGUMENT", ErrInvalidArgument},
	{int(C.POLYLOCK_BACKEND), "BACKEND", ErrBackend},
	{int(C.POLYLOCK_INTERNAL), "INTERNAL", ErrInternal},
	{int(C.POLYLOCK_UNSUPPORTED), "UNSUPPORTED", ErrUnsupported},
	{int(C.POLYLOCK_CANCELLED), "CANCELLED", ErrCancelled},
	{int(C.POLYLOCK_CONFLICT), "CONFLICT", ErrConflict},
	{int(C.POLYLOCK_FENCED), "FENCED", ErrFenced},
	{int(C.POLYLOCK_EXHAUSTED), "EXHAUSTED", ErrExhausted},
	{int(C.POLYLOCK_IN_PROGRESS), "IN_PROGRESS", ErrInProgress},
	{int(C.POLYLOCK_MISMATCH), "MISMATCH", ErrMismatch},
}

// Error is what every failing call returns: the kind (a sentinel above), the C status and
// the C library's message. errors.Is(err, ErrTimeout) and friends test the kind;
// errors.As gives the status and message.
type Error struct {
	// Kind is one of the Err* sentinels.
	Kind error
	// Status is the C status number (the core's error number, 1..14): ErrorKind(Status) is
	// the kind's number constant (KindTimeout, ...).
	Status int
	// Message says what went wrong (polylock_last_error()); never contains a password.
	Message string
	// HasCurrent, CurrentValue, CurrentVersion: with ErrConflict, the value as it is now
	// (HasCurrent false: there is none).
	HasCurrent     bool
	CurrentValue   []byte
	CurrentVersion uint64
	// WinningToken: with ErrFenced, the highest fencing token the value has accepted.
	WinningToken uint64
	// RetryAfter: with ErrExhausted and ErrInProgress, how long to wait before trying again
	// (0 when unknown).
	RetryAfter time.Duration
	// cause is the context's error when the context ended the call, else nil.
	cause error
}

// readDetails copies the details of this thread's last C failure into e (call it on the OS
// thread of the failed call, before any other C call).
func (e *Error) readDetails() {
	var details C.polylock_error_details
	if C.polylock_last_error_details(&details) != C.POLYLOCK_OK {
		return
	}
	switch details.kind {
	case C.POLYLOCK_DETAILS_CONFLICT:
		e.HasCurrent = bool(details.has_current)
		e.CurrentValue = goBytes(&details.current_value)
		e.CurrentVersion = uint64(details.current_version)
	case C.POLYLOCK_DETAILS_FENCED:
		e.WinningToken = uint64(details.winning_token)
	case C.POLYLOCK_DETAILS_RETRY_AFTER:
		e.RetryAfter = time.Duration(details.retry_after_ms) * time.Millisecond
	}
	C.polylock_bytes_free(&details.current_value)
}

func (e *Error) Error() string {
	return fmt.Sprintf("polylock %s: %s", statusName(e.Status), e.Message)
}

// Unwrap gives the kind and, when a context ended the call, the context's error, so that
// errors.Is(err, context.Canceled) holds for a cancelled acquisition.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Kind, e.cause}
	}
	return []error{e.Kind}
}

func newError(status int, message string) *Error {
	for _, entry := range statusTable {
		if entry.status == status {
			return &Error{Kind: entry.err, Status: status, Message: message}
		}
	}
	// A status this table does not know: a newer C library than this package.
	return &Error{Kind: ErrInternal, Status: status,
		Message: fmt.Sprintf("unknown status %d from the C library: %s", status, message)}
}

// errorOf builds an error of one kind from Go's side (say, a closed client).
func errorOf(kind error, message string) *Error {
	for _, entry := range statusTable {
		if entry.err == kind {
			return &Error{Kind: kind, Status: entry.status, Message: message}
		}
	}
	panic("polylock: errorOf with an error that is no kind")
}
