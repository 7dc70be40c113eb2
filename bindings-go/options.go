package polylock

import "time"

// Kind is how a lock is kept in its store, in the layout of the client teams already run.
type Kind string

const (
	// KindReentrant is the default: Redisson's RLock hash on Redis; each backend's own
	// layout elsewhere (etcd's concurrency.Mutex, Curator's mutex, SQL session locks).
	KindReentrant Kind = "reentrant"
	// KindFair is Redisson's fair lock (Redis).
	KindFair Kind = "fair"
	// KindToken is the plain `SET NX PX` string of redsync, redis-py and node-redlock (Redis).
	KindToken Kind = "token"
	// KindLease is ShedLock's lease table (PostgreSQL, MySQL/MariaDB).
	KindLease Kind = "lease"
)

// LockOption changes how Client.Lock makes its handle.
type LockOption func(*lockSettings)

type lockSettings struct {
	kind Kind
}

// WithKind picks the lock's layout; a kind the backend does not offer fails Client.Lock
// with ErrUnsupported, before anything is written.
func WithKind(kind Kind) LockOption {
	return func(s *lockSettings) { s.kind = kind }
}

// AcquireOption changes one acquisition.
type AcquireOption func(*acquireSettings)

type acquireSettings struct {
	// wait < 0: as long as the context allows.
	wait time.Duration
	// lease 0: the watchdog renews the hold while it is held.
	lease time.Duration
}

func acquireDefaults() acquireSettings {
	return acquireSettings{wait: -1}
}

// WithWait bounds the wait (besides the context's deadline): 0 tries once. A wait that
// runs out is ErrTimeout.
func WithWait(wait time.Duration) AcquireOption {
	return func(s *acquireSettings) { s.wait = max(wait, 0) }
}

// WithLease holds for at most lease unless released sooner, measured from the grant; the
// hold is then lost (Hold.Lost closes). Without it, the hold lasts until released, kept
// alive by the watchdog (30 s lease renewed every 10 s; `?lease=` in the URL changes it).
func WithLease(lease time.Duration) AcquireOption {
	return func(s *acquireSettings) { s.lease = lease }
}
