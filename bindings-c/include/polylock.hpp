/**
 * @file polylock.hpp
 * @brief A header-only C++17 RAII wrapper over polylock.h.
 *
 * @code
 *   polylock::Client client("sqlite://app.db");
 *   polylock::Lock lock = client.lock("orders:42");
 *   {
 *       polylock::Guard guard(lock);            // acquire, wait forever, watchdog lease
 *       write_with_token(guard.fencing_token());
 *   }                                           // released here
 * @endcode
 *
 * Failures throw polylock::Error, which carries the ::polylock_status. As in C, a hold
 * belongs to the thread that acquired it: release a Guard on the thread that made it.
 * Waits and leases are the C ABI's milliseconds: POLYLOCK_WAIT_FOREVER and
 * POLYLOCK_LEASE_WATCHDOG (the defaults) are the only values below 0 accepted, a lease of 0
 * is refused like any lease under 10 ms (Error kind INVALID_ARGUMENT).
 */
#ifndef POLYLOCK_HPP
#define POLYLOCK_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "polylock.h"

namespace polylock {

/** A failed call: the status and the message polylock_last_error() gave, and the details
 *  the failure carried (a conflict's current value and version, the winning fencing token,
 *  a retry-after), read when it was thrown. */
class Error : public std::runtime_error {
  public:
    Error(polylock_status status, const std::string &message)
        : std::runtime_error(std::string(polylock_status_name(status)) + ": " + message), status_(status) {}
    polylock_status status() const noexcept { return status_; }
    /** Which details are set (POLYLOCK_DETAILS_NONE: none). */
    polylock_details_kind details_kind() const noexcept { return details_kind_; }
    /** CONFLICT: whether a value exists now, its bytes and its version. */
    bool has_current() const noexcept { return has_current_; }
    const std::string &current_value() const noexcept { return current_value_; }
    std::uint64_t current_version() const noexcept { return current_version_; }
    /** FENCED: the highest fencing token the value has accepted. */
    std::uint64_t winning_token() const noexcept { return winning_token_; }
    /** EXHAUSTED, IN_PROGRESS: milliseconds to wait before trying again. */
    std::uint64_t retry_after_ms() const noexcept { return retry_after_ms_; }

    /** Copy this thread's last failure's details into the error (done by every throw). */
    void take_details() noexcept {
        polylock_error_details details;
        if (polylock_last_error_details(&details) != POLYLOCK_OK) return;
        details_kind_ = details.kind;
        has_current_ = details.has_current;
        current_version_ = details.current_version;
        winning_token_ = details.winning_token;
        retry_after_ms_ = details.retry_after_ms;
        try {
            if (details.current_value.data)
                current_value_.assign(reinterpret_cast<const char *>(details.current_value.data),
                                      details.current_value.len);
        } catch (...) {
        }
        polylock_bytes_free(&details.current_value);
    }

  private:
    polylock_status status_;
    polylock_details_kind details_kind_ = POLYLOCK_DETAILS_NONE;
    bool has_current_ = false;
    std::string current_value_;
    std::uint64_t current_version_ = 0;
    std::uint64_t winning_token_ = 0;
    std::uint64_t retry_after_ms_ = 0;
};

namespace detail {
/** release() on a guard or permit that was released already, or moved from: it holds nothing,
 *  so the call is NOT_OWNER (as the C ABI's second release of a permit is), never a crash. */
[[noreturn]] inline void released_already(const char *what) {
    throw Error(POLYLOCK_NOT_OWNER, std::string(what) + " was already released or moved from: it holds nothing");
}
inline void check(polylock_status status) {
    if (status != POLYLOCK_OK) {
        const char *message = polylock_last_error();
        Error error(status, message ? message : "");
        error.take_details();
        throw error;
    }
}
struct ClientFree {
    void operator()(polylock_client *client) const noexcept { polylock_client_free(client); }
};
struct LockFree {
    void operator()(polylock_lock *lock) const noexcept { polylock_lock_free(lock); }
};
struct RwLockFree {
    void operator()(polylock_rwlock *rw) const noexcept { polylock_rwlock_free(rw); }
};
struct SemaphoreFree {
    void operator()(polylock_semaphore *semaphore) const noexcept { polylock_semaphore_free(semaphore); }
};
/** Bytes the C library handed over, as a std::string (freed either way). */
inline std::string take_bytes(polylock_bytes &bytes) {
    struct Free {
        polylock_bytes *bytes;
        ~Free() { polylock_bytes_free(bytes); }
    } free_after{&bytes};
    return bytes.data ? std::string(reinterpret_cast<const char *>(bytes.data), bytes.len) : std::string();
}
inline const std::uint8_t *data_of(const std::string &bytes) noexcept {
    return reinterpret_cast<const std::uint8_t *>(bytes.data());
}
struct SegmentFree {
    void operator()(polylock_segment *segment) const noexcept { polylock_segment_free(segment); }
};
struct LeasedSnowflakeFree {
    void operator()(polylock_leased_snowflake *generator) const noexcept { polylock_leased_snowflake_free(generator); }
};
struct ValueFree {
    void operator()(polylock_value *value) const noexcept { polylock_value_free(value); }
};
struct ValueWatchFree {
    void operator()(polylock_watch *watch) const noexcept { polylock_watch_free(watch); }
};
struct IdempotencyFree {
    void operator()(polylock_idempotency *keys) const noexcept { polylock_idempotency_free(keys); }
};
struct TicketFree {
    void operator()(polylock_ticket *ticket) const noexcept { polylock_ticket_free(ticket); }
};
struct MultiLockFree {
    void operator()(polylock_multi_lock *locks) const noexcept { polylock_multi_lock_free(locks); }
};
struct MultiHoldFree {
    void operator()(polylock_multi_hold *hold) const noexcept { polylock_multi_hold_free(hold); }
};
struct SnowflakeFree {
    void operator()(polylock_snowflake *generator) const noexcept { polylock_snowflake_free(generator); }
};
struct ElectionFree {
    void operator()(polylock_election *election) const noexcept { polylock_election_free(election); }
};
struct LeadershipFree {
    void operator()(polylock_leadership *leadership) const noexcept { polylock_leadership_free(leadership); }
};
struct ObserverFree {
    void operator()(polylock_observer *observer) const noexcept { polylock_observer_free(observer); }
};
struct LatchFree {
    void operator()(polylock_latch *latch) const noexcept { polylock_latch_free(latch); }
};
}  // namespace detail

/** A lock handle: cheap, holds nothing by itself; acquire with a Guard or by hand. */
class Lock {
  public:
    explicit Lock(polylock_lock *raw) : raw_(raw) {}

