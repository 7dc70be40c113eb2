package polylock_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// etcdctlLock starts `etcdctl lock name` (a real etcdctl process), which prints its key
// once it holds the lock and holds it until interrupted. The channel gets that line.
func etcdctlLock(t *testing.T, endpoints, name string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command("etcdctl", "--endpoints="+endpoints, "lock", name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		if scanner.Scan() {
			acquired <- scanner.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	return cmd, acquired
}

// A polylock Go holder and `etcdctl lock` on the same name exclude each other, both ways.
func TestInteropEtcdctlLock(t *testing.T) {
	url := os.Getenv("POLYLOCK_TEST_ETCD_URL")
	if url == "" {
		t.Skip("POLYLOCK_TEST_ETCD_URL is not set")
	}
	if _, err := exec.LookPath("etcdctl"); err != nil {
		t.Fatal("etcdctl is not installed (tests/services installs it with etcd)")
	}
	endpoints := strings.TrimPrefix(url, "etcd://")
	ctx := context.Background()
	client := connect(t, url)
	name := uniqueName("etcdctl")
	lock := mustLock(t, client, name)

	// polylock holds: etcdctl waits until polylock releases.
	hold, err := lock.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd, acquired := etcdctlLock(t, endpoints, name)
	select {
	case line := <-acquired:
		t.Fatalf("etcdctl took the lock polylock holds (key %s)", line)
	case <-time.After(1500 * time.Millisecond):
	}
	mustRelease(t, hold)
	key := within(t, acquired, "etcdctl lock after polylock's release")
	if !strings.HasPrefix(key, name+"/") {
		t.Fatalf("etcdctl's key %q is not under %q", key, name)
	}

	// etcdctl holds: polylock waits until etcdctl lets go.
	if other, err := lock.TryAcquire(ctx); other != nil || err != nil {
		t.Fatalf("polylock took the lock etcdctl holds: %v, %v", other, err)
	}
	granted := make(chan error, 1)
	go func() {
		hold, err := lock.Acquire(ctx)
		if err == nil {
			err = hold.Release()
		}
		granted <- err
	}()
	select {
	case err := <-granted:
		t.Fatalf("polylock acquired while etcdctl holds: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := within(t, granted, "polylock after etcdctl let go"); err != nil {
		t.Fatal(err)
	}
}
