//! Target `c_api`: the C ABI's argument handling (bindings-c's own sources, compiled in).
//! The input is a little program of calls with fuzzed arguments: NULL or live handles and
//! out-pointers, names and URLs of arbitrary bytes (not UTF-8, with a NUL inside, empty,
//! long), lengths with NULL data, any waits, leases, counts, permits and versions, handles
//! used after their client was closed. Promises checked:
//! - every call returns a status and never `POLYLOCK_INTERNAL` (a panic caught at the
//!   boundary is a bug too; under libFuzzer a panic aborts at once);
//! - a failed call leaves a readable `polylock_last_error()`, with no password from the URL;
//! - functions that cannot fail (the frees, the getters) accept NULL;
//! - counts have bounds, and every count beyond one is refused with `POLYLOCK_INVALID_ARGUMENT`
//!   (never an abort, an allocation failure or a write into the caller's array): ID batches
//!   (`polylock_segment_next_ids`, `polylock_leased_snowflake_next_ids`) above
//!   `polylock::id::MAX_BATCH`, semaphores of 0 permits or more than `polylock::MAX_PERMITS`
//!   (the bound on mem and SQLite; `MAX_SQL_PERMITS` is PostgreSQL's and MySQL's). The counts
//!   are drawn mostly small, else from the bounds and their neighbours, `usize::MAX`, C's
//!   negative ints converted, and any 64 bits;
//! - every input frees what it made: the process's open file descriptors (each client's
//!   runtime and connections hold some) do not grow from input to input;
//! - no log record handed to a `polylock_set_log_callback()` callback shows a URL's password,
//!   and every record's strings are readable; metrics come out as JSON and Prometheus text.
//!
//! Backends: `mem://` and SQLite in a scratch folder (no server needed); RedLock URLs of
//! loopback ports nobody listens on when the process has loopback alone (see
//! `common::network_isolated`). Waits are bounded once anything is held (or a RedLock exists,
//! which would retry against refusing servers until its wait ends), so that no input waits
//! forever on its own hold.

use std::ffi::{c_char, c_void, CStr};
use std::mem::MaybeUninit;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

use polylock_c::*;

use crate::common::{self, assert_secret_hidden, Reader};

const NAMES: [&str; 5] = ["a", "b", "orders:42", "a:b:c", "\u{e9}t\u{e9}"];
const KINDS: [&str; 6] = ["reentrant", "token", "fair", "redisson", "shedlock", "READ"];

/// A C string the fuzzer chose: NULL, or bytes with a NUL added at the end (a NUL inside
/// cuts it short, as it would in C).
struct CText(Option<Vec<u8>>);

impl CText {
    fn of(bytes: &[u8]) -> CText {
        let mut v = bytes.to_vec();
        v.push(0);
        CText(Some(v))
    }

    fn ptr(&self) -> *const c_char {
        self.0.as_ref().map_or(null(), |v| v.as_ptr().cast())
    }
}

fn name(r: &mut Reader) -> CText {
    match r.u8() % 8 {
        0 => CText(None),
        1 | 2 => CText::of(r.chunk(300)),
        3 => CText::of(b""),
        _ => CText::of(r.pick(&NAMES).as_bytes()),
    }
}

/// An ID batch count: mostly small, else at and beyond `MAX_BATCH`, huge, or a negative C int
/// converted to `size_t`. Exactly `MAX_BATCH` (a million IDs made and copied) only when the
/// input asks for it with a byte past the end never reads as.
fn batch_count(r: &mut Reader) -> usize {
    const MAX: usize = polylock::id::MAX_BATCH;
    match r.u8() % 16 {
        1 => MAX + 1,
        2 => usize::MAX,
        3 => -1i32 as usize,
        4 => i32::MIN as usize,
        5 => MAX.saturating_add(r.u64() as usize),
        6 => r.u64() as usize,
        7 if r.u8() == 0xff => MAX,
        _ => usize::from(r.u8() % 65),
    }
}

/// `call(count, ids)` for a batch of `count` IDs, checked: within the bound into an array of
/// `count` (NULL now and then); above it, refused with `POLYLOCK_INVALID_ARGUMENT` before the
/// array is looked at (the array passed is a short one, which must stay untouched).
fn next_ids(r: &mut Reader, what: &str, call: impl FnOnce(usize, *mut u64) -> polylock_status) {
    let count = batch_count(r);
    if count > polylock::id::MAX_BATCH {
        const UNTOUCHED: u64 = 0xa5a5_a5a5_a5a5_a5a5;
        let mut short = [UNTOUCHED; 4];
        let ptr = if r.u8().is_multiple_of(8) { null_mut() } else { short.as_mut_ptr() };
        let status = call(count, ptr);
        assert_eq!(status, polylock_status::POLYLOCK_INVALID_ARGUMENT, "{what} of {count} IDs: {}", last_error());
        assert!(short.iter().all(|id| *id == UNTOUCHED), "{what} of {count} IDs wrote into the array: {short:?}");
        return;
    }
    let mut ids = vec![0u64; count];
    let ptr = if r.u8().is_multiple_of(8) { null_mut() } else { ids.as_mut_ptr() };
    check(call(count, ptr), what);
}

/// A semaphore's permits: mostly a few, else the bounds and their neighbours, 0, a negative C
/// int converted to `uint32_t`, and any 32 bits.
fn permits(r: &mut Reader) -> u32 {
    match r.u8() % 16 {
        1 => 0,
        2 => polylock::MAX_PERMITS,
        3 => polylock::MAX_PERMITS + 1,
        4 => polylock::MAX_SQL_PERMITS,
        5 => polylock::MAX_SQL_PERMITS + 1,
        6 => u32::MAX,
        7 => i32::MIN as u32,
        8 | 9 => r.u32(),
        _ => u32::from(r.u8() % 4),
    }
}

