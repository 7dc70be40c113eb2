package io.polylock;

import io.polylock.testlog.Captured;

/**
 * Run by ObservabilityTest in a child JVM with its own environment: prints the level the binding chose at load,
 * then every record logger {@code polylock} itself received (the warning about a bad POLYLOCK_LOG).
 */
public final class PrintLogLevel {
    private PrintLogLevel() {}

    public static void main(String[] args) {
        System.out.println("level=" + Polylock.getLogLevel());
        for (Captured.Record record : Captured.records(r -> r.logger.equals("polylock"))) {
            System.out.println("record=" + record.level + " " + record.message);
        }
    }
}
