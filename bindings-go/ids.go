package polylock

// #include <stdlib.h>
// #include "polylock.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// Snowflake makes Snowflake IDs (Twitter layout: 41 bits of milliseconds, 10 of worker, 12
// of sequence) locally; no client needed. Safe for concurrent use.
type Snowflake struct {
	ptr *C.polylock_snowflake
}

// NewSnowflake is a generator for worker (0..1023); ErrInvalidArgument otherwise.
func NewSnowflake(worker uint16) (*Snowflake, error) {
	var ptr *C.polylock_snowflake
	if err := call(func() C.polylock_status { return C.polylock_snowflake_new(C.uint16_t(worker), &ptr) }); err != nil {
		return nil, err
	}
	s := &Snowflake{ptr: ptr}
	runtime.AddCleanup(s, func(ptr *C.polylock_snowflake) { C.polylock_snowflake_free(ptr) }, ptr)
	return s, nil
}

// Next is an ID greater than every earlier one of this generator, even if the wall clock
// steps back a little (ErrBackend if it stepped back too far).
func (s *Snowflake) Next() (uint64, error) {
	var id C.uint64_t
	err := call(func() C.polylock_status { return C.polylock_snowflake_next(s.ptr, &id) })
	runtime.KeepAlive(s)
	return uint64(id), err
}

// UUIDv7 is an RFC 9562 version 7 UUID ("01895f4c-4d2a-7aaa-...", lowercase), greater than
// every earlier one of this process.
func UUIDv7() (string, error) {
	return idText(C.POLYLOCK_UUID_TEXT_SIZE, func(out *C.char, size C.size_t) C.polylock_status {
		return C.polylock_uuid7(out, size)
	})
}

// ULID is a ULID (26 characters of Crockford base32), greater than every earlier one of
// this process.
func ULID() (string, error) {
	return idText(C.POLYLOCK_ULID_TEXT_SIZE, func(out *C.char, size C.size_t) C.polylock_status {
		return C.polylock_ulid(out, size)
	})
}

func idText(size C.size_t, write func(*C.char, C.size_t) C.polylock_status) (string, error) {
	buffer := (*C.char)(C.malloc(size))
	defer C.free(unsafe.Pointer(buffer))
	if err := call(func() C.polylock_status { return write(buffer, size) }); err != nil {
		return "", err
	}
	return C.GoString(buffer), nil
}

// UUIDv7TimestampMs is the Unix time in milliseconds inside a UUIDv7's text (its first 48
// bits). ErrInvalidArgument for text that is no UUID, or a UUID of another version.
func UUIDv7TimestampMs(uuid string) (uint64, error) {
	return idTimestamp(uuid, "the UUID", func(text *C.char, out *C.uint64_t) C.polylock_status {
		return C.polylock_uuid7_timestamp_ms(text, out)
	})
}

// ULIDTimestampMs is the Unix time in milliseconds inside a ULID's text (its first 48 bits).
// ErrInvalidArgument for text that is no ULID.
func ULIDTimestampMs(ulid string) (uint64, error) {
	return idTimestamp(ulid, "the ULID", func(text *C.char, out *C.uint64_t) C.polylock_status {
		return C.polylock_ulid_timestamp_ms(text, out)
	})
}

// ULIDToUUID is the UUID with the same 128 bits as ulid (lowercase), as the ULID spec's
// libraries convert. ErrInvalidArgument for text that is no ULID.
func ULIDToUUID(ulid string) (string, error) {
	text, err := cString(ulid, "the ULID")
	if err != nil {
		return "", err
	}
	defer freeCString(text)
	return idText(C.POLYLOCK_UUID_TEXT_SIZE, func(out *C.char, size C.size_t) C.polylock_status {
		return C.polylock_ulid_to_uuid(text, out, size)
	})
}

// UUIDToULID is the ULID with the same 128 bits as uuid. ErrInvalidArgument for text that
// is no UUID.
func UUIDToULID(uuid string) (string, error) {
	text, err := cString(uuid, "the UUID")
	if err != nil {
		return "", err
	}
	defer freeCString(text)
	return idText(C.POLYLOCK_ULID_TEXT_SIZE, func(out *C.char, size C.size_t) C.polylock_status {
		return C.polylock_uuid_to_ulid(text, out, size)
	})
}

func idTimestamp(id, what string, read func(*C.char, *C.uint64_t) C.polylock_status) (uint64, error) {
	text, err := cString(id, what)
	if err != nil {
		return 0, err
	}
	defer freeCString(text)
	var ms C.uint64_t
	if err := call(func() C.polylock_status { return read(text, &ms) }); err != nil {
		return 0, err
	}
	return uint64(ms), nil
}
