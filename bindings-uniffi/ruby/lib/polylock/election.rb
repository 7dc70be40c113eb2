# frozen_string_literal: true

module Polylock
  # A leader as anyone reads it: its value (a binary String) and its term, a fencing token
  # greater than every earlier leader's.
  Leader = Struct.new(:value, :term)

  # A named leader election (Client#election). Candidates campaign with a value; one leads at
  # a time. Layouts: etcd's concurrency.Election, Curator's LeaderLatch on ZooKeeper, and a
  # lease record elsewhere (Redis, SQL, SQLite).
  class Election
    def initialize(native)
      @native = native
    end

    def name
      @native.name
    end

    # Campaign with `value` until leading, at most `timeout` seconds (nil: as long as it
    # takes; 0: try once): a Leadership. Error::Timeout when the time runs out (no candidacy
    # is left behind). With a block, yields the Leadership and resigns when the block ends;
    # the block's value.
    def campaign(value, timeout: nil)
      native = Native.call { @native.campaign(value.to_s.b, timeout&.to_f) }
      leadership = Leadership.new(native)
      return leadership unless block_given?

      begin
        result = yield leadership
      rescue Exception # rubocop:disable Lint/RescueException -- resign, then re-raise whatever it was
        begin
          leadership.resign
        rescue Polylock::Error
          nil
        end
        raise
      end
      leadership.resign
      result
    end

    # The try form of #campaign: a Leadership, or nil when `timeout` seconds (nil: as long as
    # it takes; 0: try once) run out, leaving no candidacy behind.
    def try_campaign(value, timeout: nil)
      native = Native.call { @native.try_campaign(value.to_s.b, timeout&.to_f) }
      native && Leadership.new(native)
    end

    # The current leader's value (a binary String), or nil when nobody leads.
    def leader
      current_leader&.value
    end

    # The current Leader (value and term), or nil when nobody leads.
    def current_leader
      Election.leader_of(Native.call { @native.leader })
    end

    # Leader changes: with a block, yields the Leader (nil: nobody leads) now and after every
    # change until the block breaks or raises, or the client closes. Without a block, a
    # LeaderObserver (Enumerable; #next, #each, #close).
    def observe(&block)
      observer = LeaderObserver.new(Native.call { @native.observe })
      return observer unless block

      begin
        observer.each(&block)
      ensure
        observer.close
      end
    end

    # A native LeaderInfo as a Leader (nil stays nil).
    def self.leader_of(info)
      info && Leader.new(info.value.b, info.term)
    end

    def inspect
      "#<Polylock::Election #{name.inspect}>"
    end
  end

  # One won campaign: leading for one term, until #resign or a loss. Threads may share it.
  class Leadership
    def initialize(native)
      @native = native
      @subscription = nil
    end

    def name
      @native.name
    end

    # A fencing token greater than every earlier leader's term of this election.
    def term
      @native.term
    end

    # The value campaigned with or last proclaimed.
    def value
      @native.value.b
    end

    # True until resigned or lost; once false, never true again.
    def leader?
      @native.is_leader
    end

    # Whether the store no longer has this leader (lease passed, session ended, taken).
    def lost?
      @native.is_lost
    end

    # While the connection is down and the backend cannot tell (ZooKeeper's SUSPENDED).
    def suspended?
      @native.is_suspended
    end

    # Why it was lost, or nil.
    def lost_reason
      @native.lost_reason
    end

    # Call the block (with the reason) when this leadership is lost; it runs on a thread of
    # the client's. A second call replaces the first block.
    def on_lost(&block)
      raise ArgumentError, 'on_lost needs a block' unless block

      previous = @subscription
      @subscription = Native.call { @native.on_lost(LostCallback.new(block)) }
      previous&.cancel
      self
    end

    # Replace the leader's value without a new term. Error::Lost if it is no longer the
    # leader, Error::NotOwner once resigned.
    def proclaim(value)
      Native.call { @native.proclaim(value.to_s.b) }
      nil
    end

    # Stop leading, so the next candidate leads. Twice is harmless; Error::Lost if it had
    # been lost before.
    def resign
      Native.call { @native.resign }
      nil
    ensure
      @subscription&.cancel
    end

    def inspect
      "#<Polylock::Leadership #{name.inspect} term=#{term} #{leader? ? 'leading' : 'not leading'}>"
    end
  end

  # The leader changes of one election (Election#observe): each item is a Leader, or nil
  # while nobody leads; repeats are dropped. #close (from any Thread) ends it.
  class LeaderObserver
    include Enumerable

    def initialize(native)
      @native = native
    end

    # The next change (waits for it, other Threads running meanwhile); StopIteration once
    # closed.
    def next
      change = Native.call { @native.next_change }
      raise StopIteration, 'the leader observer is closed' if change.ended

      Election.leader_of(change.leader)
    end

    # Yield every change until closed; without a block, an Enumerator.
    def each
      return to_enum(:each) unless block_given?

      loop { yield self.next }
      self
    end

    def close
      @native.close
      nil
    end
  end
end