struct Session {
    clients: Vec<*mut polylock_client>,
    locks: Vec<*mut polylock_lock>,
    rwlocks: Vec<*mut polylock_rwlock>,
    semaphores: Vec<*mut polylock_semaphore>,
    permits: Vec<u64>,
    multi_locks: Vec<*mut polylock_multi_lock>,
    multi_holds: Vec<*mut polylock_multi_hold>,
    holds: Vec<*mut polylock_hold>,
    cancels: Vec<*mut polylock_cancel>,
    values: Vec<*mut polylock_value>,
    idempotencies: Vec<*mut polylock_idempotency>,
    tickets: Vec<*mut polylock_ticket>,
    segments: Vec<*mut polylock_segment>,
    snowflakes: Vec<*mut polylock_snowflake>,
    leased: Vec<*mut polylock_leased_snowflake>,
    elections: Vec<*mut polylock_election>,
    leaderships: Vec<*mut polylock_leadership>,
    observers: Vec<*mut polylock_observer>,
    latches: Vec<*mut polylock_latch>,
    /// Once anything may be held, no call may wait long: the fuzzer could be waiting on
    /// its own hold.
    held: bool,
}

/// One of `items`, or NULL (about one time in eight, or when there are none).
fn some<T>(r: &mut Reader, items: &[*mut T]) -> *mut T {
    let pick = usize::from(r.u8());
    if items.is_empty() || pick % 8 == 0 {
        null_mut()
    } else {
        items[pick % items.len()]
    }
}

/// An out-pointer: NULL now and then, else `slot`.
fn out<T>(r: &mut Reader, slot: &mut T) -> *mut T {
    if r.u8().is_multiple_of(8) {
        null_mut()
    } else {
        slot
    }
}

/// Bytes of the input as a `(data, len)` argument: now and then NULL with a length, or NULL
/// with 0. The pointer is into the input, which outlives the program of calls.
fn data_arg(r: &mut Reader, max: usize) -> (*const u8, usize) {
    let data = r.chunk(max);
    match r.u8() % 8 {
        0 => (null(), data.len()),
        1 => (null(), 0),
        _ => (data.as_ptr(), data.len()),
    }
}

/// Call `make` with an out-pointer the input picks (NULL now and then) and keep the handle it
/// made in `into`. Whether it made one.
fn make_into<T>(
    r: &mut Reader,
    into: &mut Vec<*mut T>,
    what: &str,
    make: impl FnOnce(*mut *mut T) -> polylock_status,
) -> bool {
    let mut made = null_mut();
    let target = out(r, &mut made);
    let kept = check(make(target), what) && !target.is_null();
    if kept {
        into.push(made);
    }
    kept
}

/// Check a status: never INTERNAL, and a failure leaves a message to read.
fn check(status: polylock_status, what: &str) -> bool {
    assert_ne!(status, polylock_status::POLYLOCK_INTERNAL, "{what}: {}", last_error());
    if status != polylock_status::POLYLOCK_OK {
        assert!(!polylock_last_error().is_null(), "{what} failed with {status:?} and left no message");
        false
    } else {
        true
    }
}

fn last_error() -> String {
    let ptr = polylock_last_error();
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string this thread's last failure left.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// The records the log callback received since the last [`take_records`] (their `line` and
/// `json` forms), at most [`RECORDS_KEPT`], and what was wrong with any of them.
static RECORDS: Mutex<(Vec<String>, Vec<String>)> = Mutex::new((Vec::new(), Vec::new()));
const RECORDS_KEPT: usize = 512;

/// The log callback. It runs on the library's threads, inside an `extern "C"` call where a
/// panic would abort: it notes what is wrong, and [`take_records`] fails the input.
unsafe extern "C" fn capture(user_data: *mut c_void, record: *const polylock_log_record) {
    let mut problems = Vec::new();
    if !(user_data.is_null() || user_data as usize == 0x5eed) {
        problems.push(format!("user_data changed on the way: {user_data:?}"));
    }
    // SAFETY: the callback's contract: a record whose strings live for this call.
    let record = unsafe { &*record };
    if record.level == polylock_log_level::POLYLOCK_LOG_OFF {
        problems.push("a record at level off".to_string());
    }
    let mut text = |ptr: *const c_char| {
        if ptr.is_null() {
            problems.push("a NULL string in a log record".to_string());
            return String::new();
        }
        // SAFETY: NUL-terminated, per the record's contract.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    };
    let (_, _, line, json) = (text(record.target), text(record.message), text(record.line), text(record.json));
    if !(json.starts_with('{') && json.ends_with('}')) {
        problems.push(format!("a record's JSON is no object: {json}"));
    }
    let mut kept = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    if kept.0.len() < RECORDS_KEPT {
        kept.0.push(line);
        kept.0.push(json);
    }
    kept.1.extend(problems);
}

/// The records captured since the last call; fails the input if any was malformed.
fn take_records() -> Vec<String> {
    let (records, problems) = std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()));
    assert!(problems.is_empty(), "log records: {problems:?}");
    records
}

/// Bytes the library handed out, read and freed: their contents.
fn free_bytes(bytes: &mut polylock_bytes) -> Vec<u8> {
    let raw = if bytes.data.is_null() {
        assert_eq!(bytes.len, 0, "NULL data with a length");
        Vec::new()
    } else {
        // SAFETY: `len` bytes the library handed out.
        unsafe { std::slice::from_raw_parts(bytes.data, bytes.len) }.to_vec()
    };
    // SAFETY: the library's bytes, freed once.
    unsafe { polylock_bytes_free(bytes) };
    raw
}

