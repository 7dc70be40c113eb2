package polylock

// Logs (issue 23): the core's events as slog records, through the C library's log callback.
// The callback runs on the library's threads and must never block them, so it only queues
// a copy (dropping it, and counting the drop, when the queue is full); one goroutine hands
// the queued records to the logger.

/*
#include "polylock.h"

extern void polylockGoLogRecord(polylock_log_record *record);

static void polylock_go_log(void *user_data, const polylock_log_record *record) {
	(void)user_data;
	polylockGoLogRecord((polylock_log_record *)record);
}

static polylock_status polylock_go_route(const char *level) {
	return polylock_set_log_callback(polylock_go_log, NULL, level);
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LevelTrace is the slog level of polylock's trace records (below slog.LevelDebug).
const LevelTrace = slog.LevelDebug - 4

// logQueueSize is how many records wait for the logger before new ones are dropped.
const logQueueSize = 4096

type rawRecord struct {
	at      time.Time
	level   int
	message string
	json    string
}

type logBridge struct {
	logger  atomic.Pointer[slog.Logger]
	records chan rawRecord
	dropped atomic.Uint64
	start   sync.Once
	// mu orders SetLogger calls (the logger swap and the C call that goes with it).
	mu sync.Mutex
	// handing is held while one record is handed to a logger, so that SetLogger can wait
	// for the record in hand: once it returns, the previous logger gets no more records.
	handing sync.Mutex
}

var logs = &logBridge{records: make(chan rawRecord, logQueueSize)}

// deliver queues a record without ever blocking the library's thread.
func (b *logBridge) deliver(record rawRecord) {
	record.at = time.Now()
	select {
	case b.records <- record:
	default:
		b.dropped.Add(1)
	}
}

// run hands queued records to the logger, one at a time, for the life of the process.
func (b *logBridge) run() {
	ctx := context.Background()
	for raw := range b.records {
		b.handing.Lock()
		b.hand(ctx, raw)
		b.handing.Unlock()
	}
}

// hand gives one record to the current logger, if any.
func (b *logBridge) hand(ctx context.Context, raw rawRecord) {
	logger := b.logger.Load()
	if logger == nil {
		return
	}
	level := slogLevel(raw.level)
	handler := logger.Handler()
	if !handler.Enabled(ctx, level) {
		return
	}
	var whole struct {
		Target string            `json:"target"`
		Fields map[string]string `json:"fields"`
	}
	_ = json.Unmarshal([]byte(raw.json), &whole)
	record := slog.NewRecord(raw.at, level, raw.message, 0)
	record.AddAttrs(slog.String("target", whole.Target))
	keys := make([]string, 0, len(whole.Fields))
	for key := range whole.Fields {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		record.AddAttrs(slog.String(key, whole.Fields[key]))
	}
	_ = handler.Handle(ctx, record)
}

// slogLevel is the slog level of a C log level.
func slogLevel(level int) slog.Level {
	switch C.polylock_log_level(level) {
	case C.POLYLOCK_LOG_ERROR:
		return slog.LevelError
	case C.POLYLOCK_LOG_WARN:
		return slog.LevelWarn
	case C.POLYLOCK_LOG_INFO:
		return slog.LevelInfo
	case C.POLYLOCK_LOG_DEBUG:
		return slog.LevelDebug
	default:
		return LevelTrace
	}
}

// waitForRecordInHand returns once the record being handed to the previous logger (if
// any) has been handed.
func (b *logBridge) waitForRecordInHand() {
	b.handing.Lock()
	b.handing.Unlock()
}

// SetLogger hands polylock's log records at level and above ("off", "error", "warn",
// "info", "debug", "trace", any case) to logger, as slog records: the message, the
// attribute "target" (the Rust module that logged) and the event's fields as string
// attributes (name, backend, kind, op, waited_ms, error...). A nil logger stops. Records
// are handed on by one goroutine of this package, in order; when the logger falls more
// than 4096 records behind, new ones are dropped and counted (LogRecordsDropped), so a
// slow logger never slows a lock. Once SetLogger returns, the previous logger gets no more
// records (do not call it from inside a logger's handler). Off by default; without a logger, POLYLOCK_LOG=<level>
// (or DEBUG=polylock) writes records to stderr from the first Connect on. An unknown level
// name is ErrInvalidArgument and changes nothing. No record carries a URL's credentials.
func SetLogger(logger *slog.Logger, level string) error {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if logger == nil {
		err := call(func() C.polylock_status { return C.polylock_set_log_callback(nil, nil, nil) })
		logs.logger.Store(nil)
		logs.waitForRecordInHand()
		return err
	}
	cLevel, err := cString(level, "the log level")
	if err != nil {
		return err
	}
	defer freeCString(cLevel)
	logs.start.Do(func() { go logs.run() })
	previous := logs.logger.Swap(logger)
	if err := call(func() C.polylock_status { return C.polylock_go_route(cLevel) }); err != nil {
		logs.logger.Store(previous)
		return err
	}
	logs.waitForRecordInHand()
	return nil
}

// SetLogLevel changes the level records are handed on at (to the logger, or to stderr),
// keeping where they go. ErrInvalidArgument for an unknown name, changing nothing.
func SetLogLevel(level string) error {
	cLevel, err := cString(level, "the log level")
	if err != nil {
		return err
	}
	defer freeCString(cLevel)
	return call(func() C.polylock_status { return C.polylock_set_log_level(cLevel) })
}

// LogRecordsDropped is how many records were dropped because the logger fell behind.
func LogRecordsDropped() uint64 {
	return logs.dropped.Load()
}
