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
	// wait < 0: no WithWait, as long as the context allows.
	wait time.Duration
	// leaseSet false: no WithLease, the watchdog renews the hold while it is held.
	lease    time.Duration
	leaseSet bool
	// err: an option's argument was refused (ErrInvalidArgument); nothing is asked of C.
	err error
}

func acquireDefaults() acquireSettings {
	return acquireSettings{wait: -1}
}

// acquireSettingsOf applies options to the defaults; the first refused argument is the error.
func acquireSettingsOf(options []AcquireOption) (acquireSettings, error) {
	settings := acquireDefaults()
	for _, option := range options {
		option(&settings)
		if settings.err != nil {
			return settings, settings.err
		}
	}
	return settings, nil
}

// WithWait bounds the wait (besides the context's deadline): 0 tries once, up to 365 days.
// A wait that runs out is ErrTimeout. A negative wait is ErrInvalidArgument: to wait as
// long as the context allows, leave WithWait out.
func WithWait(wait time.Duration) AcquireOption {
	return func(s *acquireSettings) {
		if wait < 0 {
			s.err = errorOf(ErrInvalidArgument, "WithWait: a wait must be 0 or more, got "+wait.String()+
				"; omit WithWait to wait as long as the context allows")
			return
		}
		s.wait = wait
	}
}

// WithLease holds for at most lease unless released sooner, measured from the grant; the
// hold is then lost (Hold.Lost closes). Without it, the hold lasts until released, kept
// alive by the watchdog (30 s lease renewed every 10 s; `?lease=` in the URL changes it).
// A lease of 0 or less is ErrInvalidArgument, as is one outside 10 ms to 365 days.
func WithLease(lease time.Duration) AcquireOption {
	return func(s *acquireSettings) {
		if lease <= 0 {
			s.err = errorOf(ErrInvalidArgument, "WithLease: a lease must be positive, got "+lease.String()+
				"; omit WithLease to let the watchdog renew the hold")
			return
		}
		s.lease, s.leaseSet = lease, true
	}
}
