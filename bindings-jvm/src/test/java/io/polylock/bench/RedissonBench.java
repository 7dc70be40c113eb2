package io.polylock.bench;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.redisson.Redisson;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RedissonClient;

/**
 * polylock-java against Redisson on the same redis-server, in one run:
 *
 * <ul>
 *   <li>uncontended: 64 threads, each on a lock of its own, lock()+unlock() pairs per second;
 *   <li>contended: 8 threads on one lock, each holding it 1 ms and then staying out 1 ms; utilisation is the share of
 *       wall time the lock was held (1.0 = never idle while someone wanted it);
 *   <li>read-write lock, uncontended: 64 threads, each on a lock of its own, read lock()+unlock() pairs per second;
 *   <li>read-write lock, mixed: 8 threads on one lock, 90 % read and 10 % write lock()+unlock() pairs per second;
 *   <li>semaphore: 16 threads on one RPermitExpirableSemaphore of 4 permits, acquire()+release(id) pairs per second;
 *   <li>CPU per pair: 64 threads, a lock each, both libraries paced to the same pairs per second (60 % of the slower
 *       one's uncontended rate), and the process's CPU time (every thread: polylock's native runtime and Redisson's
 *       Netty threads alike) per lock()+unlock() pair.
 * </ul>
 *
 * Usage: RedissonBench [redis-url] [seconds per measurement], or the environment variables POLYLOCK_BENCH_URL
 * and POLYLOCK_BENCH_SECONDS (bench.sh uses these: Maven's exec.args would also reach the native build step). The two libraries alternate, twice each, and the
 * better round of each counts, so a noisy neighbour on a shared machine hurts both alike.
 */
public final class RedissonBench {
    private static final int UNCONTENDED_THREADS = 64;
    private static final int CONTENDED_THREADS = 8;
    private static final long HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long OUTSIDE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final int MIXED_THREADS = 8;
    private static final int SEMAPHORE_THREADS = 16;
    private static final int SEMAPHORE_PERMITS = 4;

    /** One semaphore handle's acquire and release, whichever library it comes from. */
    interface Permits {
        String acquire() throws Exception;

        void release(String permitId);
    }

    private RedissonBench() {}

    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : System.getenv().getOrDefault("POLYLOCK_BENCH_URL", "redis://127.0.0.1:16379");
        double seconds = Double.parseDouble(args.length > 1 ? args[1] : System.getenv().getOrDefault("POLYLOCK_BENCH_SECONDS", "5"));
        String run = "bench-" + ProcessHandle.current().pid();

