// The C++ RAII wrapper: guards release in their destructors, errors throw with their status.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include <thread>
#include <unistd.h>

#include "polylock.hpp"

#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                         \
        }                                                                         \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const std::string url = argv[1];
    const std::string name = "cpp-test:" + std::to_string(getpid()) + ":" +
                             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());

    try {
        polylock::Client bad("nosuch://x");
        EXPECT(false);
    } catch (const polylock::Error &err) {
        EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
        EXPECT(std::string(err.what()).rfind("INVALID_ARGUMENT: ", 0) == 0);
    }

    polylock::Client client(url);
    polylock::Lock lock = client.lock(name);
    // The C constants are the only negative wait and lease; 0 is no lease.
    const std::int64_t bad[][2] = {{-5, POLYLOCK_LEASE_WATCHDOG}, {0, 0}, {0, -5}, {0, 5}};
    for (const auto &wait_lease : bad) {
        try {
            polylock::Guard refused(lock, wait_lease[0], wait_lease[1]);
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
        }
    }
    EXPECT(!lock.is_held());
    std::uint64_t first = 0;
    {
        polylock::Guard guard(lock);
        first = guard.fencing_token();
        EXPECT(first > 0);
        EXPECT(lock.is_held());
        // Another thread neither gets it nor may release it.
        std::thread other([&] {
            EXPECT(!lock.try_acquire());
            EXPECT(!lock.try_acquire_for(50) && !polylock::Guard::try_acquire(lock, 50));
            EXPECT(lock.is_locked() && !lock.is_held());
            try {
                lock.release();
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_NOT_OWNER);
            }
            try {
                polylock::Guard waiting(lock, 50);
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_TIMEOUT);
            }
        });
        other.join();
        {
            polylock::Guard again(lock);  // reentrant on this thread
            EXPECT(again.fencing_token() == first);
            EXPECT(lock.hold_count() == 2);
        }
        EXPECT(lock.hold_count() == 1);
    }
    EXPECT(!lock.is_held() && !lock.is_locked());
    {
        auto tried = polylock::Guard::try_acquire(lock, 2000);
        EXPECT(tried && tried->fencing_token() > first && lock.is_locked());
        // The operator's view, from another client: status, list, force-unlock.
        polylock::Client operator_client(url);
        std::string status = operator_client.status_json(name);
        EXPECT(status.rfind("{\"name\":\"" + name + "\",\"kind\":\"reentrant\"", 0) == 0);
        EXPECT(status.find("\"held\":true,") != std::string::npos);
        EXPECT(operator_client.status_json(name, "reentrant").find("\"held\":true,") != std::string::npos);
        // A Redis Cluster's keys are spread over masters one script cannot scan: list is refused.
        const bool cluster = std::string(url).rfind("redis+cluster:", 0) == 0 ||
                             std::string(url).rfind("rediss+cluster:", 0) == 0;
        std::string listed;
        if (cluster) {
            try {
                operator_client.list_json(name);
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_UNSUPPORTED);
            }
        } else {
            listed = operator_client.list_json(name);
        }
        // SQL session locks have no names to enumerate (list reads the lease table only), and
        // only their session may release them (force-unlock is refused with UNSUPPORTED).
        const bool session_locks = status.find("\"backend\":\"postgres\"") != std::string::npos ||
                                   status.find("\"backend\":\"mysql\"") != std::string::npos;
        if (session_locks) {
            EXPECT(listed == "[]");
            try {
                operator_client.force_unlock(name);
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_UNSUPPORTED);
            }
        } else {
            EXPECT(cluster || listed.rfind("[{\"name\":\"" + name + "\",", 0) == 0);
            EXPECT(operator_client.force_unlock(name) && !lock.is_locked());
            EXPECT(!operator_client.force_unlock(name));
            EXPECT(operator_client.status_json(name).find("\"held\":false,") != std::string::npos);
        }
        try {
            operator_client.status_json(name, "nosuch");
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
        }
        try {
            tried->release();  // broken by the operator: the owner learns it at its release
        } catch (const polylock::Error &) {
        }
    }

    // A Guard's lost signal: wait_lost() returns when its lease runs out, throws TIMEOUT before.
    {
        polylock::Lock leased = client.lock(name + ":leased");
        polylock::Guard guard(leased, 0, 1500);  // long enough that a 50 ms wait runs out first
        try {
            guard.wait_lost(50);
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_TIMEOUT);
        }
        guard.wait_lost(30000);
        EXPECT(guard.is_lost());
        try {
            guard.release();
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_LOST);
        }
    }

    // Released by the destructor, so another thread can take it now.
    std::thread taker([&] {
        polylock::Guard guard(lock, 2000);
        EXPECT(guard.fencing_token() > first);
        guard.release();
    });
    taker.join();

    // Read-write locks and semaphores: every backend offers them.
    {
        polylock::RwLock rw = client.rw_lock(name + ":rw");
        std::uint64_t read_token = 0;
        {
            polylock::ReadGuard reading(rw);
            read_token = reading.fencing_token();
            std::thread writer([&] {
                try {
                    polylock::WriteGuard writing(rw, 50);
                    EXPECT(false);  // a writer must wait for the reader
                } catch (const polylock::Error &err) {
                    EXPECT(err.status() == POLYLOCK_TIMEOUT);
                }
            });
            writer.join();
            // The try forms: nothing (std::nullopt) when the wait runs out, a guard otherwise.
            std::thread try_writer([&] {
                EXPECT(!polylock::WriteGuard::try_acquire(rw, 50));
                EXPECT(!rw.try_acquire_write_for(0));
                auto second_reader = polylock::ReadGuard::try_acquire(rw, 2000);
                EXPECT(second_reader && second_reader->fencing_token() > 0);
            });
            try_writer.join();
        }
        polylock::WriteGuard writing(rw, 2000);
        EXPECT(writing.fencing_token() > read_token);
        writing.release();

        polylock::Semaphore pool = client.semaphore(name + ":pool", 1);
        std::uint64_t first_permit = 0;
        {
            polylock::Permit permit(pool);
            first_permit = permit.fencing_token();
            try {
                polylock::Permit second(pool, 50);
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_TIMEOUT);
            }
            EXPECT(!polylock::Permit::try_acquire(pool, 50));
        }
        {
            std::optional<polylock::Permit> tried = polylock::Permit::try_acquire(pool, 2000);
            EXPECT(tried && tried->fencing_token() > first_permit);
            first_permit = tried->fencing_token();
        }
        polylock::Permit again(pool, 2000);
        EXPECT(again.fencing_token() > first_permit);
        // A second release (or one of a moved-from permit or guard) is NOT_OWNER, not a crash.
        again.release();
        try {
            again.release();
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_NOT_OWNER);
        }
        polylock::Lock twice = client.lock(name + ":twice");
        polylock::Guard held(twice, 2000);
        polylock::Guard moved(std::move(held));
        try {
            held.release();
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_NOT_OWNER);
        }
        moved.release();
        try {
            moved.release();
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_NOT_OWNER);
        }
    }

    {
        // Versioned values: a conflict and a fenced write carry their details in the Error.
        polylock::Value value = client.value(name + ":value");
        EXPECT(!value.get());
        const std::uint64_t v1 = value.create("one");
        try {
            value.compare_and_set(v1 + 1000, "two");
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_CONFLICT && err.details_kind() == POLYLOCK_DETAILS_CONFLICT);
            EXPECT(err.has_current() && err.current_value() == "one" && err.current_version() == v1);
        }
        value.write_fenced(7, "seven");
        try {
            value.write_fenced(6, "six");
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_FENCED && err.winning_token() == 7);
        }
        auto found = value.get();
        EXPECT(found && found->value == "seven" && found->fencing_token == std::optional<std::uint64_t>(7));
        value.remove(found->version);

        // Idempotency step by step, and segment IDs, and a leased Snowflake.
        polylock::Idempotency keys = client.idempotency(name + ":idem");
        polylock::Begin begun = keys.begin("k", "fp");
        EXPECT(begun.outcome == POLYLOCK_BEGIN_ACQUIRED && begun.ticket && begun.ticket->token() == 1);
        begun.ticket->complete("done");
        polylock::Begin replay = keys.begin("k", "fp");
        EXPECT(replay.outcome == POLYLOCK_BEGIN_REPLAY && replay.response == "done" && !replay.ticket);
        EXPECT(keys.begin("k", "other").outcome == POLYLOCK_BEGIN_MISMATCH);

        polylock::Segment segment = client.segment(name + ":seg");
        const std::uint64_t first_id = segment.next_id();
        auto batch = segment.next_ids(10);
        EXPECT(first_id > 0 && batch.size() == 10 && batch[0] != first_id);
        polylock::LeasedSnowflake leased = client.snowflake();
        EXPECT(leased.worker_id() <= 1023 && leased.next() < leased.next());

        // A multi-lock guard: parts in canonical order, each with its token; released at scope end.
        polylock::MultiLock both = client.multi_lock({name + ":y", name + ":x"});
        {
            polylock::MultiGuard guard(both, 5000);
            EXPECT(guard.size() == 2 && guard.part(0).first == name + ":x" && guard.part(1).second.has_value());
        }
        polylock::MultiGuard again(both, 5000);
        std::thread other_multi([&] { EXPECT(!polylock::MultiGuard::try_acquire(both, 50)); });
        other_multi.join();
        again.release();
        auto tried_multi = polylock::MultiGuard::try_acquire(both);
        EXPECT(tried_multi && tried_multi->size() == 2);
        tried_multi->release();

        // An election: the leader's view, a second candidate refused, and the end of a
        // leadership's scope resigns it, so the next campaign leads with a greater term.
        polylock::Election election = client.election(name + ":elect");
        polylock::Observer observer = election.observe();
        EXPECT(!observer.next(30000));
        std::uint64_t term = 0;
        {
            polylock::Leadership leading = election.campaign("one", 10000);
            term = leading.term();
            EXPECT(term > 0 && leading.is_leader() && leading.value() == "one");
            auto seen = observer.next(30000);
            EXPECT(seen && seen->value == "one" && seen->term == term);
            try {
                election.campaign("two", 0);
                EXPECT(false);
            } catch (const polylock::Error &err) {
                EXPECT(err.status() == POLYLOCK_TIMEOUT);
            }
            leading.proclaim("uno");
            auto now = election.leader();
            EXPECT(now && now->value == "uno" && now->term == term);
        }
        polylock::Leadership next = election.campaign("two", 10000);
        EXPECT(next.term() > term);
        next.resign();
        EXPECT(!next.is_leader() && !next.wait_lost(1000));

        // The try form of a campaign: std::nullopt while another leads, a leadership after.
        {
            auto leading = election.try_campaign("three");
            EXPECT(leading && leading->term() > next.term());
            EXPECT(!election.try_campaign("four", 50));
        }

        // A countdown latch: await() is the try form, await_zero() the waiting one.
        polylock::Latch latch = client.latch(name + ":latch");
        EXPECT(latch.try_set_count(1) && !latch.try_set_count(3) && latch.count() == 1);
        EXPECT(!latch.await(50));
        try {
            latch.await_zero(50);
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_TIMEOUT);
        }
        latch.count_down();
        EXPECT(latch.await(1000) && latch.count() == 0);
        latch.await_zero(0);
    }

    // Logs to a std::function, metrics as strings.
    {
        std::mutex mu;
        std::vector<polylock::LogRecord> seen;
        try {
            polylock::set_logger([](const polylock::LogRecord &) {}, "chatty");
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
        }
        polylock::set_logger(
            [&](const polylock::LogRecord &record) {
                std::lock_guard<std::mutex> hold(mu);
                seen.push_back(record);
            },
            "debug");
        polylock::Lock logged = client.lock(name + ":logged");
        { polylock::Guard guard(logged); }
        polylock::set_logger(nullptr);
        std::size_t named = 0;
        {
            std::lock_guard<std::mutex> hold(mu);
            for (const auto &record : seen) {
                if (record.json.find("\"name\":\"" + name + ":logged\"") != std::string::npos &&
                    record.level == POLYLOCK_LOG_DEBUG && record.target.rfind("polylock::", 0) == 0) {
                    named++;
                }
            }
        }
        EXPECT(named >= 2);  // the acquisition and the release
        const std::string before = client.metrics_json();
        EXPECT(before.find("\"releases\":") != std::string::npos);
        EXPECT(polylock::metrics_json().find("\"series\":[") != std::string::npos);
        EXPECT(polylock::prometheus_text().find("polylock_acquires_total") != std::string::npos);
        try {
            polylock::set_log_level("nope");
            EXPECT(false);
        } catch (const polylock::Error &err) {
            EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
        }
    }

    polylock::Snowflake ids(3);
    EXPECT(ids.next() < ids.next());
    const std::string first_uuid = polylock::uuid7(), first_ulid = polylock::ulid();
    EXPECT(first_uuid.size() == 36 && first_uuid[14] == '7' && first_uuid < polylock::uuid7());
    EXPECT(first_ulid.size() == 26 && first_ulid < polylock::ulid());
    EXPECT(polylock::uuid7_timestamp_ms("017f22e2-79b0-7cc3-98c4-dc0c0c07398f") == 1645557742000ULL);
    EXPECT(polylock::ulid_timestamp_ms("01ARZ3NDEKTSV4RRFFQ69G5FAV") == 1469922850259ULL);
    EXPECT(polylock::ulid_to_uuid("01ARZ3NDEKTSV4RRFFQ69G5FAV") == "01563e3a-b5d3-d676-4c61-efb99302bd5b");
    EXPECT(polylock::uuid_to_ulid("017f22e2-79b0-7cc3-98c4-dc0c0c07398f") == "01FWHE4YDGFK1SHH6W1G60EECF");
    try {
        polylock::uuid7_timestamp_ms(polylock::ulid_to_uuid(first_ulid));  // no version 7
        EXPECT(false);
    } catch (const polylock::Error &err) {
        EXPECT(err.status() == POLYLOCK_INVALID_ARGUMENT);
    }
    std::puts("cpp raii: ok");
    return 0;
}
