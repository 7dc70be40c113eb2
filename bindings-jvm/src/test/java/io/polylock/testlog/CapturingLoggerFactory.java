package io.polylock.testlog;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;

final class CapturingLoggerFactory implements ILoggerFactory {
    private final Map<String, CapturingLogger> loggers = new ConcurrentHashMap<>();

    @Override
    public Logger getLogger(String name) {
        return loggers.computeIfAbsent(name, CapturingLogger::new);
    }
}
