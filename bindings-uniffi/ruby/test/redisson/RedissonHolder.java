import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A real Redisson RLock holder for the Ruby suite's interop test.
 *
 * <pre>
 * java -cp 'deps/*' RedissonHolder.java redis://HOST:PORT NAME hold   prints "held", holds 1 s, prints "releasing", unlocks
 * java -cp 'deps/*' RedissonHolder.java redis://HOST:PORT NAME try    prints "taken" or "refused" (tryLock 300 ms)
 * </pre>
 */
public class RedissonHolder {
    public static void main(String[] args) throws Exception {
        Config config = new Config();
        config.useSingleServer().setAddress(args[0]);
        RedissonClient redisson = Redisson.create(config);
        try {
            RLock lock = redisson.getLock(args[1]);
            if (args[2].equals("hold")) {
                lock.lock();
                System.out.println("held");
                System.out.flush();
                Thread.sleep(1000);
                System.out.println("releasing");
                System.out.flush();
                lock.unlock();
            } else if (lock.tryLock(300, TimeUnit.MILLISECONDS)) {
                System.out.println("taken");
                lock.unlock();
            } else {
                System.out.println("refused");
            }
        } finally {
            redisson.shutdown();
        }
    }
}
