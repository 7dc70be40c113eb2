package polylock

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The Go table of errors and the C header's enum of statuses agree: every status but OK
// has one entry with its number and name, and the C library names it the same.
func TestErrorTableMatchesTheHeader(t *testing.T) {
	header, err := os.ReadFile("../bindings-c/include/polylock.h")
	if err != nil {
		t.Fatal(err)
	}
	// Only the status enum: the header has other enums (details kinds, begin outcomes).
	block := regexp.MustCompile(`(?s)typedef enum \{([^}]*)\} polylock_status;`).FindSubmatch(header)
	if block == nil {
		t.Fatal("no enum polylock_status in polylock.h")
	}
	statuses := regexp.MustCompile(`(?m)^\s*POLYLOCK_([A-Z_]+) = (\d+),`).FindAllStringSubmatch(string(block[1]), -1)
	if len(statuses) < 2 {
		t.Fatalf("found %d statuses in polylock.h", len(statuses))
	}
	inHeader := map[int]string{}
	for _, status := range statuses {
		number, _ := strconv.Atoi(status[2])
		inHeader[number] = status[1]
	}
	if inHeader[0] != "OK" {
		t.Fatalf("status 0 is %q in the header", inHeader[0])
	}
	if len(statusTable) != len(inHeader)-1 {
		t.Fatalf("the Go table has %d errors, the header %d statuses besides OK", len(statusTable), len(inHeader)-1)
	}
	seen := map[error]bool{}
	for _, entry := range statusTable {
		if inHeader[entry.status] != entry.name {
			t.Errorf("status %d is %q in the header, %q in Go", entry.status, inHeader[entry.status], entry.name)
		}
		if got := statusName(entry.status); got != entry.name {
			t.Errorf("polylock_status_name(%d) = %q, Go says %q", entry.status, got, entry.name)
		}
		if entry.err.Error() != "polylock: "+entry.name {
			t.Errorf("sentinel %q does not carry its name %q", entry.err, entry.name)
		}
		if seen[entry.err] {
			t.Errorf("sentinel %v used twice", entry.err)
		}
		seen[entry.err] = true
		made := newError(entry.status, "message")
		if !errors.Is(made, entry.err) || made.Status != entry.status {
			t.Errorf("status %d does not make %v", entry.status, entry.err)
		}
		for _, other := range statusTable {
			if other.err != entry.err && errors.Is(made, other.err) {
				t.Errorf("status %d also matches %v", entry.status, other.err)
			}
		}
	}
	if unknown := newError(99, "x"); !errors.Is(unknown, ErrInternal) {
		t.Errorf("an unknown status is %v, want ErrInternal", unknown)
	}
}

// The exported ErrorKind constants are the table's numbers, in its order, each naming its
// sentinel and its C name.
func TestErrorKindConstants(t *testing.T) {
	want := []struct {
		kind ErrorKind
		err  error
	}{
		{KindTimeout, ErrTimeout}, {KindNotOwner, ErrNotOwner}, {KindLost, ErrLost},
		{KindConnection, ErrConnection}, {KindInvalidArgument, ErrInvalidArgument}, {KindBackend, ErrBackend},
		{KindInternal, ErrInternal}, {KindUnsupported, ErrUnsupported}, {KindCancelled, ErrCancelled},
		{KindConflict, ErrConflict}, {KindFenced, ErrFenced}, {KindExhausted, ErrExhausted},
		{KindInProgress, ErrInProgress}, {KindMismatch, ErrMismatch},
	}
	kinds := ErrorKinds()
	if len(kinds) != len(want) {
		t.Fatalf("ErrorKinds() has %d kinds, want %d", len(kinds), len(want))
	}
	for i, w := range want {
		if kinds[i] != w.kind {
			t.Errorf("ErrorKinds()[%d] = %d, want %d", i, kinds[i], w.kind)
		}
		if w.kind.Err() != w.err || "polylock: "+w.kind.String() != w.err.Error() {
			t.Errorf("kind %d: Err() %v, String() %q, want %v", w.kind, w.kind.Err(), w.kind.String(), w.err)
		}
		if made := newError(int(w.kind), "m"); !errors.Is(made, w.err) {
			t.Errorf("newError(%d) is not %v", w.kind, w.err)
		}
	}
	if ErrorKind(0).Err() != nil || ErrorKind(99).Err() != nil {
		t.Error("a number that is no kind has a sentinel")
	}
}
