// Package gocronlock runs gocron v2 jobs once across several schedulers, over polylock:
// a Locker (gocron.WithDistributedLocker, gocron.WithDistributedJobLocker) that takes a
// polylock lock named after the job for each run, and an Elector
// (gocron.WithDistributedElector) that campaigns in a polylock leader election, so that
// only the leader's scheduler runs jobs. Any polylock backend serves: Redis, etcd,
// ZooKeeper, PostgreSQL, MySQL/MariaDB, or one SQLite file for schedulers on one host.
//
//	client, _ := polylock.Connect(ctx, "redis://127.0.0.1:6379")
//	locker, _ := gocronlock.NewLocker(client)
//	scheduler, _ := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"github.com/go-co-op/gocron/v2"
)

// DefaultPrefix is what a job's lock name starts with unless WithPrefix says otherwise: the
// lock of job "report" is "gocron:report".
const DefaultPrefix = "gocron:"

// ErrLocked is Locker.Lock's error when another scheduler holds the job's lock: gocron
// skips this run.
var ErrLocked = errors.New("gocronlock: another scheduler is running this job")

// ErrNotLeader is Elector.IsLeader's error when this scheduler does not lead: gocron skips
// the run.
var ErrNotLeader = errors.New("gocronlock: this scheduler is not the leader")

// Locker is a gocron.Locker over polylock locks: Lock takes the job's lock once (no
// waiting: a job another scheduler is running is skipped here) and holds it for the run;
// gocron's Unlock releases it. The hold is a lease: without WithLease the watchdog renews
// it while this process lives (a 30 s lease renewed every 10 s; `?lease=` in the client's
// URL changes them), so the lock of a scheduler that crashed mid-run ends within the lease
// and another scheduler runs the job again. Safe for concurrent use.
type Locker struct {
	client  *polylock.Client
	prefix  string
	kind    polylock.Kind
	acquire []polylock.AcquireOption
}

var _ gocron.Locker = (*Locker)(nil)

// LockerOption changes NewLocker.
type LockerOption func(*Locker) error

// WithPrefix is what the jobs' lock names start with (default DefaultPrefix); the job's
// name follows.
func WithPrefix(prefix string) LockerOption {
	return func(l *Locker) error {
		l.prefix = prefix
		return nil
	}
}

// WithLease gives each run's lock a fixed lease instead of the watchdog's renewals: the
// lock ends lease after it was taken even if the job still runs (then another scheduler
// may start the job again), and a crashed scheduler's lock ends within lease. Pick a lease
// longer than the job's longest run. 10 ms to 365 days.
func WithLease(lease time.Duration) LockerOption {
	return func(l *Locker) error {
		if lease <= 0 {
			return &polylock.Error{Kind: polylock.ErrInvalidArgument, Status: int(polylock.KindInvalidArgument),
				Message: "gocronlock.WithLease: a lease must be positive, got " + lease.String()}
		}
		l.acquire = append(l.acquire, polylock.WithLease(lease))
		return nil
	}
}

// WithKind picks the lock's layout (default polylock.KindReentrant; polylock.KindToken is
// redsync's, so a scheduler that locks with redsync excludes these runs and back).
func WithKind(kind polylock.Kind) LockerOption {
	return func(l *Locker) error {
		l.kind = kind
		return nil
	}
}

// NewLocker is a Locker taking its locks through client. Bad options are errors here.
func NewLocker(client *polylock.Client, options ...LockerOption) (*Locker, error) {
	if client == nil {
		return nil, &polylock.Error{Kind: polylock.ErrInvalidArgument, Status: int(polylock.KindInvalidArgument),
			Message: "gocronlock.NewLocker: the client is nil"}
	}
	l := &Locker{client: client, prefix: DefaultPrefix, kind: polylock.KindReentrant}
	for _, option := range options {
		if err := option(l); err != nil {
			return nil, err
		}
	}
	// A kind the backend does not offer is refused now, not at the first run.
	if _, err := client.Lock(l.prefix+"probe", polylock.WithKind(l.kind)); err != nil {
		return nil, err
	}
	return l, nil
}

