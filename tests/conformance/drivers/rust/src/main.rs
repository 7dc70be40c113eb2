//! The conformance driver of the Rust surface: one JSON request per stdin line, one answer
//! per stdout line (tests/conformance/PROTOCOL.md), each performed with the public API of the
//! `polylock` crate as a Rust user writes it. It translates and decides nothing.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use polylock::id::{self, SnowflakeLayout, UlidGenerator, Uuid7Generator};
use polylock::kit::idempotency_codec::{decode_response, encode_response, StoredResponse};
use polylock::{
    AcquireOptions, Begin, Client, Election, Error, ErrorDetails, ErrorKind, Guard, Idempotency, Latch, LeaderChanges,
    LeaderRecord, Leadership, LeasedSnowflake, Lock, LockKind, MultiGuard, MultiLock, Permit, RwLock, RwLockSide,
    RwMode, SegmentGenerator, SegmentOptions, Semaphore, SnowflakeOptions, Ticket, Value, ValueWatch, VersionedValue,
};
use serde_json::{json, Value as Json};

/// Why a request has no value to answer with.
enum Fail {
    /// An error of the surface: its kind, message and details go on the wire.
    Polylock(Error),
    /// The surface cannot express the request.
    NotOffered(String),
    /// The driver itself failed (a missing argument, an unknown label, bytes that are not UTF-8).
    Driver(String),
}

impl From<Error> for Fail {
    fn from(err: Error) -> Self {
        Fail::Polylock(err)
    }
}

impl From<id::IdError> for Fail {
    fn from(err: id::IdError) -> Self {
        Fail::Polylock(Error::from(err))
    }
}

type Answer = Result<Json, Fail>;

fn not_offered<T>(why: impl Into<String>) -> Result<T, Fail> {
    Err(Fail::NotOffered(why.into()))
}

fn driver<T>(why: impl Into<String>) -> Result<T, Fail> {
    Err(Fail::Driver(why.into()))
}

/// A handle: what `lock`, `rw_lock`, `semaphore` and `multi_lock` make.
enum Handle {
    Lock(Lock),
    Side(RwLockSide),
    Semaphore(Semaphore),
    /// With the names in the order the request gave them.
    Multi(MultiLock, Vec<String>),
}

/// A hold: what `acquire` and `try_acquire` make.
enum Held {
    Lock(Guard),
    Side(Guard<RwMode>),
    Permit(Permit),
    Multi(MultiGuard, Vec<String>),
}

impl Held {
    fn token(&self) -> Json {
        match self {
            Held::Lock(guard) => json!(guard.fencing_token_opt()),
            Held::Side(guard) => json!(guard.fencing_token_opt()),
            Held::Permit(permit) => json!(permit.fencing_token_opt()),
            Held::Multi(guard, names) => {
                let tokens: HashMap<String, Option<u64>> = guard.fencing_tokens_opt().into_iter().collect();
                Json::Array(names.iter().map(|name| json!(tokens.get(name).copied().flatten())).collect())
            }
        }
    }

    fn is_lost(&self) -> bool {
        match self {
            Held::Lock(guard) => guard.is_lost(),
            Held::Side(guard) => guard.is_lost(),
            Held::Permit(permit) => permit.is_lost(),
            Held::Multi(guard, _) => guard.is_lost(),
        }
    }

    /// Resolves when the hold is lost: the guard's own lost future.
    async fn lost(&self) {
        match self {
            Held::Lock(guard) => {
                guard.lost().await;
            }
            Held::Side(guard) => {
                guard.lost().await;
            }
            Held::Permit(permit) => {
                permit.lost().await;
            }
            Held::Multi(guard, _) => {
                guard.lost().await;
            }
        }
    }

    async fn release(self) -> polylock::Result<()> {
        match self {
            Held::Lock(guard) => guard.release().await,
            Held::Side(guard) => guard.release().await,
            Held::Permit(permit) => permit.release().await,
            Held::Multi(guard, _) => guard.release().await,
        }
    }
}

