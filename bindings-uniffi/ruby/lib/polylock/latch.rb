# frozen_string_literal: true

module Polylock
  # A countdown latch shared through the store (Client#latch): one side sets a count, others
  # count it down, anyone waits for zero. On Redis it is Redisson's RCountDownLatch (the key
  # NAME holds the count), so a Redisson service and a Ruby one share it. Nothing is owned and
  # nothing expires: a latch whose counters crash stays closed, so give waits a timeout.
  class CountDownLatch
    def initialize(native)
      @native = native
    end

    def name
      @native.name
    end

    # Set the count if the latch is open (at zero, or never set): whether it was set.
    # Error::InvalidArgument for a count below 1.
    def try_set_count(count)
      Native.call { @native.try_set_count(Integer(count)) }
    end

    # Take one off the count (never below zero); at zero every waiter is released.
    def count_down
      Native.call { @native.count_down }
      nil
    end

    # The count now: 0 when the latch is open.
    def count
      Native.call { @native.count }
    end

    # The try form: wait until the count is zero, at most `timeout` seconds (nil: as long as
    # it takes): true once it is zero, false when the timeout ran out. Other Threads run
    # meanwhile.
    def await(timeout = nil)
      Native.call { @native.try_await_zero(timeout&.to_f) }
    end
    alias wait await

    # The waiting form: wait until the count is zero, at most `timeout` seconds (nil: as long
    # as it takes; 0: look once); Error::Timeout when the timeout runs out. Returns nil.
    def await_zero(timeout = nil)
      Native.call { @native.await_zero(timeout&.to_f) }
      nil
    end

    def inspect
      "#<Polylock::CountDownLatch #{name.inspect}>"
    end
  end
end
