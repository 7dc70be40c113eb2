# frozen_string_literal: true

module Polylock
  # Leaf-style segment IDs of one tag (Client#segment): never repeated, across processes and
  # crashes (a crash leaves gaps).
  class Segment
    def initialize(native)
      @native = native
    end

    def tag
      @native.tag
    end

    def next_id
      Native.call { @native.next_id }
    end

    def next_ids(count)
      Native.call { @native.next_ids(count) }
    end
  end

  # Snowflake IDs on a worker id leased from the backend (Client#snowflake): no two
  # generators of one namespace issue the same ID, whatever their clocks say. #close gives
  # the id back.
  class LeasedSnowflake
    def initialize(native)
      @native = native
    end

    def next_id
      Native.call { @native.next_id }
    end

    def next_ids(count)
      Native.call { @native.next_ids(count) }
    end

    # The worker id held now (nil between a loss of the lease and the next call).
    def worker_id
      Native.call { @native.worker_id }
    end

    def epoch
      Native.call { @native.epoch }
    end

    def close
      Native.call { @native.close }
      nil
    end
  end
end
