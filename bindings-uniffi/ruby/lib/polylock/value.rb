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
  end
end
