package polylock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

// IsLocked asks the store (any holder), and the operator's Status, List and ForceUnlock see
// and break another client's holds.
func TestIsLockedAndAdmin(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := boundedContext(t)
		holder, operator := connect(t, url), connect(t, url)
		prefix := uniqueName("admin")
		a, b := mustLock(t, holder, prefix+":a"), mustLock(t, holder, prefix+":b")
		seen := mustLock(t, operator, prefix+":a")
		if locked, err := seen.IsLocked(ctx); locked || err != nil {
			t.Fatalf("IsLocked of a free lock: %v, %v", locked, err)
		}
		holdA, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		holdB, err := b.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer mustRelease(t, holdB)
		if locked, err := seen.IsLocked(ctx); !locked || err != nil {
			t.Fatalf("IsLocked of another client's hold: %v, %v", locked, err)
		}

		status, err := operator.Status(ctx, prefix+":a")
		if err != nil {
			t.Fatal(err)
		}
		if status.Name != prefix+":a" || status.Kind != polylock.KindReentrant || !status.Held || status.Backend == "" ||
			status.Layout == "" || status.Details == nil {
			t.Fatalf("status of a held lock: %+v", status)
		}
		if given, err := operator.Status(ctx, prefix+":a", polylock.KindReentrant); err != nil || !given.Held {
			t.Fatalf("status with its kind: %+v, %v", given, err)
		}
		entries, err := operator.List(ctx, prefix)
		// A Redis Cluster's keys are spread over masters one script cannot scan.
		cluster := strings.HasPrefix(url, "redis+cluster:") || strings.HasPrefix(url, "rediss+cluster:")
		if cluster {
			if !errors.Is(err, polylock.ErrUnsupported) {
				t.Fatalf("list on a Redis Cluster: %+v, %v, want ErrUnsupported", entries, err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		switch {
		case cluster:
			// Checked above: refused.
		case status.Backend == "postgres" || status.Backend == "mysql":
			// SQL session locks have no names to enumerate: List reads the lease table only.
			if len(entries) != 0 {
				t.Fatalf("list of session locks: %+v", entries)
			}
		case len(entries) != 2 || entries[0].Name != prefix+":a" || entries[1].Name != prefix+":b" ||
			!entries[0].Held || !entries[1].Held:
			t.Fatalf("list: %+v", entries)
		}

		if status.Backend == "postgres" || status.Backend == "mysql" {
			// Only a SQL session lock's own session may release it: force-unlock is refused.
			if removed, err := operator.ForceUnlock(ctx, prefix+":a"); removed || !errors.Is(err, polylock.ErrUnsupported) {
				t.Fatalf("force-unlock of a session lock: %v, %v, want ErrUnsupported", removed, err)
			}
			mustRelease(t, holdA)
		} else {
			if removed, err := operator.ForceUnlock(ctx, prefix+":a"); !removed || err != nil {
				t.Fatalf("force-unlock of a held lock: %v, %v", removed, err)
			}
			if locked, err := seen.IsLocked(ctx); locked || err != nil {
				t.Fatalf("IsLocked after force-unlock: %v, %v", locked, err)
			}
			if after, err := operator.Status(ctx, prefix+":a"); err != nil || after.Held {
				t.Fatalf("status after force-unlock: %+v, %v", after, err)
			}
			if removed, err := operator.ForceUnlock(ctx, prefix+":a"); removed || err != nil {
				t.Fatalf("second force-unlock: %v, %v", removed, err)
			}
			_ = holdA.Release() // broken by the operator: its owner learns it late
		}
		taken, err := seen.TryAcquire(ctx, polylock.WithWait(5*time.Second))
		if err != nil || taken == nil {
			t.Fatalf("acquire after force-unlock: %v, %v", taken, err)
		}
		mustRelease(t, taken)

		for what, err := range map[string]error{
			"bad kind":   func() error { _, err := operator.Status(ctx, prefix, "nosuch"); return err }(),
			"two kinds":  func() error { _, err := operator.Status(ctx, prefix, "reentrant", "fair"); return err }(),
			"empty name": func() error { _, err := operator.ForceUnlock(ctx, ""); return err }(),
			"NUL prefix": func() error { _, err := operator.List(ctx, "a\x00b"); return err }(),
		} {
			if !errors.Is(err, polylock.ErrInvalidArgument) {
				t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
			}
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := operator.List(cancelled, prefix); !errors.Is(err, polylock.ErrCancelled) {
			t.Fatalf("list with a cancelled context: %v", err)
		}
	})
}
