package polylock_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// keptRecords is a slog.Handler that keeps every record it is handed.
type keptRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (k *keptRecords) Enabled(context.Context, slog.Level) bool { return true }
func (k *keptRecords) WithAttrs([]slog.Attr) slog.Handler       { return k }
func (k *keptRecords) WithGroup(string) slog.Handler            { return k }
func (k *keptRecords) Handle(_ context.Context, r slog.Record) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.records = append(k.records, r.Clone())
	return nil
}

func (k *keptRecords) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.records = nil
}

// matching is the records whose text (message and every attribute) contains text.
func (k *keptRecords) matching(text string) []slog.Record {
	k.mu.Lock()
	defer k.mu.Unlock()
	var found []slog.Record
	for _, r := range k.records {
		whole := r.Message
		r.Attrs(func(a slog.Attr) bool {
			whole += " " + a.Key + "=" + a.Value.String()
			return true
		})
		if strings.Contains(whole, text) {
			found = append(found, r)
		}
	}
	return found
}

func attrOf(r slog.Record, key string) string {
	value := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			value = a.Value.String()
			return false
		}
		return true
	})
	return value
}

// eventually polls for up to 10 s (records reach the logger through a goroutine).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func acquireRelease(t *testing.T, lock *polylock.Lock) {
	t.Helper()
	hold, err := lock.Acquire(boundedContext(t))
	if err != nil {
		t.Fatal(err)
	}
	mustRelease(t, hold)
}

// Logs: slog records with the lock name and the fields as attributes, nothing when off, the
// level switchable, a bad name ErrInvalidArgument, no password in any record. The level is
// process-wide, so the backends run one after the other.
func TestLogsReachSlog(t *testing.T) {
	kept := &keptRecords{}
	logger := slog.New(kept)
	t.Cleanup(func() { polylock.SetLogger(nil, "") })
	if err := polylock.SetLogger(logger, "loud"); !errors.Is(err, polylock.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "trace") {
		t.Fatalf("SetLogger at \"loud\": %v, want ErrInvalidArgument naming the levels", err)
	}
	if err := polylock.SetLogLevel("chatty"); !errors.Is(err, polylock.ErrInvalidArgument) {
		t.Fatalf("SetLogLevel(\"chatty\"): %v, want ErrInvalidArgument", err)
	}
	for _, b := range backends() {
		t.Run(b.label, func(t *testing.T) {
			kept.reset()
			if err := polylock.SetLogger(logger, "off"); err != nil {
				t.Fatal(err)
			}
			client := connect(t, b.url)
			name := uniqueName("logs")
			lock := mustLock(t, client, name)
			acquireRelease(t, lock)
			time.Sleep(100 * time.Millisecond)
			if n := len(kept.matching("")); n != 0 {
				t.Fatalf("%d records while off", n)
			}

			if err := polylock.SetLogLevel("debug"); err != nil {
				t.Fatal(err)
			}
			acquireRelease(t, lock)
			eventually(t, "an acquire and a release record naming the lock", func() bool {
				return len(kept.matching("name="+name)) >= 2
			})
			for _, r := range kept.matching("name=" + name) {
				if r.Level != slog.LevelDebug || !strings.HasPrefix(attrOf(r, "target"), "polylock::") ||
					attrOf(r, "backend") == "" {
					t.Fatalf("record %v: level %v, target %q, backend %q", r.Message, r.Level,
						attrOf(r, "target"), attrOf(r, "backend"))
				}
			}
			if len(kept.matching("op=acquire")) == 0 || len(kept.matching("op=release")) == 0 {
				t.Fatal("no op=acquire / op=release attributes")
			}

			// Warn: an ordinary acquisition logs nothing.
			if err := polylock.SetLogLevel("warn"); err != nil {
				t.Fatal(err)
			}
			kept.reset()
			acquireRelease(t, lock)
			time.Sleep(100 * time.Millisecond)
			if n := len(kept.matching(name)); n != 0 {
				t.Fatalf("%d records naming the lock at warn", n)
			}

			// Trace: connects that fail with a password, and this backend's own password.
			if err := polylock.SetLogLevel("TRACE"); err != nil {
				t.Fatal(err)
			}
			for _, wrong := range []string{"redis://u:Sekr3t-Pw-9481@127.0.0.1:1/", "postgres://u:Sekr3t-Pw-9481@127.0.0.1:1/db"} {
				if c, err := polylock.Connect(context.Background(), wrong); err == nil {
					c.Close()
					t.Fatalf("connected to %s", wrong)
				} else if strings.Contains(err.Error(), "Sekr3t") {
					t.Fatalf("a password in the error: %v", err)
				}
			}
			other := connect(t, b.url)
			acquireRelease(t, mustLock(t, other, name))
			eventually(t, "records of the other client", func() bool { return len(kept.matching(name)) > 0 })
			if found := kept.matching("Sekr3t"); len(found) != 0 {
				t.Fatalf("a password in %d records: %v", len(found), found[0])
			}
			if parsed, err := url.Parse(b.url); err == nil {
				if password, ok := parsed.User.Password(); ok && password != "" {
					// As a URL carries it (the test servers' password is "polylock", in every target).
					if found := kept.matching(":" + password + "@"); len(found) != 0 {
						t.Fatalf("the backend's password in %d records", len(found))
					}
				}
			}

			// nil stops the routing.
			if err := polylock.SetLogger(nil, ""); err != nil {
				t.Fatal(err)
			}
			kept.reset()
			acquireRelease(t, lock)
			time.Sleep(100 * time.Millisecond)
			if n := len(kept.matching("")); n != 0 {
				t.Fatalf("%d records after SetLogger(nil)", n)
			}
		})
	}
	if dropped := polylock.LogRecordsDropped(); dropped != 0 {
		t.Logf("records dropped by a full queue: %d", dropped)
	}
}

