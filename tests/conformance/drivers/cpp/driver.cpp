// The conformance driver of the C++ surface: the RAII wrapper bindings-c/include/polylock.hpp.
//
// Reads one JSON request per line on stdin, performs it with the wrapper's classes
// (polylock::Client, Lock, Guard, RwLock, ReadGuard/WriteGuard, Semaphore, Permit,
// MultiLock, MultiGuard, Election, Leadership, Observer, Latch, Value, Idempotency, Ticket,
// Segment, LeasedSnowflake) and writes one JSON answer per line (tests/conformance/
// PROTOCOL.md). Failures are polylock::Error, mapped by its status. Where the wrapper has
// no class or method for a request, the answer is not_offered naming what is missing. Every
// request runs on the main thread, the owner of the thread-owned holds.
#include <polylock.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../c/json.h"

namespace {

struct NotOffered {
    std::string why;
};
struct DriverError {
    std::string message;
};

enum class K {
    Client, Lock, RwSide, Sem, Multi, GLock, GRead, GWrite, GPermit, GMulti,
    Election, Leadership, Latch, Value, Idem, Ticket, Segment, Snowflake
};

struct Obj {
    K kind;
    std::unique_ptr<polylock::Client> client;
    std::unique_ptr<polylock::Lock> lock;
    polylock::Lock *lock_ref = nullptr;  // GLock: the lock
    polylock::RwLock *rw = nullptr;      // RwSide
    bool write = false;                  // RwSide
    std::unique_ptr<polylock::Semaphore> sem;
    std::unique_ptr<polylock::MultiLock> multi;
    std::vector<std::string> names;      // Multi
    std::unique_ptr<polylock::Guard> guard;
    std::unique_ptr<polylock::ReadGuard> read_guard;
    std::unique_ptr<polylock::WriteGuard> write_guard;
    std::unique_ptr<polylock::Permit> permit;
    std::unique_ptr<polylock::MultiGuard> multi_guard;
    std::uint64_t token = 0;
    bool released = false;
    std::unique_ptr<polylock::Election> election;
    std::unique_ptr<polylock::Observer> observer;
    std::unique_ptr<polylock::Leadership> leadership;
    std::unique_ptr<polylock::Latch> latch;
    std::unique_ptr<polylock::Value> value;
    std::unique_ptr<polylock::ValueWatch> watch;  // Value: its first value_watch's (freed before it)
    std::unique_ptr<polylock::Idempotency> idem;
    std::unique_ptr<polylock::Ticket> ticket;
    std::unique_ptr<polylock::Segment> segment;
    std::unique_ptr<polylock::LeasedSnowflake> snowflake;
};

// Objects in creation order (destroyed in reverse: guards before handles before clients).
std::vector<std::pair<std::string, std::unique_ptr<Obj>>> objs;
// One read-write lock object per (client, name).
std::map<std::pair<polylock::Client *, std::string>, std::unique_ptr<polylock::RwLock>> rws;

void reset_all() {
    // Guards and leaderships first (their destructors release and resign), then handles,
    // then the read-write locks and clients.
    for (auto it = objs.rbegin(); it != objs.rend(); ++it) {
        Obj &o = *it->second;
        o.guard.reset();
        o.read_guard.reset();
        o.write_guard.reset();
        o.permit.reset();
        o.multi_guard.reset();
        o.leadership.reset();
        o.ticket.reset();
    }
    for (auto it = objs.rbegin(); it != objs.rend(); ++it) {
        if (it->second->kind != K::Client) it->second.reset();
    }
    rws.clear();
    while (!objs.empty()) objs.pop_back();
}

const jval *arg(const jval *r, const char *key) { return j_get(r, key); }

std::string str(const jval *r, const char *key) {
    const jval *v = arg(r, key);
    if (!v || v->type != J_STR) throw DriverError{std::string("'") + key + "' must be a string"};
    return std::string(v->text, v->len);
}

std::uint64_t u64(const jval *r, const char *key) {
    std::uint64_t out;
    if (j_uint64(arg(r, key), &out)) throw DriverError{std::string("'") + key + "' must be an unsigned integer"};
    return out;
}

// A duration in ms as C++'s std::int64_t milliseconds; absent: `absent`.
std::int64_t duration(const jval *r, const char *key, std::int64_t absent) {
    const jval *v = arg(r, key);
    if (!v) return absent;
    std::string why = std::string("C++ durations are std::int64_t milliseconds: ") + key + " = ";
    if (v->type == J_STR) throw NotOffered{why + v->text + " cannot be passed"};
    if (v->type != J_NUM) throw DriverError{std::string("'") + key + "' must be a number"};
    std::int64_t out;
    if (!j_int64(v, &out)) return out;
    double d = std::strtod(v->text, nullptr);
    if (std::isfinite(d) && d == std::floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        return static_cast<std::int64_t>(d);
    throw NotOffered{why + v->text + " cannot be passed"};
}

// The wrapper's own defaults (its default arguments): the C constants.
constexpr std::int64_t kWaitForever = POLYLOCK_WAIT_FOREVER;
constexpr std::int64_t kWatchdogLease = POLYLOCK_LEASE_WATCHDOG;

Obj &find(const jval *r, const char *key, std::initializer_list<K> kinds) {
    std::string label = str(r, key);
    for (auto it = objs.rbegin(); it != objs.rend(); ++it) {
        if (it->first == label) {
            for (K k : kinds)
                if (it->second && it->second->kind == k) return *it->second;
            throw DriverError{"'" + label + "' (" + key + ") is not of a kind this request takes"};
        }
    }
    throw DriverError{"no object labelled '" + label + "'"};
}

Obj &add(const jval *r, K kind) {
    const jval *as = arg(r, "as");
    objs.emplace_back(as && as->type == J_STR ? as->text : "", std::make_unique<Obj>());
    objs.back().second->kind = kind;
    return *objs.back().second;
}

std::string u(std::uint64_t v) { return std::to_string(v); }

std::string jstr(const std::string &s) {
    jbuf b{nullptr, 0, 0};
    jb_str(&b, s.data(), s.size());
    std::string out(b.data, b.len);
    free(b.data);
    return out;
}

std::string token_obj(std::uint64_t t) { return "{\"token\":" + u(t) + "}"; }

std::string leader_json(const std::optional<polylock::Leader> &l) {
    if (!l) return "null";
    return "{\"value\":" + jstr(l->value) + ",\"term\":" + u(l->term) + "}";
}

using Op = std::function<std::string(const jval *)>;

// ---- session ----

std::string op_connect(const jval *r) {
    auto client = std::make_unique<polylock::Client>(str(r, "url"));
    add(r, K::Client).client = std::move(client);
    return "null";
}

std::string op_close(const jval *r) {
    find(r, "client", {K::Client}).client->close();
    return "null";
}

std::string op_error_table(const jval *) {
    // The wrapper's polylock::Error carries the C header's polylock_status.
#define KIND(x) {#x, x}
    static const std::pair<const char *, polylock_status> table[] = {
        KIND(POLYLOCK_TIMEOUT), KIND(POLYLOCK_NOT_OWNER), KIND(POLYLOCK_LOST), KIND(POLYLOCK_CONNECTION),
        KIND(POLYLOCK_INVALID_ARGUMENT), KIND(POLYLOCK_BACKEND), KIND(POLYLOCK_INTERNAL),
        KIND(POLYLOCK_UNSUPPORTED), KIND(POLYLOCK_CANCELLED), KIND(POLYLOCK_CONFLICT), KIND(POLYLOCK_FENCED),
        KIND(POLYLOCK_EXHAUSTED), KIND(POLYLOCK_IN_PROGRESS), KIND(POLYLOCK_MISMATCH),
    };
#undef KIND
    std::string out = "[";
    for (const auto &[name, status] : table) {
        if (out.size() > 1) out += ",";
        out += "[" + jstr(name + std::strlen("POLYLOCK_")) + "," + std::to_string(static_cast<int>(status)) + "]";
    }
    return out + "]";
}

// ---- handles ----

std::string op_lock(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    std::string name = str(r, "name");
    auto lock = arg(r, "kind") ? std::make_unique<polylock::Lock>(c.client->lock(name, str(r, "kind")))
                               : std::make_unique<polylock::Lock>(c.client->lock(name));
    add(r, K::Lock).lock = std::move(lock);
    return "null";
}

std::string op_rw_lock(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    std::string name = str(r, "name"), side = str(r, "side");
    if (side != "read" && side != "write") throw DriverError{"'side' must be read or write"};
    auto key = std::make_pair(c.client.get(), name);
    auto it = rws.find(key);
    if (it == rws.end()) it = rws.emplace(key, std::make_unique<polylock::RwLock>(c.client->rw_lock(name))).first;
    Obj &o = add(r, K::RwSide);
    o.rw = it->second.get();
    o.write = side == "write";
    return "null";
}

std::string op_semaphore(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    std::string name = str(r, "name");
    std::uint64_t permits = u64(r, "permits");
    if (permits > UINT32_MAX) throw NotOffered{"the wrapper's permit count is a std::uint32_t"};
    auto sem = std::make_unique<polylock::Semaphore>(c.client->semaphore(name, static_cast<std::uint32_t>(permits)));
    add(r, K::Sem).sem = std::move(sem);
    return "null";
}

std::string op_multi_lock(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    const jval *names = arg(r, "names");
    if (!names || names->type != J_ARR) throw DriverError{"'names' must be a list"};
    std::vector<std::string> list;
    for (size_t i = 0; i < names->count; i++) {
        if (names->items[i].type != J_STR) throw DriverError{"'names' must be strings"};
        list.emplace_back(names->items[i].text, names->items[i].len);
    }
    auto m = std::make_unique<polylock::MultiLock>(c.client->multi_lock(list));
    Obj &o = add(r, K::Multi);
    o.multi = std::move(m);
    o.names = list;
    return "null";
}

// ---- holds ----

std::string multi_tokens(const Obj &m, const polylock::MultiGuard &g) {
    std::string out = "[";
    for (size_t i = 0; i < m.names.size(); i++) {
        if (i) out += ",";
        std::string token = "null";
        for (size_t k = 0; k < g.size(); k++) {
            auto part = g.part(k);
            if (part.first == m.names[i]) token = part.second ? u(*part.second) : "null";
        }
        out += token;
    }
    return out + "]";
}

std::string op_acquire(const jval *r) {
    Obj &h = find(r, "handle", {K::Lock, K::RwSide, K::Sem, K::Multi});
    std::int64_t wait = duration(r, "wait_ms", kWaitForever);
    std::int64_t lease = duration(r, "lease_ms", kWatchdogLease);
    switch (h.kind) {
    case K::Lock: {
        auto guard = std::make_unique<polylock::Guard>(*h.lock, wait, lease);
        std::uint64_t token = guard->fencing_token();
        Obj &g = add(r, K::GLock);
        g.lock_ref = h.lock.get();
        g.guard = std::move(guard);
        return token_obj(token);
    }
    case K::RwSide: {
        std::uint64_t token;
        std::unique_ptr<polylock::ReadGuard> rg;
        std::unique_ptr<polylock::WriteGuard> wg;
        if (h.write) {
            wg = std::make_unique<polylock::WriteGuard>(*h.rw, wait, lease);
            token = wg->fencing_token();
        } else {
            rg = std::make_unique<polylock::ReadGuard>(*h.rw, wait, lease);
            token = rg->fencing_token();
        }
        bool write = h.write;
        Obj &g = add(r, write ? K::GWrite : K::GRead);
        g.read_guard = std::move(rg);
        g.write_guard = std::move(wg);
        return token_obj(token);
    }
    case K::Sem: {
        auto permit = std::make_unique<polylock::Permit>(*h.sem, wait, lease);
        std::uint64_t token = permit->fencing_token();
        add(r, K::GPermit).permit = std::move(permit);
        return token_obj(token);
    }
    default: {
        auto mg = std::make_unique<polylock::MultiGuard>(*h.multi, wait, lease);
        std::string tokens = multi_tokens(h, *mg);
        add(r, K::GMulti).multi_guard = std::move(mg);
        return "{\"token\":" + tokens + "}";
    }
    }
}

// The try forms: Guard/ReadGuard/WriteGuard/Permit/MultiGuard::try_acquire, std::nullopt
// when the wait ran out.
std::string op_try_acquire(const jval *r) {
    Obj &h = find(r, "handle", {K::Lock, K::RwSide, K::Sem, K::Multi});
    std::int64_t wait = duration(r, "wait_ms", 0);
    std::int64_t lease = duration(r, "lease_ms", kWatchdogLease);
    switch (h.kind) {
    case K::Lock: {
        auto guard = polylock::Guard::try_acquire(*h.lock, wait, lease);
        if (!guard) return "null";
        std::uint64_t token = guard->fencing_token();
        polylock::Lock *lock = h.lock.get();
        Obj &g = add(r, K::GLock);
        g.lock_ref = lock;
        g.guard = std::make_unique<polylock::Guard>(std::move(*guard));
        return token_obj(token);
    }
    case K::RwSide: {
        std::uint64_t token;
        std::unique_ptr<polylock::ReadGuard> rg;
        std::unique_ptr<polylock::WriteGuard> wg;
        if (h.write) {
            auto tried = polylock::WriteGuard::try_acquire(*h.rw, wait, lease);
            if (!tried) return "null";
            token = tried->fencing_token();
            wg = std::make_unique<polylock::WriteGuard>(std::move(*tried));
        } else {
            auto tried = polylock::ReadGuard::try_acquire(*h.rw, wait, lease);
            if (!tried) return "null";
            token = tried->fencing_token();
            rg = std::make_unique<polylock::ReadGuard>(std::move(*tried));
        }
        bool write = h.write;
        Obj &g = add(r, write ? K::GWrite : K::GRead);
        g.read_guard = std::move(rg);
        g.write_guard = std::move(wg);
        return token_obj(token);
    }
    case K::Sem: {
        auto tried = polylock::Permit::try_acquire(*h.sem, wait, lease);
        if (!tried) return "null";
        std::uint64_t token = tried->fencing_token();
        add(r, K::GPermit).permit = std::make_unique<polylock::Permit>(std::move(*tried));
        return token_obj(token);
    }
    default: {
        auto tried = polylock::MultiGuard::try_acquire(*h.multi, wait, lease);
        if (!tried) return "null";
        auto mg = std::make_unique<polylock::MultiGuard>(std::move(*tried));
        std::string tokens = multi_tokens(h, *mg);
        add(r, K::GMulti).multi_guard = std::move(mg);
        return "{\"token\":" + tokens + "}";
    }
    }
}

std::string op_release(const jval *r) {
    Obj &g = find(r, "guard", {K::GLock, K::GRead, K::GWrite, K::GPermit, K::GMulti});
    switch (g.kind) {
    case K::GLock:
        g.released = true;
        g.guard->release();
        break;
    case K::GRead:
        g.released = true;
        g.read_guard->release();
        break;
    case K::GWrite:
        g.released = true;
        g.write_guard->release();
        break;
    case K::GPermit:
        g.released = true;
        g.permit->release();
        break;
    default:
        g.released = true;
        g.multi_guard->release();
        break;
    }
    return "null";
}

std::string op_release_handle(const jval *r) {
    Obj &h = find(r, "handle", {K::Lock, K::RwSide, K::Sem, K::Multi});
    if (h.kind == K::Lock) h.lock->release();
    else if (h.kind == K::RwSide) h.write ? h.rw->release_write() : h.rw->release_read();
    else throw NotOffered{"the C++ wrapper releases a permit or a multi-lock only through its guard"};
    return "null";
}

std::string op_token(const jval *r) {
    Obj &g = find(r, "guard", {K::GLock, K::GRead, K::GWrite, K::GPermit, K::GMulti});
    switch (g.kind) {
    case K::GLock: return u(g.guard->fencing_token());
    case K::GRead: return u(g.read_guard->fencing_token());
    case K::GWrite: return u(g.write_guard->fencing_token());
    case K::GPermit: return u(g.permit->fencing_token());
    default: throw NotOffered{"polylock::MultiGuard has a token per part (part(i)); acquire reports the list"};
    }
}

std::string op_is_lost(const jval *r) {
    Obj &g = find(r, "guard", {K::GLock, K::GRead, K::GWrite, K::GPermit, K::GMulti});
    bool lost;
    switch (g.kind) {
    case K::GLock: lost = g.guard->is_lost(); break;
    case K::GMulti: lost = g.multi_guard->is_lost(); break;
    default: throw NotOffered{"the wrapper's ReadGuard, WriteGuard and Permit have no is_lost()"};
    }
    return lost ? "true" : "false";
}

std::string op_wait_lost(const jval *r) {
    Obj &g = find(r, "guard", {K::GLock, K::GRead, K::GWrite, K::GPermit, K::GMulti});
    if (g.kind != K::GLock)
        throw NotOffered{"the wrapper's lost signal is a mutex Guard's (Guard::wait_lost); ReadGuard, WriteGuard, Permit and MultiGuard have none"};
    try {
        g.guard->wait_lost(duration(r, "wait_ms", kWaitForever));
        return "true";
    } catch (const polylock::Error &error) {
        if (error.status() == POLYLOCK_TIMEOUT) return "false";  // not lost within wait_ms
        throw;
    }
}

std::string op_hold_count(const jval *r) {
    Obj &h = find(r, "handle", {K::Lock, K::RwSide, K::Sem, K::Multi});
    if (h.kind != K::Lock) throw NotOffered{"the wrapper has a hold count for polylock::Lock only"};
    return std::to_string(h.lock->hold_count());
}

std::string op_is_locked(const jval *r) {
    Obj &h = find(r, "handle", {K::Lock, K::RwSide, K::Sem, K::Multi});
    if (h.kind != K::Lock) throw NotOffered{"the wrapper asks the store about a polylock::Lock only (Lock::is_locked)"};
    return h.lock->is_locked() ? "true" : "false";
}

// ---- admin: Client::status_json / list_json, parsed ----

struct Parsed {
    jval v;
    explicit Parsed(const std::string &text) {
        const char *error = nullptr;
        if (j_parse(text.c_str(), &v, &error)) throw DriverError{std::string("the wrapper's JSON does not parse: ") + error};
    }
    ~Parsed() { j_free(&v); }
    Parsed(const Parsed &) = delete;
    Parsed &operator=(const Parsed &) = delete;
};

std::string op_status(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    Parsed status(c.client->status_json(str(r, "name")));
    const jval *held = j_get(&status.v, "held");
    if (!held || held->type != J_BOOL) throw DriverError{"Client::status_json gave no boolean 'held'"};
    return held->boolean ? "{\"held\":true,\"holders\":1}" : "{\"held\":false,\"holders\":0}";
}

std::string op_list(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    Parsed list(c.client->list_json(str(r, "prefix")));
    if (list.v.type != J_ARR) throw DriverError{"Client::list_json gave no array"};
    std::string out = "[";
    for (size_t i = 0; i < list.v.count; i++) {
        const jval *name = j_get(&list.v.items[i], "name"), *held = j_get(&list.v.items[i], "held");
        if (!name || name->type != J_STR || !held || held->type != J_BOOL || !held->boolean) continue;
        if (out.size() > 1) out += ",";
        out += jstr(std::string(name->text, name->len));
    }
    return out + "]";
}

std::string op_force_unlock(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    return c.client->force_unlock(str(r, "name")) ? "true" : "false";
}

// ---- election ----

std::string op_election(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    auto e = std::make_unique<polylock::Election>(c.client->election(str(r, "name")));
    add(r, K::Election).election = std::move(e);
    return "null";
}

std::string op_campaign(const jval *r) {
    Obj &e = find(r, "election", {K::Election});
    std::string value = str(r, "value");
    std::int64_t wait = duration(r, "wait_ms", kWaitForever);
    auto l = std::make_unique<polylock::Leadership>(e.election->campaign(value, wait));
    std::uint64_t term = l->term();
    add(r, K::Leadership).leadership = std::move(l);
    return "{\"term\":" + u(term) + "}";
}

std::string op_try_campaign(const jval *r) {
    Obj &e = find(r, "election", {K::Election});
    std::string value = str(r, "value");
    std::int64_t wait = duration(r, "wait_ms", 0);
    auto tried = e.election->try_campaign(value, wait);
    if (!tried) return "null";
    auto l = std::make_unique<polylock::Leadership>(std::move(*tried));
    std::uint64_t term = l->term();
    add(r, K::Leadership).leadership = std::move(l);
    return "{\"term\":" + u(term) + "}";
}

std::string op_leader(const jval *r) { return leader_json(find(r, "election", {K::Election}).election->leader()); }

std::string op_resign(const jval *r) {
    find(r, "leadership", {K::Leadership}).leadership->resign();
    return "null";
}

std::string op_is_leader(const jval *r) {
    return find(r, "leadership", {K::Leadership}).leadership->is_leader() ? "true" : "false";
}

std::string op_observe_next(const jval *r) {
    Obj &e = find(r, "election", {K::Election});
    std::int64_t wait = duration(r, "wait_ms", kWaitForever);
    if (!e.observer) e.observer = std::make_unique<polylock::Observer>(e.election->observe());
    try {
        return leader_json(e.observer->next(wait));
    } catch (const polylock::Error &error) {
        if (error.status() == POLYLOCK_TIMEOUT) return "\"no change\"";  // "nothing changed within timeout_ms"
        throw;
    }
}

// ---- latch ----

std::string op_latch(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    auto l = std::make_unique<polylock::Latch>(c.client->latch(str(r, "name")));
    add(r, K::Latch).latch = std::move(l);
    return "null";
}

std::string op_latch_set(const jval *r) {
    return find(r, "latch", {K::Latch}).latch->try_set_count(u64(r, "count")) ? "true" : "false";
}

std::string op_count_down(const jval *r) {
    find(r, "latch", {K::Latch}).latch->count_down();
    return "null";
}

std::string op_latch_count(const jval *r) { return u(find(r, "latch", {K::Latch}).latch->count()); }

std::string op_latch_wait(const jval *r) {
    Obj &l = find(r, "latch", {K::Latch});
    l.latch->await_zero(duration(r, "wait_ms", kWaitForever));  // the waiting form: TIMEOUT
    return "true";
}

// ---- values ----

std::string op_value(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    auto v = std::make_unique<polylock::Value>(c.client->value(str(r, "name")));
    add(r, K::Value).value = std::move(v);
    return "null";
}

std::string op_value_get(const jval *r) {
    auto found = find(r, "value", {K::Value}).value->get();
    if (!found) return "null";
    return "{\"value\":" + jstr(found->value) + ",\"version\":" + u(found->version) + "}";
}

std::string op_value_create(const jval *r) { return u(find(r, "value", {K::Value}).value->create(str(r, "data"))); }

std::string op_value_cas(const jval *r) {
    Obj &v = find(r, "value", {K::Value});
    return u(v.value->compare_and_set(u64(r, "version"), str(r, "data")));
}

std::string op_value_delete(const jval *r) {
    Obj &v = find(r, "value", {K::Value});
    v.value->remove(u64(r, "version"));
    return "null";
}

std::string op_value_write_fenced(const jval *r) {
    Obj &v = find(r, "value", {K::Value});
    return u(v.value->write_fenced(u64(r, "token"), str(r, "data")));
}

// The watch started by the first value_watch on this value: its next change, or "no change".
std::string op_value_watch(const jval *r) {
    Obj &v = find(r, "value", {K::Value});
    std::int64_t wait = duration(r, "wait_ms", kWaitForever);
    if (!v.watch) v.watch = std::make_unique<polylock::ValueWatch>(v.value->watch());
    polylock::WatchStep step = v.watch->changed(wait);
    switch (step.outcome) {
    case POLYLOCK_WATCH_CHANGED:
        return "{\"value\":" + jstr(step.value->value) + ",\"version\":" + u(step.value->version) + "}";
    case POLYLOCK_WATCH_DELETED:
        return "null";
    case POLYLOCK_WATCH_NO_CHANGE:
        return "\"no change\"";
    default:
        throw DriverError{"the watch of this value was closed"};
    }
}

// ---- idempotency ----

std::string op_idempotency(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    auto i = std::make_unique<polylock::Idempotency>(c.client->idempotency(str(r, "namespace")));
    add(r, K::Idem).idem = std::move(i);
    return "null";
}

std::string op_idem_begin(const jval *r) {
    Obj &i = find(r, "idempotency", {K::Idem});
    std::string key = str(r, "key"), payload = str(r, "payload");
    // The wrapper takes a fingerprint and has no helper for it: the C header's one.
    polylock_bytes fp{nullptr, 0};
    polylock::detail::check(polylock_idempotency_fingerprint(polylock::detail::data_of(payload), payload.size(), false, &fp));
    std::string fingerprint = polylock::detail::take_bytes(fp);
    polylock::Begin began = i.idem->begin(key, fingerprint);
    switch (began.outcome) {
    case POLYLOCK_BEGIN_ACQUIRED: {
        std::uint64_t token = began.ticket->token();
        add(r, K::Ticket).ticket = std::make_unique<polylock::Ticket>(std::move(*began.ticket));
        return "{\"acquired\":" + token_obj(token) + "}";
    }
    case POLYLOCK_BEGIN_REPLAY:
        return "{\"replay\":" + jstr(began.response) + "}";
    case POLYLOCK_BEGIN_IN_PROGRESS:
        // An outcome in the wrapper (Begin::outcome), the error kind in the protocol.
        throw std::make_pair(POLYLOCK_IN_PROGRESS, began.retry_after_ms);
    default:
        throw std::make_pair(POLYLOCK_MISMATCH, std::uint64_t{0});
    }
}

std::string op_idem_complete(const jval *r) {
    find(r, "ticket", {K::Ticket}).ticket->complete(str(r, "response"));
    return "null";
}

std::string op_idem_abandon(const jval *r) {
    find(r, "ticket", {K::Ticket}).ticket->abandon();
    return "null";
}

std::string op_idem_run(const jval *r) {
    Obj &i = find(r, "idempotency", {K::Idem});
    std::string key = str(r, "key"), payload = str(r, "payload"), response = str(r, "response");
    std::int64_t wait = duration(r, "wait_ms", kWaitForever);
    polylock_bytes fp{nullptr, 0};
    polylock::detail::check(polylock_idempotency_fingerprint(polylock::detail::data_of(payload), payload.size(), false, &fp));
    std::string fingerprint = polylock::detail::take_bytes(fp);
    return jstr(i.idem->run(key, fingerprint, wait, [&response] { return response; }));
}

// ---- IDs ----

std::string op_segment(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    std::string tag = str(r, "tag");
    auto s = arg(r, "step") ? std::make_unique<polylock::Segment>(c.client->segment(tag, u64(r, "step")))
                            : std::make_unique<polylock::Segment>(c.client->segment(tag));
    add(r, K::Segment).segment = std::move(s);
    return "null";
}

std::string op_next_id(const jval *r) { return u(find(r, "segment", {K::Segment}).segment->next_id()); }

std::string op_next_ids(const jval *r) {
    Obj &s = find(r, "segment", {K::Segment});
    auto ids = s.segment->next_ids(u64(r, "count"));
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); i++) out += (i ? "," : "") + u(ids[i]);
    return out + "]";
}

