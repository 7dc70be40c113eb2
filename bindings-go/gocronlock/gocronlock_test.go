package gocronlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	polylock "example.invalid/polylock/bindings-go"
	"example.invalid/polylock/bindings-go/gocronlock"
	"github.com/go-co-op/gocron/v2"
)

// The schedulers run in child processes: this test binary started again with childEnv set
// runs one gocron scheduler (child below) instead of the tests.
const childEnv = "GOCRONLOCK_TEST_CHILD"

const (
	schedulers = 3
	interval   = 300 * time.Millisecond
	work       = 80 * time.Millisecond
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// child runs a scheduler with the same job as its siblings, every interval on one grid of
// times shared by all (so they contend for every run), distributed by the locker or the
// elector. It prints "ready <pid>", then "start <pid> <unix ns>" and "end <pid> <unix ns>"
// around each run, until its stdin closes.
func child() int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "child %d: %s: %v\n", os.Getpid(), what, err)
		return 1
	}
	env := func(name string) string { return os.Getenv("GOCRONLOCK_TEST_" + name) }
	client, err := polylock.Connect(context.Background(), env("URL"))
	if err != nil {
		return fail("connect", err)
	}
	defer client.Close()
	pid := os.Getpid()
	var distribute gocron.SchedulerOption
	var elector *gocronlock.Elector
	switch os.Getenv(childEnv) {
	case "locker":
		locker, err := gocronlock.NewLocker(client)
		if err != nil {
			return fail("locker", err)
		}
		distribute = gocron.WithDistributedLocker(locker)
	case "elector":
		elector, err = gocronlock.NewElector(client, env("ELECTION"), gocronlock.WithValue([]byte(strconv.Itoa(pid))))
		if err != nil {
			return fail("elector", err)
		}
		defer elector.Close()
		distribute = gocron.WithDistributedElector(elector)
	}
	scheduler, err := gocron.NewScheduler(distribute)
	if err != nil {
		return fail("scheduler", err)
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	grid, _ := strconv.ParseInt(env("START"), 10, 64)
	first := time.Unix(0, grid)
	for !first.After(time.Now().Add(20 * time.Millisecond)) {
		first = first.Add(interval)
	}
	_, err = scheduler.NewJob(gocron.DurationJob(interval), gocron.NewTask(func() {
		say("start %d %d", pid, time.Now().UnixNano())
		time.Sleep(work) // the job's work
		say("end %d %d", pid, time.Now().UnixNano())
	}), gocron.WithName(env("JOB")), gocron.WithStartAt(gocron.WithStartDateTime(first)))
	if err != nil {
		return fail("job", err)
	}
	scheduler.Start()
	say("ready %d", pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := scheduler.Shutdown(); err != nil {
		return fail("shutdown", err)
	}
	return 0
}

// event is one line of a child.
type event struct {
	what string
	pid  int
	at   int64
}

// run is one run of the job, as its scheduler reported it.
type run struct {
	pid        int
	start, end int64
}

// store is the running Redis when tests/services/services.sh env exported it, else a
// SQLite file (schedulers on one host).
func store(t *testing.T) string {
	if url := os.Getenv("POLYLOCK_TEST_REDIS_URL"); url != "" {
		return url
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "gocron.db")
}

func unique(what string) string {
	return fmt.Sprintf("go-gocron-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano())
}

// schedule starts the child schedulers, reads their events until enough(runs) says so,
// stops them, and returns every run (a run still under way at the end has end 0).
func schedule(t *testing.T, mode, url string, env []string, enough func([]run) bool) []run {
	t.Helper()
	events := make(chan event)
	var readers sync.WaitGroup
	var commands []*exec.Cmd
	var stdins []io.Closer
	start := time.Now().Add(500 * time.Millisecond).UnixNano()
	for i := 0; i < schedulers; i++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+mode, "GOCRONLOCK_TEST_URL="+url,
			fmt.Sprintf("GOCRONLOCK_TEST_START=%d", start))
		cmd.Env = append(cmd.Env, env...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		commands, stdins = append(commands, cmd), append(stdins, stdin)
		readers.Add(1)
		go func() {
			defer readers.Done()
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				var e event
				fields := strings.Fields(lines.Text())
				if len(fields) < 2 {
					continue
				}
				e.what = fields[0]
				e.pid, _ = strconv.Atoi(fields[1])
				if len(fields) > 2 {
					e.at, _ = strconv.ParseInt(fields[2], 10, 64)
				}
				events <- e
			}
		}()
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, stdin := range stdins {
			stdin.Close()
		}
	}
	t.Cleanup(func() {
		stop()
		for _, cmd := range commands {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
			}
		}
	})
	allRead := make(chan struct{})
	go func() {
		readers.Wait()
		close(allRead)
	}()

	var runs []run
	ready := map[int]bool{}
	open := map[int]int{} // pid -> index of its run under way
	// A guard against a hang, not a timed assertion: enough runs come within seconds.
	guard := time.After(60 * time.Second)
	for done := false; !done; {
		select {
		case e := <-events:
			switch e.what {
			case "ready":
				ready[e.pid] = true
			case "start":
				if _, running := open[e.pid]; running {
					t.Errorf("process %d started a run while its previous one was under way", e.pid)
				}
				open[e.pid] = len(runs)
				runs = append(runs, run{pid: e.pid, start: e.at})
			case "end":
				index, running := open[e.pid]
				if !running {
					t.Fatalf("process %d ended a run it had not started", e.pid)
				}
				runs[index].end = e.at
				delete(open, e.pid)
			}
			if !stopped && len(ready) == schedulers && enough(runs) {
				stop()
			}
		case <-allRead:
			done = true
		case <-guard:
			t.Fatalf("the schedulers did not run the job enough within 60 s: %d runs %v, %d ready", len(runs), runs, len(ready))
		}
	}
	for _, cmd := range commands {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("a scheduler process failed: %v", err)
		}
	}
	if len(ready) != schedulers {
		t.Fatalf("%d of %d schedulers started", len(ready), schedulers)
	}
	return runs
}

