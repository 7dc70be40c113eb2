// The conformance driver of the Go surface (bindings-go, package polylock).
//
// It reads one JSON request per line on stdin, performs it with the package's public API
// (time.Duration for durations, context.Context for every wait) and writes one JSON answer
// per line on stdout (tests/conformance/PROTOCOL.md). It translates; it decides nothing.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	polylock "example.invalid/polylock/bindings-go"
)

type request map[string]any

// notOffered and driverError end a request without calling into polylock.
type notOffered struct{ why string }
type driverError struct{ message string }

func (n notOffered) Error() string  { return n.why }
func (d driverError) Error() string { return d.message }

// ---- objects named by `as` ----

type rwSide struct {
	side *polylock.RWSide
}

type multi struct {
	lock  *polylock.MultiLock
	names []string
}

type election struct {
	election *polylock.Election
	changes  <-chan polylock.LeaderChange // started by the first observe_next
	stop     context.CancelFunc
}

type entry struct {
	label string
	obj   any
}

var (
	objects []entry
	rwLocks = map[string]*polylock.RWLock{}              // one per (client label object, name)
	watches = map[*polylock.Value]*polylock.ValueWatch{} // started by the first value_watch
	ctx     = context.Background()
)

func add(r request, obj any) {
	label, _ := r["as"].(string)
	objects = append(objects, entry{label, obj})
}

func find[T any](r request, key string) T {
	var zero T
	label, ok := r[key].(string)
	if !ok {
		panic(driverError{fmt.Sprintf("'%s' must be a label", key)})
	}
	for i := len(objects) - 1; i >= 0; i-- {
		if objects[i].label == label {
			obj, ok := objects[i].obj.(T)
			if !ok {
				panic(driverError{fmt.Sprintf("'%s' (%s) is a %T, not a %T", label, key, objects[i].obj, zero)})
			}
			return obj
		}
	}
	panic(driverError{fmt.Sprintf("no object labelled '%s'", label)})
}

func reset() {
	for i := len(objects) - 1; i >= 0; i-- {
		switch o := objects[i].obj.(type) {
		case *polylock.Hold:
			_ = o.Release()
		case *polylock.MultiHold:
			_ = o.Release()
		case *polylock.Leadership:
			_ = o.Resign(ctx)
		case *election:
			if o.stop != nil {
				o.stop()
			}
		case *polylock.LeasedSnowflake:
			_ = o.Close()
		}
	}
	for _, watch := range watches {
		_ = watch.Close()
	}
	for i := len(objects) - 1; i >= 0; i-- {
		if c, ok := objects[i].obj.(*polylock.Client); ok {
			_ = c.Close()
		}
	}
	objects = nil
	rwLocks = map[string]*polylock.RWLock{}
	watches = map[*polylock.Value]*polylock.ValueWatch{}
}

// ---- arguments ----

func str(r request, key string) string {
	s, ok := r[key].(string)
	if !ok {
		panic(driverError{fmt.Sprintf("'%s' must be a string", key)})
	}
	return s
}

func u64(r request, key string) uint64 {
	n, ok := r[key].(json.Number)
	if !ok {
		panic(driverError{fmt.Sprintf("'%s' must be a number", key)})
	}
	v, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		panic(driverError{fmt.Sprintf("'%s' must be an unsigned integer: %v", key, err)})
	}
	return v
}

// duration converts a duration in ms to a time.Duration exactly; ok is false when absent.
func duration(r request, key string) (d time.Duration, ok bool) {
	raw, present := r[key]
	if !present {
		return 0, false
	}
	switch v := raw.(type) {
	case string:
		panic(notOffered{fmt.Sprintf("a time.Duration cannot hold %s = %s", key, v)})
	case json.Number:
		if ms, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
			if ms > math.MaxInt64/int64(time.Millisecond) || ms < math.MinInt64/int64(time.Millisecond) {
				panic(notOffered{fmt.Sprintf("a time.Duration (int64 nanoseconds) cannot hold %s = %s ms", key, v)})
			}
			return time.Duration(ms) * time.Millisecond, true
		}
		ms, err := strconv.ParseFloat(v.String(), 64)
		ns := ms * float64(time.Millisecond)
		if err != nil || ns != math.Trunc(ns) || ns >= math.MaxInt64 || ns < math.MinInt64 {
			panic(notOffered{fmt.Sprintf("a time.Duration (int64 nanoseconds) cannot hold %s = %s ms", key, v)})
		}
		return time.Duration(ns), true
	}
	panic(driverError{fmt.Sprintf("'%s' must be a number", key)})
}

