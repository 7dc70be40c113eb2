package io.polylock.testlog;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Predicate;
import org.slf4j.event.Level;

/** What the tests' loggers accepted, and their levels: per logger name, inherited along dots, like logback's. */
public final class Captured {
    /** One record as a logger received it. */
    public static final class Record {
        public final String logger;
        public final Level level;
        public final String message;
        public final Map<String, String> fields;
        public final Thread thread;

        Record(String logger, Level level, String message, Map<String, String> fields, Thread thread) {
            this.logger = logger;
            this.level = level;
            this.message = message;
            this.fields = fields;
            this.thread = thread;
        }

        /** Everything the record carries, as text, to search for what must never be in it. */
        public String everything() {
            return logger + " " + level + " " + message + " " + fields;
        }

        @Override
        public String toString() {
            return level + " " + logger + ": " + message + " " + fields + " [" + thread.getName() + "]";
        }
    }

    /** A value of {@link #setLevel} that turns a logger off. */
    public static final Level OFF = null;

    private static final ConcurrentLinkedQueue<Record> RECORDS = new ConcurrentLinkedQueue<>();
    private static final Map<String, Level> LEVELS = new ConcurrentHashMap<>();
    private static final Map<String, Boolean> OFF_LOGGERS = new ConcurrentHashMap<>();
    private static volatile Predicate<Record> failWhen = r -> false;

    /** What is not configured logs at INFO, as slf4j-simple does by default. */
    private static volatile Level rootLevel = Level.INFO;

    static {
        // A child JVM of the tests sets logger polylock's level this way (-Dcaptured.polylock.level=DEBUG).
        String level = System.getProperty("captured.polylock.level");
        if (level != null) {
            setLevel("polylock", level.equals("OFF") ? OFF : Level.valueOf(level));
        }
    }

    private Captured() {}

    /** Set {@code logger}'s level (and that of the loggers under it that have none); null: off. */
    public static void setLevel(String logger, Level level) {
        if (level == null) {
            LEVELS.remove(logger);
            OFF_LOGGERS.put(logger, true);
        } else {
            OFF_LOGGERS.remove(logger);
            LEVELS.put(logger, level);
        }
    }

    /** Forget the level set on {@code logger}: it inherits again. */
    public static void clearLevel(String logger) {
        LEVELS.remove(logger);
        OFF_LOGGERS.remove(logger);
    }

    static Level levelOf(String logger) {
        String name = logger;
        while (true) {
            if (OFF_LOGGERS.containsKey(name)) {
                return null;
            }
            Level level = LEVELS.get(name);
            if (level != null) {
                return level;
            }
            int dot = name.lastIndexOf('.');
            if (dot < 0) {
                return rootLevel;
            }
            name = name.substring(0, dot);
        }
    }

    /** Make the loggers throw on the records {@code when} accepts (a broken appender); null: never. */
    public static void failWhen(Predicate<Record> when) {
        failWhen = when == null ? r -> false : when;
    }

    static void add(Record record) {
        if (failWhen.test(record)) {
            throw new IllegalStateException("a test logger failing on purpose: " + record.message);
        }
        RECORDS.add(record);
    }

    /** Every record kept so far that {@code which} accepts. */
    public static List<Record> records(Predicate<Record> which) {
        List<Record> out = new ArrayList<>();
        for (Record record : RECORDS) {
            if (which.test(record)) {
                out.add(record);
            }
        }
        return out;
    }

    /** Forget every record kept so far. */
    public static void clear() {
        RECORDS.clear();
    }
}