// seriesOfKind is a snapshot's series of kind (one backend: a client's own snapshot).
func seriesOfKind(t *testing.T, snapshot *polylock.MetricsSnapshot, kind string) *polylock.SeriesMetrics {
	t.Helper()
	for i := range snapshot.Series {
		if snapshot.Series[i].Kind == kind {
			return &snapshot.Series[i]
		}
	}
	t.Fatalf("no %s series in %+v", kind, snapshot)
	return nil
}

// Metrics: a client's counts and the process's move with acquire and release on every
// backend; the Prometheus text names them.
func TestMetricsMove(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		client := connect(t, url)
		name := uniqueName("metrics")
		lock := mustLock(t, client, name)
		before, err := client.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if len(before.BucketsLeSeconds) == 0 || len(before.Backends) != 1 || before.Backends[0].Connects < 1 {
			t.Fatalf("a new client's metrics: %+v", before)
		}
		if got := seriesOfKind(t, before, "reentrant").Acquires["acquired"]; got != 0 {
			t.Fatalf("acquired %d before any acquire", got)
		}
		for i := 0; i < 3; i++ {
			acquireRelease(t, lock)
		}
		hold, err := lock.Acquire(boundedContext(t))
		if err != nil {
			t.Fatal(err)
		}
		otherClient := connect(t, url)
		if none, err := mustLock(t, otherClient, name).TryAcquire(boundedContext(t)); none != nil || err != nil {
			t.Fatalf("try while held: %v, %v", none, err)
		}
		mustRelease(t, hold)
		after, err := client.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		series := seriesOfKind(t, after, "reentrant")
		if series.Acquires["acquired"] != 4 || series.Releases != 4 || series.AcquireWait.Count != 4 ||
			series.HoldTime.Count != 4 || len(series.AcquireWait.Buckets) != len(after.BucketsLeSeconds)+1 {
			t.Fatalf("after 4 acquire/release: %+v", series)
		}
		otherMetrics, err := otherClient.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if got := seriesOfKind(t, otherMetrics, "reentrant").Acquires["timeout"]; got != 1 {
			t.Fatalf("the other client's timeouts: %d, want 1", got)
		}
		process, err := polylock.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		whole := process.SeriesOf(series.Backend, "reentrant")
		if whole == nil || whole.Acquires["acquired"] < 4 || process.BackendOf(series.Backend).Connects < 2 {
			t.Fatalf("the process's %s series: %+v", series.Backend, whole)
		}
		text, err := polylock.PrometheusText()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "# TYPE polylock_acquires_total counter") ||
			!strings.Contains(text, `backend="`+series.Backend+`"`) {
			t.Fatalf("Prometheus text without the acquisitions of %s", series.Backend)
		}
		client.Close()
		if _, err := client.Metrics(); !errors.Is(err, polylock.ErrConnection) {
			t.Fatalf("metrics of a closed client: %v, want ErrConnection", err)
		}
	})
}

// Counting off leaves the counts as they are; on again, they move (process-wide, so SQLite
// alone and not beside the other tests).
func TestMetricsSwitch(t *testing.T) {
	client := connect(t, backends()[0].url)
	lock := mustLock(t, client, uniqueName("metrics-switch"))
	acquireRelease(t, lock)
	polylock.SetMetricsEnabled(false)
	t.Cleanup(func() { polylock.SetMetricsEnabled(true) })
	acquireRelease(t, lock)
	off, err := client.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if got := seriesOfKind(t, off, "reentrant").Acquires["acquired"]; got != 1 {
		t.Fatalf("acquired %d with counting off, want 1", got)
	}
	polylock.SetMetricsEnabled(true)
	acquireRelease(t, lock)
	on, err := client.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if got := seriesOfKind(t, on, "reentrant").Acquires["acquired"]; got != 2 {
		t.Fatalf("acquired %d after counting on again, want 2", got)
	}
}
