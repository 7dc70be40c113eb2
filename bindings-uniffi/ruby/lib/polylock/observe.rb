# frozen_string_literal: true

require 'json'
require 'logger'
require 'monitor'

module Polylock
  # The core's events (connect, acquire, renew, release, lost, reconnect, fail-over; fields as
  # the README's "Operating polylock" lists them) handed to a Ruby Logger.
  #
  # The core keeps each record in a bounded queue of its own (10 000 records; the oldest are
  # dropped past that, and counted), and a Ruby thread, started when a logger is set, hands
  # them to the logger every INTERVAL seconds and once more at exit: a record reaches the
  # Logger up to about 0.1 s after the core emitted it (Polylock.flush_logs hands on what is
  # queued at once). The core never calls into Ruby from its own threads, so a runtime worker
  # logging never waits for the GVL.
  module Logging
    # Seconds between two hand-overs to the logger.
    INTERVAL = 0.1
    # Records taken from the queue per call.
    BATCH = 1000
    PROGNAME = 'polylock'
    # Logger has no TRACE: trace records arrive as DEBUG.
    SEVERITIES = {
      'error' => Logger::ERROR, 'warn' => Logger::WARN, 'info' => Logger::INFO,
      'debug' => Logger::DEBUG, 'trace' => Logger::DEBUG
    }.freeze

    @monitor = Monitor.new
    @wake = @monitor.new_cond
    @logger = nil
    @level = :warn
    @thread = nil
    @generation = 0
    @dropped_reported = 0

    class << self
      attr_reader :logger, :level

      # Route the core's events to `logger` (nil: stop routing; what is queued still goes to
      # the logger that was set).
      def logger=(logger)
        @monitor.synchronize do
          if logger.nil?
            Native.call { PolylockUniffi.log_unroute }
            flush
            @logger = nil
            @generation += 1
            @wake.broadcast
            @thread = nil
          else
            previous = @logger
            @logger = logger
            begin
              Native.call { PolylockUniffi.log_to_queue(@level.to_s) }
            rescue StandardError
              @logger = previous
              raise
            end
            start_thread
          end
        end
      end

      # :off, :error, :warn, :info, :debug or :trace (a String too, any case); the core
      # parses it: Polylock::Error::InvalidArgument for any other name.
      def level=(name)
        canonical = Native.call { PolylockUniffi.log_level_name(name.to_s) }.to_sym
        @monitor.synchronize do
          Native.call { PolylockUniffi.log_set_level(canonical.to_s) } if @logger
          @level = canonical
        end
      end

      # Hand every queued record to the logger now (records queued while no logger is set
      # are discarded), and a warning if the queue dropped records since the last time.
      def flush
        @monitor.synchronize do
          loop do
            entries = PolylockUniffi.log_drain(BATCH)
            break if entries.empty?

            write(entries) if @logger
          end
          report_dropped
        end
        nil
      end

      # The level the environment asks for (POLYLOCK_LOG, DEBUG=polylock): a Logger on $stderr
      # at that level. A bad POLYLOCK_LOG is a warning here, not a failed require.
      def from_environment
        asked = begin
          Native.call { PolylockUniffi.log_level_from_env }
        rescue Polylock::Error => e
          warn "polylock: #{e.message}; logging stays off"
          nil
        end
        return if asked.nil?

        @level = asked.to_sym
        self.logger = Logger.new($stderr) unless @level == :off
      end

      # In a child just forked (AfterFork, fork.rb): fork copies only the forking
      # thread, so the drain thread is gone. A fresh monitor (the old one may have been held
      # by that thread) and, if a logger is set, a new drain thread.
      def after_fork
        @monitor = Monitor.new
        @wake = @monitor.new_cond
        @thread = nil
        @monitor.synchronize { start_thread } if @logger
      end

      private

      def write(entries)
        entries.each do |entry|
          @logger.add(SEVERITIES.fetch(entry.level, Logger::UNKNOWN), entry.line, PROGNAME)
        end
      rescue StandardError => e
        warn "polylock: the logger raised #{e.class}: #{e.message}; #{entries.size} records lost"
      end

      def report_dropped
        dropped = PolylockUniffi.log_dropped
        return if dropped <= @dropped_reported

        write_dropped(dropped - @dropped_reported) if @logger
        @dropped_reported = dropped
      end

      def write_dropped(count)
        @logger.add(Logger::WARN, "#{count} log records dropped: more than 10000 waited for the logger", PROGNAME)
      rescue StandardError
        nil
      end

      def start_thread
        return if @thread&.alive?

        generation = (@generation += 1)
        @thread = Thread.new do
          Thread.current.name = 'polylock-log'
          Thread.current.report_on_exception = false
          @monitor.synchronize do
            while generation == @generation
              @wake.wait(INTERVAL)
              flush
            end
          end
        end
      end
    end
  end

  class << self
    # The Logger the core's events go to (nil: none, the default unless POLYLOCK_LOG or
    # DEBUG=polylock is set, which sets a Logger on $stderr).
    def logger
      Logging.logger
    end

    # Hand the core's events at #log_level and above to `logger` (a Logger, or anything with
    # Logger#add), as "message key=value ..." lines with progname "polylock"; nil stops.
    def logger=(logger)
      Logging.logger = logger
    end

    # The level events are handed on at once a logger is set: :warn unless POLYLOCK_LOG
    # or DEBUG=polylock says otherwise.
    def log_level
      Logging.level
    end

    # :off, :error, :warn, :info, :debug or :trace (or its String); Error::InvalidArgument for
    # another name. Takes effect at once; off costs one relaxed load per event.
    def log_level=(level)
      Logging.level = level
    end

    # Hand what the core logged so far to the logger now, not at the next drain.
    def flush_logs
      Logging.flush
    end

    # Records dropped since the process started because more than 10 000 waited for the
    # logger (also reported to the logger as a warning).
    def log_records_dropped
      PolylockUniffi.log_dropped
    end

    # The process's counts, every client's summed by backend and kind: a Hash of the
    # README's JSON shape ("series", "backends", "buckets_le_seconds").
    def metrics
      JSON.parse(PolylockUniffi.metrics_json)
    end

    # The process's counts in Prometheus' text format 0.0.4, to serve on /metrics.
    def prometheus_text
      PolylockUniffi.prometheus_text
    end

    # Count operations (true, the default) or not, for the whole process.
    def metrics_enabled=(enabled)
      PolylockUniffi.set_metrics_enabled(enabled ? true : false)
    end

    def metrics_enabled?
      PolylockUniffi.metrics_enabled
    end
  end

  at_exit { Logging.flush }
end
