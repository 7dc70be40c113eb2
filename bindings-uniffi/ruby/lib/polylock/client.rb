# frozen_string_literal: true

module Polylock
  # A connection to one backend (Polylock.connect). Threads may share it. Close it when done:
  # closing stops its watchdogs and gives its holds back.
  class Client
    def initialize(native)
      @native = native
    end

    # The mutex `name`; kind: :reentrant (default), :fair, :token or :lease, as the backend
    # offers (Error::Unsupported otherwise).
    def lock(name, kind: nil)
      Lock.new(Native.call { @native.lock(name, kind&.to_s) })
    end

    def rw_lock(name)
      RwLock.new(Native.call { @native.rw_lock(name) })
    end

    # The semaphore `name` of `permits` permits (fixed by the name's first use).
    def semaphore(name, permits)
      Semaphore.new(Native.call { @native.semaphore(name, permits) })
    end

    # The mutexes `names`, taken as one (MultiLock).
    def multi_lock(*names)
      MultiLock.new(Native.call { @native.multi_lock(names.flatten) })
    end

    # The versioned value `name` (Value).
    def value(name)
      Value.new(Native.call { @native.value(name) })
    end

    # The leader election `name` (Election); Error::Unsupported on RedLock.
    def election(name)
      Election.new(Native.call { @native.election(name) })
    end

    # The countdown latch `name` (CountDownLatch); Error::Unsupported on RedLock.
    def latch(name)
      CountDownLatch.new(Native.call { @native.latch(name) })
    end

    # Idempotency keys of `namespace` (retention and in_progress_ttl in seconds; nil: 24 h
    # and 60 s).
    def idempotency(namespace, retention: nil, in_progress_ttl: nil)
      Idempotency.new(Native.call { @native.idempotency(namespace, retention&.to_f, in_progress_ttl&.to_f) })
    end

    # Segment IDs of `tag` (step: the first range's size; nil: Leaf's 1000).
    def segment(tag, step: nil)
      Segment.new(Native.call { @native.segment(tag, step) })
    end

    # A Snowflake generator on a leased worker id (nil: the lowest free one).
    def snowflake(worker_id: nil)
      LeasedSnowflake.new(Native.call { @native.snowflake(worker_id) })
    end

    def close
      Native.call { @native.close }
      nil
    end

    def closed?
      @native.is_closed
    end

    # The URL, with any password replaced by ***.
    def url
      @native.url
    end

    # The random client id (the first half of each owner in the store).
    def id
      @native.client_id
    end

    # The status of the mutex `name` (kind: nil for the backend's default, or :reentrant,
    # :fair, :token, :lease) as a Hash of the shape `polylock status --json` prints: "name",
    # "kind", "backend", "held", "holder", "fencing_token", "token_counter",
    # "remaining_lease_ms", "lease_expires", "waiters", "layout", "details".
    def status(name, kind: nil)
      JSON.parse(Native.call { @native.status_json(name, kind&.to_s) })
    end

    # The mutexes whose name starts with `prefix`, sorted by name: an Array of Hashes with
    # "name", "kind" and "held" (`polylock list --json`'s shape). Error::Unsupported where the
    # backend cannot list its locks.
    def list(prefix = '')
      JSON.parse(Native.call { @native.list_json(prefix) })
    end

    # Remove the mutex `name` (kind as #status) whoever holds it and wake its waiters: whether
    # there was a hold. Dangerous: the holder learns of it only at its next renewal or unlock.
    def force_unlock(name, kind: nil)
      Native.call { @native.force_unlock(name, kind&.to_s) }
    end

    # This client's own counts, as a Hash of the shape Polylock.metrics has.
    def metrics
      JSON.parse(@native.metrics_json)
    end

    def inspect
      "#<Polylock::Client #{url}>"
    end
  end
end
