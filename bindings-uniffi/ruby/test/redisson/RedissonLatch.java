import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A real Redisson RCountDownLatch for the Ruby suite's latch interop test.
 *
 * <pre>
 * java -cp 'deps/*' RedissonLatch.java redis://HOST:PORT NAME set N         prints "set" or "refused" (trySetCount)
 * java -cp 'deps/*' RedissonLatch.java redis://HOST:PORT NAME count         prints the count
 * java -cp 'deps/*' RedissonLatch.java redis://HOST:PORT NAME down          counts down once, prints "down"
 * java -cp 'deps/*' RedissonLatch.java redis://HOST:PORT NAME await MILLIS  prints "waiting", then "open" or "timeout"
 * </pre>
 */
public class RedissonLatch {
    public static void main(String[] args) throws Exception {
        Config config = new Config();
        config.useSingleServer().setAddress(args[0]);
        RedissonClient redisson = Redisson.create(config);
        try {
            RCountDownLatch latch = redisson.getCountDownLatch(args[1]);
            switch (args[2]) {
                case "set":
                    say(latch.trySetCount(Long.parseLong(args[3])) ? "set" : "refused");
                    break;
                case "count":
                    say(Long.toString(latch.getCount()));
                    break;
                case "down":
                    latch.countDown();
                    say("down");
                    break;
                case "await":
                    say("waiting");
                    say(latch.await(Long.parseLong(args[3]), TimeUnit.MILLISECONDS) ? "open" : "timeout");
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[2]);
            }
        } finally {
            redisson.shutdown();
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