impl Session {
    fn new() -> Session {
        Session {
            clients: Vec::new(),
            locks: Vec::new(),
            rwlocks: Vec::new(),
            semaphores: Vec::new(),
            permits: Vec::new(),
            multi_locks: Vec::new(),
            multi_holds: Vec::new(),
            holds: Vec::new(),
            cancels: Vec::new(),
            values: Vec::new(),
            idempotencies: Vec::new(),
            tickets: Vec::new(),
            segments: Vec::new(),
            snowflakes: Vec::new(),
            leased: Vec::new(),
            elections: Vec::new(),
            leaderships: Vec::new(),
            observers: Vec::new(),
            latches: Vec::new(),
            held: false,
        }
    }

    fn wait(&self, r: &mut Reader) -> i64 {
        let wait = r.i64();
        if self.held {
            wait.rem_euclid(20)
        } else {
            wait
        }
    }

    fn lease(r: &mut Reader) -> i64 {
        match r.u8() % 4 {
            0 => POLYLOCK_LEASE_WATCHDOG,
            1 => i64::from(r.u16()),
            _ => r.i64(),
        }
    }

    /// Connect to a URL the input picks; the client joins the session when it opens.
    fn connect(&mut self, r: &mut Reader) {
        if self.clients.len() >= 3 {
            return;
        }
        let mut client: *mut polylock_client = null_mut();
        let url = match r.u8() % 8 {
            0 => CText(None), // $POLYLOCK_URL: set to a mem:// store by `setup`
            1 | 2 => {
                let mut v = b"mem://fuzz-c?".to_vec();
                v.extend_from_slice(r.chunk(60));
                CText::of(&v)
            }
            3 => {
                let mut v = format!("sqlite://{}/c.db?", common::scratch_dir().display()).into_bytes();
                v.extend_from_slice(r.chunk(60));
                CText::of(&v)
            }
            4 => {
                // A password in a URL that will be refused: it must not show in the message.
                let secret = String::from_utf8_lossy(r.chunk(24)).replace(['@', '?', '#', '\0'], "");
                // Schemes that open nothing: a mem:// store or a SQLite file would outlive the input.
                let scheme = r.pick(&["bogus", "", "redis+bogus", "MEM+x"]);
                let url = format!("{scheme}://user:{secret}@127.0.0.1:1/x?leese={}", r.u8());
                let messages = |url: &str| {
                    let mut c: *mut polylock_client = null_mut();
                    let text = CText::of(url.as_bytes());
                    take_records();
                    // SAFETY: a NUL-terminated string and a writable out-pointer.
                    let status = unsafe { polylock_connect(text.ptr(), &mut c) };
                    check(status, "polylock_connect");
                    assert!(c.is_null(), "{url:?} connected");
                    let mut shown = take_records();
                    shown.push(last_error());
                    shown
                };
                assert_secret_hidden(&url, &secret, &messages);
                return;
            }
            _ => {
                // Raw bytes, unless they name a backend that would open a file or a socket.
                let raw = r.chunk(80);
                let text = String::from_utf8_lossy(raw);
                let scheme = text.trim().split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                if scheme.is_some_and(|s| s != "bogus" && !s.is_empty()) {
                    return;
                }
                CText::of(raw)
            }
        };
        let target = out(r, &mut client);
        // SAFETY: `url` is NULL or NUL-terminated; `target` NULL or writable.
        let status = unsafe { polylock_connect(url.ptr(), target) };
        if check(status, "polylock_connect") && !target.is_null() {
            assert!(!client.is_null());
            self.clients.push(client);
        }
    }