std::string op_snowflake(const jval *r) {
    Obj &c = find(r, "client", {K::Client});
    std::unique_ptr<polylock::LeasedSnowflake> s;
    if (const jval *w = arg(r, "worker_id")) {
        std::int64_t worker;
        if (j_int64(w, &worker)) throw DriverError{"'worker_id' must be an integer"};
        s = std::make_unique<polylock::LeasedSnowflake>(c.client->snowflake(worker));
    } else {
        s = std::make_unique<polylock::LeasedSnowflake>(c.client->snowflake());
    }
    std::uint64_t worker = s->worker_id();
    add(r, K::Snowflake).snowflake = std::move(s);
    return "{\"worker_id\":" + u(worker) + "}";
}

std::string op_snowflake_next(const jval *r) { return u(find(r, "snowflake", {K::Snowflake}).snowflake->next()); }

std::string op_snowflake_close(const jval *r) {
    find(r, "snowflake", {K::Snowflake}).snowflake->close();
    return "null";
}

std::string op_uuid7(const jval *) { return jstr(polylock::uuid7()); }
std::string op_ulid(const jval *) { return jstr(polylock::ulid()); }

std::string op_uuid7_timestamp(const jval *r) { return u(polylock::uuid7_timestamp_ms(str(r, "of"))); }
std::string op_ulid_timestamp(const jval *r) { return u(polylock::ulid_timestamp_ms(str(r, "of"))); }
std::string op_ulid_to_uuid(const jval *r) { return jstr(polylock::ulid_to_uuid(str(r, "of"))); }
std::string op_uuid_to_ulid(const jval *r) { return jstr(polylock::uuid_to_ulid(str(r, "of"))); }
std::string op_snowflake_parse(const jval *) {
    throw NotOffered{"the C++ wrapper has no call that takes a Snowflake ID apart"};
}

