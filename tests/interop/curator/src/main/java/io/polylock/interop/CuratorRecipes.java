package io.polylock.interop;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;

/**
 * Curator's InterProcessReadWriteLock and InterProcessSemaphoreV2, driven from the command line
 * by core/tests/zk_rw_semaphore.rs:
 *
 * <pre>
 *   CuratorRecipes CONNECT rw PATH read|write hold MILLIS      acquire, "ACQUIRED", hold, release, "RELEASED"
 *   CuratorRecipes CONNECT rw PATH read|write acquire MILLIS   wait up to MILLIS: "ACQUIRED" (then release) or "TIMEOUT"
 *   CuratorRecipes CONNECT rw PATH downgrade MILLIS            write, then read ("DOWNGRADING"), wait for a line
 *                                                              on stdin (the caller has looked at the nodes), release
 *                                                              write ("DOWNGRADED"), hold the read MILLIS, "RELEASED"
 *   CuratorRecipes CONNECT semaphore PATH N THREADS ROUNDS HOLD_MILLIS MARKERS
 *       THREADS threads, each taking a lease ROUNDS times for HOLD_MILLIS. While it holds, a
 *       thread keeps an ephemeral node under MARKERS and counts them (every holder, polylock's
 *       too, does the same); prints "MAX <most markers seen>" at the end.
 * </pre>
 *
 * Lines go to stdout as they happen, so the caller can act on each.
 */
public final class CuratorRecipes {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            usage();
        }
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[0], new ExponentialBackoffRetry(100, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            switch (args[1]) {
                case "rw" -> readWrite(client, args);
                case "semaphore" -> semaphore(client, args);
                default -> usage();
            }
        }
    }

    private static void readWrite(CuratorFramework client, String[] args) throws Exception {
        InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, args[2]);
        if (args[3].equals("downgrade")) {
            long millis = Long.parseLong(args[4]);
            lock.writeLock().acquire();
            lock.readLock().acquire();
            say("DOWNGRADING");
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            lock.writeLock().release();
            say("DOWNGRADED");
            Thread.sleep(millis);
            lock.readLock().release();
            say("RELEASED");
            return;
        }
        InterProcessMutex side = switch (args[3]) {
            case "read" -> lock.readLock();
            case "write" -> lock.writeLock();
            default -> throw new IllegalArgumentException("read or write");
        };
        long millis = Long.parseLong(args[5]);
        switch (args[4]) {
            case "hold" -> {
                side.acquire();
                say("ACQUIRED");
                Thread.sleep(millis);
                side.release();
                say("RELEASED");
            }
            case "acquire" -> {
                if (side.acquire(millis, TimeUnit.MILLISECONDS)) {
                    say("ACQUIRED");
                    side.release();
                    say("RELEASED");
                } else {
                    say("TIMEOUT");
                }
            }
            default -> usage();
        }
    }

    private static void semaphore(CuratorFramework client, String[] args) throws Exception {
        String path = args[2];
        int permits = Integer.parseInt(args[3]);
        int threads = Integer.parseInt(args[4]);
        int rounds = Integer.parseInt(args[5]);
        long holdMillis = Long.parseLong(args[6]);
        String markers = args[7];
        AtomicInteger most = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        Thread[] workers = new Thread[threads];
        say("STARTED");
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                try {
                    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, permits);
                    for (int round = 0; round < rounds; round++) {
                        Lease lease = semaphore.acquire();
                        String marker = client.create()
                                .creatingParentContainersIfNeeded()
                                .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                                .forPath(markers + "/curator-");
                        List<String> holders = client.getChildren().forPath(markers);
                        most.accumulateAndGet(holders.size(), Math::max);
                        Thread.sleep(holdMillis);
                        client.delete().forPath(marker);
                        semaphore.returnLease(lease);
                    }
                } catch (Exception e) {
                    failures.incrementAndGet();
                    e.printStackTrace();
                }
            });
            workers[t].start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        say("MAX " + most.get());
        say(failures.get() == 0 ? "DONE" : "FAILED");
    }

    private static void usage() {
        System.err.println("usage: CuratorRecipes CONNECT rw PATH read|write hold|acquire MILLIS"
                + " | rw PATH downgrade MILLIS | semaphore PATH N THREADS ROUNDS HOLD_MILLIS MARKERS");
        System.exit(2);
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