/// Everything the requests made, by label. Cleared by `reset`.
#[derive(Default)]
struct Objects {
    clients: HashMap<String, Client>,
    /// One read-write lock per (client, name, pair): its two sides are one owner's.
    rw_locks: HashMap<(String, String, String), RwLock>,
    handles: HashMap<String, Handle>,
    guards: HashMap<String, Held>,
    elections: HashMap<String, (Election, Option<LeaderChanges>)>,
    leaderships: HashMap<String, Leadership>,
    latches: HashMap<String, Latch>,
    values: HashMap<String, (Value, Option<ValueWatch>)>,
    idempotency: HashMap<String, Idempotency>,
    tickets: HashMap<String, Ticket>,
    segments: HashMap<String, SegmentGenerator>,
    snowflakes: HashMap<String, LeasedSnowflake>,
    /// Guards given back already: `Guard::release` takes the guard by value.
    released: std::collections::HashSet<String>,
}

impl Objects {
    fn hold(&mut self, label: String, held: Held) {
        self.released.remove(&label);
        self.guards.insert(label, held);
    }
}

struct Driver {
    objects: Objects,
    /// One generator of each per process, as the README's Rust row shows them.
    uuid7: Uuid7Generator,
    ulid: UlidGenerator,
}

// ---------------------------------------------------------------- request arguments

fn arg<'a>(req: &'a Json, key: &str) -> Result<&'a Json, Fail> {
    match req.get(key) {
        Some(value) if !value.is_null() => Ok(value),
        _ => driver(format!("the request has no '{key}'")),
    }
}

fn text<'a>(req: &'a Json, key: &str) -> Result<&'a str, Fail> {
    arg(req, key)?.as_str().map_or_else(|| driver(format!("'{key}' is not a string")), Ok)
}

fn number(req: &Json, key: &str) -> Result<u64, Fail> {
    arg(req, key)?.as_u64().map_or_else(|| driver(format!("'{key}' is not an unsigned integer")), Ok)
}

fn optional_number(req: &Json, key: &str) -> Result<Option<u64>, Fail> {
    match req.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(_) => number(req, key).map(Some),
    }
}

/// A duration in milliseconds (a number, or "NaN", "inf", "-inf") as a `Duration`; absent is
/// `None`, the API's own default. What a `Duration` cannot hold never reaches polylock.
fn duration(req: &Json, key: &str) -> Result<Option<Duration>, Fail> {
    let value = match req.get(key) {
        None | Some(Json::Null) => return Ok(None),
        Some(value) => value,
    };
    if let Some(ms) = value.as_u64() {
        return Ok(Some(Duration::from_millis(ms)));
    }
    let ms = match value {
        Json::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Json::String(s) if s == "NaN" => f64::NAN,
        Json::String(s) if s == "inf" => f64::INFINITY,
        Json::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => return driver(format!("'{key}' is not a duration: {other}")),
    };
    match Duration::try_from_secs_f64(ms / 1000.0) {
        Ok(duration) => Ok(Some(duration)),
        Err(err) => not_offered(format!("std::time::Duration cannot hold {value} ms ({err})")),
    }
}

fn options(req: &Json) -> Result<AcquireOptions, Fail> {
    Ok(AcquireOptions { wait: duration(req, "wait_ms")?, lease: duration(req, "lease_ms")? })
}

fn utf8(bytes: Vec<u8>) -> Result<String, Fail> {
    String::from_utf8(bytes).or_else(|err| driver(format!("bytes that are not UTF-8: {:?}", err.into_bytes())))
}

fn versioned(value: Option<VersionedValue>) -> Answer {
    match value {
        None => Ok(Json::Null),
        Some(v) => Ok(json!({"value": utf8(v.value)?, "version": v.version})),
    }
}

fn leader(record: Option<LeaderRecord>) -> Answer {
    match record {
        None => Ok(Json::Null),
        Some(r) => Ok(json!({"value": utf8(r.value)?, "term": r.term})),
    }
}

