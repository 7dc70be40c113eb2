package io.polylock;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The core's log records in SLF4J: one logger per Rust module, named after it under {@code polylock} ({@code
 * polylock::engine::acquire} logs to {@code polylock.engine.acquire}; a dependency's {@code h2::codec} to {@code
 * polylock.h2.codec}), the message {@code LogRecord::line()} (message then {@code key=value}s) and the fields as SLF4J
 * key-value pairs. Which records the core hands on at all is one native level (see {@link Polylock#setLogLevel}).
 */
final class Logging {
    /** The logger every other one is under; the level is read from it at load. */
    static final String ROOT = "polylock";

    private static final Level[] LEVELS = {null, Level.ERROR, Level.WARN, Level.INFO, Level.DEBUG, Level.TRACE};
    private static final Map<String, Logger> LOGGERS = new ConcurrentHashMap<>();

    private Logging() {}

    /**
     * At load: the level {@code POLYLOCK_LOG} or {@code DEBUG=polylock} asks for, else the most detailed one SLF4J
     * enables on logger {@code polylock} (WARN at the least). A {@code POLYLOCK_LOG} that names no level is warned
     * about on logger {@code polylock} and ignored.
     */
    static void install() {
        String level = null;
        try {
            level = NativeBridge.logLevelFromEnv();
        } catch (PolylockException badVariable) {
            LoggerFactory.getLogger(ROOT).warn("{}; using the level SLF4J enables on logger polylock instead",
                    badVariable.getMessage());
        }
        if (level == null) {
            level = levelOf(LoggerFactory.getLogger(ROOT));
        }
        try {
            NativeBridge.logRoute(level);
        } catch (PolylockException unsupported) {
            LoggerFactory.getLogger(ROOT).warn("polylock's records cannot be routed to SLF4J: {}",
                    unsupported.getMessage());
        }
    }

    /** The most detailed level {@code logger} enables, but at least {@code warn}: the level the core hands on at. */
    static String levelOf(Logger logger) {
        if (logger.isTraceEnabled()) {
            return "trace";
        }
        if (logger.isDebugEnabled()) {
            return "debug";
        }
        if (logger.isInfoEnabled()) {
            return "info";
        }
        return "warn";
    }

    /** {@code loggerName} is the core's: {@code polylock.engine.acquire}, {@code polylock.deps.h2.proto}. */
    static void emit(int level, String loggerName, String line, String[] keysAndValues) {
        if (level < 1 || level >= LEVELS.length) {
            return;
        }
        Logger logger = LOGGERS.computeIfAbsent(loggerName, LoggerFactory::getLogger);
        LoggingEventBuilder event = logger.atLevel(LEVELS[level]);
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            event = event.addKeyValue(keysAndValues[i], keysAndValues[i + 1]);
        }
        event.log(line);
    }
}
