// The C++ RAII wrapper: guards release in their destructors, errors throw with their status.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
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
    std::uint64_t first = 0;
    {
        polylock::Guard guard(lock);
        first = guard.fencing_token();
        EXPECT(first > 0);
        EXPECT(lock.is_held());
        // Another thread neither gets it nor may release it.
        std::thread other([&] {
            EXPECT(!lock.try_acquire());
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
    EXPECT(!lock.is_held());

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
        }
        polylock::Permit again(pool, 2000);
        EXPECT(again.fencing_token() > first_permit);
    }

    polylock::Snowflake ids(3);
    EXPECT(ids.next() < ids.next());
    const std::string first_uuid = polylock::uuid7(), first_ulid = polylock::ulid();
    EXPECT(first_uuid.size() == 36 && first_uuid[14] == '7' && first_uuid < polylock::uuid7());
    EXPECT(first_ulid.size() == 26 && first_ulid < polylock::ulid());
    std::puts("cpp raii: ok");
    return 0;
}