fn lock_kind(name: &str) -> Result<LockKind, Fail> {
    match name {
        "reentrant" => Ok(LockKind::Reentrant),
        "fair" => Ok(LockKind::Fair),
        "token" => Ok(LockKind::Token),
        "lease" => Ok(LockKind::Lease),
        "session" => not_offered("polylock::LockKind has no session variant (SQL session locks are its Reentrant)"),
        other => driver(format!("unknown lock kind '{other}'")),
    }
}

fn get<'a, T>(map: &'a HashMap<String, T>, req: &Json, key: &str) -> Result<&'a T, Fail> {
    let label = text(req, key)?;
    map.get(label).map_or_else(|| driver(format!("no {key} labelled '{label}'")), Ok)
}

fn get_mut<'a, T>(map: &'a mut HashMap<String, T>, req: &Json, key: &str) -> Result<&'a mut T, Fail> {
    let label = text(req, key)?;
    map.get_mut(label).map_or_else(|| driver(format!("no {key} labelled '{label}'")), Ok)
}

fn take<T>(map: &mut HashMap<String, T>, req: &Json, key: &str) -> Result<T, Fail> {
    let label = text(req, key)?;
    map.remove(label).map_or_else(|| driver(format!("no {key} labelled '{label}'")), Ok)
}

fn label(req: &Json) -> Result<String, Fail> {
    text(req, "as").map(str::to_string)
}

// ---------------------------------------------------------------- the requests