    /** Acquire for this thread; returns the fencing token. Throws Error (TIMEOUT, ...). */
    std::uint64_t acquire(std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        detail::check(polylock_lock_acquire(raw_.get(), wait_ms, lease_ms, &token));
        return token;
    }
    /** Try once: true and the token if acquired, false if someone else holds it. */
    bool try_acquire(std::uint64_t *token = nullptr, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        polylock_status status = polylock_lock_acquire(raw_.get(), 0, lease_ms, token);
        if (status == POLYLOCK_TIMEOUT) return false;
        detail::check(status);
        return true;
    }
    /** The try form with a wait: the token, or std::nullopt when `wait_ms` ran out (0: try
     *  once) while someone else held it. Other failures throw (INVALID_ARGUMENT, ...). */
    std::optional<std::uint64_t> try_acquire_for(std::int64_t wait_ms,
                                                 std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        polylock_status status = polylock_lock_acquire(raw_.get(), wait_ms, lease_ms, &token);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return token;
    }
    void release() { detail::check(polylock_lock_release(raw_.get())); }
    /** Whether anyone, of any client or language, holds the lock in the store right now
     *  (is_held() is only this thread's own hold). */
    bool is_locked() const {
        bool locked = false;
        detail::check(polylock_lock_is_locked(raw_.get(), &locked));
        return locked;
    }
    bool is_held() const noexcept { return polylock_lock_is_held(raw_.get()); }
    bool is_lost() const noexcept { return polylock_lock_is_lost(raw_.get()); }
    std::uint32_t hold_count() const noexcept { return polylock_lock_hold_count(raw_.get()); }
    polylock_lock *get() const noexcept { return raw_.get(); }

  private:
    std::unique_ptr<polylock_lock, detail::LockFree> raw_;
};

/** One acquisition, given back when the guard goes out of scope. */
class Guard {
  public:
    explicit Guard(Lock &lock, std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG)
        : lock_(&lock), token_(lock.acquire(wait_ms, lease_ms)) {}
    /** The try form: a guard, or std::nullopt when `wait_ms` ran out (0: try once). */
    static std::optional<Guard> try_acquire(Lock &lock, std::int64_t wait_ms = 0,
                                            std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::optional<std::uint64_t> token = lock.try_acquire_for(wait_ms, lease_ms);
        if (!token) return std::nullopt;
        return Guard(&lock, *token);
    }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;
    Guard(Guard &&other) noexcept : lock_(std::exchange(other.lock_, nullptr)), token_(other.token_) {}
    Guard &operator=(Guard &&) = delete;
    /** Releases; errors (a lost lock) cannot be thrown from here: call release() to see them. */
    ~Guard() {
        if (lock_) polylock_lock_release(lock_->get());
    }

    std::uint64_t fencing_token() const noexcept { return token_; }
    bool is_lost() const noexcept { return lock_ && lock_->is_lost(); }
    /** The lost signal: return once the hold is lost (lease ran out, renewal failed, broken
     *  by an operator, client closed); throws TIMEOUT after `timeout_ms` (POLYLOCK_WAIT_FOREVER:
     *  no limit). Call it on the thread that holds it (NOT_OWNER otherwise). */
    void wait_lost(std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) const {
        if (!lock_) detail::released_already("this guard");
        detail::check(polylock_lock_wait_lost(lock_->get(), timeout_ms, nullptr));
    }
    /** Release now and throw if that failed (POLYLOCK_LOST: someone else may hold it). */
    void release() {
        Lock *lock = std::exchange(lock_, nullptr);
        if (!lock) detail::released_already("this guard");
        lock->release();
    }

  private:
    Guard(Lock *lock, std::uint64_t token) : lock_(lock), token_(token) {}
    Lock *lock_;
    std::uint64_t token_;
};

/** A read-write lock handle; ReadGuard and WriteGuard hold its sides for this thread. */
class RwLock {
  public:
    explicit RwLock(polylock_rwlock *raw) : raw_(raw) {}
    std::uint64_t acquire_read(std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        detail::check(polylock_rwlock_read_acquire(raw_.get(), wait_ms, lease_ms, &token));
        return token;
    }
    std::uint64_t acquire_write(std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        detail::check(polylock_rwlock_write_acquire(raw_.get(), wait_ms, lease_ms, &token));
        return token;
    }
    /** The try forms: the token, or std::nullopt when `wait_ms` ran out (0: try once). */
    std::optional<std::uint64_t> try_acquire_read_for(std::int64_t wait_ms,
                                                      std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        polylock_status status = polylock_rwlock_read_acquire(raw_.get(), wait_ms, lease_ms, &token);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return token;
    }
    std::optional<std::uint64_t> try_acquire_write_for(std::int64_t wait_ms,
                                                       std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t token = 0;
        polylock_status status = polylock_rwlock_write_acquire(raw_.get(), wait_ms, lease_ms, &token);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return token;
    }
    void release_read() { detail::check(polylock_rwlock_read_release(raw_.get())); }
    void release_write() { detail::check(polylock_rwlock_write_release(raw_.get())); }
    polylock_rwlock *get() const noexcept { return raw_.get(); }