// noOverlap fails the test if two runs overlapped in time (all processes share the clock).
func noOverlap(t *testing.T, runs []run) {
	t.Helper()
	sorted := append([]run(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start < sorted[j].start })
	for i := 1; i < len(sorted); i++ {
		previous, next := sorted[i-1], sorted[i]
		if previous.end == 0 || previous.end > next.start {
			t.Fatalf("runs overlapped: process %d ran [%d, %d] and process %d started at %d",
				previous.pid, previous.start, previous.end, next.pid, next.start)
		}
	}
}

func pids(runs []run) map[int]int {
	counts := map[int]int{}
	for _, r := range runs {
		counts[r.pid]++
	}
	return counts
}

func TestLockerRunsEachRunOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := store(t)
	// Done once at least 8 runs finished, in two processes at least.
	runs := schedule(t, "locker", url, []string{"GOCRONLOCK_TEST_JOB=" + unique("job")}, func(runs []run) bool {
		finished := 0
		for _, r := range runs {
			if r.end != 0 {
				finished++
			}
		}
		return finished >= 8 && len(pids(runs)) >= 2
	})
	noOverlap(t, runs)
	if len(pids(runs)) < 2 {
		t.Fatalf("every run was in one process: %v", pids(runs))
	}
	t.Logf("%d runs without overlap, per process: %v", len(runs), pids(runs))
}

func TestElectorRunsOnlyOnTheLeader(t *testing.T) {
	t.Parallel()
	url := store(t)
	election := unique("election")
	client, err := polylock.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	handle, err := client.Election(election)
	if err != nil {
		t.Fatal(err)
	}
	var leader *polylock.Leader
	runs := schedule(t, "elector", url, []string{"GOCRONLOCK_TEST_JOB=" + unique("job"),
		"GOCRONLOCK_TEST_ELECTION=" + election}, func(runs []run) bool {
		if len(runs) < 5 {
			return false
		}
		// Read the leader while the schedulers still run.
		if leader == nil {
			if leader, err = handle.Leader(context.Background()); err != nil {
				t.Fatalf("leader: %v", err)
			}
		}
		return true
	})
	noOverlap(t, runs)
	counts := pids(runs)
	if len(counts) != 1 || leader == nil {
		t.Fatalf("runs per process %v, leader %v: want every run on the leader", counts, leader)
	}
	if _, ok := counts[mustAtoi(t, string(leader.Value))]; !ok {
		t.Fatalf("the runs were in %v, the leader is %q", counts, leader.Value)
	}
	t.Logf("%d runs, all on the leader %s", len(runs), leader.Value)
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// In one process: a job's lock is held for the run, excludes a second lock of it (the run
// would be skipped), and is released by Unlock.
func TestLockerHoldsForTheRunAndUnlockReleases(t *testing.T) {
	t.Parallel()
	client, err := polylock.Connect(context.Background(), store(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	locker, err := gocronlock.NewLocker(client, gocronlock.WithLease(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := unique("job")
	lock, err := locker.Lock(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Lock(ctx, job); !errors.Is(err, gocronlock.ErrLocked) {
		t.Fatalf("second lock while held: %v, want ErrLocked", err)
	}
	handle, err := client.Lock(gocronlock.DefaultPrefix + job)
	if err != nil {
		t.Fatal(err)
	}
	if locked, err := handle.IsLocked(ctx); err != nil || !locked {
		t.Fatalf("the job's lock is not held during the run: %v %v", locked, err)
	}
	// A context already done (gocron's job context at shutdown) still releases.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := lock.Unlock(done); err != nil {
		t.Fatal(err)
	}
	again, err := locker.Lock(ctx, job)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := again.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []gocronlock.LockerOption{gocronlock.WithLease(0), gocronlock.WithKind("nonsense")} {
		if _, err := gocronlock.NewLocker(client, bad); !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Errorf("bad option: %v, want ErrInvalidArgument", err)
		}
	}
}