impl Driver {
    async fn handle(&mut self, req: &Json) -> Answer {
        let op = text(req, "op")?;
        let o = &mut self.objects;
        match op {
            // Session
            "reset" => {
                self.reset().await;
                Ok(Json::Null)
            }
            "connect" => {
                let client = Client::connect(text(req, "url")?).await?;
                o.clients.insert(label(req)?, client);
                Ok(Json::Null)
            }
            "close" => {
                get(&o.clients, req, "client")?.close().await;
                Ok(Json::Null)
            }
            "error_table" => Ok(Json::Array(ErrorKind::ALL.iter().map(|k| json!([k.as_str(), k.code()])).collect())),

            // Handles
            "lock" => {
                let lock = get(&o.clients, req, "client")?.lock(text(req, "name")?)?;
                let lock = match req.get("kind").and_then(Json::as_str) {
                    Some(kind) => lock.with_kind(lock_kind(kind)?)?,
                    None => lock,
                };
                o.handles.insert(label(req)?, Handle::Lock(lock));
                Ok(Json::Null)
            }
            "rw_lock" => {
                let client = text(req, "client")?;
                let name = text(req, "name")?;
                let pair = req.get("pair").and_then(Json::as_str).unwrap_or("").to_string();
                let key = (client.to_string(), name.to_string(), pair);
                let rw = match o.rw_locks.get(&key) {
                    Some(rw) => rw.clone(),
                    None => {
                        let rw = get(&o.clients, req, "client")?.rw_lock(name)?;
                        o.rw_locks.insert(key, rw.clone());
                        rw
                    }
                };
                let side = match text(req, "side")? {
                    "read" => rw.read().clone(),
                    "write" => rw.write().clone(),
                    other => return driver(format!("unknown side '{other}'")),
                };
                o.handles.insert(label(req)?, Handle::Side(side));
                Ok(Json::Null)
            }
            "semaphore" => {
                let permits = u32::try_from(number(req, "permits")?)
                    .or_else(|_| not_offered("Client::semaphore takes the permit count as a u32"))?;
                let semaphore = get(&o.clients, req, "client")?.semaphore(text(req, "name")?, permits)?;
                o.handles.insert(label(req)?, Handle::Semaphore(semaphore));
                Ok(Json::Null)
            }
            "multi_lock" => {
                let names: Vec<String> = arg(req, "names")?
                    .as_array()
                    .map(|names| names.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                let multi = get(&o.clients, req, "client")?.multi_lock(names.as_slice())?;
                o.handles.insert(label(req)?, Handle::Multi(multi, names));
                Ok(Json::Null)
            }

            // Holds
            "acquire" => {
                let options = options(req)?;
                let held = match get(&o.handles, req, "handle")? {
                    Handle::Lock(lock) => Held::Lock(lock.acquire_with(options).await?),
                    Handle::Side(side) => Held::Side(side.acquire_with(options).await?),
                    Handle::Semaphore(semaphore) => Held::Permit(semaphore.acquire_with(options).await?),
                    Handle::Multi(multi, names) => Held::Multi(multi.acquire_with(options).await?, names.clone()),
                };
                let token = held.token();
                o.hold(label(req)?, held);
                Ok(json!({"token": token}))
            }
            "try_acquire" => {
                let options = options(req)?;
                let held = match get(&o.handles, req, "handle")? {
                    Handle::Lock(lock) => lock.try_acquire_with(options).await?.map(Held::Lock),
                    Handle::Side(side) => side.try_acquire_with(options).await?.map(Held::Side),
                    Handle::Semaphore(semaphore) => semaphore.try_acquire_with(options).await?.map(Held::Permit),
                    Handle::Multi(multi, names) => {
                        multi.try_acquire_with(options).await?.map(|g| Held::Multi(g, names.clone()))
                    }
                };
                match held {
                    None => Ok(Json::Null),
                    Some(held) => {
                        let token = held.token();
                        o.hold(label(req)?, held);
                        Ok(json!({"token": token}))
                    }
                }
            }
            "release" => {
                let guard = text(req, "guard")?;
                if o.released.contains(guard) {
                    return not_offered("Guard::release takes the guard by value: a second release does not compile");
                }
                let held = take(&mut o.guards, req, "guard")?;
                o.released.insert(guard.to_string());
                held.release().await?;
                Ok(Json::Null)
            }
            "release_handle" => {
                match get(&o.handles, req, "handle")? {
                    Handle::Lock(lock) => lock.release().await?,
                    Handle::Side(side) => side.release().await?,
                    Handle::Multi(multi, _) => multi.release().await?,
                    Handle::Semaphore(_) => {
                        return not_offered(
                            "a Rust Semaphore releases a permit through its Permit or by its id (release_permit), \
                             not through the handle",
                        )
                    }
                }
                Ok(Json::Null)
            }
            "token" => Ok(get(&o.guards, req, "guard")?.token()),
            "is_lost" => Ok(json!(get(&o.guards, req, "guard")?.is_lost())),
            "wait_lost" => {
                let wait = duration(req, "wait_ms")?;
                let held = get(&o.guards, req, "guard")?;
                Ok(json!(within(wait, held.lost()).await.is_some()))
            }
            "hold_count" => match get(&o.handles, req, "handle")? {
                Handle::Lock(lock) => Ok(json!(lock.hold_count())),
                Handle::Side(side) => Ok(json!(side.hold_count())),
                Handle::Semaphore(_) => not_offered("a Rust Semaphore has no hold count: every permit is an owner"),
                Handle::Multi(..) => not_offered("a Rust MultiLock has no hold count (only is_held and tokens)"),
            },
            "is_locked" => match get(&o.handles, req, "handle")? {
                Handle::Lock(lock) => Ok(json!(lock.is_locked().await?)),
                Handle::Side(side) => Ok(json!(side.is_locked().await?)),
                Handle::Semaphore(semaphore) => Ok(json!(semaphore.is_locked().await?)),
                Handle::Multi(..) => not_offered("a Rust MultiLock has no is_locked"),
            },

            // Admin
            "status" => {
                let status = get(&o.clients, req, "client")?.inspect().status(text(req, "name")?, None).await?;
                Ok(json!({"held": status.held, "holders": u64::from(status.held)}))
            }
            "list" => {
                let entries = get(&o.clients, req, "client")?.inspect().list(text(req, "prefix")?).await?;
                let mut names: Vec<String> = entries.into_iter().filter(|e| e.held).map(|e| e.name).collect();
                names.sort();
                Ok(json!(names))
            }
            "force_unlock" => {
                let inspector = get(&o.clients, req, "client")?.inspect();
                Ok(json!(inspector.force_unlock(text(req, "name")?, None).await?))
            }

            // Election
            "election" => {
                let election = get(&o.clients, req, "client")?.election(text(req, "name")?)?;
                o.elections.insert(label(req)?, (election, None));
                Ok(Json::Null)
            }
            "campaign" => {
                let wait = duration(req, "wait_ms")?;
                let (election, _) = get(&o.elections, req, "election")?;
                let leadership = election.campaign(text(req, "value")?.as_bytes(), wait).await?;
                let term = leadership.term();
                o.leaderships.insert(label(req)?, leadership);
                Ok(json!({"term": term}))
            }
            "try_campaign" => {
                let wait = duration(req, "wait_ms")?;
                let (election, _) = get(&o.elections, req, "election")?;
                match election.try_campaign(text(req, "value")?.as_bytes(), wait).await? {
                    None => Ok(Json::Null),
                    Some(leadership) => {
                        let term = leadership.term();
                        o.leaderships.insert(label(req)?, leadership);
                        Ok(json!({"term": term}))
                    }
                }
            }
            "leader" => leader(get(&o.elections, req, "election")?.0.leader().await?),
            "resign" => {
                get(&o.leaderships, req, "leadership")?.resign().await?;
                Ok(Json::Null)
            }
            "is_leader" => Ok(json!(get(&o.leaderships, req, "leadership")?.is_leader())),
            "observe_next" => {
                let wait = duration(req, "wait_ms")?;
                let (election, changes) = get_mut(&mut o.elections, req, "election")?;
                if changes.is_none() {
                    *changes = Some(election.observe()?);
                }
                let changes = changes.as_mut().expect("started above");
                match within(wait, changes.next()).await {
                    None => Ok(json!("no change")),
                    Some(None) => driver("LeaderChanges::next() answered None: the stream ended (client closed)"),
                    Some(Some(change)) => leader(change?),
                }
            }

            // Latch
            "latch" => {
                let latch = get(&o.clients, req, "client")?.latch(text(req, "name")?)?;
                o.latches.insert(label(req)?, latch);
                Ok(Json::Null)
            }
            "latch_set" => Ok(json!(get(&o.latches, req, "latch")?.try_set_count(number(req, "count")?).await?)),
            "count_down" => {
                get(&o.latches, req, "latch")?.count_down().await?;
                Ok(Json::Null)
            }
            "latch_count" => Ok(json!(get(&o.latches, req, "latch")?.count().await?)),
            "latch_wait" => {
                let wait = duration(req, "wait_ms")?;
                get(&o.latches, req, "latch")?.await_zero(wait).await?;
                Ok(json!(true))
            }

            // Values
            "value" => {
                let value = get(&o.clients, req, "client")?.value(text(req, "name")?)?;
                o.values.insert(label(req)?, (value, None));
                Ok(Json::Null)
            }
            "value_get" => versioned(get(&o.values, req, "value")?.0.get().await?),
            "value_create" => Ok(json!(get(&o.values, req, "value")?.0.create(text(req, "data")?.as_bytes()).await?)),
            "value_cas" => {
                let (value, _) = get(&o.values, req, "value")?;
                Ok(json!(value.compare_and_set(number(req, "version")?, text(req, "data")?.as_bytes()).await?))
            }
            "value_delete" => {
                get(&o.values, req, "value")?.0.delete(number(req, "version")?).await?;
                Ok(Json::Null)
            }
            "value_write_fenced" => {
                let (value, _) = get(&o.values, req, "value")?;
                Ok(json!(value.write_fenced(number(req, "token")?, text(req, "data")?.as_bytes()).await?))
            }
            "value_watch" => {
                let wait = duration(req, "wait_ms")?;
                let (value, watch) = get_mut(&mut o.values, req, "value")?;
                if watch.is_none() {
                    *watch = Some(value.watch().await?);
                }
                let watch = watch.as_mut().expect("started above");
                match within(wait, watch.changed()).await {
                    None => Ok(json!("no change")),
                    Some(changed) => versioned(changed?),
                }
            }

            // Idempotency
            "idempotency" => {
                let idempotency = get(&o.clients, req, "client")?.idempotency(text(req, "namespace")?)?;
                o.idempotency.insert(label(req)?, idempotency);
                Ok(Json::Null)
            }
            "idem_begin" => {
                let idempotency = get(&o.idempotency, req, "idempotency")?;
                match idempotency.begin(text(req, "key")?, text(req, "payload")?.as_bytes()).await? {
                    Begin::Acquired(ticket) => {
                        let token = ticket.token();
                        o.tickets.insert(label(req)?, ticket);
                        Ok(json!({"acquired": {"token": token}}))
                    }
                    Begin::Replay(response) => Ok(json!({"replay": utf8(response)?})),
                    // The Rust surface answers these as variants of Begin, not as errors; the
                    // protocol carries them as the errors of the same kind.
                    Begin::InProgress { retry_after } => Err(Fail::Polylock(
                        Error::new(ErrorKind::InProgress, "begin answered Begin::InProgress")
                            .with_details(ErrorDetails::RetryAfter { after: retry_after }),
                    )),
                    Begin::Mismatch => {
                        Err(Fail::Polylock(Error::new(ErrorKind::Mismatch, "begin answered Begin::Mismatch")))
                    }
                }
            }
            "idem_complete" => {
                get(&o.tickets, req, "ticket")?.complete(text(req, "response")?.as_bytes()).await?;
                Ok(Json::Null)
            }
            "idem_abandon" => {
                get(&o.tickets, req, "ticket")?.abandon().await?;
                Ok(Json::Null)
            }
            "idem_run" => {
                let wait = duration(req, "wait_ms")?;
                let response = text(req, "response")?.as_bytes().to_vec();
                let idempotency = get(&o.idempotency, req, "idempotency")?;
                let work = || async move { Ok::<_, Error>(response) };
                let encoded =
                    move || async move { Ok::<_, Error>(encode_response(&StoredResponse::Bytes(work().await?))) };
                let key = text(req, "key")?;
                let stored = idempotency.run_stored(key, text(req, "payload")?.as_bytes(), wait, encoded).await?;
                // What `run` hands back, told apart: bytes are the response's text; a response
                // another language stored as JSON is that JSON value.
                match decode_response(&stored)? {
                    StoredResponse::Bytes(bytes) => Ok(json!(utf8(bytes)?)),
                    StoredResponse::Json(text) => match serde_json::from_str::<Json>(&text) {
                        Ok(value) => Ok(value),
                        Err(e) => driver(format!("the stored JSON response: {e}")),
                    },
                }
            }

            // IDs
            "segment" => {
                let client = get(&o.clients, req, "client")?;
                let tag = text(req, "tag")?;
                let generator = match optional_number(req, "step")? {
                    Some(step) => client.segments(tag, SegmentOptions { step, ..SegmentOptions::default() })?,
                    None => client.segment(tag)?,
                };
                o.segments.insert(label(req)?, generator);
                Ok(Json::Null)
            }
            "next_id" => Ok(json!(get(&o.segments, req, "segment")?.next_id().await?)),
            "next_ids" => {
                let count = usize::try_from(number(req, "count")?).or_else(|_| driver("count does not fit a usize"))?;
                Ok(json!(get(&o.segments, req, "segment")?.next_ids(count).await?))
            }
            "snowflake" => {
                let worker = optional_number(req, "worker_id")?;
                let client = get(&o.clients, req, "client")?;
                let generator = client.snowflake(worker, SnowflakeOptions::default()).await?;
                let worker = generator.worker_id().await;
                o.snowflakes.insert(label(req)?, generator);
                Ok(json!({"worker_id": worker}))
            }
            "snowflake_next" => Ok(json!(get(&o.snowflakes, req, "snowflake")?.next_id().await?)),
            "snowflake_close" => {
                take(&mut o.snowflakes, req, "snowflake")?.close().await?;
                Ok(Json::Null)
            }
            "uuid7" => Ok(json!(id::format_uuid(self.uuid7.next()?))),
            "ulid" => Ok(json!(id::format_ulid(self.ulid.next()?))),
            "uuid7_timestamp" => Ok(json!(id::uuid7_timestamp_ms(id::parse_uuid(text(req, "of")?)?)?)),
            "ulid_timestamp" => Ok(json!(id::ulid_timestamp_ms(id::parse_ulid(text(req, "of")?)?))),
            "ulid_to_uuid" => Ok(json!(id::format_uuid(id::ulid_to_uuid(id::parse_ulid(text(req, "of")?)?)))),
            "uuid_to_ulid" => Ok(json!(id::format_ulid(id::uuid_to_ulid(id::parse_uuid(text(req, "of")?)?)))),
            "snowflake_parse" => {
                let snowflake = number(req, "of")?;
                let parts = match optional_number(req, "epoch_ms")? {
                    Some(epoch) => SnowflakeLayout::new(epoch, 41, 10, 12)?.parse(snowflake)?,
                    None => id::parse_snowflake(snowflake)?,
                };
                Ok(json!({"timestamp_ms": parts.timestamp_ms, "worker_id": parts.worker, "sequence": parts.sequence}))
            }
            other => not_offered(format!("the Rust driver does not know the op '{other}'")),
        }
    }

    /// Release and close everything, ignoring errors, and forget every label.
    async fn reset(&mut self) {
        let mut o = std::mem::take(&mut self.objects);
        for (_, held) in o.guards.drain() {
            let _ = held.release().await;
        }
        for (_, leadership) in o.leaderships.drain() {
            let _ = leadership.resign().await;
        }
        for (_, ticket) in o.tickets.drain() {
            let _ = ticket.abandon().await;
        }
        for (_, generator) in o.snowflakes.drain() {
            let _ = generator.close().await;
        }
        let clients: Vec<Client> = o.clients.drain().map(|(_, client)| client).collect();
        drop(o);
        for client in clients {
            client.close().await;
        }
    }
}

/// `future`'s output if it comes within `wait` (`None`: as long as it takes).
async fn within<F: std::future::Future>(wait: Option<Duration>, future: F) -> Option<F::Output> {
    match wait {
        None => Some(future.await),
        Some(wait) => tokio::time::timeout(wait, future).await.ok(),
    }
}

// ---------------------------------------------------------------- framing

fn answer(id: Json, outcome: Answer) -> Json {
    match outcome {
        Ok(value) => json!({"id": id, "ok": true, "value": value}),
        Err(Fail::NotOffered(why)) => json!({"id": id, "ok": false, "not_offered": why}),
        Err(Fail::Driver(why)) => json!({"id": id, "ok": false, "error": "DRIVER", "message": why}),
        Err(Fail::Polylock(err)) => {
            let mut out = json!({"id": id, "ok": false, "error": err.kind().as_str(), "message": err.to_string()});
            let details = match err.details() {
                Some(ErrorDetails::Conflict { current }) => Some(match current {
                    Some((value, version)) => {
                        json!({"current_value": String::from_utf8_lossy(value), "current_version": version})
                    }
                    None => json!({"current_value": null, "current_version": null}),
                }),
                Some(ErrorDetails::Fenced { winning_token }) => Some(json!({"token": winning_token})),
                Some(ErrorDetails::RetryAfter { after }) => Some(json!({"retry_after_ms": after.as_millis() as u64})),
                _ => None,
            };
            if let Some(details) = details {
                out["details"] = details;
            }
            out
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let mut driver = Driver { objects: Objects::default(), uuid7: Uuid7Generator::new(), ulid: UlidGenerator::new() };
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock, line: Json| {
        // The orchestrator went away: nothing left to answer.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            std::process::exit(0);
        }
    };
    say(&mut out, json!({"ready": "rust"}));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let req: Json = match serde_json::from_str(&line) {
            Ok(req) => req,
            Err(err) => {
                say(&mut out, answer(Json::Null, Err(Fail::Driver(format!("not a JSON request: {err}")))));
                continue;
            }
        };
        let id = req.get("id").cloned().unwrap_or(Json::Null);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| runtime.block_on(driver.handle(&req))))
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(Fail::Driver(format!("panicked: {what}")))
            });
        say(&mut out, answer(id, outcome));
    }
    runtime.block_on(driver.reset());
}
