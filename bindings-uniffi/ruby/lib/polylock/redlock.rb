# frozen_string_literal: true

module Polylock
  # A RedLock lock (Polylock.redlock): a Lock over independent Redis servers, held while a
  # majority granted it, on a client of its own. It has no fencing token (#fencing_token is
  # nil): a majority of servers keeps no one counter that only grows.
  class RedLock < Lock
    # The lock's own client.
    attr_reader :client

    def initialize(native, client)
      super(native)
      @client = client
    end

    # Close the lock's client: its holds are given back.
    def close
      @client.close
    end

    def closed?
      @client.closed?
    end

    def inspect
      "#<Polylock::RedLock #{name.inspect}>"
    end
  end

  # The redlock:// URL of independent Redis servers, by the core's rule (Polylock.redlock uses
  # it; Polylock.connect takes it too).
  def self.redlock_url(urls)
    raise TypeError, "redlock takes an Array of servers, not #{urls.class}" unless urls.is_a?(Array)

    Native.call { PolylockUniffi.redlock_url(urls.map(&:to_s)) }
  end

  # The RedLock lock `name` over the independent Redis servers `urls` (each "host:port" or
  # "redis://[user:password@]host:port"), on a client of its own: close it when done, or pass
  # a block, which gets the lock and closes it afterwards. Error::InvalidArgument for an empty
  # or unusable list (the core's rule, kit::redlock_url), without a password in the message.
  def self.redlock(urls, name)
    native_client = Native.call { PolylockUniffi.connect(redlock_url(urls)) }
    client = Client.new(native_client)
    lock = begin
      RedLock.new(Native.call { native_client.lock(name, nil) }, client)
    rescue StandardError
      client.close
      raise
    end
    return lock unless block_given?

    begin
      yield lock
    ensure
      lock.close
    end
  end
end
