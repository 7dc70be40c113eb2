# frozen_string_literal: true

require 'active_job'
require 'digest'
require 'json'

module Polylock
  # ActiveJob helpers (require 'polylock/active_job'; the gem does not depend on ActiveJob).
  module ActiveJob
    # The options of a job class (Singleton::ClassMethods#polylock_singleton).
    SingletonOptions = Struct.new(:key, :client, :wait, :lease, :skip)

    @clients = {}
    @clients_mutex = Mutex.new

    # The client of `url` (nil: $POLYLOCK_URL, else the default URL), connected once per
    # process: a forked worker connects its own.
    def self.client_for(url)
      @clients_mutex.synchronize do
        pid, client = @clients[url]
        if pid != Process.pid || client.closed?
          client = Polylock.connect(url)
          @clients[url] = [Process.pid, client]
        end
        client
      end
    end

    # At most one perform at a time per key, across every worker process and host, under a
    # polylock lock (what activejob-uniqueness and Sidekiq Enterprise's unique jobs are used
    # for, and Celery's SingletonTask in polylock's Python):
    #
    #   class ShipOrderJob < ApplicationJob
    #     include Polylock::ActiveJob::Singleton
    #     polylock_singleton key: ->(order_id) { "orders:#{order_id}" }, wait: 30
    #
    #     def perform(order_id) = ship(order_id, fencing_token: polylock_lock.fencing_token)
    #   end
    #
    # The process that performs the job takes the lock around #perform and gives it back when
    # perform ends, whatever the end; a watchdog renews it meanwhile, and a worker that dies
    # loses it when its lease runs out. Enqueueing never refuses: a second job with the key
    # waits for the lock (`wait:` seconds, nil: as long as it takes), so it sees the first
    # one's effects. When the wait runs out, perform raises Polylock::Error::Timeout (declare
    # `retry_on Polylock::Error::Timeout` to run it later); with `skip: true` the job is
    # skipped instead, not run (ShedLock's rule; `skip:` without `wait:` tries once).
    module Singleton
      def self.included(base)
        base.extend(ClassMethods)
        base.around_perform do |job, block|
          job.send(:polylock_singleton_perform) { block.call }
        end
      end

      # What a job class declares.
      module ClassMethods
        # key: a String, or a callable given the job's arguments that returns the lock's name;
        # default: the job class's name and a digest of its serialized arguments (so two jobs
        # with other arguments run side by side). client: a Polylock::Client, a URL (connected
        # once per process, so each forked worker connects its own), a callable returning a
        # client, or nil ($POLYLOCK_URL, else the default URL). wait: seconds to wait for the
        # lock (nil: as long as it takes). lease: seconds the hold lasts (nil: the watchdog
        # renews it). skip: skip the job rather than raise when the wait runs out.
        # Error::InvalidArgument for an option that is wrong.
        def polylock_singleton(key: nil, client: nil, wait: nil, lease: nil, skip: false)
          unless key.nil? || key.is_a?(String) || key.respond_to?(:call)
            raise Polylock::Error::InvalidArgument, "polylock_singleton option 'key' must be a String or respond to call, got #{key.inspect}"
          end
          unless client.nil? || client.is_a?(String) || client.is_a?(Polylock::Client) || client.respond_to?(:call)
            raise Polylock::Error::InvalidArgument,
                  "polylock_singleton option 'client' must be a Polylock::Client, a URL, a callable or nil, got #{client.class}"
          end
          { wait: wait, lease: lease }.each do |name, value|
            next if value.nil? || value.is_a?(Numeric)

            raise Polylock::Error::InvalidArgument, "polylock_singleton option '#{name}' must be seconds (a number) or nil, got #{value.inspect}"
          end
          raise Polylock::Error::InvalidArgument, "polylock_singleton option 'skip' must be true or false, got #{skip.inspect}" \
            unless [true, false].include?(skip)

          @polylock_singleton = SingletonOptions.new(key, client, wait, lease, skip)
        end

        # The options declared by this class or the nearest ancestor that declared some.
        def polylock_singleton_options
          return @polylock_singleton if defined?(@polylock_singleton) && @polylock_singleton

          superclass.respond_to?(:polylock_singleton_options) ? superclass.polylock_singleton_options : SingletonOptions.new(nil, nil, nil, nil, false)
        end
      end

      # The Lock this perform holds (for its fencing_token), or nil outside perform.
      attr_reader :polylock_lock

      # The name of the lock this job's perform takes.
      def polylock_lock_name
        key = self.class.polylock_singleton_options.key
        case key
        when nil
          digest = Digest::SHA256.hexdigest(JSON.generate(serialize.fetch('arguments')))
          "activejob:#{self.class.name}:#{digest}"
        when String then key
        else key.call(*arguments).to_s
        end
      end

      private

      def polylock_singleton_client
        client = self.class.polylock_singleton_options.client
        client = client.call if client.respond_to?(:call) && !client.is_a?(Polylock::Client)
        client.is_a?(Polylock::Client) ? client : Polylock::ActiveJob.client_for(client)
      end

      def polylock_singleton_perform
        options = self.class.polylock_singleton_options
        lock = polylock_singleton_client.lock(polylock_lock_name)
        wait = options.wait.nil? && options.skip ? 0 : options.wait
        unless lock.lock(wait: wait, lease: options.lease)
          return if options.skip

          raise Polylock::Error::Timeout, "#{self.class.name}: the lock '#{lock.name}' was not acquired within #{wait} s"
        end
        @polylock_lock = lock
        begin
          yield
        rescue Exception # rubocop:disable Lint/RescueException -- unlock, then re-raise whatever it was
          begin
            lock.unlock
          rescue Polylock::Error
            nil # the perform's own exception is the one that counts
          end
          raise
        ensure
          @polylock_lock = nil
        end
        # Error::Lost here: the hold was lost while perform ran, so its work was not
        # protected to the end.
        lock.unlock
      end
    end
  end
end
