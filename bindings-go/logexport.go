package polylock

// The one function the C library calls back into Go: each log record, on whichever thread
// logged (often one of the library's own). It copies the record and queues it without
// blocking; logs.go's goroutine hands it to the slog.Logger. This file's preamble holds
// declarations only, as cgo requires of a file with //export.

// #include "polylock.h"
import "C"

//export polylockGoLogRecord
func polylockGoLogRecord(record *C.polylock_log_record) {
	logs.deliver(rawRecord{
		level:   int(record.level),
		message: C.GoString(record.message),
		json:    C.GoString(record.json),
	})
}