const std::map<std::string, Op> ops = {
    {"reset", [](const jval *) { reset_all(); return std::string("null"); }},
    {"connect", op_connect}, {"close", op_close}, {"error_table", op_error_table},
    {"lock", op_lock}, {"rw_lock", op_rw_lock}, {"semaphore", op_semaphore}, {"multi_lock", op_multi_lock},
    {"acquire", op_acquire}, {"try_acquire", op_try_acquire}, {"release", op_release},
    {"release_handle", op_release_handle}, {"token", op_token}, {"is_lost", op_is_lost},
    {"wait_lost", op_wait_lost}, {"hold_count", op_hold_count}, {"is_locked", op_is_locked},
    {"status", op_status}, {"list", op_list}, {"force_unlock", op_force_unlock},
    {"election", op_election}, {"campaign", op_campaign}, {"try_campaign", op_try_campaign},
    {"leader", op_leader}, {"resign", op_resign}, {"is_leader", op_is_leader}, {"observe_next", op_observe_next},
    {"latch", op_latch}, {"latch_set", op_latch_set}, {"count_down", op_count_down},
    {"latch_count", op_latch_count}, {"latch_wait", op_latch_wait},
    {"value", op_value}, {"value_get", op_value_get}, {"value_create", op_value_create},
    {"value_cas", op_value_cas}, {"value_delete", op_value_delete},
    {"value_write_fenced", op_value_write_fenced}, {"value_watch", op_value_watch},
    {"idempotency", op_idempotency}, {"idem_begin", op_idem_begin}, {"idem_complete", op_idem_complete},
    {"idem_abandon", op_idem_abandon}, {"idem_run", op_idem_run},
    {"segment", op_segment}, {"next_id", op_next_id}, {"next_ids", op_next_ids},
    {"snowflake", op_snowflake}, {"snowflake_next", op_snowflake_next}, {"snowflake_close", op_snowflake_close},
    {"uuid7", op_uuid7}, {"ulid", op_ulid},
    {"uuid7_timestamp", op_uuid7_timestamp}, {"ulid_timestamp", op_ulid_timestamp}, {"ulid_to_uuid", op_ulid_to_uuid},
    {"uuid_to_ulid", op_uuid_to_ulid}, {"snowflake_parse", op_snowflake_parse},
};

