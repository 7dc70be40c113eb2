package io.polylock.testlog;

import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Marker;
import org.slf4j.event.KeyValuePair;
import org.slf4j.event.Level;
import org.slf4j.event.LoggingEvent;
import org.slf4j.helpers.AbstractLogger;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.LoggingEventAware;

/**
 * A logger whose level comes from {@link Captured#levelOf(String)} on every check (so tests change it at run time)
 * and which keeps what it accepts. Events of the fluent API arrive whole ({@link LoggingEventAware}), key-value pairs
 * included.
 */
final class CapturingLogger extends AbstractLogger implements LoggingEventAware {
    private static final long serialVersionUID = 1L;

    CapturingLogger(String name) {
        this.name = name;
    }

    private boolean enabled(Level level) {
        Level threshold = Captured.levelOf(name);
        return threshold != null && level.toInt() >= threshold.toInt();
    }

    @Override
    public void log(LoggingEvent event) {
        if (!enabled(event.getLevel())) {
            return;
        }
        Map<String, String> fields = new LinkedHashMap<>();
        if (event.getKeyValuePairs() != null) {
            for (KeyValuePair pair : event.getKeyValuePairs()) {
                fields.put(pair.key, String.valueOf(pair.value));
            }
        }
        String message = MessageFormatter.basicArrayFormat(event.getMessage(), event.getArgumentArray());
        Captured.add(new Captured.Record(name, event.getLevel(), message, fields, Thread.currentThread()));
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(
            Level level, Marker marker, String messagePattern, Object[] arguments, Throwable throwable) {
        String message = MessageFormatter.basicArrayFormat(messagePattern, arguments);
        Captured.add(new Captured.Record(name, level, message, Map.of(), Thread.currentThread()));
    }

    @Override
    public boolean isTraceEnabled() {
        return enabled(Level.TRACE);
    }

    @Override
    public boolean isTraceEnabled(Marker marker) {
        return isTraceEnabled();
    }

    @Override
    public boolean isDebugEnabled() {
        return enabled(Level.DEBUG);
    }

    @Override
    public boolean isDebugEnabled(Marker marker) {
        return isDebugEnabled();
    }

    @Override
    public boolean isInfoEnabled() {
        return enabled(Level.INFO);
    }

    @Override
    public boolean isInfoEnabled(Marker marker) {
        return isInfoEnabled();
    }

    @Override
    public boolean isWarnEnabled() {
        return enabled(Level.WARN);
    }

    @Override
    public boolean isWarnEnabled(Marker marker) {
        return isWarnEnabled();
    }

    @Override
    public boolean isErrorEnabled() {
        return enabled(Level.ERROR);
    }

    @Override
    public boolean isErrorEnabled(Marker marker) {
        return isErrorEnabled();
    }
}
