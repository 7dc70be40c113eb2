/* The conformance driver of the C surface (bindings-c/include/polylock.h).
 *
 * Reads one JSON request per line on stdin, performs it with the C ABI and writes one JSON
 * answer per line on stdout (tests/conformance/PROTOCOL.md). It translates; it decides
 * nothing. Every request runs on the main thread, which is therefore the owner of every
 * thread-owned hold (polylock_lock_acquire, the read-write sides) this driver takes. */
#include <polylock.h>

#include "json.h"

/* ---- objects named by `as` ---- */

typedef enum {
    O_CLIENT, O_LOCK, O_RWSIDE, O_SEM, O_MULTI,
    O_G_LOCK, O_G_READ, O_G_WRITE, O_G_HOLD, O_G_MULTI,
    O_ELECTION, O_LEADERSHIP, O_LATCH, O_VALUE, O_IDEM, O_TICKET, O_SEGMENT, O_SNOWFLAKE,
} okind;

typedef struct {
    char *label;
    okind kind;
    void *p;         /* the C handle */
    void *aux;       /* O_G_LOCK: its lock; O_G_READ/WRITE and O_RWSIDE: the rwlock; O_ELECTION: its observer;
                        O_VALUE: its watch */
    bool write;      /* O_RWSIDE */
    bool released;   /* guards: released through the driver */
    uint64_t token;  /* O_G_LOCK, O_G_READ, O_G_WRITE: the token the acquisition reported */
    char **names;    /* O_MULTI: the names as given */
    size_t nnames;
} obj;

static obj *objs;
static size_t nobjs, capobjs;

/* One read-write lock object per (client, name): its sides are handed out by rw_lock. */
typedef struct {
    polylock_client *client;
    char *name;
    polylock_rwlock *rw;
} rwent;
static rwent *rws;
static size_t nrws;

static obj *add_obj(const char *label, okind kind, void *p) {
    if (nobjs == capobjs) {
        capobjs = capobjs ? capobjs * 2 : 32;
        objs = realloc(objs, capobjs * sizeof(obj));
    }
    obj *o = &objs[nobjs++];
    memset(o, 0, sizeof *o);
    o->label = strdup(label ? label : "");
    o->kind = kind;
    o->p = p;
    return o;
}

/* ---- answers ---- */

static jbuf val;      /* the value of a successful answer (empty: null) */
static jbuf errans;   /* the rest of a failed answer: "ok":false,... */

static int fail_status(polylock_status status) {
    const char *message = polylock_last_error();
    polylock_error_details details;
    memset(&details, 0, sizeof details);
    polylock_status got = polylock_last_error_details(&details);
    errans.len = 0;
    jb_s(&errans, "\"ok\":false,\"error\":");
    jb_cstr(&errans, polylock_status_name(status));
    jb_s(&errans, ",\"message\":");
    jb_cstr(&errans, message);
    if (got == POLYLOCK_OK) {
        switch (details.kind) {
        case POLYLOCK_DETAILS_CONFLICT:
            jb_s(&errans, ",\"details\":{\"current_version\":");
            jb_u64(&errans, details.current_version);
            jb_s(&errans, ",\"current_value\":");
            if (details.has_current) jb_str(&errans, (const char *)details.current_value.data, details.current_value.len);
            else jb_s(&errans, "null");
            jb_s(&errans, "}");
            break;
        case POLYLOCK_DETAILS_FENCED:
            jb_s(&errans, ",\"details\":{\"token\":");
            jb_u64(&errans, details.winning_token);
            jb_s(&errans, "}");
            break;
        case POLYLOCK_DETAILS_RETRY_AFTER:
            jb_s(&errans, ",\"details\":{\"retry_after_ms\":");
            jb_u64(&errans, details.retry_after_ms);
            jb_s(&errans, "}");
            break;
        default:
            break;
        }
        polylock_bytes_free(&details.current_value);
    }
    return 1;
}

static int not_offered(const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    errans.len = 0;
    jb_s(&errans, "\"ok\":false,\"not_offered\":");
    jb_cstr(&errans, why);
    return 1;
}

static int driver_error(const char *fmt, ...) {
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    errans.len = 0;
    jb_s(&errans, "\"ok\":false,\"error\":\"DRIVER\",\"message\":");
    jb_cstr(&errans, message);
    return 1;
}

#define CHECK(call)                                     \
    do {                                                \
        polylock_status status_ = (call);               \
        if (status_ != POLYLOCK_OK) return fail_status(status_); \
    } while (0)

/* ---- arguments ---- */

