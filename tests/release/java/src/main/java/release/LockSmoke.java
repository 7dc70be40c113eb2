package release;

import io.polylock.Polylock;
import io.polylock.PolylockClient;
import io.polylock.RFencedLock;

/**
 * Run by tests/release/run-tests.sh from a Maven project whose only dependency is the jar
 * installed by release/build.sh: take a lock on SQLite and on Redis and check the version.
 *
 * <p>Arguments: VERSION NAME URL...
 */
public final class LockSmoke {
    public static void main(String[] args) {
        String version = args[0];
        if (!Polylock.VERSION.equals(version)) {
            throw new IllegalStateException("Polylock.VERSION is " + Polylock.VERSION + ", expected " + version);
        }
        for (int i = 2; i < args.length; i++) {
            try (PolylockClient client = Polylock.connect(args[i])) {
                RFencedLock lock = client.getFencedLock(args[1]);
                Long token = lock.lockAndGetToken();
                if (token == null || token <= 0 || !lock.isHeldByCurrentThread()) {
                    throw new IllegalStateException("no hold after lockAndGetToken: " + token);
                }
                lock.unlock();
                System.out.println("java: polylock " + Polylock.VERSION + ": locked and released on "
                        + args[i].split(":")[0] + " (token " + token + ")");
            }
        }
    }
}