  private:
    std::unique_ptr<polylock_rwlock, detail::RwLockFree> raw_;
};

/** One hold of a side of a read-write lock, given back when the guard goes out of scope. */
template <bool Write>
class RwGuard {
  public:
    explicit RwGuard(RwLock &rw, std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG)
        : rw_(&rw), token_(Write ? rw.acquire_write(wait_ms, lease_ms) : rw.acquire_read(wait_ms, lease_ms)) {}
    /** The try form: a guard, or std::nullopt when `wait_ms` ran out (0: try once). */
    static std::optional<RwGuard> try_acquire(RwLock &rw, std::int64_t wait_ms = 0,
                                              std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::optional<std::uint64_t> token =
            Write ? rw.try_acquire_write_for(wait_ms, lease_ms) : rw.try_acquire_read_for(wait_ms, lease_ms);
        if (!token) return std::nullopt;
        return RwGuard(&rw, *token);
    }
    RwGuard(const RwGuard &) = delete;
    RwGuard &operator=(const RwGuard &) = delete;
    RwGuard(RwGuard &&other) noexcept : rw_(std::exchange(other.rw_, nullptr)), token_(other.token_) {}
    RwGuard &operator=(RwGuard &&) = delete;
    ~RwGuard() {
        if (rw_) Write ? polylock_rwlock_write_release(rw_->get()) : polylock_rwlock_read_release(rw_->get());
    }
    std::uint64_t fencing_token() const noexcept { return token_; }
    /** Release now and throw if that failed. */
    void release() {
        RwLock *rw = std::exchange(rw_, nullptr);
        if (!rw) detail::released_already("this guard");
        Write ? rw->release_write() : rw->release_read();
    }

  private:
    RwGuard(RwLock *rw, std::uint64_t token) : rw_(rw), token_(token) {}
    RwLock *rw_;
    std::uint64_t token_;
};
using ReadGuard = RwGuard<false>;
using WriteGuard = RwGuard<true>;

/** A semaphore handle; a Permit holds one of its permits. */
class Semaphore {
  public:
    explicit Semaphore(polylock_semaphore *raw) : raw_(raw) {}
    polylock_semaphore *get() const noexcept { return raw_.get(); }

  private:
    std::unique_ptr<polylock_semaphore, detail::SemaphoreFree> raw_;
};

/** One permit, given back when it goes out of scope (from any thread it was moved to). */
class Permit {
  public:
    explicit Permit(Semaphore &semaphore, std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG)
        : semaphore_(&semaphore) {
        detail::check(polylock_semaphore_acquire(semaphore.get(), wait_ms, lease_ms, &id_, &token_));
    }
    /** The try form: a permit, or std::nullopt when `wait_ms` ran out (0: try once). */
    static std::optional<Permit> try_acquire(Semaphore &semaphore, std::int64_t wait_ms = 0,
                                             std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        std::uint64_t id = 0, token = 0;
        polylock_status status = polylock_semaphore_acquire(semaphore.get(), wait_ms, lease_ms, &id, &token);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return Permit(&semaphore, id, token);
    }
    Permit(const Permit &) = delete;
    Permit &operator=(const Permit &) = delete;
    Permit(Permit &&other) noexcept
        : semaphore_(std::exchange(other.semaphore_, nullptr)), id_(other.id_), token_(other.token_) {}
    Permit &operator=(Permit &&) = delete;
    ~Permit() {
        if (semaphore_) polylock_semaphore_release(semaphore_->get(), id_);
    }
    std::uint64_t id() const noexcept { return id_; }
    std::uint64_t fencing_token() const noexcept { return token_; }
    /** Release now and throw if that failed (POLYLOCK_LOST: its lease ran out). */
    void release() {
        Semaphore *semaphore = std::exchange(semaphore_, nullptr);
        if (!semaphore) detail::released_already("this permit");
        detail::check(polylock_semaphore_release(semaphore->get(), id_));
    }

  private:
    Permit(Semaphore *semaphore, std::uint64_t id, std::uint64_t token)
        : semaphore_(semaphore), id_(id), token_(token) {}
    Semaphore *semaphore_;
    std::uint64_t id_ = 0;
    std::uint64_t token_ = 0;
};

/** Leaf-style segment IDs of one tag. */
class Segment {
  public:
    explicit Segment(polylock_segment *raw) : raw_(raw) {}
    std::uint64_t next_id() {
        std::uint64_t id = 0;
        detail::check(polylock_segment_next_id(raw_.get(), &id));
        return id;
    }
    std::vector<std::uint64_t> next_ids(std::size_t count) {
        std::vector<std::uint64_t> ids(count);
        detail::check(polylock_segment_next_ids(raw_.get(), count, ids.data()));
        return ids;
    }

  private:
    std::unique_ptr<polylock_segment, detail::SegmentFree> raw_;
};

/** A Snowflake generator on a worker id leased from the backend; gives it back when destroyed. */
class LeasedSnowflake {
  public:
    explicit LeasedSnowflake(polylock_leased_snowflake *raw) : raw_(raw) {}
    std::uint64_t next() {
        std::uint64_t id = 0;
        detail::check(polylock_leased_snowflake_next(raw_.get(), &id));
        return id;
    }
    std::vector<std::uint64_t> next_ids(std::size_t count) {
        std::vector<std::uint64_t> ids(count);
        detail::check(polylock_leased_snowflake_next_ids(raw_.get(), count, ids.data()));
        return ids;
    }
    /** The worker id held now (throws LOST between a loss and the next lease). */
    std::uint64_t worker_id() {
        std::uint64_t worker = 0;
        detail::check(polylock_leased_snowflake_worker(raw_.get(), &worker, nullptr));
        return worker;
    }
    void close() { detail::check(polylock_leased_snowflake_close(raw_.get())); }

