package io.polylock.interop;

import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * One Curator InterProcessMutex on a lock path, driven from the command line:
 *
 * <pre>
 *   CuratorLock CONNECT PATH hold MILLIS      acquire, print "ACQUIRED", hold, release, print "RELEASED"
 *   CuratorLock CONNECT PATH acquire MILLIS   wait up to MILLIS; print "ACQUIRED" (then release) or "TIMEOUT"
 * </pre>
 *
 * Lines go to stdout as they happen, so the caller can act on each.
 */
public final class CuratorLock {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: CuratorLock CONNECT PATH hold|acquire MILLIS");
            System.exit(2);
        }
        String connect = args[0];
        String path = args[1];
        String mode = args[2];
        long millis = Long.parseLong(args[3]);
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(connect, new ExponentialBackoffRetry(100, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            switch (mode) {
                case "hold" -> {
                    mutex.acquire();
                    say("ACQUIRED");
                    Thread.sleep(millis);
                    mutex.release();
                    say("RELEASED");
                }
                case "acquire" -> {
                    if (mutex.acquire(millis, TimeUnit.MILLISECONDS)) {
                        say("ACQUIRED");
                        mutex.release();
                        say("RELEASED");
                    } else {
                        say("TIMEOUT");
                    }
                }
                default -> {
                    System.err.println("unknown mode " + mode);
                    System.exit(2);
                }
            }
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