    fn step(&mut self, r: &mut Reader) {
        let client = some(r, &self.clients);
        // SAFETY (every call below): handles are NULL or live (made in this session and not
        // freed), strings NULL or NUL-terminated, out-pointers NULL or writable, and data
        // pointers NULL or readable for the length given with them.
        unsafe {
            match r.u8() % 23 {
                0 => self.connect(r),
                1 => {
                    let (n, mut lock) = (name(r), null_mut());
                    let target = out(r, &mut lock);
                    let status = if r.bool() {
                        polylock_client_lock(client, n.ptr(), target)
                    } else {
                        let kind = if r.u8().is_multiple_of(4) {
                            CText::of(r.chunk(12))
                        } else {
                            CText::of(r.pick(&KINDS).as_bytes())
                        };
                        polylock_client_lock_kind(
                            client,
                            n.ptr(),
                            if r.u8().is_multiple_of(8) { null() } else { kind.ptr() },
                            target,
                        )
                    };
                    if check(status, "polylock_client_lock") && !target.is_null() {
                        self.locks.push(lock);
                    }
                }
                2 => {
                    let lock = some(r, &self.locks);
                    let (wait, lease, mut token) = (self.wait(r), Self::lease(r), 0u64);
                    let status = polylock_lock_acquire(lock, wait, lease, out(r, &mut token));
                    self.held |= check(status, "polylock_lock_acquire");
                }
                3 => {
                    let lock = some(r, &self.locks);
                    check(polylock_lock_release(lock), "polylock_lock_release");
                    polylock_lock_is_held(lock);
                    polylock_lock_hold_count(lock);
                    polylock_lock_is_lost(lock);
                }
                4 => {
                    let n = name(r);
                    make_into(r, &mut self.rwlocks, "polylock_client_rwlock", |out| {
                        polylock_client_rwlock(client, n.ptr(), out)
                    });
                }
                5 => {
                    let rw = some(r, &self.rwlocks);
                    let (wait, lease, mut token) = (self.wait(r), Self::lease(r), 0u64);
                    let status = match r.u8() % 4 {
                        0 => polylock_rwlock_read_acquire(rw, wait, lease, out(r, &mut token)),
                        1 => polylock_rwlock_write_acquire(rw, wait, lease, out(r, &mut token)),
                        2 => polylock_rwlock_read_release(rw),
                        _ => polylock_rwlock_write_release(rw),
                    };
                    self.held |= check(status, "polylock_rwlock_*");
                }
                6 => {
                    let (n, permits, mut sem) = (name(r), permits(r), null_mut());
                    let target = out(r, &mut sem);
                    let status = polylock_client_semaphore(client, n.ptr(), permits, target);
                    if permits == 0 || permits > polylock::MAX_PERMITS {
                        // Every client here is mem://, SQLite or RedLock (no semaphores): a count
                        // beyond the bound is refused as such, unless the same call with one
                        // permit is refused too (a NULL or closed client, a bad name, RedLock).
                        let (mut one, expected) = (null_mut(), polylock_status::POLYLOCK_INVALID_ARGUMENT);
                        if status != expected {
                            let with_one = polylock_client_semaphore(client, n.ptr(), 1, &mut one);
                            polylock_semaphore_free(one);
                            assert_eq!(status, with_one, "a semaphore of {permits} permits: {}", last_error());
                            assert_ne!(
                                status,
                                polylock_status::POLYLOCK_OK,
                                "a semaphore of {permits} permits was made"
                            );
                        }
                    }
                    if check(status, "polylock_client_semaphore") && !target.is_null() {
                        self.semaphores.push(sem);
                    }
                }
                7 => {
                    let sem = some(r, &self.semaphores);
                    if r.bool() {
                        let (wait, lease, mut permit, mut token) = (self.wait(r), Self::lease(r), 0u64, 0u64);
                        let permit_out = out(r, &mut permit);
                        let status = polylock_semaphore_acquire(sem, wait, lease, permit_out, out(r, &mut token));
                        if check(status, "polylock_semaphore_acquire") {
                            self.held = true;
                            if !permit_out.is_null() {
                                self.permits.push(permit);
                            }
                        }
                    } else {
                        let permit = if r.bool() || self.permits.is_empty() { r.u64() } else { r.pick(&self.permits) };
                        check(polylock_semaphore_release(sem, permit), "polylock_semaphore_release");
                    }
                }
                8 => self.multi_lock(r, client),
                9 => self.value(r, client),
                10 => self.idempotency(r, client),
                11 => Self::codec(r),
                12 => self.segment(r, client),
                13 => self.snowflake(r, client),
                14 => {
                    let size = usize::from(r.u8() % 64);
                    let mut buf = vec![0 as c_char; size];
                    let ptr = if r.u8().is_multiple_of(8) { null_mut() } else { buf.as_mut_ptr() };
                    let status = if r.bool() { polylock_uuid7(ptr, size) } else { polylock_ulid(ptr, size) };
                    if check(status, "polylock_uuid7/ulid") && size > 0 && !ptr.is_null() {
                        assert!(buf.contains(&0), "an ID written without its NUL into {size} bytes");
                    }
                }
                15 => {
                    let status = r.u32() as i32;
                    let text = polylock_status_name(status);
                    assert!(!text.is_null(), "polylock_status_name({status}) is NULL");
                    let _ = CStr::from_ptr(text);
                }
                16 => self.hold(r),
                17 => {
                    let mut details = MaybeUninit::<polylock_error_details>::zeroed();
                    let target = if r.u8().is_multiple_of(8) { null_mut() } else { details.as_mut_ptr() };
                    if check(polylock_last_error_details(target), "polylock_last_error_details") && !target.is_null() {
                        polylock_bytes_free(&mut (*target).current_value);
                    }
                }
                18 => {
                    check(polylock_client_close(client), "polylock_client_close");
                }
                19 => self.election(r, client),
                20 => self.latch(r, client),
                21 => self.observe(r, client),
                _ => self.free_one(r),
            }
        }
    }

    unsafe fn multi_lock(&mut self, r: &mut Reader, client: *mut polylock_client) {
        if r.bool() {
            let names: Vec<CText> = (0..r.u8() % 5).map(|_| name(r)).collect();
            let ptrs: Vec<*const c_char> = names.iter().map(CText::ptr).collect();
            let array = if r.u8().is_multiple_of(8) { null() } else { ptrs.as_ptr() };
            let mut multi = null_mut();
            let target = out(r, &mut multi);
            if check(polylock_client_multi_lock(client, array, ptrs.len(), target), "polylock_client_multi_lock")
                && !target.is_null()
            {
                self.multi_locks.push(multi);
            }
            return;
        }
        if r.bool() {
            let (multi, wait, lease) = (some(r, &self.multi_locks), self.wait(r), Self::lease(r));
            let cancel = some(r, &self.cancels);
            let mut hold = null_mut();
            let target = out(r, &mut hold);
            if check(polylock_multi_lock_acquire(multi, wait, lease, cancel, target), "polylock_multi_lock_acquire") {
                self.held = true;
                if !target.is_null() {
                    self.multi_holds.push(hold);
                }
            }
            return;
        }
        let hold = some(r, &self.multi_holds);
        let count = polylock_multi_hold_count(hold);
        let index = if r.bool() { r.u64() as usize } else { usize::from(r.u8()) % (count + 1) };
        let (mut part, mut token, mut has) = (null(), 0u64, false);
        let name_out = out(r, &mut part);
        let status = polylock_multi_hold_part(hold, index, name_out, out(r, &mut token), out(r, &mut has));
        if check(status, "polylock_multi_hold_part") && !name_out.is_null() && !part.is_null() {
            let _ = CStr::from_ptr(part);
        }
        polylock_multi_hold_is_lost(hold);
        if r.bool() {
            check(polylock_multi_hold_release(hold), "polylock_multi_hold_release");
        }
    }

