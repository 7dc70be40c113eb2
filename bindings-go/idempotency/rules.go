package idempotency

// The one place this package meets the C ABI: the middleware's rules are the core's
// (polylock::kit::http_idempotency through bindings-c's http_idempotency.rs), so a record
// this middleware writes replays from every other language's middleware and back. The
// build is the parent package's (see ../cgo.go): the header from the clone's bindings-c,
// the static library by file name from CGO_LDFLAGS's -L.

/*
#cgo CFLAGS: -I${SRCDIR}/../../bindings-c/include
#cgo LDFLAGS: -l:libpolylock.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
#include <stdlib.h>
#include "polylock.h"
*/
import "C"

import (
	"runtime"
	"strings"
	"time"
	"unsafe"

	polylock "example.invalid/polylock/bindings-go"
)

// call runs one C call and turns its status into a *polylock.Error carrying
// polylock_last_error(), read on the same OS thread.
func call(f func() C.polylock_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	status := f()
	if status == C.POLYLOCK_OK {
		return nil
	}
	message := "(no message)"
	if text := C.polylock_last_error(); text != nil {
		message = C.GoString(text)
	}
	return newError(polylock.ErrorKind(status), message)
}

func newError(kind polylock.ErrorKind, message string) *polylock.Error {
	sentinel := kind.Err()
	if sentinel == nil {
		sentinel = polylock.ErrInternal
	}
	return &polylock.Error{Kind: sentinel, Status: int(kind), Message: message}
}

func goBytes(bytes *C.polylock_bytes) []byte {
	defer C.polylock_bytes_free(bytes)
	if bytes.data == nil {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(bytes.data), C.int(bytes.len))
}

// cBytes is b as C's (pointer, length) for one call (Go memory without Go pointers, read
// by C only during the call).
func cBytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

func cStringBytes(s string) (*C.uint8_t, C.size_t) {
	if s == "" {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// cString is a C copy of s, or an error naming what when s holds a NUL.
func cString(s, what string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, newError(polylock.KindInvalidArgument, what+" contains a NUL byte")
	}
	return C.CString(s), nil
}

// rules is a middleware's checked options (the C library's polylock_http_options).
type rules struct {
	ptr *C.polylock_http_options
}

// newRules checks the options in the C library; a nil methods means the default list.
func newRules(header *string, lifetime *time.Duration, methods []string, methodsSet bool) (*rules, error) {
	var cHeader *C.char
	if header != nil {
		var err error
		if cHeader, err = cString(*header, "idempotency middleware option 'header'"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(cHeader))
	}
	var lifetimeMs *C.int64_t
	if lifetime != nil {
		ms := C.int64_t(millisRoundedUp(*lifetime))
		lifetimeMs = &ms
	}
	// The list is C memory (an array of pointers to C strings), one slot at least so that
	// an empty list is a non-NULL array of count 0.
	var cMethods **C.char
	count := 0
	if methodsSet {
		count = len(methods)
		slots := max(count, 1)
		array := unsafe.Slice((**C.char)(C.calloc(C.size_t(slots), C.size_t(unsafe.Sizeof((*C.char)(nil))))), slots)
		defer func() {
			for _, text := range array {
				C.free(unsafe.Pointer(text))
			}
			C.free(unsafe.Pointer(&array[0]))
		}()
		for i, method := range methods {
			text, err := cString(method, "idempotency middleware option 'methods'")
			if err != nil {
				return nil, err
			}
			array[i] = text
		}
		cMethods = &array[0]
	}
	var ptr *C.polylock_http_options
	err := call(func() C.polylock_status {
		return C.polylock_http_options_new(cHeader, lifetimeMs, cMethods, C.size_t(count), &ptr)
	})
	if err != nil {
		return nil, err
	}
	r := &rules{ptr: ptr}
	runtime.AddCleanup(r, func(ptr *C.polylock_http_options) { C.polylock_http_options_free(ptr) }, ptr)
	return r, nil
}

// millisRoundedUp: a positive duration below 1 ms is 1 ms (which the core then refuses as
// too short a lifetime), never 0.
func millisRoundedUp(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d > 0 && time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	return ms
}

func (r *rules) header() string {
	defer runtime.KeepAlive(r)
	return C.GoString(C.polylock_http_options_header(r.ptr))
}

func (r *rules) lifetime() time.Duration {
	defer runtime.KeepAlive(r)
	return time.Duration(C.polylock_http_options_lifetime_ms(r.ptr)) * time.Millisecond
}

func (r *rules) appliesTo(method string) bool {
	defer runtime.KeepAlive(r)
	text, err := cString(method, "method")
	if err != nil {
		return false
	}
	defer C.free(unsafe.Pointer(text))
	return bool(C.polylock_http_options_applies_to(r.ptr, text))
}

// keyOf is the key a header value carries, and why it cannot key a request ("" if it can).
func keyOf(headerValue string) (key string, problem string, err error) {
	var cKey, cProblem C.polylock_bytes
	err = call(func() C.polylock_status {
		data, length := cStringBytes(headerValue)
		return C.polylock_http_key_of(data, length, &cKey)
	})
	if err != nil {
		return "", "", err
	}
	key = string(goBytes(&cKey))
	err = call(func() C.polylock_status {
		data, length := cStringBytes(key)
		return C.polylock_http_key_problem(data, length, &cProblem)
	})
	if err != nil {
		return "", "", err
	}
	return key, string(goBytes(&cProblem)), nil
}

// Fingerprint is the default fingerprint of a request, as every language's middleware
// computes it (the core's): its method, its path with the query and its body, hashed.
// WithFingerprint replaces it.
func Fingerprint(method, pathWithQuery string, body []byte) ([]byte, error) {
	cMethod, err := cString(method, "the method")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cMethod))
	cPath, err := cString(pathWithQuery, "the path")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cPath))
	var out C.polylock_bytes
	err = call(func() C.polylock_status {
		data, length := cBytes(body)
		return C.polylock_http_fingerprint(cMethod, cPath, data, length, &out)
	})
	if err != nil {
		return nil, err
	}
	return goBytes(&out), nil
}