  private:
    std::unique_ptr<polylock_leased_snowflake, detail::LeasedSnowflakeFree> raw_;
};

/** A value as Value::get() found it. */
struct Versioned {
    std::string value;
    std::uint64_t version = 0;
    std::optional<std::uint64_t> fencing_token;
};

namespace detail {
/** A state the C library filled in: nullopt when there is none (its bytes freed either way). */
inline std::optional<Versioned> take_versioned(polylock_versioned &found) {
    std::string value = take_bytes(found.value);
    if (!found.found) return std::nullopt;
    Versioned result;
    result.value = std::move(value);
    result.version = found.version;
    if (found.fenced) result.fencing_token = found.fencing_token;
    return result;
}
}  // namespace detail

/** How ValueWatch::changed() ended: `outcome` says which (POLYLOCK_WATCH_CHANGED,
 *  _DELETED, _NO_CHANGE, _CLOSED); `value` is the new state after a change, else nullopt. */
struct WatchStep {
    polylock_watch_outcome outcome = POLYLOCK_WATCH_CLOSED;
    std::optional<Versioned> value;  // CHANGED
};

/** The changes of one value, from Value::watch(). Any thread may wait on it (one wait at a
 *  time, the others queue); close() from another thread ends a wait in progress. Closed and
 *  freed when destroyed (no wait may still run on it then). */
class ValueWatch {
  public:
    explicit ValueWatch(polylock_watch *raw) : raw_(raw) {}
    /** The next state after the one this watch last gave, waiting at most `wait_ms`
     *  (POLYLOCK_WAIT_FOREVER: no limit; 0: only what is there): a change, a delete, no change
     *  within the wait (nothing is missed: the next call gives it), or closed. */
    WatchStep changed(std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER) {
        polylock_watch_step step;
        detail::check(polylock_watch_changed(raw_.get(), wait_ms, nullptr, &step));
        WatchStep result;
        result.outcome = step.outcome;
        result.value = detail::take_versioned(step.state);
        return result;
    }
    /** The state this watch last gave (the value when it started, or the last change);
     *  nullopt when there was none or it was deleted. Answers at once, also during a wait. */
    std::optional<Versioned> current() const {
        polylock_versioned found;
        detail::check(polylock_watch_current(raw_.get(), &found));
        return detail::take_versioned(found);
    }
    /** End the watch, from any thread: a changed() in progress returns POLYLOCK_WATCH_CLOSED,
     *  as every later one does. Closing twice is harmless. */
    void close() { detail::check(polylock_watch_close(raw_.get())); }
    bool is_closed() const noexcept { return polylock_watch_is_closed(raw_.get()); }

  private:
    std::unique_ptr<polylock_watch, detail::ValueWatchFree> raw_;
};

/** A named versioned value. Refused writes throw Error with status CONFLICT (current value
 *  and version in the error) or FENCED (the winning token in the error). */
class Value {
  public:
    explicit Value(polylock_value *raw) : raw_(raw) {}
    std::optional<Versioned> get() {
        polylock_versioned found;
        detail::check(polylock_value_get(raw_.get(), &found));
        return detail::take_versioned(found);
    }
    std::uint64_t create(const std::string &bytes) {
        std::uint64_t version = 0;
        detail::check(polylock_value_create(raw_.get(), detail::data_of(bytes), bytes.size(), &version));
        return version;
    }
    std::uint64_t compare_and_set(std::uint64_t version, const std::string &bytes) {
        std::uint64_t written = 0;
        detail::check(
            polylock_value_compare_and_set(raw_.get(), version, detail::data_of(bytes), bytes.size(), &written));
        return written;
    }
    void remove(std::uint64_t version) { detail::check(polylock_value_delete(raw_.get(), version)); }
    std::uint64_t write_fenced(std::uint64_t token, const std::string &bytes) {
        std::uint64_t written = 0;
        detail::check(polylock_value_write_fenced(raw_.get(), token, detail::data_of(bytes), bytes.size(), &written));
        return written;
    }
    /** Start watching the value: the watch's current() is the value now. */
    ValueWatch watch() {
        polylock_watch *raw = nullptr;
        detail::check(polylock_value_watch(raw_.get(), &raw));
        return ValueWatch(raw);
    }

  private:
    std::unique_ptr<polylock_value, detail::ValueFree> raw_;
};

/** One attempt's claim on an idempotency key: complete() or abandon() it. Destroying it
 *  does neither (the attempt is taken over after its in-progress TTL). */
class Ticket {
  public:
    explicit Ticket(polylock_ticket *raw) : raw_(raw) {}
    std::uint64_t token() const {
        std::uint64_t token = 0;
        detail::check(polylock_ticket_token(raw_.get(), &token));
        return token;
    }
    void complete(const std::string &response) {
        detail::check(polylock_ticket_complete(raw_.get(), detail::data_of(response), response.size()));
    }
    void abandon() { detail::check(polylock_ticket_abandon(raw_.get())); }
    void extend() { detail::check(polylock_ticket_extend(raw_.get())); }

