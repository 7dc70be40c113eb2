# frozen_string_literal: true

module Polylock
  # One part of a held multi-lock: its name and fencing token (nil on RedLock).
  MultiPart = Struct.new(:name, :fencing_token)

  # Several mutexes taken as one (Client#multi_lock), owned by the calling Thread: always in
  # one canonical order (no deadlock between multi-locks listing the same names differently),
  # under one wait for the whole set, everything given back on failure.
  class MultiLock
    def initialize(native)
      @native = native
    end

    # The names in the order they are taken.
    def names
      @native.names
    end

    # Wait (seconds; nil: as long as it takes) and hold every part: the parts (MultiPart, in
    # canonical order), or nil when the wait ran out (nothing is then held).
    def lock(wait: nil, lease: nil)
      parts = Native.call { @native.acquire(Owner.current, Polylock.acquire_options(wait, lease)) }
      parts&.map { |part| MultiPart.new(part.name, part.fencing_token) }
    end

    def try_lock(lease: nil)
      lock(wait: 0, lease: lease)
    end

    # Give back one hold of every part by the calling Thread.
    def unlock
      Native.call { @native.release(Owner.current) }
      self
    end

    # Hold every part while the block runs (yields the parts); Error::Timeout if `wait` runs
    # out first.
    def synchronize(wait: nil, lease: nil)
      parts = lock(wait: wait, lease: lease)
      raise Error::Timeout, "multi-lock of #{names.join(', ')} was not acquired within #{wait} s" unless parts

      begin
        yield parts
      ensure
        unlock
      end
    end

    def owned?
      @native.is_held(Owner.current)
    end
  end
end
