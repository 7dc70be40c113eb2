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
 */
#ifndef POLYLOCK_HPP
#define POLYLOCK_HPP

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "polylock.h"

namespace polylock {

/** A failed call: the status and the message polylock_last_error() gave. */
class Error : public std::runtime_error {
  public:
    Error(polylock_status status, const std::string &message)
        : std::runtime_error(std::string(polylock_status_name(status)) + ": " + message), status_(status) {}
    polylock_status status() const noexcept { return status_; }

  private:
    polylock_status status_;
};

namespace detail {
inline void check(polylock_status status) {
    if (status != POLYLOCK_OK) {
        const char *message = polylock_last_error();
        throw Error(status, message ? message : "");
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
struct SnowflakeFree {
    void operator()(polylock_snowflake *generator) const noexcept { polylock_snowflake_free(generator); }
};
}  // namespace detail

/** A lock handle: cheap, holds nothing by itself; acquire with a Guard or by hand. */
class Lock {
  public:
    explicit Lock(polylock_lock *raw) : raw_(raw) {}

    /** Acquire for this thread; returns the fencing token. Throws Error (TIMEOUT, ...). */
    std::uint64_t acquire(std::int64_t wait_ms = -1, std::int64_t lease_ms = 0) {
        std::uint64_t token = 0;
        detail::check(polylock_lock_acquire(raw_.get(), wait_ms, lease_ms, &token));
        return token;
    }
    /** Try once: true and the token if acquired, false if someone else holds it. */
    bool try_acquire(std::uint64_t *token = nullptr, std::int64_t lease_ms = 0) {
        polylock_status status = polylock_lock_acquire(raw_.get(), 0, lease_ms, token);
        if (status == POLYLOCK_TIMEOUT) return false;
        detail::check(status);
        return true;
    }
    void release() { detail::check(polylock_lock_release(raw_.get())); }
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
    explicit Guard(Lock &lock, std::int64_t wait_ms = -1, std::int64_t lease_ms = 0)
        : lock_(&lock), token_(lock.acquire(wait_ms, lease_ms)) {}
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
    /** Release now and throw if that failed (POLYLOCK_LOST: someone else may hold it). */
    void release() { std::exchange(lock_, nullptr)->release(); }

  private:
    Lock *lock_;
    std::uint64_t token_;
};

/** A read-write lock handle; ReadGuard and WriteGuard hold its sides for this thread. */
class RwLock {
  public:
    explicit RwLock(polylock_rwlock *raw) : raw_(raw) {}
    std::uint64_t acquire_read(std::int64_t wait_ms = -1, std::int64_t lease_ms = 0) {
        std::uint64_t token = 0;
        detail::check(polylock_rwlock_read_acquire(raw_.get(), wait_ms, lease_ms, &token));
        return token;
    }
    std::uint64_t acquire_write(std::int64_t wait_ms = -1, std::int64_t lease_ms = 0) {
        std::uint64_t token = 0;
        detail::check(polylock_rwlock_write_acquire(raw_.get(), wait_ms, lease_ms, &token));
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
    explicit RwGuard(RwLock &rw, std::int64_t wait_ms = -1, std::int64_t lease_ms = 0)
        : rw_(&rw), token_(Write ? rw.acquire_write(wait_ms, lease_ms) : rw.acquire_read(wait_ms, lease_ms)) {}
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
        Write ? rw->release_write() : rw->release_read();
    }

  private:
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
    explicit Permit(Semaphore &semaphore, std::int64_t wait_ms = -1, std::int64_t lease_ms = 0)
        : semaphore_(&semaphore) {
        detail::check(polylock_semaphore_acquire(semaphore.get(), wait_ms, lease_ms, &id_, &token_));
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
    void release() { detail::check(polylock_semaphore_release(std::exchange(semaphore_, nullptr)->get(), id_)); }

  private:
    Semaphore *semaphore_;
    std::uint64_t id_ = 0;
    std::uint64_t token_ = 0;
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
    void close() { detail::check(polylock_client_close(raw_.get())); }
    polylock_client *get() const noexcept { return raw_.get(); }

  private:
    std::unique_ptr<polylock_client, detail::ClientFree> raw_;
};

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

}  // namespace polylock

#endif  // POLYLOCK_HPP