std::string error_answer(const polylock::Error &e) {
    std::string out = "\"ok\":false,\"error\":" + jstr(polylock_status_name(e.status())) + ",\"message\":" + jstr(e.what());
    switch (e.details_kind()) {
    case POLYLOCK_DETAILS_CONFLICT:
        out += ",\"details\":{\"current_version\":" + u(e.current_version()) +
               ",\"current_value\":" + (e.has_current() ? jstr(e.current_value()) : std::string("null")) + "}";
        break;
    case POLYLOCK_DETAILS_FENCED: out += ",\"details\":{\"token\":" + u(e.winning_token()) + "}"; break;
    case POLYLOCK_DETAILS_RETRY_AFTER: out += ",\"details\":{\"retry_after_ms\":" + u(e.retry_after_ms()) + "}"; break;
    default: break;
    }
    return out;
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::cout << "{\"ready\":\"cpp\"}" << std::endl;
    std::string line;
    while (std::getline(std::cin, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
        if (line.empty()) continue;
        jval req;
        const char *error = nullptr;
        if (j_parse(line.c_str(), &req, &error)) {
            std::cout << "{\"id\":null,\"ok\":false,\"error\":\"DRIVER\",\"message\":" << jstr(error) << "}" << std::endl;
            continue;
        }
        const jval *id = j_get(&req, "id");
        std::string id_text = id && id->type == J_NUM ? id->text : id && id->type == J_STR ? jstr(id->text) : "null";
        std::string body;
        try {
            const jval *op = j_get(&req, "op");
            if (!op || op->type != J_STR) throw DriverError{"a request needs an 'op'"};
            auto it = ops.find(op->text);
            if (it == ops.end()) throw NotOffered{std::string("the C++ driver does not know the op '") + op->text + "'"};
            body = "\"ok\":true,\"value\":" + it->second(&req);
        } catch (const polylock::Error &e) {
            body = error_answer(e);
        } catch (const std::pair<polylock_status, std::uint64_t> &outcome) {
            body = "\"ok\":false,\"error\":" + jstr(polylock_status_name(outcome.first)) +
                   ",\"message\":\"polylock::Idempotency::begin: outcome " + polylock_status_name(outcome.first) + "\"";
            if (outcome.first == POLYLOCK_IN_PROGRESS) body += ",\"details\":{\"retry_after_ms\":" + u(outcome.second) + "}";
        } catch (const NotOffered &n) {
            body = "\"ok\":false,\"not_offered\":" + jstr(n.why);
        } catch (const DriverError &d) {
            body = "\"ok\":false,\"error\":\"DRIVER\",\"message\":" + jstr(d.message);
        } catch (const std::exception &e) {
            body = "\"ok\":false,\"error\":\"DRIVER\",\"message\":" + jstr(std::string("C++ exception: ") + e.what());
        }
        std::cout << "{\"id\":" << id_text << "," << body << "}" << std::endl;
        j_free(&req);
    }
    reset_all();
    return 0;
}
