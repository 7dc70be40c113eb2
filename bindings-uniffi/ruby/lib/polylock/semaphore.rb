# frozen_string_literal: true

module Polylock
  # A semaphore of N permits. Each permit is its own owner: whichever Thread has the Permit
  # may release it.
  class Semaphore
    def initialize(native)
      @native = native
    end

    def name
      @native.name
    end

    def permits
      @native.permits
    end

    # Take a permit (wait and lease in seconds, as Lock#lock): a Permit, or nil when the wait
    # ran out.
    def acquire(wait: nil, lease: nil)
      info = Native.call { @native.acquire(Polylock.acquire_options(wait, lease)) }
      info && Permit.new(@native, info.id, info.fencing_token)
    end

    def try_acquire(lease: nil)
      acquire(wait: 0, lease: lease)
    end

    # The waiting form of #acquire: a Permit, or Error::Timeout when `wait` seconds (nil: as
    # long as it takes; 0: try once) run out (nothing taken).
    def acquire!(wait: nil, lease: nil)
      info = Native.call { @native.acquire_waiting(Polylock.acquire_options(wait, lease)) }
      Permit.new(@native, info.id, info.fencing_token)
    end

    # Hold a permit while the block runs (Error::Timeout if `wait` runs out); yields the Permit.
    def synchronize(wait: nil, lease: nil)
      permit = acquire(wait: wait, lease: lease)
      raise Error::Timeout, "semaphore '#{name}': no permit within #{wait} s" unless permit

      begin
        result = yield permit
      rescue Exception # rubocop:disable Lint/RescueException -- release, then re-raise
        begin
          permit.release
        rescue Polylock::Error
          nil
        end
        raise
      end
      permit.release
      result
    end
  end

  # One permit of a Semaphore.
  class Permit
    attr_reader :id, :fencing_token

    def initialize(native, id, fencing_token)
      @native = native
      @id = id
      @fencing_token = fencing_token
    end

    # Error::NotOwner if already released, Error::Lost if its lease ran out first.
    def release
      Native.call { @native.release(@id) }
      nil
    end
  end
end