func acquireOptions(r request) []polylock.AcquireOption {
	var options []polylock.AcquireOption
	if wait, ok := duration(r, "wait_ms"); ok {
		options = append(options, polylock.WithWait(wait))
	}
	if lease, ok := duration(r, "lease_ms"); ok {
		options = append(options, polylock.WithLease(lease))
	}
	return options
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

func leaderJSON(l *polylock.Leader) any {
	if l == nil {
		return nil
	}
	return map[string]any{"value": string(l.Value), "term": l.Term}
}

func tokens(m *multi, hold *polylock.MultiHold) []any {
	out := make([]any, len(m.names))
	for i, name := range m.names {
		for _, part := range hold.Parts() {
			if part.Name == name && part.HasFencingToken {
				out[i] = part.FencingToken
			}
		}
	}
	return out
}

// ---- ops ----

var ops = map[string]func(r request) any{
	"reset": func(request) any { reset(); return nil },
	"connect": func(r request) any {
		client, err := polylock.Connect(ctx, str(r, "url"))
		check(err)
		add(r, client)
		return nil
	},
	"close": func(r request) any { check(find[*polylock.Client](r, "client").Close()); return nil },
	"error_table": func(request) any {
		table := [][]any{}
		for _, kind := range polylock.ErrorKinds() {
			table = append(table, []any{kind.String(), int(kind)})
		}
		return table
	},

	"lock": func(r request) any {
		client := find[*polylock.Client](r, "client")
		var options []polylock.LockOption
		if kind, ok := r["kind"]; ok {
			options = append(options, polylock.WithKind(polylock.Kind(kind.(string))))
		}
		lock, err := client.Lock(str(r, "name"), options...)
		check(err)
		add(r, lock)
		return nil
	},
	"rw_lock": func(r request) any {
		client := find[*polylock.Client](r, "client")
		key := fmt.Sprintf("%p/%s", client, str(r, "name"))
		rw := rwLocks[key]
		if rw == nil {
			var err error
			rw, err = client.RWLock(str(r, "name"))
			check(err)
			rwLocks[key] = rw
		}
		switch str(r, "side") {
		case "read":
			add(r, &rwSide{rw.Read()})
		case "write":
			add(r, &rwSide{rw.Write()})
		default:
			panic(driverError{"'side' must be read or write"})
		}
		return nil
	},
	"semaphore": func(r request) any {
		permits := u64(r, "permits")
		if permits > math.MaxUint32 {
			panic(notOffered{"Go's permit count is a uint32"})
		}
		s, err := find[*polylock.Client](r, "client").Semaphore(str(r, "name"), uint32(permits))
		check(err)
		add(r, s)
		return nil
	},
	"multi_lock": func(r request) any {
		list, ok := r["names"].([]any)
		if !ok {
			panic(driverError{"'names' must be a list"})
		}
		names := make([]string, len(list))
		for i, n := range list {
			names[i], ok = n.(string)
			if !ok {
				panic(driverError{"'names' must be strings"})
			}
		}
		m, err := find[*polylock.Client](r, "client").MultiLock(names...)
		check(err)
		add(r, &multi{m, names})
		return nil
	},

	"acquire":     func(r request) any { return acquire(r, false) },
	"try_acquire": func(r request) any { return acquire(r, true) },
	"release": func(r request) any {
		switch g := find[any](r, "guard").(type) {
		case *polylock.Hold:
			check(g.Release())
		case *polylock.MultiHold:
			check(g.Release())
		default:
			panic(driverError{"'guard' is no hold"})
		}
		return nil
	},
	"release_handle": func(request) any {
		panic(notOffered{"in Go a hold is its own owner: only the *Hold releases, there is no release on the handle"})
	},
	"token": func(r request) any {
		switch g := find[any](r, "guard").(type) {
		case *polylock.Hold:
			return g.FencingToken()
		case *polylock.MultiHold:
			panic(notOffered{"a MultiHold has a token per part (Parts()); acquire reports the list"})
		}
		panic(driverError{"'guard' is no hold"})
	},
	"is_lost": func(r request) any {
		switch g := find[any](r, "guard").(type) {
		case *polylock.Hold:
			return g.IsLost()
		case *polylock.MultiHold:
			return g.IsLost()
		}
		panic(driverError{"'guard' is no hold"})
	},
	"wait_lost": func(r request) any {
		hold, ok := find[any](r, "guard").(*polylock.Hold)
		if !ok {
			panic(notOffered{"a Go MultiHold has no Lost() channel"})
		}
		wait, ok := duration(r, "wait_ms")
		if !ok {
			<-hold.Lost()
			return true
		}
		select {
		case <-hold.Lost():
			return true
		case <-time.After(wait):
			return false
		}
	},
	"hold_count": func(request) any {
		panic(notOffered{"in Go every Acquire is an owner of its own (re-entry is Hold.Reenter); there is no hold count"})
	},
	"is_locked": func(r request) any {
		lock, ok := find[any](r, "handle").(*polylock.Lock)
		if !ok {
			panic(notOffered{"the Go package asks the store about a *Lock only (Lock.IsLocked)"})
		}
		locked, err := lock.IsLocked(ctx)
		check(err)
		return locked
	},
	"status": func(r request) any {
		status, err := find[*polylock.Client](r, "client").Status(ctx, str(r, "name"))
		check(err)
		holders := 0
		if status.Held {
			holders = 1
		}
		return map[string]any{"held": status.Held, "holders": holders}
	},
	"list": func(r request) any {
		entries, err := find[*polylock.Client](r, "client").List(ctx, str(r, "prefix"))
		check(err)
		names := []string{}
		for _, entry := range entries { // sorted by name already
			if entry.Held {
				names = append(names, entry.Name)
			}
		}
		return names
	},
	"force_unlock": func(r request) any {
		removed, err := find[*polylock.Client](r, "client").ForceUnlock(ctx, str(r, "name"))
		check(err)
		return removed
	},

	"election": func(r request) any {
		e, err := find[*polylock.Client](r, "client").Election(str(r, "name"))
		check(err)
		add(r, &election{election: e})
		return nil
	},
	"campaign":     func(r request) any { return campaign(r, false) },
	"try_campaign": func(r request) any { return campaign(r, true) },
	"leader": func(r request) any {
		l, err := find[*election](r, "election").election.Leader(ctx)
		check(err)
		return leaderJSON(l)
	},
	"resign":    func(r request) any { check(find[*polylock.Leadership](r, "leadership").Resign(ctx)); return nil },
	"is_leader": func(r request) any { return find[*polylock.Leadership](r, "leadership").IsLeader() },
	"observe_next": func(r request) any {
		e := find[*election](r, "election")
		if e.changes == nil {
			observeCtx, stop := context.WithCancel(ctx)
			changes, err := e.election.Observe(observeCtx)
			if err != nil {
				stop()
				panic(err)
			}
			e.changes, e.stop = changes, stop
		}
		var timeout <-chan time.Time
		if wait, ok := duration(r, "wait_ms"); ok {
			timeout = time.After(wait)
		}
		select {
		case change, open := <-e.changes:
			if !open {
				panic(driverError{"the Observe channel closed"})
			}
			check(change.Err)
			return leaderJSON(change.Leader)
		case <-timeout:
			return "no change"
		}
	},

	"latch": func(r request) any {
		l, err := find[*polylock.Client](r, "client").Latch(str(r, "name"))
		check(err)
		add(r, l)
		return nil
	},
	"latch_set": func(r request) any {
		set, err := find[*polylock.Latch](r, "latch").TrySetCount(ctx, u64(r, "count"))
		check(err)
		return set
	},
	"count_down": func(r request) any { check(find[*polylock.Latch](r, "latch").CountDown(ctx)); return nil },
	"latch_count": func(r request) any {
		count, err := find[*polylock.Latch](r, "latch").Count(ctx)
		check(err)
		return count
	},
	"latch_wait": func(r request) any {
		wait, ok := duration(r, "wait_ms")
		if !ok {
			wait = -1 // AwaitZero: "a negative timeout: no limit besides ctx"
		}
		// The waiting form: ErrTimeout when the wait runs out (Await's false is the try form).
		check(find[*polylock.Latch](r, "latch").AwaitZero(ctx, wait))
		return true
	},

	"value": func(r request) any {
		v, err := find[*polylock.Client](r, "client").Value(str(r, "name"))
		check(err)
		add(r, v)
		return nil
	},
	"value_get": func(r request) any {
		found, err := find[*polylock.Value](r, "value").Get(ctx)
		check(err)
		if found == nil {
			return nil
		}
		return map[string]any{"value": string(found.Value), "version": found.Version}
	},
	"value_create": func(r request) any {
		version, err := find[*polylock.Value](r, "value").Create(ctx, []byte(str(r, "data")))
		check(err)
		return version
	},
	"value_cas": func(r request) any {
		version, err := find[*polylock.Value](r, "value").CompareAndSet(ctx, u64(r, "version"), []byte(str(r, "data")))
		check(err)
		return version
	},
	"value_delete": func(r request) any {
		check(find[*polylock.Value](r, "value").Delete(ctx, u64(r, "version")))
		return nil
	},
	"value_write_fenced": func(r request) any {
		version, err := find[*polylock.Value](r, "value").WriteFenced(ctx, u64(r, "token"), []byte(str(r, "data")))
		check(err)
		return version
	},
	"value_watch": func(r request) any {
		v := find[*polylock.Value](r, "value")
		watch := watches[v]
		if watch == nil {
			var err error
			watch, err = v.Watch(ctx)
			check(err)
			watches[v] = watch
		}
		waitCtx := ctx
		if wait, ok := duration(r, "wait_ms"); ok {
			var cancel context.CancelFunc
			waitCtx, cancel = context.WithTimeout(ctx, wait)
			defer cancel()
		}
		state, open, err := watch.Changed(waitCtx)
		if errors.Is(err, context.DeadlineExceeded) {
			return "no change" // the context's deadline is Go's bound on the wait
		}
		check(err)
		if !open {
			panic(driverError{"the watch of this value was closed"})
		}
		if state == nil {
			return nil // deleted
		}
		return map[string]any{"value": string(state.Value), "version": state.Version}
	},

	"idempotency": func(r request) any {
		i, err := find[*polylock.Client](r, "client").Idempotency(str(r, "namespace"))
		check(err)
		add(r, i)
		return nil
	},
	"idem_begin": func(r request) any {
		fingerprint, err := polylock.FingerprintOf([]byte(str(r, "payload")))
		check(err)
		began, err := find[*polylock.Idempotency](r, "idempotency").Begin(ctx, str(r, "key"), fingerprint)
		check(err)
		switch began.Outcome {
		case polylock.Acquired:
			add(r, began.Ticket)
			return map[string]any{"acquired": map[string]any{"token": began.Ticket.Token()}}
		case polylock.Replay:
			return map[string]any{"replay": string(began.Response)}
		case polylock.InProgress:
			// Begin reports it as an Outcome; the protocol as the error kind.
			panic(outcomeError{"IN_PROGRESS", began.RetryAfter})
		default:
			panic(outcomeError{"MISMATCH", 0})
		}
	},
	"idem_complete": func(r request) any {
		check(find[*polylock.Ticket](r, "ticket").Complete(ctx, []byte(str(r, "response"))))
		return nil
	},
	"idem_abandon": func(r request) any { check(find[*polylock.Ticket](r, "ticket").Abandon(ctx)); return nil },
	"idem_run": func(r request) any {
		if _, ok := duration(r, "wait_ms"); ok {
			panic(notOffered{"Go's Idempotency.Run takes no wait (it returns ErrInProgress at once)"})
		}
		fingerprint, err := polylock.FingerprintOf([]byte(str(r, "payload")))
		check(err)
		response := []byte(str(r, "response"))
		out, err := find[*polylock.Idempotency](r, "idempotency").Run(ctx, str(r, "key"), fingerprint,
			func(context.Context, uint64) ([]byte, error) { return response, nil })
		check(err)
		return string(out)
	},

	"segment": func(r request) any {
		var options []polylock.SegmentOption
		if _, ok := r["step"]; ok {
			options = append(options, polylock.WithStep(u64(r, "step")))
		}
		s, err := find[*polylock.Client](r, "client").Segment(str(r, "tag"), options...)
		check(err)
		add(r, s)
		return nil
	},
	"next_id": func(r request) any {
		id, err := find[*polylock.Segment](r, "segment").NextID()
		check(err)
		return id
	},
	"next_ids": func(r request) any {
		count := u64(r, "count")
		if count > math.MaxInt32 {
			panic(notOffered{"NextIDs takes an int count"})
		}
		ids, err := find[*polylock.Segment](r, "segment").NextIDs(int(count))
		check(err)
		return ids
	},
	"snowflake": func(r request) any {
		worker := polylock.AnyWorker
		if n, ok := r["worker_id"].(json.Number); ok {
			w, err := strconv.Atoi(n.String())
			if err != nil {
				panic(driverError{"'worker_id' must be an integer"})
			}
			worker = w
		}
		s, err := find[*polylock.Client](r, "client").LeaseSnowflake(ctx, worker)
		check(err)
		add(r, s)
		id, _, err := s.Worker()
		check(err)
		return map[string]any{"worker_id": id}
	},
	"snowflake_next": func(r request) any {
		id, err := find[*polylock.LeasedSnowflake](r, "snowflake").Next()
		check(err)
		return id
	},
	"snowflake_close": func(r request) any {
		check(find[*polylock.LeasedSnowflake](r, "snowflake").Close())
		return nil
	},
	"uuid7": func(request) any {
		id, err := polylock.UUIDv7()
		check(err)
		return id
	},
	"ulid": func(request) any {
		id, err := polylock.ULID()
		check(err)
		return id
	},
	"uuid7_timestamp": func(r request) any {
		ms, err := polylock.UUIDv7TimestampMs(str(r, "of"))
		check(err)
		return ms
	},
	"ulid_timestamp": func(r request) any {
		ms, err := polylock.ULIDTimestampMs(str(r, "of"))
		check(err)
		return ms
	},
	"ulid_to_uuid": func(r request) any {
		uuid, err := polylock.ULIDToUUID(str(r, "of"))
		check(err)
		return uuid
	},
	"uuid_to_ulid": func(r request) any {
		ulid, err := polylock.UUIDToULID(str(r, "of"))
		check(err)
		return ulid
	},
	"snowflake_parse": func(request) any {
		panic(notOffered{"the Go package has no call that takes a Snowflake ID apart"})
	},
}

// acquire: Acquire is the waiting form (ErrTimeout), TryAcquire the form returning nil.
func acquire(r request, try bool) any {
	options := acquireOptions(r)
	switch h := find[any](r, "handle").(type) {
	case *multi:
		var hold *polylock.MultiHold
		var err error
		if try {
			hold, err = h.lock.TryAcquire(ctx, options...)
		} else {
			hold, err = h.lock.Acquire(ctx, options...)
		}
		check(err)
		if hold == nil {
			return nil
		}
		add(r, hold)
		return map[string]any{"token": tokens(h, hold)}
	default:
		var acquireFn, tryFn func(context.Context, ...polylock.AcquireOption) (*polylock.Hold, error)
		switch h := h.(type) {
		case *polylock.Lock:
			acquireFn, tryFn = h.Acquire, h.TryAcquire
		case *rwSide:
			acquireFn, tryFn = h.side.Acquire, h.side.TryAcquire
		case *polylock.Semaphore:
			acquireFn, tryFn = h.Acquire, h.TryAcquire
		default:
			panic(driverError{"'handle' is no lock, side, semaphore or multi-lock"})
		}
		if try {
			acquireFn = tryFn
		}
		hold, err := acquireFn(ctx, options...)
		check(err)
		if hold == nil {
			return nil
		}
		add(r, hold)
		return map[string]any{"token": hold.FencingToken()}
	}
}

// campaign: Campaign is the waiting form (ErrTimeout), TryCampaign the form returning nil.
func campaign(r request, try bool) any {
	e := find[*election](r, "election")
	var options []polylock.AcquireOption
	if wait, ok := duration(r, "wait_ms"); ok {
		options = append(options, polylock.WithWait(wait))
	}
	value := []byte(str(r, "value"))
	var l *polylock.Leadership
	var err error
	if try {
		l, err = e.election.TryCampaign(ctx, value, options...)
	} else {
		l, err = e.election.Campaign(ctx, value, options...)
	}
	check(err)
	if l == nil {
		return nil
	}
	add(r, l)
	return map[string]any{"term": l.Term()}
}

// outcomeError is an idempotency Begin outcome the protocol reports as an error kind.
type outcomeError struct {
	kind       string
	retryAfter time.Duration
}

// kinds maps the package's sentinel errors to the protocol's kind names.
var kinds = []struct {
	err  error
	name string
}{
	{polylock.ErrTimeout, "TIMEOUT"}, {polylock.ErrNotOwner, "NOT_OWNER"}, {polylock.ErrLost, "LOST"},
	{polylock.ErrConnection, "CONNECTION"}, {polylock.ErrInvalidArgument, "INVALID_ARGUMENT"},
	{polylock.ErrBackend, "BACKEND"}, {polylock.ErrInternal, "INTERNAL"}, {polylock.ErrUnsupported, "UNSUPPORTED"},
	{polylock.ErrCancelled, "CANCELLED"}, {polylock.ErrConflict, "CONFLICT"}, {polylock.ErrFenced, "FENCED"},
	{polylock.ErrExhausted, "EXHAUSTED"}, {polylock.ErrInProgress, "IN_PROGRESS"}, {polylock.ErrMismatch, "MISMATCH"},
}

func answerOf(err error) map[string]any {
	var e *polylock.Error
	if !errors.As(err, &e) {
		return map[string]any{"ok": false, "error": "DRIVER", "message": "not a *polylock.Error: " + err.Error()}
	}
	answer := map[string]any{"ok": false, "error": "DRIVER", "message": e.Message}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			answer["error"] = k.name
			break
		}
	}
	switch {
	case errors.Is(err, polylock.ErrConflict):
		var current any
		if e.HasCurrent {
			current = string(e.CurrentValue)
		}
		answer["details"] = map[string]any{"current_version": e.CurrentVersion, "current_value": current}
	case errors.Is(err, polylock.ErrFenced):
		answer["details"] = map[string]any{"token": e.WinningToken}
	case errors.Is(err, polylock.ErrExhausted), errors.Is(err, polylock.ErrInProgress):
		answer["details"] = map[string]any{"retry_after_ms": e.RetryAfter.Milliseconds()}
	}
	return answer
}

