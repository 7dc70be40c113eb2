# frozen_string_literal: true

module Polylock
  # A value as Value#get found it: bytes (a binary String), its version, and the highest
  # fencing token it has accepted (nil until written fenced).
  VersionedValue = Struct.new(:value, :version, :fencing_token)

  # A named versioned value: compare-and-set on a version that only grows (optimistic
  # locking), and fenced writes. A refused write raises Error::Conflict (#current_value and
  # #current_version say what is there now) or Error::Fenced (#winning_token).
  class Value
    def initialize(native)
      @native = native
    end

    def name
      @native.name
    end

    # The value, or nil when there is none.
    def get
      found = Native.call { @native.get }
      found && VersionedValue.new(found.value.b, found.version, found.fencing_token)
    end

    # Create it; its first version.
    def create(bytes)
      Native.call { @native.create(bytes.b) }
    end

    # Replace it if still at `version`; the new version.
    def compare_and_set(version, bytes)
      Native.call { @native.compare_and_set(version, bytes.b) }
    end

    # Remove it if still at `version`.
    def delete(version)
      Native.call { @native.delete(version) }
      nil
    end

    # Write it if `token` (a lock hold's fencing token) is at least the highest it has
    # accepted; the new version.
    def write_fenced(token, bytes)
      Native.call { @native.write_fenced(token, bytes.b) }
    end

    # Follow its changes from now on (the watch is armed before this returns). With a block,
    # yields each change (a VersionedValue, or :deleted) until the block breaks or raises, then
    # closes the watch; the block's break value, or nil. Without a block, a ValueWatch.
    def watch(&block)
      watch = ValueWatch.new(Native.call { @native.watch })
      return watch unless block

      begin
        watch.each(&block)
        nil
      ensure
        watch.close
      end
    end

    def inspect
      "#<Polylock::Value #{name.inspect}>"
    end
  end

  # The changes of a Value from the moment Value#watch was called. Each change is the value's
  # new state (a VersionedValue) or :deleted; several writes close together may show as their
  # last one, and a state is never seen twice nor an older one after a newer. A wait that runs
  # out loses nothing: a change made while nobody waited is the next wait's answer.
  #
  # Threads may share it: one wait at a time (the others queue behind it), #current readable
  # meanwhile, and #close from any Thread ends a wait in progress. Waits release the GVL.
  # Close it when done: on Redis it holds a subscription.
  class ValueWatch
    include Enumerable

    def initialize(native)
      @native = native
    end

    def name
      @native.name
    end

    # Wait for the next change, at most `timeout` seconds (nil: as long as it takes; 0: look
    # once): the new VersionedValue, or :deleted; nil when nothing changed within the timeout
    # or the watch is closed (#closed? tells which). Error::Connection once the client is
    # closed; Error::InvalidArgument for a negative or NaN timeout.
    def changed(timeout: nil)
      step = Native.call { @native.changed(timeout&.to_f) }
      case step.outcome
      when 'changed' then ValueWatch.change_of(step.state)
      when 'no_change', 'closed' then nil
      else raise Error::Internal, "unknown watch outcome #{step.outcome}"
      end
    end

    # The state last seen (a VersionedValue, or nil when there is no value): when the watch
    # started, or the last change #changed returned.
    def current
      state = @native.current
      state && VersionedValue.new(state.value.b, state.version, state.fencing_token)
    end

    # Yield each change (a VersionedValue, or :deleted) as it comes, until the watch is closed
    # (from any Thread); without a block, an Enumerator. Error::Connection once the client is
    # closed.
    def each
      return to_enum(:each) unless block_given?

      while (change = changed) # nil only once closed: no timeout
        yield change
      end
      self
    end

    # End the watch: a wait in progress (in any Thread) returns nil, as every later one does,
    # and the store's change feed is let go of. Twice is harmless.
    def close
      Native.call { @native.close }
      nil
    end

    def closed?
      @native.is_closed
    end

    def inspect
      "#<Polylock::ValueWatch #{name.inspect}#{closed? ? ' closed' : ''}>"
    end

    # A state of the native watch as a change: a VersionedValue, or :deleted for none.
    def self.change_of(state)
      return :deleted if state.nil?

      VersionedValue.new(state.value.b, state.version, state.fencing_token)
    end
  end
end