#define STR(var, key)                                                       \
    const jval *var##_v = j_get(r, key);                                    \
    if (!var##_v || var##_v->type != J_STR) return driver_error("'%s' must be a string", key); \
    const char *var = var##_v->text

#define U64(var, key)                                                       \
    uint64_t var;                                                           \
    if (j_uint64(j_get(r, key), &var)) return driver_error("'%s' must be an unsigned integer", key)

/* The object labelled by the string argument `key`, of one of the kinds in `mask`. */
static obj *find(const jval *r, const char *key, unsigned mask, int *answered) {
    const jval *l = j_get(r, key);
    *answered = 1;
    if (!l || l->type != J_STR) { driver_error("'%s' must be a label", key); return NULL; }
    for (size_t i = nobjs; i-- > 0;) {
        if (!strcmp(objs[i].label, l->text)) {
            if (!(mask & (1u << objs[i].kind))) {
                driver_error("'%s' (%s) is not of a kind this request takes", l->text, key);
                return NULL;
            }
            *answered = 0;
            return &objs[i];
        }
    }
    driver_error("no object labelled '%s'", l->text);
    return NULL;
}

#define BIT(k) (1u << (k))
#define FIND(var, key, mask)                     \
    int var##_answered;                          \
    obj *var = find(r, key, (mask), &var##_answered); \
    if (!var) return 1

/* A duration in ms: absent gives `absent`; NaN, infinities, fractions and values outside
 * int64_t cannot be expressed in C's int64_t milliseconds. */
static int duration(const jval *r, const char *key, int64_t absent, int64_t *out) {
    const jval *v = j_get(r, key);
    if (!v) { *out = absent; return 0; }
    if (v->type == J_STR) return not_offered("C durations are int64_t milliseconds: %s = %s cannot be passed", key, v->text);
    if (v->type != J_NUM) return driver_error("'%s' must be a number", key);
    if (!j_int64(v, out)) return 0;
    double d = strtod(v->text, NULL);
    if (isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
        *out = (int64_t)d;
        return 0;
    }
    return not_offered("C durations are int64_t milliseconds: %s = %s cannot be passed", key, v->text);
}

#define DURATION(var, key, absent) \
    int64_t var;                   \
    if (duration(r, key, absent, &var)) return 1

/* The header's values for an absent duration. */
#define WAIT_FOREVER_MS POLYLOCK_WAIT_FOREVER
#define TRY_ONCE_MS 0          /* "0 try once" */
#define WATCHDOG_LEASE_MS POLYLOCK_LEASE_WATCHDOG

static void put_token_obj(uint64_t token) {
    jb_s(&val, "{\"token\":");
    jb_u64(&val, token);
    jb_s(&val, "}");
}

static void put_leader(polylock_leader *leader) {
    if (!leader->found) {
        jb_s(&val, "null");
    } else {
        jb_s(&val, "{\"value\":");
        jb_str(&val, (const char *)leader->value.data, leader->value.len);
        jb_s(&val, ",\"term\":");
        jb_u64(&val, leader->term);
        jb_s(&val, "}");
    }
    polylock_bytes_free(&leader->value);
}

/* ---- session ---- */

static void free_all(void) {
    for (size_t i = nobjs; i-- > 0;) {
        obj *o = &objs[i];
        switch (o->kind) {
        case O_G_LOCK: if (!o->released) polylock_lock_release(o->aux); break;
        case O_G_READ: if (!o->released) polylock_rwlock_read_release(o->aux); break;
        case O_G_WRITE: if (!o->released) polylock_rwlock_write_release(o->aux); break;
        case O_G_HOLD: if (!o->released) polylock_hold_release(o->p); polylock_hold_free(o->p); break;
        case O_G_MULTI: if (!o->released) polylock_multi_hold_release(o->p); polylock_multi_hold_free(o->p); break;
        case O_LEADERSHIP: polylock_leadership_resign(o->p); polylock_leadership_free(o->p); break;
        case O_TICKET: polylock_ticket_free(o->p); break;
        default: break;
        }
    }
    for (size_t i = nobjs; i-- > 0;) {
        obj *o = &objs[i];
        switch (o->kind) {
        case O_LOCK: polylock_lock_free(o->p); break;
        case O_SEM: polylock_semaphore_free(o->p); break;
        case O_MULTI:
            polylock_multi_lock_free(o->p);
            for (size_t k = 0; k < o->nnames; k++) free(o->names[k]);
            free(o->names);
            break;
        case O_ELECTION: polylock_observer_free(o->aux); polylock_election_free(o->p); break;
        case O_LATCH: polylock_latch_free(o->p); break;
        case O_VALUE: polylock_watch_free(o->aux); polylock_value_free(o->p); break;
        case O_IDEM: polylock_idempotency_free(o->p); break;
        case O_SEGMENT: polylock_segment_free(o->p); break;
        case O_SNOWFLAKE: polylock_leased_snowflake_free(o->p); break;
        default: break;
        }
    }
    for (size_t i = 0; i < nrws; i++) {
        polylock_rwlock_free(rws[i].rw);
        free(rws[i].name);
    }
    nrws = 0;
    for (size_t i = nobjs; i-- > 0;)
        if (objs[i].kind == O_CLIENT) polylock_client_free(objs[i].p);
    for (size_t i = 0; i < nobjs; i++) free(objs[i].label);
    nobjs = 0;
}

static int op_reset(const jval *r) { (void)r; free_all(); return 0; }

static int op_connect(const jval *r) {
    STR(url, "url");
    STR(as, "as");
    polylock_client *client = NULL;
    CHECK(polylock_connect(url, &client));
    add_obj(as, O_CLIENT, client);
    return 0;
}

static int op_close(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    CHECK(polylock_client_close(c->p));
    return 0;
}

static int op_error_table(const jval *r) {
    (void)r;
#define KIND(x) {#x, x}
    static const struct { const char *name; polylock_status status; } table[] = {
        KIND(POLYLOCK_TIMEOUT), KIND(POLYLOCK_NOT_OWNER), KIND(POLYLOCK_LOST), KIND(POLYLOCK_CONNECTION),
        KIND(POLYLOCK_INVALID_ARGUMENT), KIND(POLYLOCK_BACKEND), KIND(POLYLOCK_INTERNAL),
        KIND(POLYLOCK_UNSUPPORTED), KIND(POLYLOCK_CANCELLED), KIND(POLYLOCK_CONFLICT), KIND(POLYLOCK_FENCED),
        KIND(POLYLOCK_EXHAUSTED), KIND(POLYLOCK_IN_PROGRESS), KIND(POLYLOCK_MISMATCH),
    };
#undef KIND
    jb_s(&val, "[");
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (i) jb_s(&val, ",");
        jb_s(&val, "[");
        jb_cstr(&val, table[i].name + strlen("POLYLOCK_"));
        jb_f(&val, ",%d]", (int)table[i].status);
    }
    jb_s(&val, "]");
    return 0;
}

/* ---- handles ---- */

static int op_lock(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(as, "as");
    const jval *kind = j_get(r, "kind");
    polylock_lock *lock = NULL;
    if (!kind) CHECK(polylock_client_lock(c->p, name, &lock));
    else if (kind->type == J_STR) CHECK(polylock_client_lock_kind(c->p, name, kind->text, &lock));
    else return driver_error("'kind' must be a string");
    add_obj(as, O_LOCK, lock);
    return 0;
}

static int op_rw_lock(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(side, "side");
    STR(as, "as");
    bool write;
    if (!strcmp(side, "read")) write = false;
    else if (!strcmp(side, "write")) write = true;
    else return driver_error("'side' must be read or write");
    polylock_rwlock *rw = NULL;
    for (size_t i = 0; i < nrws; i++)
        if (rws[i].client == c->p && !strcmp(rws[i].name, name)) rw = rws[i].rw;
    if (!rw) {
        CHECK(polylock_client_rwlock(c->p, name, &rw));
        rws = realloc(rws, (nrws + 1) * sizeof(rwent));
        rws[nrws++] = (rwent){c->p, strdup(name), rw};
    }
    obj *o = add_obj(as, O_RWSIDE, rw);
    o->write = write;
    return 0;
}

static int op_semaphore(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(as, "as");
    U64(permits, "permits");
    if (permits > UINT32_MAX) return not_offered("C's permit count is a uint32_t: %" PRIu64 " cannot be passed", permits);
    polylock_semaphore *sem = NULL;
    CHECK(polylock_client_semaphore(c->p, name, (uint32_t)permits, &sem));
    add_obj(as, O_SEM, sem);
    return 0;
}

static int op_multi_lock(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(as, "as");
    const jval *names = j_get(r, "names");
    if (!names || names->type != J_ARR) return driver_error("'names' must be a list");
    const char **list = calloc(names->count + 1, sizeof(char *));
    for (size_t i = 0; i < names->count; i++) {
        if (names->items[i].type != J_STR) { free(list); return driver_error("'names' must be strings"); }
        list[i] = names->items[i].text;
    }
    polylock_multi_lock *m = NULL;
    polylock_status status = polylock_client_multi_lock(c->p, list, names->count, &m);
    free(list);
    if (status != POLYLOCK_OK) return fail_status(status);
    obj *o = add_obj(as, O_MULTI, m);
    o->nnames = names->count;
    o->names = calloc(names->count + 1, sizeof(char *));
    for (size_t i = 0; i < names->count; i++) o->names[i] = strdup(names->items[i].text);
    return 0;
}

/* ---- holds ---- */

static void put_multi_tokens(obj *m, polylock_multi_hold *hold) {
    jb_s(&val, "[");
    for (size_t i = 0; i < m->nnames; i++) {
        if (i) jb_s(&val, ",");
        bool written = false;
        for (size_t k = 0; k < polylock_multi_hold_count(hold); k++) {
            const char *name = NULL;
            uint64_t token = 0;
            bool has = false;
            if (polylock_multi_hold_part(hold, k, &name, &token, &has) == POLYLOCK_OK && !strcmp(name, m->names[i])) {
                if (has) jb_u64(&val, token);
                else jb_s(&val, "null");
                written = true;
                break;
            }
        }
        if (!written) jb_s(&val, "null");
    }
    jb_s(&val, "]");
}

/* acquire and try_acquire: C has one call for both; its "nothing" is POLYLOCK_TIMEOUT with
 * no token written, which try_acquire reports as null. */
static int acquire(const jval *r, bool try_form) {
    FIND(h, "handle", BIT(O_LOCK) | BIT(O_RWSIDE) | BIT(O_SEM) | BIT(O_MULTI));
    DURATION(wait, "wait_ms", try_form ? TRY_ONCE_MS : WAIT_FOREVER_MS);
    DURATION(lease, "lease_ms", WATCHDOG_LEASE_MS);
    const jval *as_v = j_get(r, "as");
    const char *as = as_v && as_v->type == J_STR ? as_v->text : "";
    uint64_t token = 0;
    polylock_status status;
    switch (h->kind) {
    case O_LOCK:
        status = polylock_lock_acquire(h->p, wait, lease, &token);
        break;
    case O_RWSIDE:
        status = h->write ? polylock_rwlock_write_acquire(h->p, wait, lease, &token)
                          : polylock_rwlock_read_acquire(h->p, wait, lease, &token);
        break;
    case O_SEM: {
        polylock_hold *hold = NULL;
        status = polylock_semaphore_acquire_hold(h->p, wait, lease, NULL, &hold);
        if (status == POLYLOCK_OK) {
            add_obj(as, O_G_HOLD, hold);
            put_token_obj(polylock_hold_fencing_token(hold));
            return 0;
        }
        break;
    }
    default: {
        polylock_multi_hold *hold = NULL;
        status = polylock_multi_lock_acquire(h->p, wait, lease, NULL, &hold);
        if (status == POLYLOCK_OK) {
            jb_s(&val, "{\"token\":");
            put_multi_tokens(h, hold);
            jb_s(&val, "}");
            add_obj(as, O_G_MULTI, hold); /* last: it may move `h` */
            return 0;
        }
        break;
    }
    }
    if (status == POLYLOCK_TIMEOUT && try_form) {
        jb_s(&val, "null");
        return 0;
    }
    if (status != POLYLOCK_OK) return fail_status(status);
    okind kind = h->kind == O_LOCK ? O_G_LOCK : h->write ? O_G_WRITE : O_G_READ;
    void *handle = h->p;
    obj *g = add_obj(as, kind, NULL);
    g->aux = handle;
    g->token = token;
    put_token_obj(token);
    return 0;
}

static int op_acquire(const jval *r) { return acquire(r, false); }
static int op_try_acquire(const jval *r) { return acquire(r, true); }

#define GUARDS (BIT(O_G_LOCK) | BIT(O_G_READ) | BIT(O_G_WRITE) | BIT(O_G_HOLD) | BIT(O_G_MULTI))

static int op_release(const jval *r) {
    FIND(g, "guard", GUARDS);
    polylock_status status;
    switch (g->kind) {
    case O_G_LOCK: status = polylock_lock_release(g->aux); break;
    case O_G_READ: status = polylock_rwlock_read_release(g->aux); break;
    case O_G_WRITE: status = polylock_rwlock_write_release(g->aux); break;
    case O_G_HOLD: status = polylock_hold_release(g->p); break;
    default: status = polylock_multi_hold_release(g->p); break;
    }
    g->released = true;
    CHECK(status);
    return 0;
}

static int op_release_handle(const jval *r) {
    FIND(h, "handle", BIT(O_LOCK) | BIT(O_RWSIDE) | BIT(O_SEM) | BIT(O_MULTI));
    if (h->kind == O_LOCK) CHECK(polylock_lock_release(h->p));
    else if (h->kind == O_RWSIDE)
        CHECK(h->write ? polylock_rwlock_write_release(h->p) : polylock_rwlock_read_release(h->p));
    else return not_offered("C releases a permit or a multi-lock only through its hold");
    return 0;
}

static int op_token(const jval *r) {
    FIND(g, "guard", GUARDS);
    if (g->kind == O_G_HOLD) jb_u64(&val, polylock_hold_fencing_token(g->p));
    else if (g->kind == O_G_MULTI) return not_offered("a C multi-hold is read part by part (polylock_multi_hold_part); acquire reports the list");
    else jb_u64(&val, g->token);
    return 0;
}

static int op_is_lost(const jval *r) {
    FIND(g, "guard", GUARDS);
    bool lost;
    switch (g->kind) {
    case O_G_LOCK: lost = polylock_lock_is_lost(g->aux); break;
    case O_G_HOLD: lost = polylock_hold_is_lost(g->p); break;
    case O_G_MULTI: lost = polylock_multi_hold_is_lost(g->p); break;
    default: return not_offered("C's thread-owned read-write sides have no is_lost");
    }
    jb_s(&val, lost ? "true" : "false");
    return 0;
}

static int op_wait_lost(const jval *r) {
    FIND(g, "guard", GUARDS);
    DURATION(wait, "wait_ms", WAIT_FOREVER_MS);
    if (g->kind == O_G_LOCK) { /* the calling thread's hold: polylock_lock_wait_lost */
        polylock_status status = polylock_lock_wait_lost(g->aux, wait, NULL);
        if (status != POLYLOCK_OK && status != POLYLOCK_TIMEOUT) return fail_status(status);
        jb_s(&val, status == POLYLOCK_OK ? "true" : "false"); /* TIMEOUT: not lost within wait_ms */
        return 0;
    }
    if (g->kind != O_G_HOLD)
        return not_offered("C's thread-owned read-write sides and multi-holds have no lost signal (polylock_lock_wait_lost and polylock_hold_wait_lost are a mutex's and a polylock_hold's)");
    bool lost = false;
    polylock_status status = polylock_hold_wait_lost(g->p, wait, NULL, &lost);
    if (status == POLYLOCK_TIMEOUT) lost = false; /* not lost within wait_ms */
    else if (status != POLYLOCK_OK) return fail_status(status);
    jb_s(&val, lost ? "true" : "false");
    return 0;
}

static int op_hold_count(const jval *r) {
    FIND(h, "handle", BIT(O_LOCK) | BIT(O_RWSIDE) | BIT(O_SEM) | BIT(O_MULTI));
    if (h->kind != O_LOCK) return not_offered("C has a hold count for mutexes only (polylock_lock_hold_count)");
    jb_f(&val, "%u", (unsigned)polylock_lock_hold_count(h->p));
    return 0;
}

static int op_is_locked(const jval *r) {
    FIND(h, "handle", BIT(O_LOCK) | BIT(O_RWSIDE) | BIT(O_SEM) | BIT(O_MULTI));
    if (h->kind != O_LOCK) return not_offered("C asks the store whether anyone holds a mutex only (polylock_lock_is_locked)");
    bool locked = false;
    CHECK(polylock_lock_is_locked(h->p, &locked));
    jb_s(&val, locked ? "true" : "false");
    return 0;
}

/* ---- admin: the kit's JSON, parsed ---- */

/* Parse the JSON text the C call handed out (freeing it) into `out`. */
static int parse_handed_out(polylock_bytes *bytes, jval *out) {
    char *text = strndup((const char *)bytes->data, bytes->len);
    polylock_bytes_free(bytes);
    const char *error = NULL;
    int failed = j_parse(text, out, &error);
    free(text);
    if (failed) return driver_error("the handed-out JSON does not parse: %s", error);
    return 0;
}

static int op_status(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    polylock_bytes json = {NULL, 0};
    CHECK(polylock_client_status_json(c->p, name, NULL, &json));
    jval status;
    if (parse_handed_out(&json, &status)) return 1;
    const jval *held = j_get(&status, "held");
    int failed = !held || held->type != J_BOOL;
    if (!failed) {
        jb_s(&val, held->boolean ? "{\"held\":true,\"holders\":1}" : "{\"held\":false,\"holders\":0}");
    }
    j_free(&status);
    return failed ? driver_error("polylock_client_status_json gave no boolean 'held'") : 0;
}

static int op_list(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(prefix, "prefix");
    polylock_bytes json = {NULL, 0};
    CHECK(polylock_client_list_json(c->p, prefix, &json));
    jval list;
    if (parse_handed_out(&json, &list)) return 1;
    if (list.type != J_ARR) {
        j_free(&list);
        return driver_error("polylock_client_list_json gave no array");
    }
    /* The held names; the array is sorted by name already. */
    jb_s(&val, "[");
    bool first = true;
    for (size_t i = 0; i < list.count; i++) {
        const jval *name = j_get(&list.items[i], "name"), *held = j_get(&list.items[i], "held");
        if (!name || name->type != J_STR || !held || held->type != J_BOOL || !held->boolean) continue;
        if (!first) jb_s(&val, ",");
        jb_str(&val, name->text, name->len);
        first = false;
    }
    jb_s(&val, "]");
    j_free(&list);
    return 0;
}

static int op_force_unlock(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    bool removed = false;
    CHECK(polylock_client_force_unlock(c->p, name, NULL, &removed));
    jb_s(&val, removed ? "true" : "false");
    return 0;
}

/* ---- election ---- */

static int op_election(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(as, "as");
    polylock_election *e = NULL;
    CHECK(polylock_client_election(c->p, name, &e));
    add_obj(as, O_ELECTION, e);
    return 0;
}

static int campaign(const jval *r, bool try_form) {
    FIND(e, "election", BIT(O_ELECTION));
    STR(value, "value");
    DURATION(wait, "wait_ms", try_form ? TRY_ONCE_MS : WAIT_FOREVER_MS);
    const jval *as_v = j_get(r, "as");
    polylock_leadership *l = NULL;
    polylock_status status = polylock_election_campaign(e->p, (const uint8_t *)value, value_v->len, wait, NULL, &l);
    if (status == POLYLOCK_TIMEOUT && try_form) {
        jb_s(&val, "null");
        return 0;
    }
    CHECK(status);
    add_obj(as_v && as_v->type == J_STR ? as_v->text : "", O_LEADERSHIP, l);
    jb_s(&val, "{\"term\":");
    jb_u64(&val, polylock_leadership_term(l));
    jb_s(&val, "}");
    return 0;
}

static int op_campaign(const jval *r) { return campaign(r, false); }
static int op_try_campaign(const jval *r) { return campaign(r, true); }

static int op_leader(const jval *r) {
    FIND(e, "election", BIT(O_ELECTION));
    polylock_leader leader;
    memset(&leader, 0, sizeof leader);
    CHECK(polylock_election_leader(e->p, &leader));
    put_leader(&leader);
    return 0;
}

static int op_resign(const jval *r) {
    FIND(l, "leadership", BIT(O_LEADERSHIP));
    CHECK(polylock_leadership_resign(l->p));
    return 0;
}

static int op_is_leader(const jval *r) {
    FIND(l, "leadership", BIT(O_LEADERSHIP));
    jb_s(&val, polylock_leadership_is_leader(l->p) ? "true" : "false");
    return 0;
}

static int op_observe_next(const jval *r) {
    FIND(e, "election", BIT(O_ELECTION));
    DURATION(wait, "wait_ms", WAIT_FOREVER_MS);
    if (!e->aux) {
        polylock_observer *o = NULL;
        CHECK(polylock_election_observe(e->p, &o));
        e->aux = o;
    }
    polylock_leader leader;
    memset(&leader, 0, sizeof leader);
    polylock_status status = polylock_observer_next(e->aux, wait, NULL, &leader);
    if (status == POLYLOCK_TIMEOUT) { /* "nothing changed within timeout_ms" */
        jb_s(&val, "\"no change\"");
        return 0;
    }
    CHECK(status);
    put_leader(&leader);
    return 0;
}

/* ---- latch ---- */

static int op_latch(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(as, "as");
    polylock_latch *l = NULL;
    CHECK(polylock_client_latch(c->p, name, &l));
    add_obj(as, O_LATCH, l);
    return 0;
}

static int op_latch_set(const jval *r) {
    FIND(l, "latch", BIT(O_LATCH));
    U64(count, "count");
    bool set = false;
    CHECK(polylock_latch_try_set_count(l->p, count, &set));
    jb_s(&val, set ? "true" : "false");
    return 0;
}

static int op_count_down(const jval *r) {
    FIND(l, "latch", BIT(O_LATCH));
    CHECK(polylock_latch_count_down(l->p));
    return 0;
}

static int op_latch_count(const jval *r) {
    FIND(l, "latch", BIT(O_LATCH));
    uint64_t count = 0;
    CHECK(polylock_latch_count(l->p, &count));
    jb_u64(&val, count);
    return 0;
}

static int op_latch_wait(const jval *r) {
    FIND(l, "latch", BIT(O_LATCH));
    DURATION(wait, "wait_ms", WAIT_FOREVER_MS);
    /* The waiting form: POLYLOCK_TIMEOUT when the wait runs out (polylock_latch_await's
     * reached=false is the try form). */
    CHECK(polylock_latch_await_zero(l->p, wait, NULL));
    jb_s(&val, "true");
    return 0;
}

/* ---- values ---- */

static int op_value(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(name, "name");
    STR(as, "as");
    polylock_value *v = NULL;
    CHECK(polylock_client_value(c->p, name, &v));
    add_obj(as, O_VALUE, v);
    return 0;
}

static int op_value_get(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    polylock_versioned found;
    memset(&found, 0, sizeof found);
    CHECK(polylock_value_get(v->p, &found));
    if (!found.found) {
        jb_s(&val, "null");
    } else {
        jb_s(&val, "{\"value\":");
        jb_str(&val, (const char *)found.value.data, found.value.len);
        jb_s(&val, ",\"version\":");
        jb_u64(&val, found.version);
        jb_s(&val, "}");
    }
    polylock_bytes_free(&found.value);
    return 0;
}

static int op_value_create(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    STR(data, "data");
    uint64_t version = 0;
    CHECK(polylock_value_create(v->p, (const uint8_t *)data, data_v->len, &version));
    jb_u64(&val, version);
    return 0;
}

static int op_value_cas(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    U64(version, "version");
    STR(data, "data");
    uint64_t written = 0;
    CHECK(polylock_value_compare_and_set(v->p, version, (const uint8_t *)data, data_v->len, &written));
    jb_u64(&val, written);
    return 0;
}

static int op_value_delete(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    U64(version, "version");
    CHECK(polylock_value_delete(v->p, version));
    return 0;
}

static int op_value_write_fenced(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    U64(token, "token");
    STR(data, "data");
    uint64_t written = 0;
    CHECK(polylock_value_write_fenced(v->p, token, (const uint8_t *)data, data_v->len, &written));
    jb_u64(&val, written);
    return 0;
}

/* The watch started by the first value_watch on this value: its next change, or "no change". */
static int op_value_watch(const jval *r) {
    FIND(v, "value", BIT(O_VALUE));
    DURATION(wait, "wait_ms", WAIT_FOREVER_MS);
    if (!v->aux) {
        polylock_watch *w = NULL;
        CHECK(polylock_value_watch(v->p, &w));
        v->aux = w;
    }
    polylock_watch_step step;
    memset(&step, 0, sizeof step);
    CHECK(polylock_watch_changed(v->aux, wait, NULL, &step));
    switch (step.outcome) {
    case POLYLOCK_WATCH_CHANGED:
        jb_s(&val, "{\"value\":");
        jb_str(&val, (const char *)step.state.value.data, step.state.value.len);
        jb_s(&val, ",\"version\":");
        jb_u64(&val, step.state.version);
        jb_s(&val, "}");
        break;
    case POLYLOCK_WATCH_DELETED: jb_s(&val, "null"); break;
    case POLYLOCK_WATCH_NO_CHANGE: jb_s(&val, "\"no change\""); break;
    case POLYLOCK_WATCH_CLOSED: return driver_error("the watch of this value was closed");
    }
    polylock_bytes_free(&step.state.value);
    return 0;
}

/* ---- idempotency ---- */

static int op_idempotency(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(ns, "namespace");
    STR(as, "as");
    polylock_idempotency *i = NULL;
    /* 0, 0: the header's documented "default" retention and in-progress TTL */
    CHECK(polylock_client_idempotency(c->p, ns, 0, 0, &i));
    add_obj(as, O_IDEM, i);
    return 0;
}

static int op_idem_begin(const jval *r) {
    FIND(i, "idempotency", BIT(O_IDEM));
    STR(key, "key");
    STR(payload, "payload");
    const jval *as_v = j_get(r, "as");
    polylock_bytes fp = {NULL, 0};
    CHECK(polylock_idempotency_fingerprint((const uint8_t *)payload, payload_v->len, false, &fp));
    polylock_begin began;
    memset(&began, 0, sizeof began);
    polylock_status status = polylock_idempotency_begin(i->p, key, fp.data, fp.len, &began);
    polylock_bytes_free(&fp);
    CHECK(status);
    switch (began.outcome) {
    case POLYLOCK_BEGIN_ACQUIRED: {
        uint64_t token = 0;
        add_obj(as_v && as_v->type == J_STR ? as_v->text : "", O_TICKET, began.ticket);
        CHECK(polylock_ticket_token(began.ticket, &token));
        jb_s(&val, "{\"acquired\":");
        put_token_obj(token);
        jb_s(&val, "}");
        return 0;
    }
    case POLYLOCK_BEGIN_REPLAY:
        jb_s(&val, "{\"replay\":");
        jb_str(&val, (const char *)began.response.data, began.response.len);
        jb_s(&val, "}");
        polylock_bytes_free(&began.response);
        return 0;
    case POLYLOCK_BEGIN_IN_PROGRESS:
        /* C reports it as an outcome (POLYLOCK_BEGIN_IN_PROGRESS), the protocol as the kind */
        errans.len = 0;
        jb_s(&errans, "\"ok\":false,\"error\":");
        jb_cstr(&errans, polylock_status_name(POLYLOCK_IN_PROGRESS));
        jb_s(&errans, ",\"message\":\"polylock_idempotency_begin: POLYLOCK_BEGIN_IN_PROGRESS\",\"details\":{\"retry_after_ms\":");
        jb_u64(&errans, began.retry_after_ms);
        jb_s(&errans, "}");
        return 1;
    default:
        errans.len = 0;
        jb_s(&errans, "\"ok\":false,\"error\":");
        jb_cstr(&errans, polylock_status_name(POLYLOCK_MISMATCH));
        jb_s(&errans, ",\"message\":\"polylock_idempotency_begin: POLYLOCK_BEGIN_MISMATCH\"");
        return 1;
    }
}

static int op_idem_complete(const jval *r) {
    FIND(t, "ticket", BIT(O_TICKET));
    STR(response, "response");
    CHECK(polylock_ticket_complete(t->p, (const uint8_t *)response, response_v->len));
    return 0;
}

static int op_idem_abandon(const jval *r) {
    FIND(t, "ticket", BIT(O_TICKET));
    CHECK(polylock_ticket_abandon(t->p));
    return 0;
}

/* idem_run's work: the request's response. */
static int32_t respond(void *user_data, polylock_work_response *response) {
    const jval *text = user_data;
    return polylock_work_response_set(response, (const uint8_t *)text->text, text->len);
}

static int op_idem_run(const jval *r) {
    FIND(i, "idempotency", BIT(O_IDEM));
    STR(key, "key");
    STR(payload, "payload");
    STR(response, "response");
    (void)response;
    DURATION(wait, "wait_ms", WAIT_FOREVER_MS);
    polylock_bytes fp = {NULL, 0}, out = {NULL, 0};
    CHECK(polylock_idempotency_fingerprint((const uint8_t *)payload, payload_v->len, false, &fp));
    polylock_status status = polylock_idempotency_run(i->p, key, fp.data, fp.len, wait, respond, (void *)response_v, &out);
    polylock_bytes_free(&fp);
    CHECK(status);
    jb_str(&val, (const char *)out.data, out.len);
    polylock_bytes_free(&out);
    return 0;
}

/* ---- IDs ---- */

static int op_segment(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(tag, "tag");
    STR(as, "as");
    uint64_t step = 0; /* "0 for the default" */
    if (j_get(r, "step") && j_uint64(j_get(r, "step"), &step)) return driver_error("'step' must be an unsigned integer");
    polylock_segment *s = NULL;
    CHECK(polylock_segment_open(c->p, tag, step, &s));
    add_obj(as, O_SEGMENT, s);
    return 0;
}

static int op_next_id(const jval *r) {
    FIND(s, "segment", BIT(O_SEGMENT));
    uint64_t id = 0;
    CHECK(polylock_segment_next_id(s->p, &id));
    jb_u64(&val, id);
    return 0;
}

static int op_next_ids(const jval *r) {
    FIND(s, "segment", BIT(O_SEGMENT));
    U64(count, "count");
    uint64_t *ids = calloc(count ? count : 1, sizeof(uint64_t));
    polylock_status status = polylock_segment_next_ids(s->p, count, count ? ids : NULL);
    if (status != POLYLOCK_OK) { free(ids); return fail_status(status); }
    jb_s(&val, "[");
    for (uint64_t k = 0; k < count; k++) {
        if (k) jb_s(&val, ",");
        jb_u64(&val, ids[k]);
    }
    jb_s(&val, "]");
    free(ids);
    return 0;
}

static int op_snowflake(const jval *r) {
    FIND(c, "client", BIT(O_CLIENT));
    STR(as, "as");
    int64_t worker = -1; /* "any negative number for the lowest free one" */
    if (j_get(r, "worker_id") && j_int64(j_get(r, "worker_id"), &worker)) return driver_error("'worker_id' must be an integer");
    polylock_leased_snowflake *s = NULL;
    CHECK(polylock_snowflake_lease(c->p, worker, &s));
    add_obj(as, O_SNOWFLAKE, s);
    uint64_t id = 0;
    CHECK(polylock_leased_snowflake_worker(s, &id, NULL));
    jb_s(&val, "{\"worker_id\":");
    jb_u64(&val, id);
    jb_s(&val, "}");
    return 0;
}

static int op_snowflake_next(const jval *r) {
    FIND(s, "snowflake", BIT(O_SNOWFLAKE));
    uint64_t id = 0;
    CHECK(polylock_leased_snowflake_next(s->p, &id));
    jb_u64(&val, id);
    return 0;
}

static int op_snowflake_close(const jval *r) {
    FIND(s, "snowflake", BIT(O_SNOWFLAKE));
    CHECK(polylock_leased_snowflake_close(s->p));
    return 0;
}

static int op_uuid7(const jval *r) {
    (void)r;
    char text[POLYLOCK_UUID_TEXT_SIZE];
    CHECK(polylock_uuid7(text, sizeof text));
    jb_cstr(&val, text);
    return 0;
}

static int op_ulid(const jval *r) {
    (void)r;
    char text[POLYLOCK_ULID_TEXT_SIZE];
    CHECK(polylock_ulid(text, sizeof text));
    jb_cstr(&val, text);
    return 0;
}

static int op_uuid7_timestamp(const jval *r) {
    STR(of, "of");
    uint64_t ms = 0;
    CHECK(polylock_uuid7_timestamp_ms(of, &ms));
    jb_u64(&val, ms);
    return 0;
}

static int op_ulid_timestamp(const jval *r) {
    STR(of, "of");
    uint64_t ms = 0;
    CHECK(polylock_ulid_timestamp_ms(of, &ms));
    jb_u64(&val, ms);
    return 0;
}

static int op_ulid_to_uuid(const jval *r) {
    STR(of, "of");
    char text[POLYLOCK_UUID_TEXT_SIZE];
    CHECK(polylock_ulid_to_uuid(of, text, sizeof text));
    jb_cstr(&val, text);
    return 0;
}

static int op_uuid_to_ulid(const jval *r) {
    STR(of, "of");
    char text[POLYLOCK_ULID_TEXT_SIZE];
    CHECK(polylock_uuid_to_ulid(of, text, sizeof text));
    jb_cstr(&val, text);
    return 0;
}

static int op_snowflake_parse(const jval *r) {
    (void)r;
    return not_offered("C has no call that takes a Snowflake ID apart");
}

/* ---- dispatch ---- */

static const struct {
    const char *op;
    int (*run)(const jval *r);
} ops[] = {
    {"reset", op_reset}, {"connect", op_connect}, {"close", op_close}, {"error_table", op_error_table},
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

int main(void) {
    printf("{\"ready\":\"c\"}\n");
    fflush(stdout);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    jbuf out = {0};
    while ((n = getline(&line, &cap, stdin)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (!n) continue;
        jval req;
        const char *error = NULL;
        out.len = 0;
        if (j_parse(line, &req, &error)) {
            jb_s(&out, "{\"id\":null,\"ok\":false,\"error\":\"DRIVER\",\"message\":");
            jb_cstr(&out, error);
            jb_s(&out, "}\n");
            fputs(out.data, stdout);
            fflush(stdout);
            continue;
        }
        const jval *id = j_get(&req, "id");
        const jval *op = j_get(&req, "op");
        val.len = 0;
        if (val.data) val.data[0] = 0;
        int failed;
        if (!op || op->type != J_STR) {
            failed = driver_error("a request needs an 'op'");
        } else {
            failed = not_offered("the C driver does not know the op '%s'", op->text);
            for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
                if (!strcmp(ops[i].op, op->text)) {
                    failed = ops[i].run(&req);
                    break;
                }
            }
        }
        jb_s(&out, "{\"id\":");
        if (id && id->type == J_NUM) jb_s(&out, id->text);
        else if (id && id->type == J_STR) jb_str(&out, id->text, id->len);
        else jb_s(&out, "null");
        jb_s(&out, ",");
        if (failed) {
            jb_add(&out, errans.data, errans.len);
        } else {
            jb_s(&out, "\"ok\":true,\"value\":");
            if (val.len) jb_add(&out, val.data, val.len);
            else jb_s(&out, "null");
        }
        jb_s(&out, "}\n");
        fputs(out.data, stdout);
        fflush(stdout);
        j_free(&req);
    }
    free_all();
    free(line);
    return 0;
}