    unsafe fn value(&mut self, r: &mut Reader, client: *mut polylock_client) {
        let value = some(r, &self.values);
        let (ptr, len) = data_arg(r, 64);
        let mut version = 0u64;
        match r.u8() % 6 {
            0 => {
                let n = name(r);
                make_into(r, &mut self.values, "polylock_client_value", |out| {
                    polylock_client_value(client, n.ptr(), out)
                });
            }
            1 => {
                let mut got = MaybeUninit::<polylock_versioned>::zeroed();
                let target = if r.u8().is_multiple_of(8) { null_mut() } else { got.as_mut_ptr() };
                if check(polylock_value_get(value, target), "polylock_value_get") && !target.is_null() {
                    polylock_bytes_free(&mut (*target).value);
                }
            }
            2 => {
                check(polylock_value_create(value, ptr, len, out(r, &mut version)), "polylock_value_create");
            }
            3 => {
                let expected = if r.bool() { r.u64() } else { u64::from(r.u8() % 4) };
                check(
                    polylock_value_compare_and_set(value, expected, ptr, len, out(r, &mut version)),
                    "polylock_value_compare_and_set",
                );
            }
            4 => {
                let expected = if r.bool() { r.u64() } else { u64::from(r.u8() % 4) };
                check(polylock_value_delete(value, expected), "polylock_value_delete");
            }
            _ => {
                check(
                    polylock_value_write_fenced(value, r.u64(), ptr, len, out(r, &mut version)),
                    "polylock_value_write_fenced",
                );
            }
        }
    }

    unsafe fn idempotency(&mut self, r: &mut Reader, client: *mut polylock_client) {
        match r.u8() % 4 {
            0 => {
                let n = name(r);
                let (retention, ttl) = (r.u64(), if r.bool() { r.u64() } else { u64::from(r.u16()) });
                let mut idem = null_mut();
                let target = out(r, &mut idem);
                if check(
                    polylock_client_idempotency(client, n.ptr(), retention, ttl, target),
                    "polylock_client_idempotency",
                ) && !target.is_null()
                {
                    self.idempotencies.push(idem);
                }
            }
            1 => {
                let (idem, key, fp) = (some(r, &self.idempotencies), name(r), r.chunk(40));
                let (ptr, len) = if r.u8().is_multiple_of(8) { (null(), fp.len()) } else { (fp.as_ptr(), fp.len()) };
                let mut begin = MaybeUninit::<polylock_begin>::zeroed();
                let target = if r.u8().is_multiple_of(8) { null_mut() } else { begin.as_mut_ptr() };
                if check(polylock_idempotency_begin(idem, key.ptr(), ptr, len, target), "polylock_idempotency_begin")
                    && !target.is_null()
                {
                    let begin = &mut *target;
                    polylock_bytes_free(&mut begin.response);
                    if !begin.ticket.is_null() {
                        self.tickets.push(begin.ticket);
                    }
                }
            }
            _ => {
                let ticket = some(r, &self.tickets);
                let mut token = 0u64;
                let data = r.chunk(40);
                let (ptr, len) =
                    if r.u8().is_multiple_of(8) { (null(), data.len()) } else { (data.as_ptr(), data.len()) };
                let status = match r.u8() % 4 {
                    0 => polylock_ticket_token(ticket, out(r, &mut token)),
                    1 => polylock_ticket_complete(ticket, ptr, len),
                    2 => polylock_ticket_abandon(ticket),
                    _ => polylock_ticket_extend(ticket),
                };
                check(status, "polylock_ticket_*");
            }
        }
    }

    unsafe fn codec(r: &mut Reader) {
        let (is_json, data) = (r.bool(), r.chunk(200));
        let ptr = if r.u8().is_multiple_of(8) { null() } else { data.as_ptr() };
        let mut bytes = polylock_bytes { data: null_mut(), len: 0 };
        let target = out(r, &mut bytes);
        let status = match r.u8() % 3 {
            0 => polylock_idempotency_fingerprint(ptr, data.len(), is_json, target),
            1 => polylock_idempotency_encode_response(ptr, data.len(), is_json, target),
            _ => {
                let mut json = false;
                polylock_idempotency_decode_response(ptr, data.len(), out(r, &mut json), target)
            }
        };
        check(status, "polylock_idempotency_codec");
        polylock_bytes_free(&mut bytes);
    }

    unsafe fn segment(&mut self, r: &mut Reader, client: *mut polylock_client) {
        if r.bool() {
            let (tag, step, mut seg) = (name(r), if r.bool() { r.u64() } else { u64::from(r.u16()) }, null_mut());
            let target = out(r, &mut seg);
            if check(polylock_segment_open(client, tag.ptr(), step, target), "polylock_segment_open")
                && !target.is_null()
            {
                self.segments.push(seg);
            }
            return;
        }
        let seg = some(r, &self.segments);
        let mut id = 0u64;
        if r.bool() {
            check(polylock_segment_next_id(seg, out(r, &mut id)), "polylock_segment_next_id");
        } else {
            next_ids(r, "polylock_segment_next_ids", |count, ids| polylock_segment_next_ids(seg, count, ids));
        }
    }

    unsafe fn snowflake(&mut self, r: &mut Reader, client: *mut polylock_client) {
        let mut id = 0u64;
        match r.u8() % 6 {
            0 => {
                let mut sf = null_mut();
                let target = out(r, &mut sf);
                if check(polylock_snowflake_new(r.u16(), target), "polylock_snowflake_new") && !target.is_null() {
                    self.snowflakes.push(sf);
                }
            }
            1 => {
                let sf = some(r, &self.snowflakes);
                check(polylock_snowflake_next(sf, out(r, &mut id)), "polylock_snowflake_next");
            }
            2 => {
                let worker = if r.bool() { r.i64() } else { i64::from(r.u16() % 1100) - 20 };
                let mut sf = null_mut();
                let target = out(r, &mut sf);
                if check(polylock_snowflake_lease(client, worker, target), "polylock_snowflake_lease")
                    && !target.is_null()
                {
                    self.leased.push(sf);
                }
            }
            3 => {
                let sf = some(r, &self.leased);
                next_ids(r, "polylock_leased_snowflake_next_ids", |count, ids| {
                    polylock_leased_snowflake_next_ids(sf, count, ids)
                });
                check(polylock_leased_snowflake_next(sf, out(r, &mut id)), "polylock_leased_snowflake_next");
            }
            4 => {
                let sf = some(r, &self.leased);
                let (mut worker, mut epoch) = (0u64, 0u64);
                let worker_out = out(r, &mut worker);
                check(
                    polylock_leased_snowflake_worker(sf, worker_out, out(r, &mut epoch)),
                    "polylock_leased_snowflake_worker",
                );
            }
            _ => {
                let sf = some(r, &self.leased);
                check(polylock_leased_snowflake_close(sf), "polylock_leased_snowflake_close");
            }
        }
    }

