package polylock

// The one place this package meets the C ABI's build: the header comes from the clone's
// bindings-c (found through SRCDIR, so a `replace` directive pointing at this folder keeps
// it); the static library is named as a file (`-l:libpolylock.a`) so that the linker never
// picks libpolylock.so from the same folder, and the folder itself comes from the
// environment (CGO_LDFLAGS="-L$CARGO_TARGET_DIR/release"), since cargo's target dir lives
// outside the clone. The rest are what a Rust static library needs from libc
// (`cargo rustc -p polylock-c --release -- --print native-static-libs`).

/*
#cgo CFLAGS: -I${SRCDIR}/../bindings-c/include
#cgo LDFLAGS: -l:libpolylock.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
#include <stdlib.h>
#include "polylock.h"
*/
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// call runs one C call and turns its status into an error carrying polylock_last_error().
// The message is thread-local in C, so the goroutine stays on its OS thread from the call
// until the message is read.
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
	e := newError(int(status), message)
	e.readDetails()
	return e
}

// goBytes copies bytes the C library handed over and frees them.
func goBytes(bytes *C.polylock_bytes) []byte {
	defer C.polylock_bytes_free(bytes)
	if bytes.data == nil {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(bytes.data), C.int(bytes.len))
}

// cBytes is b as C's (pointer, length) for the length of one call; the pointer is Go memory
// the C library only reads during the call (cgo's pointer rules allow it: it holds no Go
// pointers).
func cBytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// cString is a C copy of s for the length of one call; free it with freeCString. A NUL
// inside s would cut the C string short (another name than the one asked for), so it is
// refused.
func cString(s string, what string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, errorOf(ErrInvalidArgument, what+" contains a NUL byte")
	}
	return C.CString(s), nil
}

func freeCString(s *C.char) {
	C.free(unsafe.Pointer(s))
}

// statusName is the C library's own name for a status number ("TIMEOUT"; "UNKNOWN" for a
// number outside its table).
func statusName(status int) string {
	return C.GoString(C.polylock_status_name(C.int32_t(status)))
}
