package io.polylock.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

/**
 * Curator's LeaderLatch, driven from the command line by core/tests/election_interop.rs and
 * bench/src/election_failover.rs:
 *
 * <pre>
 *   CuratorLeaderLatch CONNECT lead PATH ID          await leadership, "LEADER", then keep it until a
 *                                                    line on stdin (or stdin's end), close, "CLOSED"
 *   CuratorLeaderLatch CONNECT await PATH ID MILLIS  await leadership up to MILLIS: "LEADER" (then close,
 *                                                    "CLOSED") or "TIMEOUT"
 *   CuratorLeaderLatch CONNECT leader PATH           "LEADER id" for the current leader's id, or "NONE"
 * </pre>
 *
 * Lines go to stdout as they happen, so the caller can act on each.
 */
public final class CuratorLeaderLatch {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            usage();
        }
        try (CuratorFramework client =
                CuratorFrameworkFactory.newClient(args[0], new ExponentialBackoffRetry(100, 5))) {
            client.start();
            client.blockUntilConnected(20, TimeUnit.SECONDS);
            switch (args[1]) {
                case "lead" -> lead(client, args[2], args[3]);
                case "await" -> awaitFor(client, args[2], args[3], Long.parseLong(args[4]));
                case "leader" -> leader(client, args[2]);
                default -> usage();
            }
        }
    }

    private static void lead(CuratorFramework client, String path, String id) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.start();
        latch.await();
        say("LEADER");
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        latch.close();
        say("CLOSED");
    }

    private static void awaitFor(CuratorFramework client, String path, String id, long millis) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.start();
        if (latch.await(millis, TimeUnit.MILLISECONDS)) {
            say("LEADER");
            latch.close();
            say("CLOSED");
        } else {
            latch.close();
            say("TIMEOUT");
        }
    }

    private static void leader(CuratorFramework client, String path) throws Exception {
        // getLeader() reads the participants without taking part.
        LeaderLatch latch = new LeaderLatch(client, path, "observer");
        Participant leader;
        try {
            leader = latch.getLeader();
        } catch (KeeperException.NoNodeException e) {
            say("NONE");
            return;
        }
        say(leader.isLeader() ? "LEADER " + leader.getId() : "NONE");
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void usage() {
        System.err.println("usage: CuratorLeaderLatch CONNECT lead PATH ID | await PATH ID MILLIS | leader PATH");
        System.exit(2);
    }
}