    unsafe fn election(&mut self, r: &mut Reader, client: *mut polylock_client) {
        let (ptr, len) = data_arg(r, 40);
        match r.u8() % 7 {
            0 => {
                let n = name(r);
                make_into(r, &mut self.elections, "polylock_client_election", |out| {
                    polylock_client_election(client, n.ptr(), out)
                });
            }
            1 => {
                let (election, timeout, cancel) = (some(r, &self.elections), self.wait(r), some(r, &self.cancels));
                let mut leadership = null_mut();
                let target = out(r, &mut leadership);
                if check(
                    polylock_election_campaign(election, ptr, len, timeout, cancel, target),
                    "polylock_election_campaign",
                ) {
                    self.held = true;
                    if !target.is_null() {
                        self.leaderships.push(leadership);
                    }
                }
            }
            2 => {
                let mut leader = MaybeUninit::<polylock_leader>::zeroed();
                let target = if r.u8().is_multiple_of(8) { null_mut() } else { leader.as_mut_ptr() };
                if check(polylock_election_leader(some(r, &self.elections), target), "polylock_election_leader")
                    && !target.is_null()
                {
                    free_bytes(&mut (*target).value);
                }
            }
            3 => {
                let election = some(r, &self.elections);
                make_into(r, &mut self.observers, "polylock_election_observe", |out| {
                    polylock_election_observe(election, out)
                });
            }
            4 => {
                // An observer waits for the next change: never long.
                let (observer, timeout, cancel) =
                    (some(r, &self.observers), r.i64().rem_euclid(20), some(r, &self.cancels));
                let mut leader = MaybeUninit::<polylock_leader>::zeroed();
                let target = if r.u8().is_multiple_of(8) { null_mut() } else { leader.as_mut_ptr() };
                if check(polylock_observer_next(observer, timeout, cancel, target), "polylock_observer_next")
                    && !target.is_null()
                {
                    free_bytes(&mut (*target).value);
                }
            }
            5 => {
                let leadership = some(r, &self.leaderships);
                polylock_leadership_term(leadership);
                polylock_leadership_is_leader(leadership);
                polylock_leadership_is_lost(leadership);
                polylock_leadership_is_suspended(leadership);
                let mut value = polylock_bytes { data: null_mut(), len: 0 };
                let target = out(r, &mut value);
                if check(polylock_leadership_value(leadership, target), "polylock_leadership_value")
                    && !target.is_null()
                {
                    free_bytes(&mut value);
                }
                let (mut lost, timeout, cancel) = (false, r.i64().rem_euclid(20), some(r, &self.cancels));
                let lost_out = out(r, &mut lost);
                check(
                    polylock_leadership_wait_lost(leadership, timeout, cancel, lost_out),
                    "polylock_leadership_wait_lost",
                );
            }
            _ => {
                let leadership = some(r, &self.leaderships);
                if r.bool() {
                    check(polylock_leadership_proclaim(leadership, ptr, len), "polylock_leadership_proclaim");
                } else {
                    check(polylock_leadership_resign(leadership), "polylock_leadership_resign");
                }
            }
        }
    }

    unsafe fn latch(&mut self, r: &mut Reader, client: *mut polylock_client) {
        let latch = some(r, &self.latches);
        match r.u8() % 5 {
            0 => {
                let n = name(r);
                make_into(r, &mut self.latches, "polylock_client_latch", |out| {
                    polylock_client_latch(client, n.ptr(), out)
                });
            }
            1 => {
                let count = if r.bool() { r.u64() } else { u64::from(r.u8() % 4) };
                let mut set = false;
                check(polylock_latch_try_set_count(latch, count, out(r, &mut set)), "polylock_latch_try_set_count");
            }
            2 => {
                check(polylock_latch_count_down(latch), "polylock_latch_count_down");
            }
            3 => {
                let mut count = 0u64;
                check(polylock_latch_count(latch, out(r, &mut count)), "polylock_latch_count");
            }
            _ => {
                // A latch nobody counts down waits its whole timeout: never long.
                let (timeout, cancel, mut reached) = (r.i64().rem_euclid(20), some(r, &self.cancels), false);
                let reached_out = out(r, &mut reached);
                check(polylock_latch_await(latch, timeout, cancel, reached_out), "polylock_latch_await");
            }
        }
    }

    /// Logs, metrics and RedLock: the process-wide calls.
    unsafe fn observe(&mut self, r: &mut Reader, client: *mut polylock_client) {
        const LEVELS: [&str; 8] = ["off", "error", "WARN", "warning", "info", "Debug", "trace", ""];
        let level = match r.u8() % 8 {
            0 => CText(None),
            1 => CText::of(r.chunk(12)),
            _ => CText::of(r.pick(&LEVELS).as_bytes()),
        };
        match r.u8() % 6 {
            0 => {
                let user_data = if r.bool() { null_mut() } else { 0x5eed as *mut c_void };
                let callback: polylock_log_callback = if r.u8().is_multiple_of(4) { None } else { Some(capture) };
                check(polylock_set_log_callback(callback, user_data, level.ptr()), "polylock_set_log_callback");
            }
            1 => {
                let before = polylock_get_log_level();
                if !check(polylock_set_log_level(level.ptr()), "polylock_set_log_level") {
                    assert_eq!(polylock_get_log_level(), before, "a refused level changed the level");
                }
            }
            2 => polylock_set_metrics_enabled(!r.u8().is_multiple_of(4)),
            3 => {
                let mut bytes = polylock_bytes { data: null_mut(), len: 0 };
                let target = out(r, &mut bytes);
                let (status, json) = match r.u8() % 3 {
                    0 => (polylock_metrics_json(target), true),
                    1 => (polylock_client_metrics_json(client, target), true),
                    _ => (polylock_prometheus_text(target), false),
                };
                if check(status, "polylock_*metrics*") && !target.is_null() {
                    let text = String::from_utf8(free_bytes(&mut bytes)).expect("metrics are UTF-8");
                    assert!(!json || text.starts_with('{'), "metrics JSON is no object: {text}");
                }
            }
            _ => self.redlock(r),
        }
    }