  private:
    std::unique_ptr<polylock_ticket, detail::TicketFree> raw_;
};

/** What Idempotency::begin() found: a ticket, a stored response, or why not. */
struct Begin {
    polylock_begin_outcome outcome = POLYLOCK_BEGIN_MISMATCH;
    std::optional<Ticket> ticket;  // ACQUIRED
    std::string response;          // REPLAY
    std::uint64_t retry_after_ms = 0;  // IN_PROGRESS
};

/** Idempotency keys of one namespace, step by step. */
class Idempotency {
  public:
    explicit Idempotency(polylock_idempotency *raw) : raw_(raw) {}
    Begin begin(const std::string &key, const std::string &fingerprint) {
        polylock_begin found;
        detail::check(polylock_idempotency_begin(raw_.get(), key.c_str(), detail::data_of(fingerprint),
                                                 fingerprint.size(), &found));
        Begin result;
        result.outcome = found.outcome;
        if (found.ticket) result.ticket.emplace(found.ticket);
        result.response = detail::take_bytes(found.response);
        result.retry_after_ms = found.retry_after_ms;
        return result;
    }
    /** Do `work` once for `key` (the core's run): call it if this call claims the key and
     *  store what it returns for later runs to replay, or return the response stored by the
     *  attempt that finished (in any language). An attempt under way is waited for up to
     *  `wait_ms` (POLYLOCK_WAIT_FOREVER: until it ends; 0: not at all, Error IN_PROGRESS).
     *  An exception from `work` abandons the key (a retry runs it again) and is rethrown;
     *  a key used with another fingerprint throws Error MISMATCH. `work` runs on this thread
     *  and may use polylock. */
    std::string run(const std::string &key, const std::string &fingerprint, std::int64_t wait_ms,
                    const std::function<std::string()> &work) {
        RunContext context{&work, nullptr};
        polylock_bytes out{nullptr, 0};
        polylock_status status = polylock_idempotency_run(raw_.get(), key.c_str(), detail::data_of(fingerprint),
                                                          fingerprint.size(), wait_ms, &run_work, &context, &out);
        if (context.thrown) std::rethrow_exception(context.thrown);
        detail::check(status);
        return detail::take_bytes(out);
    }

  private:
    struct RunContext {
        const std::function<std::string()> *work;
        std::exception_ptr thrown;
    };
    /** The C callback: no exception may leave it, so it keeps one for run() to rethrow. */
    static std::int32_t run_work(void *user_data, polylock_work_response *response) noexcept {
        RunContext *context = static_cast<RunContext *>(user_data);
        try {
            const std::string produced = (*context->work)();
            return polylock_work_response_set(response, detail::data_of(produced), produced.size());
        } catch (...) {
            context->thrown = std::current_exception();
            return POLYLOCK_INTERNAL;  // a failure: the key is abandoned
        }
    }
    std::unique_ptr<polylock_idempotency, detail::IdempotencyFree> raw_;
};

/** Several locks of one client; a MultiGuard holds them all. */
class MultiLock {
  public:
    explicit MultiLock(polylock_multi_lock *raw) : raw_(raw) {}
    polylock_multi_lock *get() const noexcept { return raw_.get(); }

  private:
    std::unique_ptr<polylock_multi_lock, detail::MultiLockFree> raw_;
};

/** Every part of a multi-lock, taken under one wait, given back when it goes out of scope
 *  (from any thread it was moved to). */
class MultiGuard {
  public:
    explicit MultiGuard(MultiLock &locks, std::int64_t wait_ms = POLYLOCK_WAIT_FOREVER, std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        polylock_multi_hold *raw = nullptr;
        detail::check(polylock_multi_lock_acquire(locks.get(), wait_ms, lease_ms, nullptr, &raw));
        raw_.reset(raw);
    }
    /** The try form: every part, or std::nullopt (none held) when `wait_ms` ran out (0: try once). */
    static std::optional<MultiGuard> try_acquire(MultiLock &locks, std::int64_t wait_ms = 0,
                                                 std::int64_t lease_ms = POLYLOCK_LEASE_WATCHDOG) {
        polylock_multi_hold *raw = nullptr;
        polylock_status status = polylock_multi_lock_acquire(locks.get(), wait_ms, lease_ms, nullptr, &raw);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return MultiGuard(raw);
    }
    ~MultiGuard() {
        if (raw_) polylock_multi_hold_release(raw_.get());
    }
    MultiGuard(MultiGuard &&) noexcept = default;
    MultiGuard(const MultiGuard &) = delete;
    MultiGuard &operator=(const MultiGuard &) = delete;
    MultiGuard &operator=(MultiGuard &&) = delete;
    std::size_t size() const noexcept { return polylock_multi_hold_count(raw_.get()); }
    /** Part i's name (in the canonical order) and fencing token (none on RedLock). */
    std::pair<std::string, std::optional<std::uint64_t>> part(std::size_t i) const {
        const char *name = nullptr;
        std::uint64_t token = 0;
        bool has_token = false;
        detail::check(polylock_multi_hold_part(raw_.get(), i, &name, &token, &has_token));
        return {std::string(name), has_token ? std::optional<std::uint64_t>(token) : std::nullopt};
    }
    bool is_lost() const noexcept { return polylock_multi_hold_is_lost(raw_.get()); }
    /** Release now and throw if that failed (POLYLOCK_LOST: a part was lost). */
    void release() {
        if (!raw_) detail::released_already("this multi-lock hold");
        auto raw = std::move(raw_);
        detail::check(polylock_multi_hold_release(raw.get()));
    }

