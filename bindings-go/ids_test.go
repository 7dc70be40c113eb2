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