// Lock takes the lock of the job named key for one run: ErrLocked (the run is skipped) when
// another scheduler holds it, a polylock error when the store could not be asked.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	lock, err := l.client.Lock(l.prefix+key, polylock.WithKind(l.kind))
	if err != nil {
		return nil, err
	}
	hold, err := lock.TryAcquire(ctx, l.acquire...)
	if err != nil {
		return nil, err
	}
	if hold == nil {
		return nil, fmt.Errorf("%w (lock %q)", ErrLocked, l.prefix+key)
	}
	return &runLock{hold: hold}, nil
}

// runLock is one run's hold.
type runLock struct {
	hold *polylock.Hold
}

// Unlock releases the run's lock. gocron calls it with the job's context, which may be
// done by then (the scheduler shutting down): the lock is released all the same.
// polylock.ErrLost if the lock had ended before (a WithLease lease passed, the store lost it).
func (r *runLock) Unlock(context.Context) error {
	return r.hold.Release()
}

// Elector is a gocron.Elector over a polylock leader election: from NewElector until
// Close it campaigns in the background, and IsLeader is nil while it leads. A leader that
// loses its leadership (its session or lease ended, the store was unreachable too long)
// stops leading at once and campaigns again. On etcd and ZooKeeper the election is their
// own recipe's (clientv3/concurrency, Curator's LeaderLatch); elsewhere a lock hold renewed
// by the watchdog, so a crashed leader's term ends within the lease and another scheduler
// leads.
type Elector struct {
	election *polylock.Election
	value    []byte
	cancel   context.CancelFunc
	done     chan struct{}

	mu         sync.Mutex
	leadership *polylock.Leadership
}

var _ gocron.Elector = (*Elector)(nil)

// ElectorOption changes NewElector.
type ElectorOption func(*Elector)

// WithValue is the value this scheduler campaigns with, which Election.Leader shows while
// it leads (default "<hostname>:<pid>").
func WithValue(value []byte) ElectorOption {
	return func(e *Elector) { e.value = value }
}

// retryPause is how long a campaign that failed (the store unreachable) waits before the
// next one.
const retryPause = time.Second

// NewElector starts campaigning in the election name; Close stops. ErrUnsupported where the
// backend has no elections (RedLock).
func NewElector(client *polylock.Client, name string, options ...ElectorOption) (*Elector, error) {
	if client == nil {
		return nil, &polylock.Error{Kind: polylock.ErrInvalidArgument, Status: int(polylock.KindInvalidArgument),
			Message: "gocronlock.NewElector: the client is nil"}
	}
	election, err := client.Election(name)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	e := &Elector{election: election, value: fmt.Appendf(nil, "%s:%d", host, os.Getpid()), done: make(chan struct{})}
	for _, option := range options {
		option(e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go e.campaign(ctx)
	return e, nil
}

func (e *Elector) campaign(ctx context.Context) {
	defer close(e.done)
	for {
		leadership, err := e.election.Campaign(ctx, e.value)
		if err != nil {
			if ctx.Err() != nil {
				return // closed: the campaign left no candidacy behind
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryPause):
				continue
			}
		}
		e.set(leadership)
		select {
		case <-leadership.Lost():
		case <-ctx.Done():
		}
		e.set(nil)
		_ = leadership.Resign(context.Background())
		if ctx.Err() != nil {
			return
		}
	}
}

func (e *Elector) set(leadership *polylock.Leadership) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leadership = leadership
}

// IsLeader is nil while this scheduler leads, else ErrNotLeader (gocron skips the run).
func (e *Elector) IsLeader(context.Context) error {
	e.mu.Lock()
	leadership := e.leadership
	e.mu.Unlock()
	if leadership != nil && leadership.IsLeader() {
		return nil
	}
	return ErrNotLeader
}

// Term is the current leadership's term, a fencing token greater than every earlier
// leader's (pass it to what the jobs write); false when this scheduler does not lead.
func (e *Elector) Term() (uint64, bool) {
	e.mu.Lock()
	leadership := e.leadership
	e.mu.Unlock()
	if leadership != nil && leadership.IsLeader() {
		return leadership.Term(), true
	}
	return 0, false
}

// Close stops campaigning and resigns a leadership, so another scheduler leads at once.
// Shut the scheduler down first. Closing twice is harmless.
func (e *Elector) Close() error {
	e.cancel()
	<-e.done
	return nil
}