  private:
    explicit MultiGuard(polylock_multi_hold *raw) : raw_(raw) {}
    std::unique_ptr<polylock_multi_hold, detail::MultiHoldFree> raw_;
};

/** An election's leader: the value it campaigned with or last proclaimed, and its term. */
struct Leader {
    std::string value;
    std::uint64_t term = 0;
};

namespace detail {
/** A leader the C library filled in: nullopt when nobody leads (its bytes freed either way). */
inline std::optional<Leader> take_leader(polylock_leader &found) {
    std::string value = take_bytes(found.value);
    if (!found.found) return std::nullopt;
    return Leader{std::move(value), found.term};
}
}  // namespace detail

/** One won campaign: leads until resign(), a loss, or the end of its scope (which resigns;
 *  any thread may use it). */
class Leadership {
  public:
    explicit Leadership(polylock_leadership *raw) : raw_(raw) {}
    ~Leadership() {
        if (raw_) polylock_leadership_resign(raw_.get());
    }
    Leadership(Leadership &&) noexcept = default;
    Leadership(const Leadership &) = delete;
    Leadership &operator=(const Leadership &) = delete;
    Leadership &operator=(Leadership &&) = delete;
    /** The term: a fencing token greater than every earlier leader's. */
    std::uint64_t term() const noexcept { return polylock_leadership_term(raw_.get()); }
    /** True until resigned or lost; once false, never true again. */
    bool is_leader() const noexcept { return polylock_leadership_is_leader(raw_.get()); }
    bool is_lost() const noexcept { return polylock_leadership_is_lost(raw_.get()); }
    /** ZooKeeper's SUSPENDED: the connection is down, leadership not sure. */
    bool is_suspended() const noexcept { return polylock_leadership_is_suspended(raw_.get()); }
    std::string value() const {
        polylock_bytes bytes{nullptr, 0};
        detail::check(polylock_leadership_value(raw_.get(), &bytes));
        return detail::take_bytes(bytes);
    }
    /** A new value, same term; throws LOST if this is no longer the leader. */
    void proclaim(const std::string &value) {
        detail::check(polylock_leadership_proclaim(raw_.get(), detail::data_of(value), value.size()));
    }
    /** Wait until lost (true) or resigned (false); throws TIMEOUT after `timeout_ms` (POLYLOCK_WAIT_FOREVER: forever). */
    bool wait_lost(std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) const {
        bool lost = false;
        detail::check(polylock_leadership_wait_lost(raw_.get(), timeout_ms, nullptr, &lost));
        return lost;
    }
    /** Stop leading now and throw if that failed (LOST: it had been lost before). */
    void resign() { detail::check(polylock_leadership_resign(raw_.get())); }

  private:
    std::unique_ptr<polylock_leadership, detail::LeadershipFree> raw_;
};

/** The leader changes of one election; stops observing when destroyed. */
class Observer {
  public:
    explicit Observer(polylock_observer *raw) : raw_(raw) {}
    /** The leader now on the first call, then after each change (nullopt: nobody leads);
     *  throws TIMEOUT when nothing changed within `timeout_ms` (POLYLOCK_WAIT_FOREVER: no limit). */
    std::optional<Leader> next(std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) {
        polylock_leader found;
        detail::check(polylock_observer_next(raw_.get(), timeout_ms, nullptr, &found));
        return detail::take_leader(found);
    }

  private:
    std::unique_ptr<polylock_observer, detail::ObserverFree> raw_;
};

/** A named leader election. */
class Election {
  public:
    explicit Election(polylock_election *raw) : raw_(raw) {}
    /** Campaign until leading; throws TIMEOUT after `timeout_ms` (POLYLOCK_WAIT_FOREVER: no limit,
     *  0: one try), leaving no candidacy behind. */
    Leadership campaign(const std::string &value, std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) {
        polylock_leadership *raw = nullptr;
        detail::check(
            polylock_election_campaign(raw_.get(), detail::data_of(value), value.size(), timeout_ms, nullptr, &raw));
        return Leadership(raw);
    }
    /** The try form of campaign(): std::nullopt when `timeout_ms` ran out (0: one try) while
     *  another candidate led, leaving no candidacy behind. */
    std::optional<Leadership> try_campaign(const std::string &value, std::int64_t timeout_ms = 0) {
        polylock_leadership *raw = nullptr;
        polylock_status status =
            polylock_election_campaign(raw_.get(), detail::data_of(value), value.size(), timeout_ms, nullptr, &raw);
        if (status == POLYLOCK_TIMEOUT) return std::nullopt;
        detail::check(status);
        return std::optional<Leadership>(std::in_place, raw);
    }
    /** The current leader, nullopt when nobody leads. */
    std::optional<Leader> leader() {
        polylock_leader found;
        detail::check(polylock_election_leader(raw_.get(), &found));
        return detail::take_leader(found);
    }
    Observer observe() {
        polylock_observer *raw = nullptr;
        detail::check(polylock_election_observe(raw_.get(), &raw));
        return Observer(raw);
    }

  private:
    std::unique_ptr<polylock_election, detail::ElectionFree> raw_;
};

/** A named countdown latch (Redisson's RCountDownLatch on Redis). */
class Latch {
  public:
    explicit Latch(polylock_latch *raw) : raw_(raw) {}
    /** Set the count if the latch is open; whether it was set. */
    bool try_set_count(std::uint64_t count) {
        bool set = false;
        detail::check(polylock_latch_try_set_count(raw_.get(), count, &set));
        return set;
    }
    void count_down() { detail::check(polylock_latch_count_down(raw_.get())); }
    std::uint64_t count() {
        std::uint64_t count = 0;
        detail::check(polylock_latch_count(raw_.get(), &count));
        return count;
    }
    /** The try form: true once zero is reached, false when `timeout_ms` ran out
     *  (POLYLOCK_WAIT_FOREVER: no limit). */
    bool await(std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) {
        bool reached = false;
        detail::check(polylock_latch_await(raw_.get(), timeout_ms, nullptr, &reached));
        return reached;
    }
    /** The waiting form: return once zero is reached, throw Error kind TIMEOUT when
     *  `timeout_ms` ran out first (POLYLOCK_WAIT_FOREVER: no limit, 0: only a look). */
    void await_zero(std::int64_t timeout_ms = POLYLOCK_WAIT_FOREVER) {
        detail::check(polylock_latch_await_zero(raw_.get(), timeout_ms, nullptr));
    }