    /// `polylock_redlock` and `polylock_redlock_connect` over server lists the input builds.
    /// Outside a loopback-only namespace no entry can name a reachable server (each lacks a
    /// port or has another scheme), so nothing is looked up or connected to.
    unsafe fn redlock(&mut self, r: &mut Reader) {
        let isolated = common::network_isolated();
        if isolated && r.u8().is_multiple_of(4) {
            return Self::redlock_secret(r);
        }
        let servers: Vec<CText> = (0..r.u8() % 5)
            .map(|_| match r.u8() % 5 {
                0 => CText(None),
                1 => {
                    let raw = r.chunk(40);
                    if isolated || !raw.contains(&b':') {
                        CText::of(raw)
                    } else {
                        CText::of(b"no-port")
                    }
                }
                2 => CText::of(b"mem://fuzz-c"),
                // Loopback ports nobody listens on: refused at once.
                3 if isolated => CText::of(format!("redis://127.0.0.1:{}", 1 + r.u8() % 3).as_bytes()),
                _ => CText::of(b"bogus://127.0.0.1:1"),
            })
            .collect();
        let ptrs: Vec<*const c_char> = servers.iter().map(CText::ptr).collect();
        // NULL with a count, or a count of 0 with the array.
        let (array, count) = match r.u8() % 8 {
            0 => (null(), ptrs.len()),
            1 => (ptrs.as_ptr(), 0),
            _ => (ptrs.as_ptr(), ptrs.len()),
        };
        let made = if r.bool() {
            let (n, mut lock) = (name(r), null_mut());
            let target = out(r, &mut lock);
            let ok = check(polylock_redlock(array, count, n.ptr(), target), "polylock_redlock") && !target.is_null();
            if ok {
                self.locks.push(lock);
            }
            ok
        } else {
            let mut client = null_mut();
            let target = out(r, &mut client);
            let ok =
                check(polylock_redlock_connect(array, count, target), "polylock_redlock_connect") && !target.is_null();
            if ok {
                self.clients.push(client);
            }
            ok
        };
        // A RedLock retries against refusing servers until its wait ends: bound every wait.
        self.held |= made;
    }

    /// A RedLock server entry with a password, refused at the URL or by the (absent) server:
    /// neither the error nor any log record shows the password.
    unsafe fn redlock_secret(r: &mut Reader) {
        let secret = String::from_utf8_lossy(r.chunk(24)).replace(['@', '?', '#', '/', ',', '\0'], "");
        let second = r.pick(&["127.0.0.1:2", "redis://127.0.0.1:3", "", "rediss://127.0.0.1:4"]);
        let url = format!("redis://user:{secret}@127.0.0.1:1");
        let messages = |entry: &str| {
            let texts = [CText::of(entry.as_bytes()), CText::of(second.as_bytes())];
            let ptrs: Vec<*const c_char> = texts.iter().map(CText::ptr).collect();
            let (n, mut lock, mut token) = (CText::of(b"a"), null_mut(), 0u64);
            take_records();
            // SAFETY: an array of two NUL-terminated strings and a writable out-pointer.
            if check(unsafe { polylock_redlock(ptrs.as_ptr(), 2, n.ptr(), &mut lock) }, "polylock_redlock") {
                // Nobody listens: the acquire fails (at once) with the servers' errors.
                // SAFETY: a live lock, freed once.
                let status = unsafe { polylock_lock_acquire(lock, 0, POLYLOCK_LEASE_WATCHDOG, &mut token) };
                assert!(!check(status, "polylock_lock_acquire"), "a RedLock with no server was granted");
                unsafe { polylock_lock_free(lock) };
            }
            let mut shown = take_records();
            shown.push(last_error());
            shown
        };
        assert_secret_hidden(&url, &secret, &messages);
    }

    unsafe fn hold(&mut self, r: &mut Reader) {
        match r.u8() % 4 {
            0 => {
                let mut cancel = null_mut();
                let target = out(r, &mut cancel);
                if check(polylock_cancel_new(target), "polylock_cancel_new") && !target.is_null() {
                    self.cancels.push(cancel);
                }
                let fire = some(r, &self.cancels);
                check(polylock_cancel_fire(fire), "polylock_cancel_fire");
            }
            1 => {
                let (wait, lease, cancel) = (self.wait(r), Self::lease(r), some(r, &self.cancels));
                let mut hold = null_mut();
                let target = out(r, &mut hold);
                let status = match r.u8() % 4 {
                    0 => polylock_lock_acquire_hold(some(r, &self.locks), wait, lease, cancel, target),
                    1 => polylock_rwlock_read_acquire_hold(some(r, &self.rwlocks), wait, lease, cancel, target),
                    2 => polylock_rwlock_write_acquire_hold(some(r, &self.rwlocks), wait, lease, cancel, target),
                    _ => polylock_semaphore_acquire_hold(some(r, &self.semaphores), wait, lease, cancel, target),
                };
                if check(status, "polylock_*_acquire_hold") {
                    self.held = true;
                    if !target.is_null() {
                        self.holds.push(hold);
                    }
                }
            }
            2 => {
                let hold = some(r, &self.holds);
                polylock_hold_fencing_token(hold);
                polylock_hold_permit_id(hold);
                polylock_hold_is_lost(hold);
                let mut lost = false;
                let timeout = r.i64().rem_euclid(20);
                let (cancel, lost_out) = (some(r, &self.cancels), out(r, &mut lost));
                check(polylock_hold_wait_lost(hold, timeout, cancel, lost_out), "polylock_hold_wait_lost");
            }
            _ => {
                let hold = some(r, &self.holds);
                if r.bool() {
                    let mut again = null_mut();
                    let target = out(r, &mut again);
                    if check(polylock_hold_reenter(hold, target), "polylock_hold_reenter") && !target.is_null() {
                        self.holds.push(again);
                    }
                } else {
                    check(polylock_hold_release(hold), "polylock_hold_release");
                }
            }
        }
    }