func handle(line []byte) (answer map[string]any) {
	var r request
	decoder := json.NewDecoder(bytes.NewReader(line))
	decoder.UseNumber()
	if err := decoder.Decode(&r); err != nil {
		return map[string]any{"id": nil, "ok": false, "error": "DRIVER", "message": "bad JSON: " + err.Error()}
	}
	id := r["id"]
	defer func() {
		if p := recover(); p != nil {
			switch v := p.(type) {
			case notOffered:
				answer = map[string]any{"ok": false, "not_offered": v.why}
			case driverError:
				answer = map[string]any{"ok": false, "error": "DRIVER", "message": v.message}
			case outcomeError:
				answer = map[string]any{"ok": false, "error": v.kind, "message": "Idempotency.Begin: outcome " + v.kind}
				if v.kind == "IN_PROGRESS" {
					answer["details"] = map[string]any{"retry_after_ms": v.retryAfter.Milliseconds()}
				}
			case error:
				answer = answerOf(v)
			default:
				answer = map[string]any{"ok": false, "error": "DRIVER", "message": fmt.Sprint(v)}
			}
		}
		answer["id"] = id
	}()
	op, _ := r["op"].(string)
	run, ok := ops[op]
	if !ok {
		panic(notOffered{fmt.Sprintf("the Go driver does not know the op '%s'", op)})
	}
	return map[string]any{"ok": true, "value": run(r)}
}

func main() {
	out := bufio.NewWriter(os.Stdout)
	write := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			line, _ = json.Marshal(map[string]any{"ok": false, "error": "DRIVER", "message": err.Error()})
		}
		out.Write(line)
		out.WriteByte('\n')
		out.Flush()
	}
	write(map[string]any{"ready": "go"})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		write(handle(in.Bytes()))
	}
	reset()
}