  private:
    std::unique_ptr<polylock_latch, detail::LatchFree> raw_;
};

/** A connection to one backend, shareable between threads. */
class Client {
  public:
    /** Connect; an empty URL means `$POLYLOCK_URL`, else `sqlite://polylock.db`. */
    explicit Client(const std::string &url = "") {
        polylock_client *raw = nullptr;
        detail::check(polylock_connect(url.empty() ? nullptr : url.c_str(), &raw));
        raw_.reset(raw);
    }
    Lock lock(const std::string &name, const std::string &kind = "reentrant") {
        polylock_lock *raw = nullptr;
        detail::check(polylock_client_lock_kind(raw_.get(), name.c_str(), kind.c_str(), &raw));
        return Lock(raw);
    }
    RwLock rw_lock(const std::string &name) {
        polylock_rwlock *raw = nullptr;
        detail::check(polylock_client_rwlock(raw_.get(), name.c_str(), &raw));
        return RwLock(raw);
    }
    Semaphore semaphore(const std::string &name, std::uint32_t permits) {
        polylock_semaphore *raw = nullptr;
        detail::check(polylock_client_semaphore(raw_.get(), name.c_str(), permits, &raw));
        return Semaphore(raw);
    }
    Segment segment(const std::string &tag, std::uint64_t step = 0) {
        polylock_segment *raw = nullptr;
        detail::check(polylock_segment_open(raw_.get(), tag.c_str(), step, &raw));
        return Segment(raw);
    }
    /** A Snowflake generator on a leased worker id (`worker_id` negative: any free one). */
    LeasedSnowflake snowflake(std::int64_t worker_id = -1) {
        polylock_leased_snowflake *raw = nullptr;
        detail::check(polylock_snowflake_lease(raw_.get(), worker_id, &raw));
        return LeasedSnowflake(raw);
    }
    Value value(const std::string &name) {
        polylock_value *raw = nullptr;
        detail::check(polylock_client_value(raw_.get(), name.c_str(), &raw));
        return Value(raw);
    }
    /** Idempotency keys of `name_space` (0 ms: the defaults, 24 h and 60 s). */
    Idempotency idempotency(const std::string &name_space, std::uint64_t retention_ms = 0,
                            std::uint64_t in_progress_ttl_ms = 0) {
        polylock_idempotency *raw = nullptr;
        detail::check(
            polylock_client_idempotency(raw_.get(), name_space.c_str(), retention_ms, in_progress_ttl_ms, &raw));
        return Idempotency(raw);
    }
    MultiLock multi_lock(const std::vector<std::string> &names) {
        std::vector<const char *> pointers;
        for (const auto &name : names) pointers.push_back(name.c_str());
        polylock_multi_lock *raw = nullptr;
        detail::check(polylock_client_multi_lock(raw_.get(), pointers.data(), pointers.size(), &raw));
        return MultiLock(raw);
    }
    /** A leader election (throws UNSUPPORTED on RedLock). */
    Election election(const std::string &name) {
        polylock_election *raw = nullptr;
        detail::check(polylock_client_election(raw_.get(), name.c_str(), &raw));
        return Election(raw);
    }
    /** A countdown latch (throws UNSUPPORTED on RedLock). */
    Latch latch(const std::string &name) {
        polylock_latch *raw = nullptr;
        detail::check(polylock_client_latch(raw_.get(), name.c_str(), &raw));
        return Latch(raw);
    }
    /** This client's metrics as JSON text (the shape of polylock::metrics_json()). */
    std::string metrics_json() {
        polylock_bytes bytes{nullptr, 0};
        detail::check(polylock_client_metrics_json(raw_.get(), &bytes));
        return detail::take_bytes(bytes);
    }
    /** Who holds the lock `name` (any holder's), as the JSON object of polylock_client_status_json()
     *  (`name`, `kind`, `backend`, `held`, `holder`, `fencing_token`, ...). `kind` empty:
     *  the backend's default. */
    std::string status_json(const std::string &name, const std::string &kind = "") {
        polylock_bytes bytes{nullptr, 0};
        detail::check(polylock_client_status_json(raw_.get(), name.c_str(), kind.empty() ? nullptr : kind.c_str(),
                                                  &bytes));
        return detail::take_bytes(bytes);
    }
    /** The locks under `prefix`, sorted by name, as the JSON array of polylock_client_list_json()
     *  (`[{"name", "kind", "held"}, ...]`). */
    std::string list_json(const std::string &prefix = "") {
        polylock_bytes bytes{nullptr, 0};
        detail::check(polylock_client_list_json(raw_.get(), prefix.c_str(), &bytes));
        return detail::take_bytes(bytes);
    }
    /** Break the lock `name` whoever holds it (dangerous: the holder is not stopped); whether
     *  there was a hold. `kind` empty: the backend's default. */
    bool force_unlock(const std::string &name, const std::string &kind = "") {
        bool removed = false;
        detail::check(polylock_client_force_unlock(raw_.get(), name.c_str(), kind.empty() ? nullptr : kind.c_str(),
                                                   &removed));
        return removed;
    }
    void close() { detail::check(polylock_client_close(raw_.get())); }
    polylock_client *get() const noexcept { return raw_.get(); }

    /** A client of the RedLock backend over independent Redis servers (`host:port` or
     *  `redis://[user:password@]host:port`); token locks only, no fencing tokens. */
    static Client redlock(const std::vector<std::string> &servers) {
        std::vector<const char *> pointers;
        for (const auto &server : servers) pointers.push_back(server.c_str());
        polylock_client *raw = nullptr;
        detail::check(polylock_redlock_connect(pointers.data(), pointers.size(), &raw));
        return Client(raw);
    }