    /// Free one handle now (and forget it), or a NULL one.
    fn free_one(&mut self, r: &mut Reader) {
        fn take<T>(r: &mut Reader, items: &mut Vec<*mut T>) -> *mut T {
            if items.is_empty() || r.u8().is_multiple_of(4) {
                null_mut()
            } else {
                let i = usize::from(r.u8()) % items.len();
                items.swap_remove(i)
            }
        }
        // SAFETY: each handle is taken out of the session before it is freed, so it is freed once.
        unsafe {
            match r.u8() % 18 {
                0 => polylock_lock_free(take(r, &mut self.locks)),
                1 => polylock_rwlock_free(take(r, &mut self.rwlocks)),
                2 => polylock_semaphore_free(take(r, &mut self.semaphores)),
                3 => polylock_multi_lock_free(take(r, &mut self.multi_locks)),
                4 => polylock_multi_hold_free(take(r, &mut self.multi_holds)),
                5 => polylock_hold_free(take(r, &mut self.holds)),
                6 => polylock_cancel_free(take(r, &mut self.cancels)),
                7 => polylock_value_free(take(r, &mut self.values)),
                8 => polylock_idempotency_free(take(r, &mut self.idempotencies)),
                9 => polylock_ticket_free(take(r, &mut self.tickets)),
                10 => polylock_segment_free(take(r, &mut self.segments)),
                11 => polylock_snowflake_free(take(r, &mut self.snowflakes)),
                12 => polylock_leased_snowflake_free(take(r, &mut self.leased)),
                13 => polylock_election_free(take(r, &mut self.elections)),
                14 => polylock_leadership_free(take(r, &mut self.leaderships)),
                15 => polylock_observer_free(take(r, &mut self.observers)),
                16 => polylock_latch_free(take(r, &mut self.latches)),
                _ => polylock_bytes_free(null_mut()),
            }
        }
    }

    /// Free everything, handles first (their holds go back when their client closes).
    fn end(self) {
        // SAFETY: every handle is live and freed once; the clients last.
        unsafe {
            self.locks.into_iter().for_each(|h| polylock_lock_free(h));
            self.rwlocks.into_iter().for_each(|h| polylock_rwlock_free(h));
            self.semaphores.into_iter().for_each(|h| polylock_semaphore_free(h));
            self.multi_holds.into_iter().for_each(|h| polylock_multi_hold_free(h));
            self.multi_locks.into_iter().for_each(|h| polylock_multi_lock_free(h));
            self.holds.into_iter().for_each(|h| polylock_hold_free(h));
            self.cancels.into_iter().for_each(|h| polylock_cancel_free(h));
            self.values.into_iter().for_each(|h| polylock_value_free(h));
            self.tickets.into_iter().for_each(|h| polylock_ticket_free(h));
            self.idempotencies.into_iter().for_each(|h| polylock_idempotency_free(h));
            self.segments.into_iter().for_each(|h| polylock_segment_free(h));
            self.snowflakes.into_iter().for_each(|h| polylock_snowflake_free(h));
            self.leased.into_iter().for_each(|h| polylock_leased_snowflake_free(h));
            self.observers.into_iter().for_each(|h| polylock_observer_free(h));
            self.leaderships.into_iter().for_each(|h| polylock_leadership_free(h));
            self.elections.into_iter().for_each(|h| polylock_election_free(h));
            self.latches.into_iter().for_each(|h| polylock_latch_free(h));
            self.clients.into_iter().for_each(|h| polylock_client_free(h));
        }
    }
}

fn setup() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        // polylock_connect(NULL) reads $POLYLOCK_URL: keep it in memory, not in a file here.
        std::env::set_var(polylock::url::URL_ENV, "mem://fuzz-c-default");
        assert!(!polylock_version().is_null());
    });
}

/// Open file descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count())
}

/// Every 64 inputs: no more descriptors open than after the first input, give or
/// take what a runtime still stopping in the background may hold. A client, runtime or
/// connection that an input leaves behind shows here within a few hundred inputs (each holds 3 or more).
fn check_descriptors() {
    static BASELINE: OnceLock<usize> = OnceLock::new();
    static INPUTS: AtomicUsize = AtomicUsize::new(0);
    let baseline = *BASELINE.get_or_init(open_fds);
    if INPUTS.fetch_add(1, Ordering::Relaxed) % 64 == 63 {
        let now = open_fds();
        assert!(now <= baseline + 128, "open file descriptors grew from {baseline} to {now}: an input leaks");
    }
}

pub fn run(data: &[u8]) {
    setup();
    let mut r = Reader::new(data);
    let mut session = Session::new();
    session.connect(&mut r);
    let mut steps = 0;
    while !r.is_empty() && steps < 64 {
        session.step(&mut r);
        steps += 1;
    }
    session.end();
    // Each input starts with logging off and metrics on, whatever the last one set.
    // SAFETY: NULL stops the callback; no level is read then.
    unsafe { polylock_set_log_callback(None, null_mut(), null()) };
    polylock_set_metrics_enabled(true);
    take_records();
    common::clear_scratch();
    check_descriptors();
}
