// The conformance driver of the Java surface (io.polylock, bindings-jvm): one JSON request per
// stdin line, one answer per stdout line (tests/conformance/PROTOCOL.md). It translates each
// request into the public Redisson-style API and decides nothing: durations are `long` +
// TimeUnit.MILLISECONDS, an absent duration calls the overload without it, errors are read
// from PolylockException.getCode() (and IllegalMonitorStateException, the surface's NOT_OWNER).
//
// Owners: Java owns locks per thread, and this driver runs every request on its main thread,
// so the main thread is the owner of everything it acquires.

import io.polylock.ConflictException;
import io.polylock.ErrorCode;
import io.polylock.ExhaustedException;
import io.polylock.FencedException;
import io.polylock.Idempotency;
import io.polylock.IdempotencyTicket;
import io.polylock.Ids;
import io.polylock.InProgressException;
import io.polylock.Leader;
import io.polylock.LeaderSubscription;
import io.polylock.LeasedSnowflakeIdGenerator;
import io.polylock.LockEntry;
import io.polylock.LockStatus;
import io.polylock.MultiLock;
import io.polylock.Permit;
import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.PolylockException;
import io.polylock.RCountDownLatch;
import io.polylock.RFencedLock;
import io.polylock.RIdGenerator;
import io.polylock.RLeaderElection;
import io.polylock.RLeadership;
import io.polylock.RLock;
import io.polylock.RPermitExpirableSemaphore;
import io.polylock.RReadWriteLock;
import io.polylock.ValueChange;
import io.polylock.ValueWatch;
import io.polylock.VersionedValue;
import io.polylock.Versioned;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class ConformanceDriver {
    private static final TimeUnit MS = TimeUnit.MILLISECONDS;

    // ---- what labels name besides the surface's own objects

    /** A lock (or side) held by the main thread: released through the lock, as Java has no guard object. */
    private static final class LockHold {
        final RLock lock;
        LockHold(RLock lock) { this.lock = lock; }
    }

    /** A permit (its id and fencing token): Java releases it through its semaphore. */
    private static final class PermitHold {
        final RPermitExpirableSemaphore semaphore;
        final Permit permit;
        PermitHold(RPermitExpirableSemaphore semaphore, Permit permit) { this.semaphore = semaphore; this.permit = permit; }
    }

    /** A multi-lock held by the main thread. */
    private static final class MultiHold {
        final MultiLock multi;
        MultiHold(MultiLock multi) { this.multi = multi; }
    }

    /** An election plus the observation started by its first observe_next. */
    private static final class ElectionEntry {
        final RLeaderElection election;
        LeaderSubscription subscription;
        final BlockingQueue<Object> changes = new LinkedBlockingQueue<>(); // Optional<Leader> or RuntimeException
        ElectionEntry(RLeaderElection election) { this.election = election; }
    }

    private static final class NotOffered extends RuntimeException {
        NotOffered(String why) { super(why); }
    }

    private static final class DriverFailure extends RuntimeException {
        DriverFailure(String what) { super(what); }
    }

    @FunctionalInterface
    private interface Op {
        Object run(Map<String, Object> request) throws Exception;
    }

    private final Map<String, Object> objects = new HashMap<>();
    private final Map<String, PolylockClient> clientOfLabel = new HashMap<>();
    private final Map<String, RReadWriteLock> rwLocks = new HashMap<>(); // "client label \0 name"
    private final Map<String, ValueWatch> watches = new HashMap<>(); // by the value's label
    private final Map<String, Op> ops = new LinkedHashMap<>();

    private ConformanceDriver() {
        // Session
        ops.put("reset", r -> { reset(); return null; });
        ops.put("connect", r -> put(r, Polylock.connect(str(r, "url"))));
        ops.put("close", r -> { get(r, "client", PolylockClient.class).close(); return null; });
        ops.put("error_table", r -> {
            List<Object> table = new ArrayList<>();
            for (ErrorCode code : ErrorCode.values()) {
                table.add(List.of(code.name(), (long) code.code()));
            }
            return table;
        });

        // Handles
        ops.put("lock", r -> put(r, lock(get(r, "client", PolylockClient.class), str(r, "name"), optStr(r, "kind"))));
        ops.put("rw_lock", r -> {
            String key = str(r, "client") + "\0" + str(r, "name");
            RReadWriteLock rw = rwLocks.get(key);
            if (rw == null) {
                rw = get(r, "client", PolylockClient.class).getReadWriteLock(str(r, "name"));
                rwLocks.put(key, rw);
            }
            switch (str(r, "side")) {
                case "read": return put(r, rw.readLock());
                case "write": return put(r, rw.writeLock());
                default: throw new DriverFailure("unknown side " + str(r, "side"));
            }
        });
        ops.put("semaphore", r -> {
            RPermitExpirableSemaphore semaphore =
                    get(r, "client", PolylockClient.class).getPermitExpirableSemaphore(str(r, "name"));
            if (!semaphore.trySetPermits(Math.toIntExact(integer(r, "permits")))) {
                throw new DriverFailure("trySetPermits returned false on a new RPermitExpirableSemaphore");
            }
            return put(r, semaphore);
        });
        ops.put("multi_lock", r -> {
            PolylockClient client = get(r, "client", PolylockClient.class);
            List<?> names = list(r, "names");
            RLock[] locks = new RLock[names.size()];
            for (int i = 0; i < locks.length; i++) {
                locks[i] = client.getLock((String) names.get(i));
            }
            return put(r, client.getMultiLock(locks));
        });

        // Holds
        ops.put("acquire", this::acquire);
        ops.put("try_acquire", this::tryAcquire);
        ops.put("release", r -> {
            Object guard = get(r, "guard", Object.class);
            if (guard instanceof LockHold) {
                ((LockHold) guard).lock.unlock();
            } else if (guard instanceof PermitHold) {
                ((PermitHold) guard).semaphore.release(((PermitHold) guard).permit);
            } else if (guard instanceof MultiHold) {
                ((MultiHold) guard).multi.unlock();
            } else {
                throw new DriverFailure("'" + str(r, "guard") + "' is not a guard");
            }
            return null;
        });
        ops.put("release_handle", r -> {
            Object handle = get(r, "handle", Object.class);
            if (handle instanceof RLock) {
                ((RLock) handle).unlock();
            } else if (handle instanceof MultiLock) {
                ((MultiLock) handle).unlock();
            } else if (handle instanceof RPermitExpirableSemaphore) {
                throw new NotOffered("RPermitExpirableSemaphore releases a permit only by its id (release(permitId)), not through the handle");
            } else {
                throw new DriverFailure("'" + str(r, "handle") + "' is not a handle");
            }
            return null;
        });
        ops.put("token", r -> {
            Object guard = get(r, "guard", Object.class);
            if (guard instanceof LockHold) {
                RLock lock = ((LockHold) guard).lock;
                if (!isFenced(lock)) {
                    throw new NotOffered(NO_TOKEN);
                }
                return ((RFencedLock) lock).getToken();
            } else if (guard instanceof MultiHold) {
                return tokens(((MultiHold) guard).multi);
            } else if (guard instanceof PermitHold) {
                return ((PermitHold) guard).permit.getToken();
            }
            throw new DriverFailure("'" + str(r, "guard") + "' is not a guard");
        });
        ops.put("is_lost", r -> {
            Object guard = get(r, "guard", Object.class);
            if (guard instanceof RLeadership) {
                return ((RLeadership) guard).isLost();
            }
            if (guard instanceof LockHold) {
                return ((LockHold) guard).lock.isLost(); // the main thread's hold: the owner of everything here
            }
            throw new NotOffered("Java's permits and multi-locks have no lost state: a loss shows only as LOST from release()/unlock()");
        });
        ops.put("wait_lost", r -> {
            Object guard = get(r, "guard", Object.class);
            CompletableFuture<String> lost;
            if (guard instanceof RLeadership) {
                lost = ((RLeadership) guard).onLost();
            } else if (guard instanceof LockHold) {
                lost = ((LockHold) guard).lock.onLost();
            } else {
                throw new NotOffered("Java's permits and multi-locks have no lost signal: a loss shows only as LOST from release()/unlock()");
            }
            try {
                lost.get(waitMs(r), MS);
                return true;
            } catch (TimeoutException e) {
                if (guard instanceof LockHold) {
                    lost.cancel(false); // a lock's onLost() is a new wait each call: end this one
                }
                return false;
            }
        });
        ops.put("hold_count", r -> (long) rlock(r, "handle", "hold_count").getHoldCount());
        ops.put("is_locked", r -> rlock(r, "handle", "is_locked").isLocked());

        // Admin
        ops.put("status", r -> {
            LockStatus status = get(r, "client", PolylockClient.class).status(str(r, "name"));
            // LockStatus is the one JSON shape (a mutex has one holder at most); the protocol asks for a count.
            return Map.of("held", status.isHeld(), "holders", status.isHeld() ? 1L : 0L);
        });
        ops.put("list", r -> {
            List<String> names = new ArrayList<>();
            for (LockEntry entry : get(r, "client", PolylockClient.class).list(str(r, "prefix"))) {
                if (entry.isHeld()) {
                    names.add(entry.getName());
                }
            }
            names.sort(null);
            return names;
        });
        ops.put("force_unlock", r -> get(r, "client", PolylockClient.class).forceUnlock(str(r, "name")));

        // Election
        ops.put("election", r -> {
            store(r, new ElectionEntry(get(r, "client", PolylockClient.class).getLeaderElection(str(r, "name"))));
            return null;
        });
        ops.put("campaign", r -> {
            RLeaderElection election = get(r, "election", ElectionEntry.class).election;
            Long wait = optWaitMs(r);
            RLeadership leadership = wait == null ? election.campaign(str(r, "value"))
                    : election.campaign(str(r, "value"), wait, MS);
            store(r, leadership);
            return Map.of("term", leadership.getTerm());
        });
        ops.put("try_campaign", r -> {
            RLeaderElection election = get(r, "election", ElectionEntry.class).election;
            Long wait = optWaitMs(r);
            // tryCampaign's only overload takes a time: -1 is its documented "as long as it takes".
            RLeadership leadership = election.tryCampaign(str(r, "value"), wait == null ? -1 : wait, MS);
            if (leadership == null) {
                return null;
            }
            store(r, leadership);
            return Map.of("term", leadership.getTerm());
        });
        ops.put("leader", r -> leaderJson(get(r, "election", ElectionEntry.class).election.getLeaderInfo()));
        ops.put("resign", r -> { get(r, "leadership", RLeadership.class).resign(); return null; });
        ops.put("is_leader", r -> get(r, "leadership", RLeadership.class).isLeader());
        ops.put("observe_next", r -> {
            ElectionEntry entry = get(r, "election", ElectionEntry.class);
            long wait = waitMs(r);
            if (entry.subscription == null) {
                entry.subscription = entry.election.observe(new RLeaderElection.LeaderListener() {
                    @Override
                    public void leaderChanged(Optional<Leader> leader) {
                        entry.changes.add(leader);
                    }

                    @Override
                    public void observationFailed(RuntimeException error) {
                        entry.changes.add(error);
                    }
                });
            }
            Object change = entry.changes.poll(wait, MS);
            if (change == null) {
                return "no change";
            }
            if (change instanceof RuntimeException) {
                throw (RuntimeException) change;
            }
            @SuppressWarnings("unchecked")
            Optional<Leader> leader = (Optional<Leader>) change;
            return leaderJson(leader);
        });

        // Latch
        ops.put("latch", r -> put(r, get(r, "client", PolylockClient.class).getCountDownLatch(str(r, "name"))));
        ops.put("latch_set", r -> get(r, "latch", RCountDownLatch.class).trySetCount(integer(r, "count")));
        ops.put("count_down", r -> { get(r, "latch", RCountDownLatch.class).countDown(); return null; });
        ops.put("latch_count", r -> get(r, "latch", RCountDownLatch.class).getCount());
        ops.put("latch_wait", r -> {
            RCountDownLatch latch = get(r, "latch", RCountDownLatch.class);
            Long wait = optWaitMs(r);
            if (wait == null) {
                latch.await();
                return true;
            }
            latch.awaitZero(wait, MS); // the waiting form: TIMEOUT when the wait runs out
            return true;
        });

        // Values
        ops.put("value", r -> put(r, get(r, "client", PolylockClient.class).getVersionedValue(str(r, "name"))));
        ops.put("value_get", r -> {
            Versioned found = get(r, "value", VersionedValue.class).get();
            return found == null ? null : Map.of("value", found.getValueAsString(), "version", found.getVersion());
        });
        ops.put("value_create", r -> get(r, "value", VersionedValue.class).create(bytes(r, "data")));
        ops.put("value_cas", r -> get(r, "value", VersionedValue.class).compareAndSet(integer(r, "version"), bytes(r, "data")));
        ops.put("value_delete", r -> { get(r, "value", VersionedValue.class).delete(integer(r, "version")); return null; });
        ops.put("value_write_fenced", r -> get(r, "value", VersionedValue.class).writeFenced(integer(r, "token"), bytes(r, "data")));
        ops.put("value_watch", r -> {
            String label = str(r, "value");
            ValueWatch watch = watches.get(label);
            if (watch == null) {
                watch = get(r, "value", VersionedValue.class).watch();
                watches.put(label, watch);
            }
            ValueChange change = watch.changed(waitMs(r), MS);
            switch (change.getKind()) {
                case UPDATED:
                    return Map.of("value", change.getValue().getValueAsString(), "version", change.getValue().getVersion());
                case DELETED:
                    return null;
                case NO_CHANGE:
                    return "no change";
                default:
                    throw new DriverFailure("the watch of '" + label + "' was closed");
            }
        });

        // Idempotency
        ops.put("idempotency", r -> put(r, get(r, "client", PolylockClient.class).getIdempotency(str(r, "namespace"))));
        ops.put("idem_begin", r -> {
            Idempotency.Begin begin = get(r, "idempotency", Idempotency.class).begin(str(r, "key"), bytes(r, "payload"));
            switch (begin.getOutcome()) {
                case ACQUIRED:
                    store(r, begin.getTicket());
                    return Map.of("acquired", Map.of("token", begin.getTicket().getToken()));
                case REPLAY:
                    return Map.of("replay", new String(begin.getResponse(), StandardCharsets.UTF_8));
                case IN_PROGRESS:
                    // Java's begin returns its outcomes; the protocol carries IN_PROGRESS and MISMATCH as errors.
                    throw new OutcomeError("IN_PROGRESS", "Idempotency.begin returned Outcome.IN_PROGRESS",
                            begin.getRetryAfter() == null ? Map.of() : Map.of("retry_after_ms", begin.getRetryAfter().toMillis()));
                case MISMATCH:
                    throw new OutcomeError("MISMATCH", "Idempotency.begin returned Outcome.MISMATCH", Map.of());
                default:
                    throw new DriverFailure("unknown outcome " + begin.getOutcome());
            }
        });
        ops.put("idem_complete", r -> { get(r, "ticket", IdempotencyTicket.class).complete(bytes(r, "response")); return null; });
        ops.put("idem_abandon", r -> { get(r, "ticket", IdempotencyTicket.class).abandon(); return null; });
        ops.put("idem_run", r -> {
            Idempotency idempotency = get(r, "idempotency", Idempotency.class);
            byte[] response = bytes(r, "response");
            Long wait = optWaitMs(r);
            byte[] result = wait == null
                    ? idempotency.run(str(r, "key"), bytes(r, "payload"), () -> response)
                    : idempotency.run(str(r, "key"), bytes(r, "payload"), Duration.ofMillis(wait), () -> response);
            return new String(result, StandardCharsets.UTF_8);
        });

        // IDs
        ops.put("segment", r -> {
            RIdGenerator generator = get(r, "client", PolylockClient.class).getIdGenerator(str(r, "tag"));
            if (r.get("step") != null) {
                // tryInit(value, allocationSize) is the only way to give a step; 0 is the only start value it takes.
                if (!generator.tryInit(0, integer(r, "step"))) {
                    throw new DriverFailure("tryInit returned false on a new RIdGenerator");
                }
            }
            return put(r, generator);
        });
        ops.put("next_id", r -> get(r, "segment", RIdGenerator.class).nextId());
        ops.put("next_ids", r -> longs(get(r, "segment", RIdGenerator.class).nextIds(Math.toIntExact(integer(r, "count")))));
        ops.put("snowflake", r -> {
            PolylockClient client = get(r, "client", PolylockClient.class);
            LeasedSnowflakeIdGenerator generator = r.get("worker_id") == null ? client.leaseSnowflake()
                    : client.leaseSnowflake(integer(r, "worker_id"));
            store(r, generator);
            return Map.of("worker_id", generator.getWorkerId());
        });
        ops.put("snowflake_next", r -> get(r, "snowflake", LeasedSnowflakeIdGenerator.class).nextId());
        ops.put("snowflake_close", r -> { get(r, "snowflake", LeasedSnowflakeIdGenerator.class).close(); return null; });
        ops.put("uuid7", r -> Ids.uuid7().toString());
        ops.put("ulid", r -> Ids.ulid());
        ops.put("uuid7_timestamp", r -> Ids.uuid7TimestampMillis(UUID.fromString(str(r, "of"))));
        ops.put("ulid_timestamp", r -> Ids.ulidTimestampMillis(str(r, "of")));
        ops.put("ulid_to_uuid", r -> Ids.ulidToUuid(str(r, "of")).toString());
        ops.put("uuid_to_ulid", r -> Ids.uuidToUlid(UUID.fromString(str(r, "of"))));
        ops.put("snowflake_parse", r -> {
            throw new NotOffered("Java parses Snowflake IDs only with a generator of a connected client (PolylockClient.getIdGenerator(worker, epoch).parse), and this request has no client");
        });
    }

    // ---- handles and holds

    private RLock lock(PolylockClient client, String name, String kind) {
        if (kind == null || kind.equals("reentrant")) {
            RFencedLock lock = client.getFencedLock(name); // getLock's reentrant lock, typed with its fencing token
            fencedLocks.add(lock);
            return lock;
        }
        RFencedLock lock;
        switch (kind) {
            case "fair": lock = client.getFairLock(name); break;
            case "token": lock = client.getTokenLock(name); break;
            case "lease": lock = client.getLeaseLock(name); break;
            default: throw new NotOffered("PolylockClient has no factory for a '" + kind + "' lock");
        }
        fencedLocks.add(lock);
        return lock;
    }

    private Object acquire(Map<String, Object> r) throws Exception {
        Object handle = get(r, "handle", Object.class);
        Long lease = optDuration(r, "lease_ms");
        if (r.get("wait_ms") != null) {
            return acquireWithin(r, handle, optDuration(r, "wait_ms"), lease);
        }
        if (handle instanceof RLock) {
            RLock lock = (RLock) handle;
            Object value;
            if (isFenced(lock)) {
                Long token = lease == null ? ((RFencedLock) lock).lockAndGetToken() : ((RFencedLock) lock).lockAndGetToken(lease, MS);
                value = tokenValue(token);
            } else {
                if (lease == null) {
                    lock.lock();
                } else {
                    lock.lock(lease, MS);
                }
                value = Map.of();
            }
            store(r, new LockHold(lock));
            return value;
        } else if (handle instanceof RPermitExpirableSemaphore) {
            RPermitExpirableSemaphore semaphore = (RPermitExpirableSemaphore) handle;
            Permit permit = lease == null ? semaphore.acquirePermit() : semaphore.acquirePermit(lease, MS);
            store(r, new PermitHold(semaphore, permit));
            return tokenValue(permit.getToken());
        } else if (handle instanceof MultiLock) {
            MultiLock multi = (MultiLock) handle;
            if (lease == null) {
                multi.lock();
            } else {
                multi.lock(lease, MS);
            }
            store(r, new MultiHold(multi));
            return tokenValue(tokens(multi));
        }
        throw new DriverFailure("'" + str(r, "handle") + "' is not a handle");
    }

    /** The waiting forms with a wait: lockWithin / acquireWithin, whose only overloads take a lease (-1: watchdog). */
    private Object acquireWithin(Map<String, Object> r, Object handle, long wait, Long lease) throws Exception {
        long leaseOrWatchdog = lease == null ? -1 : lease;
        if (handle instanceof RLock) {
            RLock lock = (RLock) handle;
            lock.lockWithin(wait, leaseOrWatchdog, MS);
            store(r, new LockHold(lock));
            return isFenced(lock) ? tokenValue(((RFencedLock) lock).getToken()) : Map.of();
        } else if (handle instanceof RPermitExpirableSemaphore) {
            RPermitExpirableSemaphore semaphore = (RPermitExpirableSemaphore) handle;
            Permit permit = semaphore.acquirePermitWithin(wait, leaseOrWatchdog, MS);
            store(r, new PermitHold(semaphore, permit));
            return tokenValue(permit.getToken());
        } else if (handle instanceof MultiLock) {
            throw new NotOffered("MultiLock has no acquisition with a wait that throws TIMEOUT: lock() waits forever and tryLock(wait, ...) returns false");
        }
        throw new DriverFailure("'" + str(r, "handle") + "' is not a handle");
    }

    private Object tryAcquire(Map<String, Object> r) throws Exception {
        Object handle = get(r, "handle", Object.class);
        Long wait = optDuration(r, "wait_ms");
        Long lease = optDuration(r, "lease_ms");
        if (wait == null && lease != null) {
            throw new NotOffered("Java's tryLock/tryAcquire have no overload with a lease but no wait time");
        }
        if (handle instanceof RLock) {
            RLock lock = (RLock) handle;
            Object value;
            if (isFenced(lock)) {
                RFencedLock fenced = (RFencedLock) lock;
                Long token = wait == null ? fenced.tryLockAndGetToken()
                        : lease == null ? fenced.tryLockAndGetToken(wait, MS)
                        : fenced.tryLockAndGetToken(wait, lease, MS);
                value = token == null ? null : tokenValue(token);
            } else {
                boolean held = wait == null ? lock.tryLock()
                        : lease == null ? lock.tryLock(wait, MS)
                        : lock.tryLock(wait, lease, MS);
                value = held ? Map.of() : null;
            }
            if (value != null) {
                store(r, new LockHold(lock));
            }
            return value;
        } else if (handle instanceof RPermitExpirableSemaphore) {
            RPermitExpirableSemaphore semaphore = (RPermitExpirableSemaphore) handle;
            // tryAcquirePermit's only overload with a wait takes a lease: -1 is its documented "watchdog" (Redisson's).
            Permit permit = wait == null ? semaphore.tryAcquirePermit()
                    : semaphore.tryAcquirePermit(wait, lease == null ? -1 : lease, MS);
            if (permit == null) {
                return null;
            }
            store(r, new PermitHold(semaphore, permit));
            return tokenValue(permit.getToken());
        } else if (handle instanceof MultiLock) {
            MultiLock multi = (MultiLock) handle;
            boolean held = wait == null ? multi.tryLock()
                    : lease == null ? multi.tryLock(wait, MS)
                    : multi.tryLock(wait, lease, MS);
            if (!held) {
                return null;
            }
            store(r, new MultiHold(multi));
            return tokenValue(tokens(multi));
        }
        throw new DriverFailure("'" + str(r, "handle") + "' is not a handle");
    }

    /** Whether the surface typed this lock as an RFencedLock (getFencedLock and the kinds' factories); the sides are RLocks. */
    private final java.util.Set<RLock> fencedLocks = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    private static final String NO_TOKEN = "the read-write lock's sides are RLocks, which have no fencing token"
            + " (the mutex factories return RFencedLock)";

    private boolean isFenced(RLock lock) {
        return fencedLocks.contains(lock);
    }

    private static Map<String, Object> tokenValue(Object token) {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("token", token);
        return value;
    }

    private static List<Object> tokens(MultiLock multi) {
        return new ArrayList<>(List.of((Object[]) multi.getTokens()));
    }

    private RLock rlock(Map<String, Object> r, String key, String op) {
        Object handle = get(r, key, Object.class);
        if (handle instanceof RLock) {
            return (RLock) handle;
        }
        throw new NotOffered(handle.getClass().getSimpleName() + " has no " + op + " in the Java API");
    }

    private static Object leaderJson(Optional<Leader> leader) {
        return leader.map(l -> (Object) Map.of("value", l.getValueAsString(), "term", l.getTerm())).orElse(null);
    }

    private void reset() {
        for (ValueWatch watch : watches.values()) {
            try {
                watch.close();
            } catch (RuntimeException ignored) {
                // reset ignores errors
            }
        }
        watches.clear();
        for (Object object : objects.values()) {
            try {
                if (object instanceof ElectionEntry && ((ElectionEntry) object).subscription != null) {
                    ((ElectionEntry) object).subscription.close();
                } else if (object instanceof RLeadership) {
                    ((RLeadership) object).close();
                } else if (object instanceof LeasedSnowflakeIdGenerator) {
                    ((LeasedSnowflakeIdGenerator) object).close();
                }
            } catch (RuntimeException ignored) {
                // reset ignores errors
            }
        }
        for (Object object : objects.values()) {
            if (object instanceof PolylockClient) {
                try {
                    ((PolylockClient) object).close();
                } catch (RuntimeException ignored) {
                    // reset ignores errors
                }
            }
        }
        objects.clear();
        rwLocks.clear();
        fencedLocks.clear();
    }

    // ---- request arguments

    private Object put(Map<String, Object> r, Object object) {
        store(r, object);
        return null;
    }

    /** Name the object by the request's `as`, when it has one (a step expecting an error may have none). */
    private void store(Map<String, Object> r, Object object) {
        if (r.get("as") != null) {
            objects.put(str(r, "as"), object);
        }
    }

    private <T> T get(Map<String, Object> r, String key, Class<T> type) {
        String label = str(r, key);
        Object object = objects.get(label);
        if (object == null) {
            throw new DriverFailure("no object labelled '" + label + "'");
        }
        if (!type.isInstance(object)) {
            throw new DriverFailure("'" + label + "' is a " + object.getClass().getSimpleName() + ", not a " + type.getSimpleName());
        }
        return type.cast(object);
    }

    private static String str(Map<String, Object> r, String key) {
        Object value = r.get(key);
        if (!(value instanceof String)) {
            throw new DriverFailure("'" + key + "' must be a string");
        }
        return (String) value;
    }

    private static String optStr(Map<String, Object> r, String key) {
        return r.get(key) == null ? null : str(r, key);
    }

    private static List<?> list(Map<String, Object> r, String key) {
        Object value = r.get(key);
        if (!(value instanceof List)) {
            throw new DriverFailure("'" + key + "' must be a list");
        }
        return (List<?>) value;
    }

    private static long integer(Map<String, Object> r, String key) {
        Object value = r.get(key);
        if (value instanceof Long) {
            return (Long) value;
        }
        throw new DriverFailure("'" + key + "' must be a 64-bit integer, got " + value);
    }

    private static byte[] bytes(Map<String, Object> r, String key) {
        return str(r, key).getBytes(StandardCharsets.UTF_8);
    }

    private static List<Object> longs(long[] values) {
        List<Object> out = new ArrayList<>();
        for (long value : values) {
            out.add(value);
        }
        return out;
    }

    /** A duration in milliseconds as Java's `long`, or null when absent; not offered where a long cannot hold it. */
    private static Long optDuration(Map<String, Object> r, String key) {
        Object value = r.get(key);
        if (value == null) {
            return null;
        }
        if (value instanceof Long) {
            return (Long) value;
        }
        if (value instanceof BigDecimal) {
            try {
                return ((BigDecimal) value).longValueExact();
            } catch (ArithmeticException e) {
                throw new NotOffered("Java durations are long milliseconds (TimeUnit.MILLISECONDS), which cannot hold " + value);
            }
        }
        if (value instanceof String) {
            throw new NotOffered("Java durations are long milliseconds (TimeUnit.MILLISECONDS), which cannot hold " + value);
        }
        throw new DriverFailure("'" + key + "' must be a duration, got " + value);
    }

    private static Long optWaitMs(Map<String, Object> r) {
        return optDuration(r, "wait_ms");
    }

    private static long waitMs(Map<String, Object> r) {
        Long wait = optWaitMs(r);
        if (wait == null) {
            throw new DriverFailure("'wait_ms' is required");
        }
        return wait;
    }

    // ---- answers

    /** An outcome the surface returns that the protocol carries as an error (idempotency's begin). */
    private static final class OutcomeError extends RuntimeException {
        final String kind;
        final Map<String, Object> details;
        OutcomeError(String kind, String message, Map<String, Object> details) {
            super(message);
            this.kind = kind;
            this.details = details;
        }
    }

    private Map<String, Object> answer(Map<String, Object> request) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", request.get("id"));
        Object opName = request.get("op");
        Op op = opName instanceof String ? ops.get(opName) : null;
        if (op == null) {
            out.put("ok", false);
            out.put("not_offered", "the Java driver does not know the op '" + opName + "'");
            return out;
        }
        try {
            Object value = op.run(request);
            out.put("ok", true);
            out.put("value", value);
        } catch (NotOffered e) {
            out.put("ok", false);
            out.put("not_offered", e.getMessage());
        } catch (PolylockException e) {
            error(out, e.getCode().name(), e.getMessage(), details(e));
        } catch (IllegalMonitorStateException e) {
            // The surface's NOT_OWNER (as the JDK and Redisson throw it).
            error(out, "NOT_OWNER", e.getMessage(), Map.of());
        } catch (OutcomeError e) {
            error(out, e.kind, e.getMessage(), e.details);
        } catch (DriverFailure e) {
            error(out, "DRIVER", e.getMessage(), Map.of());
        } catch (Throwable e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            if (cause instanceof PolylockException) {
                PolylockException p = (PolylockException) cause;
                error(out, p.getCode().name(), p.getMessage(), details(p));
            } else {
                error(out, "DRIVER", cause.toString(), Map.of());
            }
        }
        return out;
    }

    private static void error(Map<String, Object> out, String kind, String message, Map<String, Object> details) {
        out.put("ok", false);
        out.put("error", kind);
        out.put("message", message);
        if (!details.isEmpty()) {
            out.put("details", details);
        }
    }

    private static Map<String, Object> details(PolylockException e) {
        Map<String, Object> details = new LinkedHashMap<>();
        if (e instanceof ConflictException) {
            ConflictException c = (ConflictException) e;
            if (c.getCurrentVersion() != null) {
                details.put("current_version", c.getCurrentVersion());
            }
            if (c.getCurrentValue() != null) {
                details.put("current_value", new String(c.getCurrentValue(), StandardCharsets.UTF_8));
            }
        } else if (e instanceof FencedException && ((FencedException) e).getWinningToken() != null) {
            details.put("token", ((FencedException) e).getWinningToken());
        } else if (e instanceof InProgressException && ((InProgressException) e).getRetryAfter() != null) {
            details.put("retry_after_ms", ((InProgressException) e).getRetryAfter().toMillis());
        } else if (e instanceof ExhaustedException && ((ExhaustedException) e).getRetryAfter() != null) {
            details.put("retry_after_ms", ((ExhaustedException) e).getRetryAfter().toMillis());
        }
        return details;
    }

    // ---- main loop

    public static void main(String[] args) throws Exception {
        PrintStream protocol = System.out;
        System.setOut(System.err); // nothing but answers on the protocol's stdout
        Writer out = new OutputStreamWriter(protocol, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ConformanceDriver driver = new ConformanceDriver();
        out.write(Json.write(Map.of("ready", "java")) + "\n");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> answer;
            try {
                Object request = Json.parse(line);
                if (!(request instanceof Map)) {
                    throw new DriverFailure("a request must be a JSON object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> map = (Map<String, Object>) request;
                answer = driver.answer(map);
            } catch (RuntimeException e) {
                answer = new LinkedHashMap<>();
                answer.put("id", null);
                error(answer, "DRIVER", "unreadable request: " + e.getMessage(), Map.of());
            }
            out.write(Json.write(answer) + "\n");
            out.flush();
        }
        driver.reset();
        out.flush();
        System.exit(0);
    }

    // ---- a small JSON reader and writer (objects, arrays, strings, integers as Long, other numbers as BigDecimal)

    static final class Json {
        private final String text;
        private int at;

        private Json(String text) { this.text = text; }

        static Object parse(String text) {
            Json json = new Json(text);
            Object value = json.value();
            json.space();
            if (json.at != text.length()) {
                throw new DriverFailure("trailing text in JSON at " + json.at);
            }
            return value;
        }

        private Object value() {
            space();
            if (at >= text.length()) {
                throw new DriverFailure("unexpected end of JSON");
            }
            char c = text.charAt(at);
            if (c == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                at++;
                space();
                if (peek() == '}') { at++; return map; }
                while (true) {
                    space();
                    String key = string();
                    space();
                    expect(':');
                    map.put(key, value());
                    space();
                    if (peek() == ',') { at++; continue; }
                    expect('}');
                    return map;
                }
            }
            if (c == '[') {
                List<Object> list = new ArrayList<>();
                at++;
                space();
                if (peek() == ']') { at++; return list; }
                while (true) {
                    list.add(value());
                    space();
                    if (peek() == ',') { at++; continue; }
                    expect(']');
                    return list;
                }
            }
            if (c == '"') return string();
            if (text.startsWith("true", at)) { at += 4; return Boolean.TRUE; }
            if (text.startsWith("false", at)) { at += 5; return Boolean.FALSE; }
            if (text.startsWith("null", at)) { at += 4; return null; }
            int start = at;
            while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
            String number = text.substring(start, at);
            if (number.isEmpty()) throw new DriverFailure("unexpected character in JSON at " + at);
            BigDecimal decimal = new BigDecimal(number);
            if (number.matches("-?\\d+")) {
                try {
                    return decimal.longValueExact();
                } catch (ArithmeticException e) {
                    return decimal;
                }
            }
            return decimal;
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (at < text.length()) {
                char c = text.charAt(at++);
                if (c == '"') return out.toString();
                if (c != '\\') { out.append(c); continue; }
                char e = text.charAt(at++);
                switch (e) {
                    case 'n': out.append('\n'); break;
                    case 't': out.append('\t'); break;
                    case 'r': out.append('\r'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'u': out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; break;
                    default: out.append(e);
                }
            }
            throw new DriverFailure("unterminated JSON string");
        }

        private void space() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
        }

        private char peek() {
            return at < text.length() ? text.charAt(at) : '\0';
        }

        private void expect(char c) {
            if (peek() != c) throw new DriverFailure("expected '" + c + "' in JSON at " + at);
            at++;
        }

        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            write(value, out);
            return out.toString();
        }

        private static void write(Object value, StringBuilder out) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof String) {
                out.append('"');
                for (char c : ((String) value).toCharArray()) {
                    switch (c) {
                        case '"': out.append("\\\""); break;
                        case '\\': out.append("\\\\"); break;
                        case '\n': out.append("\\n"); break;
                        case '\r': out.append("\\r"); break;
                        case '\t': out.append("\\t"); break;
                        default:
                            if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                            else out.append(c);
                    }
                }
                out.append('"');
            } else if (value instanceof Map) {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                    if (!first) out.append(',');
                    first = false;
                    write(String.valueOf(entry.getKey()), out);
                    out.append(':');
                    write(entry.getValue(), out);
                }
                out.append('}');
            } else if (value instanceof List) {
                out.append('[');
                boolean first = true;
                for (Object item : (List<?>) value) {
                    if (!first) out.append(',');
                    first = false;
                    write(item, out);
                }
                out.append(']');
            } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer || value instanceof BigDecimal) {
                out.append(value);
            } else {
                write(String.valueOf(value), out);
            }
        }
    }
}