  private:
    explicit Client(polylock_client *raw) : raw_(raw) {}
    std::unique_ptr<polylock_client, detail::ClientFree> raw_;
};

/** The RedLock lock `name` over independent Redis servers, on a client of its own that the
 *  Lock closes when it is destroyed. Its acquisitions' numbers are no fencing tokens. */
inline Lock redlock(const std::vector<std::string> &servers, const std::string &name) {
    std::vector<const char *> pointers;
    for (const auto &server : servers) pointers.push_back(server.c_str());
    polylock_lock *raw = nullptr;
    detail::check(polylock_redlock(pointers.data(), pointers.size(), name.c_str(), &raw));
    return Lock(raw);
}

/** One log record; the strings are copies, the logger may keep them. */
struct LogRecord {
    polylock_log_level level;
    std::string target;
    std::string message;
    /** The message and the fields as `key=value`. */
    std::string line;
    /** The whole record as JSON, the fields under "fields". */
    std::string json;
};

/** Receives log records on the library's threads: thread-safe, quick, never blocking. */
using Logger = std::function<void(const LogRecord &)>;

namespace detail {
/** The logger in use. Records hold the lock shared while the logger runs (so loggers on
 *  several threads run at once); set_logger holds it exclusively to swap, so that once it
 *  returns the previous logger is never called again. */
struct LoggerSlot {
    std::shared_mutex mu;
    Logger logger;
};
inline LoggerSlot &logger_slot() {
    static LoggerSlot slot;
    return slot;
}
inline Logger swap_logger(Logger next) {
    std::unique_lock<std::shared_mutex> hold(logger_slot().mu);
    logger_slot().logger.swap(next);
    return next;
}
inline void log_to_logger(void *, const polylock_log_record *record) noexcept {
    try {
        std::shared_lock<std::shared_mutex> hold(logger_slot().mu);
        if (logger_slot().logger) {
            logger_slot().logger(LogRecord{record->level, record->target, record->message, record->line, record->json});
        }
    } catch (...) {
        // An exception must not cross into the library: the record is lost, not the caller.
    }
}
}  // namespace detail

/** Hand polylock's log records at `level` and above ("off", "error", "warn", "info",
 *  "debug", "trace") to `logger`, in place of any earlier one; an empty logger stops. Once
 *  it returns, the previous logger is not called again (so never call it from inside a
 *  logger). Throws Error (INVALID_ARGUMENT) for an unknown level name, changing nothing. */
inline void set_logger(Logger logger, const std::string &level = "warn") {
    if (!logger) {
        detail::check(polylock_set_log_callback(nullptr, nullptr, nullptr));
        detail::swap_logger(nullptr);
        return;
    }
    Logger previous = detail::swap_logger(std::move(logger));
    polylock_status status = polylock_set_log_callback(&detail::log_to_logger, nullptr, level.c_str());
    if (status != POLYLOCK_OK) detail::swap_logger(std::move(previous));
    detail::check(status);
}

/** Change the level records are handed on at. Throws Error (INVALID_ARGUMENT) for a bad name. */
inline void set_log_level(const std::string &level) { detail::check(polylock_set_log_level(level.c_str())); }

/** The process's metrics (every client, per backend and lock kind) as JSON text. */
inline std::string metrics_json() {
    polylock_bytes bytes{nullptr, 0};
    detail::check(polylock_metrics_json(&bytes));
    return detail::take_bytes(bytes);
}

/** The process's metrics in Prometheus' text format. */
inline std::string prometheus_text() {
    polylock_bytes bytes{nullptr, 0};
    detail::check(polylock_prometheus_text(&bytes));
    return detail::take_bytes(bytes);
}

/** Count operations (on by default) or not, for the whole process. */
inline void set_metrics_enabled(bool enabled) noexcept { polylock_set_metrics_enabled(enabled); }

/** A Snowflake ID generator for one worker id. */
class Snowflake {
  public:
    explicit Snowflake(std::uint16_t worker) {
        polylock_snowflake *raw = nullptr;
        detail::check(polylock_snowflake_new(worker, &raw));
        raw_.reset(raw);
    }
    std::uint64_t next() {
        std::uint64_t id = 0;
        detail::check(polylock_snowflake_next(raw_.get(), &id));
        return id;
    }

  private:
    std::unique_ptr<polylock_snowflake, detail::SnowflakeFree> raw_;
};

/** A UUIDv7 (RFC 9562), greater than every earlier one of this process. */
inline std::string uuid7() {
    char text[POLYLOCK_UUID_TEXT_SIZE];
    detail::check(polylock_uuid7(text, sizeof text));
    return std::string(text);
}

/** A ULID (26 characters of Crockford base32), greater than every earlier one of this process. */
inline std::string ulid() {
    char text[POLYLOCK_ULID_TEXT_SIZE];
    detail::check(polylock_ulid(text, sizeof text));
    return std::string(text);
}

/** The Unix milliseconds inside a UUIDv7's text; throws INVALID_ARGUMENT for another text. */
inline std::uint64_t uuid7_timestamp_ms(const std::string &uuid) {
    std::uint64_t ms = 0;
    detail::check(polylock_uuid7_timestamp_ms(uuid.c_str(), &ms));
    return ms;
}

/** The Unix milliseconds inside a ULID's text; throws INVALID_ARGUMENT for another text. */
inline std::uint64_t ulid_timestamp_ms(const std::string &ulid) {
    std::uint64_t ms = 0;
    detail::check(polylock_ulid_timestamp_ms(ulid.c_str(), &ms));
    return ms;
}

/** The UUID with the same 128 bits as the ULID `ulid`. */
inline std::string ulid_to_uuid(const std::string &ulid) {
    char text[POLYLOCK_UUID_TEXT_SIZE];
    detail::check(polylock_ulid_to_uuid(ulid.c_str(), text, sizeof text));
    return std::string(text);
}

/** The ULID with the same 128 bits as the UUID `uuid`. */
inline std::string uuid_to_ulid(const std::string &uuid) {
    char text[POLYLOCK_ULID_TEXT_SIZE];
    detail::check(polylock_uuid_to_ulid(uuid.c_str(), text, sizeof text));
    return std::string(text);
}

}  // namespace polylock

#endif  // POLYLOCK_HPP
