# frozen_string_literal: true

module Polylock
  # A named mutex (or one side of a read-write lock), owned by the calling Thread, with the
  # methods of Ruby's Mutex: #synchronize, #lock, #try_lock, #unlock, #owned?, #locked?.
  # Making one holds nothing; Threads may share it.
  class Lock
    def initialize(native)
      @native = native
      @subscriptions = {}
      @subscriptions_mutex = Mutex.new
    end

    def name
      @native.name
    end

    # :reentrant, :fair, :token or :lease for a mutex; :read or :write for a side.
    def kind
      @native.kind.to_sym
    end

    # Wait (seconds; nil: as long as it takes; 0: try once) and hold (seconds; nil: renewed by
    # the watchdog while the client lives). True when held, false when the wait ran out.
    # Re-entrant: the holding Thread may lock again, and unlocks as many times.
    def lock(wait: nil, lease: nil)
      owner = Owner.current
      !Native.call { @native.acquire(owner, Polylock.acquire_options(wait, lease)) }.nil?
    end

    def try_lock(lease: nil)
      lock(wait: 0, lease: lease)
    end

    # The waiting form of #lock: wait (seconds; nil: as long as it takes; 0: try once) and
    # hold (seconds; nil: the watchdog); Error::Timeout when the wait runs out (nothing held).
    # The hold stays until #unlock. Returns the hold's fencing token.
    def lock!(wait: nil, lease: nil)
      owner = Owner.current
      Native.call { @native.acquire_waiting(owner, Polylock.acquire_options(wait, lease)) }
    end

    # Give back one hold of the calling Thread: Error::NotOwner if it holds none, Error::Lost
    # if the hold was lost meanwhile.
    def unlock
      owner = Owner.current
      begin
        Native.call { @native.release(owner) }
      ensure
        forget_lost_listener(owner) if @native.hold_count(owner).zero?
      end
      self
    end

    # Hold the lock while the block runs (Error::Timeout if `wait` runs out first); the
    # block's value. An exception from the block wins over one from the unlock.
    def synchronize(wait: nil, lease: nil)
      raise Error::Timeout, "#{kind} lock '#{name}' was not acquired within #{wait} s" unless lock(wait: wait, lease: lease)

      begin
        result = yield
      rescue Exception # rubocop:disable Lint/RescueException -- unlock, then re-raise whatever it was
        begin
          unlock
        rescue Polylock::Error
          nil
        end
        raise
      end
      unlock
      result
    end

    # Whether the calling Thread holds it (and the hold has not been lost).
    def owned?
      @native.is_held(Owner.current)
    end
    alias held? owned?

    # Whether anyone holds it, as the store says.
    def locked?
      Native.call { @native.is_locked }
    end

    # How many times the calling Thread holds it.
    def hold_count
      @native.hold_count(Owner.current)
    end

    # The fencing token of the calling Thread's hold (strictly greater than any issued before
    # for this name), or nil.
    def fencing_token
      @native.fencing_token(Owner.current)
    end

    # Why the calling Thread's hold was lost, or nil.
    def lost_reason
      @native.lost_reason(Owner.current)
    end

    def lost?
      !lost_reason.nil?
    end

    # Call the block (with the reason) when the calling Thread's current hold is lost; it runs
    # on a thread of the client's. Error::NotOwner if the Thread holds nothing.
    def on_lost(&block)
      raise ArgumentError, 'on_lost needs a block' unless block

      owner = Owner.current
      subscription = Native.call { @native.on_lost(owner, LostCallback.new(block)) }
      previous = @subscriptions_mutex.synchronize do
        old = @subscriptions[owner]
        @subscriptions[owner] = subscription
        old
      end
      previous&.cancel
      self
    end

    # Seconds left of the current hold's lease (mutexes only), or nil.
    def remaining_lease
      Native.call { @native.remaining_lease_seconds }
    end

    # Remove whoever holds it (mutexes only); whether there was a hold.
    def force_unlock
      Native.call { @native.force_unlock }
    end

    def inspect
      "#<Polylock::Lock #{kind} #{name.inspect}>"
    end

    private

    def forget_lost_listener(owner)
      @subscriptions_mutex.synchronize { @subscriptions.delete(owner) }&.cancel
    end
  end

  # A read-write lock: #read and #write are Locks, each re-entrant per Thread. The write holder
  # may also read; a read holder asking for the write side gets Error::InvalidArgument at once.
  class RwLock
    attr_reader :read, :write

    def initialize(native)
      @native = native
      @read = Lock.new(native.read)
      @write = Lock.new(native.write)
    end

    def name
      @native.name
    end
  end
end
