// The C++ wrapper's value watch (ValueWatch) and idempotency run (Idempotency::run).
// Usage: test_watch_run <url>.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

#include "polylock.hpp"

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

static void expect_status(polylock_status expected, const std::function<void()> &call) {
    try {
        call();
    } catch (const polylock::Error &err) {
        if (err.status() == expected) return;
        std::fprintf(stderr, "expected %s, got: %s\n", polylock_status_name(expected), err.what());
        std::exit(1);
    }
    std::fprintf(stderr, "expected %s, got no error\n", polylock_status_name(expected));
    std::exit(1);
}

static void watch(const std::string &url, const std::string &name) {
    polylock::Client client(url), writer_client(url);
    polylock::Value value = client.value(name), writer = writer_client.value(name);
    polylock::ValueWatch watch = value.watch();
    EXPECT(!watch.current() && !watch.is_closed());
    expect_status(POLYLOCK_INVALID_ARGUMENT, [&] { watch.changed(-2); });

    polylock::WatchStep step = watch.changed(100);
    EXPECT(step.outcome == POLYLOCK_WATCH_NO_CHANGE && !step.value);

    const std::uint64_t v1 = writer.create("x");
    step = watch.changed(10000);
    EXPECT(step.outcome == POLYLOCK_WATCH_CHANGED && step.value && step.value->value == "x");
    EXPECT(step.value->version == v1 && !step.value->fencing_token);
    EXPECT(watch.current() && watch.current()->version == v1);

    const std::uint64_t v2 = writer.write_fenced(7, "fenced");
    step = watch.changed(10000);
    EXPECT(step.outcome == POLYLOCK_WATCH_CHANGED && step.value->value == "fenced" && step.value->version == v2);
    EXPECT(step.value->fencing_token == std::optional<std::uint64_t>(7));

    writer.remove(v2);
    step = watch.changed(10000);
    EXPECT(step.outcome == POLYLOCK_WATCH_DELETED && !step.value && !watch.current());

    // close() from another thread ends a wait without limit; the watch stays closed.
    polylock::WatchStep seen;
    std::thread waiter([&] { seen = watch.changed(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    watch.close();
    waiter.join();
    EXPECT(seen.outcome == POLYLOCK_WATCH_CLOSED && !seen.value);
    EXPECT(watch.is_closed() && watch.changed(0).outcome == POLYLOCK_WATCH_CLOSED);
    watch.close();

    // Moved, the watch is the same watch; destroyed open, it lets go of everything.
    writer.create("again");
    polylock::ValueWatch open = value.watch();
    polylock::ValueWatch moved = std::move(open);
    EXPECT(moved.current() && moved.current()->value == "again");
}

static void run(const std::string &url, const std::string &name) {
    polylock::Client client(url);
    polylock::Idempotency keys = client.idempotency(name);
    int calls = 0;
    auto respond = [&calls](std::string response) {
        return [&calls, response] {
            calls++;
            return response;
        };
    };
    EXPECT(keys.run("k", "amount=10", POLYLOCK_WAIT_FOREVER, respond("first")) == "first" && calls == 1);
    EXPECT(keys.run("k", "amount=10", 0, respond("second")) == "first" && calls == 1);
    expect_status(POLYLOCK_MISMATCH, [&] { keys.run("k", "amount=11", 0, respond("third")); });
    expect_status(POLYLOCK_INVALID_ARGUMENT, [&] { keys.run("", "amount=10", 0, respond("empty key")); });
    expect_status(POLYLOCK_INVALID_ARGUMENT, [&] { keys.run("k", "amount=10", -2, respond("bad wait")); });
    EXPECT(calls == 1);

    // The work's exception abandons the key and comes back as it was thrown.
    try {
        keys.run("f", "amount=10", 0, [&]() -> std::string {
            calls++;
            throw std::out_of_range("no such account");
        });
        EXPECT(false);
    } catch (const std::out_of_range &thrown) {
        EXPECT(std::string(thrown.what()) == "no such account");
    }
    EXPECT(calls == 2);
    // A polylock::Error from the work is rethrown as it is, too.
    expect_status(POLYLOCK_FENCED, [&] {
        keys.run("f", "amount=10", 0, []() -> std::string { throw polylock::Error(POLYLOCK_FENCED, "taken over"); });
    });
    EXPECT(keys.run("f", "amount=10", 0, respond(std::string("bin\0ary", 7))) == std::string("bin\0ary", 7));
    EXPECT(calls == 3);

    // An attempt under way: IN_PROGRESS at once without a wait, its response with one.
    polylock::Begin began = keys.begin("p", "amount=10");
    EXPECT(began.outcome == POLYLOCK_BEGIN_ACQUIRED && began.ticket);
    try {
        keys.run("p", "amount=10", 0, respond("not me"));
        EXPECT(false);
    } catch (const polylock::Error &err) {
        EXPECT(err.status() == POLYLOCK_IN_PROGRESS && err.retry_after_ms() > 0);
    }
    std::thread finisher([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        // The tagged form a run stores (any language's run reads it back).
        polylock_bytes stored{nullptr, 0};
        EXPECT(polylock_idempotency_encode_response(reinterpret_cast<const std::uint8_t *>("done"), 4, false, &stored) ==
               POLYLOCK_OK);
        began.ticket->complete(polylock::detail::take_bytes(stored));
    });
    EXPECT(keys.run("p", "amount=10", 20000, respond("not me either")) == "done");
    finisher.join();
    EXPECT(calls == 3);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const std::string url = argv[1];
    const std::string name = "cpp-watch-run:" + std::to_string(getpid()) + ":" +
                             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    watch(url, name + ":value");
    run(url, name + ":idem");
    std::puts("cpp watch and run: ok");
    return 0;
}
