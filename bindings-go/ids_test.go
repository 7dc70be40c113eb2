package polylock_test

import (
	"errors"
	"regexp"
	"testing"

	polylock "example.invalid/polylock/bindings-go"
)

func TestSnowflake(t *testing.T) {
	generator, err := polylock.NewSnowflake(7)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 10000 {
		id, err := generator.Next()
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		if worker := (id >> 12) & 0x3ff; worker != 7 {
			t.Fatalf("worker bits %d in %d", worker, id)
		}
		last = id
	}
	if _, err := polylock.NewSnowflake(1024); !errors.Is(err, polylock.ErrInvalidArgument) {
		t.Fatalf("worker 1024: %v", err)
	}
}

func TestUUIDv7AndULID(t *testing.T) {
	uuidForm := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ulidForm := regexp.MustCompile(`^[0-7][0-9A-HJKMNP-TV-Z]{25}$`)
	var lastUUID, lastULID string
	for range 1000 {
		uuid, err := polylock.UUIDv7()
		if err != nil {
			t.Fatal(err)
		}
		ulid, err := polylock.ULID()
		if err != nil {
			t.Fatal(err)
		}
		if !uuidForm.MatchString(uuid) || uuid <= lastUUID {
			t.Fatalf("uuid %q after %q", uuid, lastUUID)
		}
		if !ulidForm.MatchString(ulid) || ulid <= lastULID {
			t.Fatalf("ulid %q after %q", ulid, lastULID)
		}
		lastUUID, lastULID = uuid, ulid
	}
}

// Reading IDs: the vectors every surface checks (tests/conformance/scenarios/ids-vectors.json).
func TestIDReadings(t *testing.T) {
	if ms, err := polylock.UUIDv7TimestampMs("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"); ms != 1645557742000 || err != nil {
		t.Fatalf("UUIDv7TimestampMs: %d, %v", ms, err)
	}
	if ms, err := polylock.ULIDTimestampMs("01ARZ3NDEKTSV4RRFFQ69G5FAV"); ms != 1469922850259 || err != nil {
		t.Fatalf("ULIDTimestampMs: %d, %v", ms, err)
	}
	uuid, err := polylock.ULIDToUUID("01ARZ3NDEKTSV4RRFFQ69G5FAV")
	if uuid != "01563e3a-b5d3-d676-4c61-efb99302bd5b" || err != nil {
		t.Fatalf("ULIDToUUID: %q, %v", uuid, err)
	}
	if ulid, err := polylock.UUIDToULID("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"); ulid != "01FWHE4YDGFK1SHH6W1G60EECF" || err != nil {
		t.Fatalf("UUIDToULID: %q, %v", ulid, err)
	}
	if ulid, err := polylock.UUIDToULID(uuid); ulid != "01ARZ3NDEKTSV4RRFFQ69G5FAV" || err != nil {
		t.Fatalf("UUIDToULID back: %q, %v", ulid, err)
	}
	for what, err := range map[string]error{
		"not a UUID":      func() error { _, err := polylock.UUIDv7TimestampMs("not-a-uuid"); return err }(),
		"not version 7":   func() error { _, err := polylock.UUIDv7TimestampMs(uuid); return err }(),
		"short ULID":      func() error { _, err := polylock.ULIDTimestampMs("01ARZ3NDEKTSV4RRFFQ69G5FA"); return err }(),
		"ULID over 128":   func() error { _, err := polylock.ULIDToUUID("80000000000000000000000000"); return err }(),
		"NUL in the UUID": func() error { _, err := polylock.UUIDToULID("017f22e2\x00"); return err }(),
	} {
		if !errors.Is(err, polylock.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
}