        org.redisson.config.Config config = new org.redisson.config.Config();
        config.useSingleServer().setAddress(url);
        RedissonClient redisson = Redisson.create(config);
        PolylockClient polylock = Polylock.connect(url);
        try {
            Function<String, Lock> ours = polylock::getLock;
            Function<String, Lock> theirs = redisson::getLock;
            Function<String, Lock> ourReads = name -> polylock.getReadWriteLock(name).readLock();
            Function<String, Lock> theirReads = name -> redisson.getReadWriteLock(name).readLock();
            Function<String, Permits> ourPermits = name -> {
                io.polylock.RPermitExpirableSemaphore semaphore = polylock.getPermitExpirableSemaphore(name);
                semaphore.trySetPermits(SEMAPHORE_PERMITS);
                return new Permits() {
                    public String acquire() throws Exception {
                        return semaphore.acquire();
                    }

                    public void release(String permitId) {
                        semaphore.release(permitId);
                    }
                };
            };
            Function<String, Permits> theirPermits = name -> {
                RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
                semaphore.trySetPermits(SEMAPHORE_PERMITS);
                return new Permits() {
                    public String acquire() throws Exception {
                        return semaphore.acquire();
                    }

                    public void release(String permitId) {
                        semaphore.release(permitId);
                    }
                };
            };
            double[] uncontended = {0, 0};
            double[] contended = {0, 0};
            double[] reads = {0, 0};
            double[] mixed = {0, 0};
            double[] permits = {0, 0};
            double[][] cpu = {{0, Double.MAX_VALUE}, {0, Double.MAX_VALUE}};
            for (int round = 0; round < 2; round++) {
                uncontended[0] = Math.max(uncontended[0], uncontended(ours, run + "-u-p" + round, seconds));
                uncontended[1] = Math.max(uncontended[1], uncontended(theirs, run + "-u-r" + round, seconds));
                contended[0] = Math.max(contended[0], contended(ours, run + "-c-p" + round, seconds));
                contended[1] = Math.max(contended[1], contended(theirs, run + "-c-r" + round, seconds));
                reads[0] = Math.max(reads[0], uncontended(ourReads, run + "-r-p" + round, seconds));
                reads[1] = Math.max(reads[1], uncontended(theirReads, run + "-r-r" + round, seconds));
                mixed[0] = Math.max(mixed[0], mixed(name -> {
                    io.polylock.RReadWriteLock rw = polylock.getReadWriteLock(name);
                    return new Lock[] {rw.readLock(), rw.writeLock()};
                }, run + "-m-p" + round, seconds));
                mixed[1] = Math.max(mixed[1], mixed(name -> {
                    org.redisson.api.RReadWriteLock rw = redisson.getReadWriteLock(name);
                    return new Lock[] {rw.readLock(), rw.writeLock()};
                }, run + "-m-r" + round, seconds));
                permits[0] = Math.max(permits[0], permits(ourPermits, run + "-s-p" + round, seconds));
                permits[1] = Math.max(permits[1], permits(theirPermits, run + "-s-r" + round, seconds));
            }
            double pace = Math.round(Math.min(uncontended[0], uncontended[1]) * 0.6);
            for (int round = 0; round < 2; round++) {
                keepLower(cpu[0], cpuPerPair(ours, run + "-p-p" + round, seconds, pace));
                keepLower(cpu[1], cpuPerPair(theirs, run + "-p-r" + round, seconds, pace));
            }
            System.out.printf(Locale.ROOT, "%-52s %14s %14s %8s%n", "workload (" + url + ")", "polylock-java",
                    "Redisson", "ratio");
            System.out.printf(Locale.ROOT, "%-52s %14.0f %14.0f %7.2fx%n",
                    "uncontended lock+unlock pairs/s, 64 threads", uncontended[0], uncontended[1],
                    uncontended[0] / uncontended[1]);
            System.out.printf(Locale.ROOT, "%-52s %14.3f %14.3f %7.2fx%n",
                    "contended utilisation, 8 threads, 1 ms in/1 ms out", contended[0], contended[1],
                    contended[0] / contended[1]);
            System.out.printf(Locale.ROOT, "%-52s %14.0f %14.0f %7.2fx%n",
                    "read lock+unlock pairs/s, 64 threads, a lock each", reads[0], reads[1], reads[0] / reads[1]);
            System.out.printf(Locale.ROOT, "%-52s %14.0f %14.0f %7.2fx%n",
                    "90% read / 10% write pairs/s, 8 threads, one lock", mixed[0], mixed[1], mixed[0] / mixed[1]);
            System.out.printf(Locale.ROOT, "%-52s %14.0f %14.0f %7.2fx%n",
                    "semaphore acquire+release/s, 16 threads, 4 permits", permits[0], permits[1],
                    permits[0] / permits[1]);
            System.out.printf(Locale.ROOT, "%-52s %14.1f %14.1f %7.2fx%n",
                    String.format(Locale.ROOT, "process CPU us per pair, 64 threads at %.0f pairs/s", pace),
                    cpu[0][1], cpu[1][1], cpu[0][1] / cpu[1][1]);
            System.out.printf(Locale.ROOT, "%-52s %14.0f %14.0f%n", "  (pairs/s reached while paced)", cpu[0][0],
                    cpu[1][0]);
        } finally {
            polylock.close();
            redisson.shutdown();
        }
    }

    /** Pairs per second with every thread on its own lock. */
    private static double uncontended(Function<String, Lock> locks, String name, double seconds) throws Exception {
        LongAdder pairs = new LongAdder();
        return ratePerSecond(UNCONTENDED_THREADS, seconds, pairs, (thread, stop) -> {
            Lock lock = locks.apply(name + "-" + thread);
            while (!stop.get()) {
                lock.lock();
                lock.unlock();
                pairs.increment();
            }
        });
    }

    /** Keep the round with the lower CPU per pair: {rate, cpu us per pair}. */
    private static void keepLower(double[] best, double[] round) {
        if (round[1] < best[1]) {
            best[0] = round[0];
            best[1] = round[1];
        }
    }

    /**
     * 64 threads, a lock each, together paced to {@code pace} pairs per second (each thread keeps its own schedule);
     * returns {pairs per second reached, process CPU microseconds per pair} over {@code seconds} after a warm-up.
     */
    private static double[] cpuPerPair(Function<String, Lock> locks, String name, double seconds, double pace)
            throws Exception {
        LongAdder pairs = new LongAdder();
        long intervalNanos = (long) (UNCONTENDED_THREADS / pace * 1e9);
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        com.sun.management.OperatingSystemMXBean process = (com.sun.management.OperatingSystemMXBean) os;
        long[] cpuAtStart = {0}; // the CPU nanoseconds at the start, then those of the window
        long[] pairsAtStart = {0}; // likewise, the pairs
        Runnable onMeasureStart = () -> {
            cpuAtStart[0] = process.getProcessCpuTime();
            pairsAtStart[0] = pairs.sum();
        };
        double rate = ratePerSecond(UNCONTENDED_THREADS, seconds, pairs, (thread, stop) -> {
            Lock lock = locks.apply(name + "-" + thread);
            long next = System.nanoTime() + intervalNanos * thread / UNCONTENDED_THREADS;
            while (!stop.get()) {
                long delay = next - System.nanoTime();
                if (delay > 0) {
                    LockSupport.parkNanos(delay);
                }
                next += intervalNanos;
                lock.lock();
                lock.unlock();
                pairs.increment();
            }
        }, onMeasureStart, () -> {
            cpuAtStart[0] = process.getProcessCpuTime() - cpuAtStart[0];
            pairsAtStart[0] = pairs.sum() - pairsAtStart[0];
        });
        return new double[] {rate, cpuAtStart[0] / 1e3 / Math.max(1, pairsAtStart[0])};
    }

    /** The share of wall time the one lock was held. */
    private static double contended(Function<String, Lock> locks, String name, double seconds) throws Exception {
        LongAdder heldNanos = new LongAdder();
        double heldNanosPerSecond = ratePerSecond(CONTENDED_THREADS, seconds, heldNanos, (thread, stop) -> {
            Lock lock = locks.apply(name);
            while (!stop.get()) {
                lock.lock();
                long start = System.nanoTime();
                LockSupport.parkNanos(HOLD_NANOS);
                heldNanos.add(System.nanoTime() - start);
                lock.unlock();
                LockSupport.parkNanos(OUTSIDE_NANOS);
            }
        });
        return heldNanosPerSecond / 1e9;
    }

    /** Pairs per second on one read-write lock, one write in ten. */
    private static double mixed(Function<String, Lock[]> readAndWriteSides, String name, double seconds)
            throws Exception {
        LongAdder pairs = new LongAdder();
        return ratePerSecond(MIXED_THREADS, seconds, pairs, (thread, stop) -> {
            Lock[] sides = readAndWriteSides.apply(name);
            Lock read = sides[0];
            Lock write = sides[1];
            java.util.SplittableRandom random = new java.util.SplittableRandom(thread);
            while (!stop.get()) {
                Lock side = random.nextInt(10) == 0 ? write : read;
                side.lock();
                side.unlock();
                pairs.increment();
            }
        });
    }

    /** Acquire+release pairs per second on one semaphore. */
    private static double permits(Function<String, Permits> semaphores, String name, double seconds) throws Exception {
        LongAdder pairs = new LongAdder();
        return ratePerSecond(SEMAPHORE_THREADS, seconds, pairs, (thread, stop) -> {
            Permits semaphore = semaphores.apply(name);
            while (!stop.get()) {
                semaphore.release(semaphore.acquire());
                pairs.increment();
            }
        });
    }

    interface Worker {
        void run(int thread, AtomicBoolean stop) throws Exception;
    }

    /** Start the threads, warm up for a second, then return how fast {@code counter} grew over {@code seconds}. */
    private static double ratePerSecond(int count, double seconds, LongAdder counter, Worker worker) throws Exception {
        return ratePerSecond(count, seconds, counter, worker, () -> {}, () -> {});
    }

    /** As above, running {@code atStart} and {@code atEnd} at the two ends of the measured window. */
    private static double ratePerSecond(int count, double seconds, LongAdder counter, Worker worker, Runnable atStart,
            Runnable atEnd) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch done = new CountDownLatch(count);
        List<Throwable> failures = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int thread = i;
            Thread t = new Thread(() -> {
                try {
                    worker.run(thread, stop);
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                } finally {
                    done.countDown();
                }
            });
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(1000); // warm-up: JIT, connections, subscriptions
        atStart.run();
        long before = counter.sum();
        long start = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        long after = counter.sum();
        atEnd.run();
        double elapsed = (System.nanoTime() - start) / 1e9;
        stop.set(true);
        done.await(60, TimeUnit.SECONDS);
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a benchmark thread failed", failures.get(0));
        }
        return (after - before) / elapsed;
    }
}