// stores is whether a response of status is stored (a 5xx is not: the attempt is abandoned).
func stores(status int) bool {
	if status < 0 || status > 0xffff {
		return false
	}
	return bool(C.polylock_http_stores(C.uint16_t(status)))
}

// header is one response header, name and value.
type header struct{ name, value string }

// response is what the middleware stores, replays or answers with.
type response struct {
	status  int
	headers []header
	body    []byte
}

// encode is the stored form of a response (the core's, without per-connection headers).
func encode(r response) ([]byte, error) {
	if r.status < 0 || r.status > 0xffff {
		return nil, newError(polylock.KindInvalidArgument, "an HTTP status must be between 100 and 599")
	}
	count := len(r.headers)
	var array []C.polylock_http_header
	if count > 0 {
		// C memory: the headers' strings are C copies.
		array = unsafe.Slice((*C.polylock_http_header)(C.calloc(C.size_t(count),
			C.size_t(unsafe.Sizeof(C.polylock_http_header{})))), count)
		defer func() {
			for _, h := range array {
				C.free(unsafe.Pointer(h.name))
				C.free(unsafe.Pointer(h.value))
			}
			C.free(unsafe.Pointer(&array[0]))
		}()
		for i, h := range r.headers {
			name, err := cString(h.name, "a header name")
			if err != nil {
				return nil, err
			}
			array[i].name = name
			value, err := cString(h.value, "a header value")
			if err != nil {
				return nil, err
			}
			array[i].value = value
		}
	}
	var headers *C.polylock_http_header
	if count > 0 {
		headers = &array[0]
	}
	var out C.polylock_bytes
	err := call(func() C.polylock_status {
		data, length := cBytes(r.body)
		return C.polylock_http_encode_response(C.uint16_t(r.status), headers, C.size_t(count), data, length, &out)
	})
	if err != nil {
		return nil, err
	}
	return goBytes(&out), nil
}

// goResponse copies a response the C library filled in, and frees it.
func goResponse(c *C.polylock_http_response) response {
	defer C.polylock_http_response_free(c)
	r := response{status: int(c.status)}
	if c.headers_count > 0 {
		headers := unsafe.Slice(c.headers, c.headers_count)
		for _, h := range headers {
			r.headers = append(r.headers, header{C.GoString(h.name), C.GoString(h.value)})
		}
	}
	if c.body.data != nil {
		r.body = C.GoBytes(unsafe.Pointer(c.body.data), C.int(c.body.len))
	}
	return r
}

// decode reads a stored response back; ErrInvalidArgument for a record that holds
// something else.
func decode(stored []byte) (response, error) {
	var out C.polylock_http_response
	err := call(func() C.polylock_status {
		data, length := cBytes(stored)
		return C.polylock_http_decode_response(data, length, &out)
	})
	if err != nil {
		return response{}, err
	}
	return goResponse(&out), nil
}

type refusal int32

const (
	badKey     refusal = C.POLYLOCK_HTTP_REFUSAL_BAD_KEY
	inProgress refusal = C.POLYLOCK_HTTP_REFUSAL_IN_PROGRESS
	mismatch   refusal = C.POLYLOCK_HTTP_REFUSAL_MISMATCH
)

// refusalResponse is the core's problem document for a request that is not run.
func refusalResponse(why refusal, key string, retryAfter time.Duration) (response, error) {
	var out C.polylock_http_response
	err := call(func() C.polylock_status {
		data, length := cStringBytes(key)
		return C.polylock_http_refusal_response(C.int32_t(why), data, length,
			C.uint64_t(max(retryAfter.Milliseconds(), 0)), &out)
	})
	if err != nil {
		return response{}, err
	}
	return goResponse(&out), nil
}

// replayedHeader is the header a replayed response carries, with the value "true".
var replayedHeader = C.GoString(C.polylock_http_replayed_header())
