# frozen_string_literal: true

# The conformance driver of the Ruby surface (the gem `polylock`, bindings-uniffi): one JSON
# request per stdin line, one answer per stdout line (tests/conformance/PROTOCOL.md). It
# translates each request into the gem's public API and decides nothing: durations are seconds
# as Float under the gem's own keyword names, an absent duration is an omitted keyword (nil),
# and errors are read from Polylock::Error#kind.
#
# Owners: the gem owns locks per Thread, and this driver runs every request on its main
# Thread, so that Thread owns everything it acquires.

require 'json'
require 'polylock'

# What labels name besides the gem's own objects.
LockHold = Struct.new(:lock)           # a lock or side held by the main Thread
PermitHold = Struct.new(:permit)       # a Polylock::Permit
MultiHold = Struct.new(:multi, :parts, :names) # a MultiLock held, with the parts it returned
ElectionEntry = Struct.new(:election, :changes) # changes: the observation of the first observe_next

class NotOffered < StandardError; end
class DriverFailure < StandardError; end

# A Polylock outcome the protocol carries as an error (Idempotency#begin returns them).
class OutcomeError < StandardError
  attr_reader :kind, :details

  def initialize(kind, message, details)
    super(message)
    @kind = kind
    @details = details
  end
end

# Items handed over by another Thread, taken with a timeout (Ruby 3.1's Queue#pop has none).
class Inbox
  def initialize
    @items = []
    @mutex = Mutex.new
    @arrived = ConditionVariable.new
  end

  def push(item)
    @mutex.synchronize do
      @items << item
      @arrived.signal
    end
  end

  # The next item, or nil when none arrived within `seconds`.
  def pop(seconds)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    @mutex.synchronize do
      while @items.empty?
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return nil if left <= 0

        @arrived.wait(@mutex, left)
      end
      @items.shift
    end
  end
end

# The changes a LeaderObserver yields, read on a Thread of their own so that observe_next can
# stop waiting after wait_ms (LeaderObserver#next has no timeout).
class Changes < Inbox
  def initialize(observer)
    super()
    @observer = observer
    @thread = Thread.new do
      loop { push([:change, observer.next]) }
    rescue StopIteration
      nil
    rescue Polylock::Error => e
      push([:error, e])
    end
  end

  def close
    @observer.close
  end
end

class Driver
  def initialize
    @objects = {}
    @rw_locks = {} # [client label, name] => Polylock::RwLock
    @watches = {} # value label => the Polylock::ValueWatch its first value_watch started
  end

  OPS = {}

  def self.op(name, &block)
    OPS[name] = block
  end

  # ---- Session
  op('reset') { |_r| reset }
  op('connect') { |r| put(r, Polylock.connect(r.fetch('url'))) }
  op('close') { |r| obj(r, 'client', Polylock::Client).close }
  op('error_table') { |_r| Polylock::Error::KINDS.map { |name, code, _| [name, code] } }

  # ---- Handles
  op('lock') do |r|
    client = obj(r, 'client', Polylock::Client)
    put(r, r['kind'].nil? ? client.lock(r.fetch('name')) : client.lock(r.fetch('name'), kind: r['kind'].to_sym))
  end
  op('rw_lock') do |r|
    rw = (@rw_locks[[r.fetch('client'), r.fetch('name')]] ||= obj(r, 'client', Polylock::Client).rw_lock(r.fetch('name')))
    case r.fetch('side')
    when 'read' then put(r, rw.read)
    when 'write' then put(r, rw.write)
    else raise DriverFailure, "unknown side #{r['side']}"
    end
  end
  op('semaphore') { |r| put(r, obj(r, 'client', Polylock::Client).semaphore(r.fetch('name'), r.fetch('permits'))) }
  op('multi_lock') { |r| put(r, obj(r, 'client', Polylock::Client).multi_lock(*r.fetch('names'))) }

  # ---- Holds
  op('acquire') do |r|
    handle = obj(r, 'handle')
    if handle.is_a?(Polylock::MultiLock) && !r['wait_ms'].nil?
      raise NotOffered, 'MultiLock has no acquisition with a wait that raises Error::Timeout and keeps the hold: ' \
                        'lock(wait:) returns nil, and synchronize(wait:) holds only for its block'
    end
    hold(r, handle, seconds(r, 'wait_ms'), seconds(r, 'lease_ms'), waiting: true)
  end
  op('try_acquire') { |r| hold(r, obj(r, 'handle'), seconds(r, 'wait_ms'), seconds(r, 'lease_ms'), waiting: false) }
  op('release') do |r|
    guard = obj(r, 'guard')
    case guard
    when LockHold then guard.lock.unlock
    when PermitHold then guard.permit.release
    when MultiHold then guard.multi.unlock
    else raise DriverFailure, "'#{r['guard']}' is not a guard"
    end
    nil
  end
  op('release_handle') do |r|
    handle = obj(r, 'handle')
    case handle
    when Polylock::Lock, Polylock::MultiLock then handle.unlock
    when Polylock::Semaphore then raise NotOffered, 'a Semaphore releases a Permit (Permit#release), not through the handle'
    else raise DriverFailure, "'#{r['handle']}' is not a handle"
    end
    nil
  end
  op('token') do |r|
    guard = obj(r, 'guard')
    case guard
    when LockHold then guard.lock.fencing_token
    when PermitHold then guard.permit.fencing_token
    when MultiHold then guard.parts && tokens_in_order(guard.parts, guard.names)
    else raise DriverFailure, "'#{r['guard']}' is not a guard"
    end
  end
  op('is_lost') do |r|
    guard = obj(r, 'guard')
    case guard
    when LockHold then guard.lock.lost?
    when Polylock::Leadership then guard.lost?
    else raise NotOffered, "#{guard.class} has no lost state in the gem (Lock#lost? and Leadership#lost? do)"
    end
  end
  op('wait_lost') do |r|
    guard = obj(r, 'guard')
    wait = seconds(r, 'wait_ms') or raise DriverFailure, "'wait_ms' is required"
    lost = Inbox.new
    case guard
    when LockHold then guard.lock.on_lost { |reason| lost.push(reason) }
    when Polylock::Leadership then guard.on_lost { |reason| lost.push(reason) }
    else raise NotOffered, "#{guard.class} has no lost signal in the gem (Lock#on_lost and Leadership#on_lost do)"
    end
    !lost.pop(wait).nil?
  end
  op('hold_count') { |r| lock_handle(r, 'hold_count').hold_count }
  op('is_locked') { |r| lock_handle(r, 'is_locked').locked? }

  # ---- Admin
  op('status') do |r|
    status = obj(r, 'client', Polylock::Client).status(r.fetch('name'))
    # The gem's status is the one JSON shape (one holder at most for a mutex); the protocol asks for a count.
    { 'held' => status.fetch('held'), 'holders' => status.fetch('held') ? 1 : 0 }
  end
  op('list') do |r|
    obj(r, 'client', Polylock::Client).list(r.fetch('prefix')).select { |e| e.fetch('held') }.map { |e| e.fetch('name') }.sort
  end
  op('force_unlock') { |r| obj(r, 'client', Polylock::Client).force_unlock(r.fetch('name')) }

  # ---- Election
  op('election') do |r|
    store(r, ElectionEntry.new(obj(r, 'client', Polylock::Client).election(r.fetch('name'))))
    nil
  end
  op('campaign') do |r|
    election = obj(r, 'election', ElectionEntry).election
    wait = seconds(r, 'wait_ms')
    leadership = wait.nil? ? election.campaign(r.fetch('value')) : election.campaign(r.fetch('value'), timeout: wait)
    store(r, leadership)
    { 'term' => leadership.term }
  end
  op('try_campaign') do |r|
    election = obj(r, 'election', ElectionEntry).election
    wait = seconds(r, 'wait_ms')
    leadership = wait.nil? ? election.try_campaign(r.fetch('value')) : election.try_campaign(r.fetch('value'), timeout: wait)
    next nil if leadership.nil?

    store(r, leadership)
    { 'term' => leadership.term }
  end
  op('leader') { |r| leader_json(obj(r, 'election', ElectionEntry).election.current_leader) }
  op('resign') { |r| obj(r, 'leadership', Polylock::Leadership).resign }
  op('is_leader') { |r| obj(r, 'leadership', Polylock::Leadership).leader? }
  op('observe_next') do |r|
    entry = obj(r, 'election', ElectionEntry)
    wait = seconds(r, 'wait_ms') or raise DriverFailure, "'wait_ms' is required"
    entry.changes ||= Changes.new(entry.election.observe)
    item = entry.changes.pop(wait)
    next 'no change' if item.nil?
    raise item[1] if item[0] == :error

    leader_json(item[1])
  end

  # ---- Latch
  op('latch') { |r| put(r, obj(r, 'client', Polylock::Client).latch(r.fetch('name'))) }
  op('latch_set') { |r| obj(r, 'latch', Polylock::CountDownLatch).try_set_count(r.fetch('count')) }
  op('count_down') { |r| obj(r, 'latch', Polylock::CountDownLatch).count_down }
  op('latch_count') { |r| obj(r, 'latch', Polylock::CountDownLatch).count }
  op('latch_wait') do |r|
    latch = obj(r, 'latch', Polylock::CountDownLatch)
    wait = seconds(r, 'wait_ms')
    # The waiting form (Error::Timeout when the wait runs out); true once zero was reached.
    wait.nil? ? latch.await_zero : latch.await_zero(wait)
    true
  end

  # ---- Values
  op('value') { |r| put(r, obj(r, 'client', Polylock::Client).value(r.fetch('name'))) }
  op('value_get') do |r|
    found = obj(r, 'value', Polylock::Value).get
    found && { 'value' => text(found.value), 'version' => found.version }
  end
  op('value_create') { |r| obj(r, 'value', Polylock::Value).create(r.fetch('data')) }
  op('value_cas') { |r| obj(r, 'value', Polylock::Value).compare_and_set(r.fetch('version'), r.fetch('data')) }
  op('value_delete') { |r| obj(r, 'value', Polylock::Value).delete(r.fetch('version')) }
  op('value_write_fenced') { |r| obj(r, 'value', Polylock::Value).write_fenced(r.fetch('token'), r.fetch('data')) }
  op('value_watch') do |r|
    value = obj(r, 'value', Polylock::Value)
    watch = (@watches[r.fetch('value')] ||= value.watch)
    wait = seconds(r, 'wait_ms')
    # changed: a VersionedValue, :deleted, or nil when nothing changed within the timeout.
    change = wait.nil? ? watch.changed : watch.changed(timeout: wait)
    case change
    when nil then 'no change'
    when :deleted then nil
    else { 'value' => text(change.value), 'version' => change.version }
    end
  end

  # ---- Idempotency
  op('idempotency') { |r| put(r, obj(r, 'client', Polylock::Client).idempotency(r.fetch('namespace'))) }
  op('idem_begin') do |r|
    began = obj(r, 'idempotency', Polylock::Idempotency).begin(r.fetch('key'), r.fetch('payload'))
    case began.outcome
    when :acquired
      store(r, began.ticket)
      { 'acquired' => { 'token' => began.ticket.token } }
    when :replay then { 'replay' => text(began.response) }
    # The gem's begin returns these outcomes; the protocol carries them as errors.
    when :in_progress
      # retry_after: the core's whole milliseconds / 1000.0 in the gem.
      details = began.retry_after.nil? ? {} : { 'retry_after_ms' => (began.retry_after * 1000).round }
      raise OutcomeError.new('IN_PROGRESS', 'Idempotency#begin returned outcome :in_progress', details)
    when :mismatch then raise OutcomeError.new('MISMATCH', 'Idempotency#begin returned outcome :mismatch', {})
    else raise DriverFailure, "unknown outcome #{began.outcome}"
    end
  end
  op('idem_complete') { |r| obj(r, 'ticket', Polylock::Ticket).complete(r.fetch('response')) }
  op('idem_abandon') { |r| obj(r, 'ticket', Polylock::Ticket).abandon }
  op('idem_run') do |r|
    raise NotOffered, 'Idempotency#run has no wait for an attempt under way' unless r['wait_ms'].nil?

    response = r.fetch('response')
    result = obj(r, 'idempotency', Polylock::Idempotency).run(r.fetch('key'), r.fetch('payload')) { response }
    result.is_a?(String) ? text(result) : result
  end

  # ---- IDs
  op('segment') do |r|
    client = obj(r, 'client', Polylock::Client)
    put(r, r['step'].nil? ? client.segment(r.fetch('tag')) : client.segment(r.fetch('tag'), step: r['step']))
  end
  op('next_id') { |r| obj(r, 'segment', Polylock::Segment).next_id }
  op('next_ids') { |r| obj(r, 'segment', Polylock::Segment).next_ids(r.fetch('count')) }
  op('snowflake') do |r|
    client = obj(r, 'client', Polylock::Client)
    generator = r['worker_id'].nil? ? client.snowflake : client.snowflake(worker_id: r['worker_id'])
    store(r, generator)
    { 'worker_id' => generator.worker_id }
  end
  op('snowflake_next') { |r| obj(r, 'snowflake', Polylock::LeasedSnowflake).next_id }
  op('snowflake_close') { |r| obj(r, 'snowflake', Polylock::LeasedSnowflake).close }
  op('uuid7') { |_r| Polylock.uuid7 }
  op('ulid') { |_r| Polylock.ulid }
  op('uuid7_timestamp') { |r| Polylock.uuid7_timestamp(r.fetch('of')) }
  op('ulid_timestamp') { |r| Polylock.ulid_timestamp(r.fetch('of')) }
  op('ulid_to_uuid') { |r| Polylock.ulid_to_uuid(r.fetch('of')) }
  op('uuid_to_ulid') { |r| Polylock.uuid_to_ulid(r.fetch('of')) }
  op('snowflake_parse') do |r|
    parts = r['epoch_ms'].nil? ? Polylock.parse_snowflake(r.fetch('of')) : Polylock.parse_snowflake(r.fetch('of'), epoch_ms: r['epoch_ms'])
    { 'timestamp_ms' => parts.timestamp_ms, 'worker_id' => parts.worker, 'sequence' => parts.sequence }
  end

  # ---- helpers

  def hold(r, handle, wait, lease, waiting:)
    options = {}
    options[:wait] = wait unless wait.nil?
    options[:lease] = lease unless lease.nil?
    case handle
    when Polylock::Lock
      if waiting # lock!: Error::Timeout when the wait runs out
        token = handle.lock!(**options)
        store(r, LockHold.new(handle))
        return { 'token' => token }
      end
      held = handle.lock(**options)
      # lock without a wait waits as long as it takes: it has no false to give.
      raise DriverFailure, 'Lock#lock without wait: returned false' if waiting && !held
      return nil unless held

      store(r, LockHold.new(handle))
      { 'token' => handle.fencing_token }
    when Polylock::Semaphore
      permit = waiting ? handle.acquire!(**options) : handle.acquire(**options)
      raise DriverFailure, 'Semaphore#acquire without wait: returned nil' if waiting && permit.nil?
      return nil if permit.nil?

      store(r, PermitHold.new(permit))
      { 'token' => permit.fencing_token }
    when Polylock::MultiLock
      parts = handle.lock(**options)
      raise DriverFailure, 'MultiLock#lock without wait: returned nil' if waiting && parts.nil?
      return nil if parts.nil?

      names = r.key?('handle') ? @multi_names[r['handle']] : nil
      store(r, MultiHold.new(handle, parts, names))
      { 'token' => tokens_in_order(parts, names) }
    else
      raise DriverFailure, "'#{r['handle']}' is not a handle"
    end
  end

  # MultiLock#lock returns its parts in the order it takes them; the protocol lists tokens in
  # the order the names were given.
  def tokens_in_order(parts, names)
    by_name = parts.to_h { |part| [part.name, part.fencing_token] }
    names.map { |name| by_name.fetch(name) }
  end

  def lock_handle(r, what)
    handle = obj(r, 'handle')
    raise NotOffered, "#{handle.class} has no #{what} in the gem" unless handle.is_a?(Polylock::Lock)

    handle
  end

  def leader_json(leader)
    leader && { 'value' => text(leader.value), 'term' => leader.term }
  end

  def text(bytes)
    bytes.dup.force_encoding(Encoding::UTF_8)
  end

  # A duration in milliseconds as the gem's seconds (Float), or nil when absent.
  def seconds(r, key)
    value = r[key]
    case value
    when nil then nil
    when 'NaN' then Float::NAN
    when 'inf' then Float::INFINITY
    when '-inf' then -Float::INFINITY
    when Numeric then value / 1000.0
    else raise DriverFailure, "'#{key}' must be a duration, got #{value.inspect}"
    end
  end

  def put(r, object)
    store(r, object)
    @multi_names[r.fetch('as')] = r.fetch('names') if object.is_a?(Polylock::MultiLock)
    nil
  end

  # Name the object by the request's `as`, when it has one (a step expecting an error may have none).
  def store(r, object)
    @objects[r['as']] = object unless r['as'].nil?
  end

  def obj(r, key, type = Object)
    label = r.fetch(key)
    object = @objects.fetch(label) { raise DriverFailure, "no object labelled '#{label}'" }
    raise DriverFailure, "'#{label}' is a #{object.class}, not a #{type}" unless object.is_a?(type)

    object
  end

  def reset
    @watches.each_value do |watch|
      watch.close
    rescue StandardError
      nil # reset ignores errors
    end
    @watches.clear
    @objects.each_value do |object|
      case object
      when ElectionEntry then object.changes&.close
      when Polylock::Leadership, Polylock::LeasedSnowflake then object.respond_to?(:resign) ? object.resign : object.close
      end
    rescue StandardError
      nil # reset ignores errors
    end
    @objects.each_value do |object|
      object.close if object.is_a?(Polylock::Client)
    rescue StandardError
      nil
    end
    @objects.clear
    @rw_locks.clear
    @multi_names = {}
    nil
  end

  def answer(request)
    out = { 'id' => request['id'] }
    op = OPS[request['op']]
    return out.merge('ok' => false, 'not_offered' => "the Ruby driver does not know the op '#{request['op']}'") unless op

    begin
      out.merge('ok' => true, 'value' => instance_exec(request, &op))
    rescue NotOffered => e
      out.merge('ok' => false, 'not_offered' => e.message)
    rescue Polylock::Error => e
      out.merge(error(e.kind, e.message, details(e)))
    rescue OutcomeError => e
      out.merge(error(e.kind, e.message, e.details))
    rescue DriverFailure, StandardError => e
      out.merge(error('DRIVER', "#{e.class}: #{e.message}", {}))
    end
  end

  def error(kind, message, details)
    answer = { 'ok' => false, 'error' => kind, 'message' => message }
    answer['details'] = details unless details.empty?
    answer
  end

  def details(error)
    details = {}
    details['current_version'] = error.current_version unless error.current_version.nil?
    details['current_value'] = text(error.current_value) unless error.current_value.nil?
    details['token'] = error.winning_token unless error.winning_token.nil?
    # The gem's retry_after is the core's whole milliseconds / 1000.0.
    details['retry_after_ms'] = (error.retry_after * 1000).round unless error.retry_after.nil?
    details
  end
end

protocol = $stdout.dup
$stdout.reopen($stderr) # nothing but answers on the protocol's stdout
protocol.sync = true
driver = Driver.new
driver.reset
protocol.puts(JSON.generate({ 'ready' => 'ruby' }))
$stdin.each_line do |line|
  next if line.strip.empty?

  answer =
    begin
      request = JSON.parse(line)
      raise DriverFailure, 'a request must be a JSON object' unless request.is_a?(Hash)

      driver.answer(request)
    rescue JSON::ParserError, DriverFailure => e
      { 'id' => nil, 'ok' => false, 'error' => 'DRIVER', 'message' => "unreadable request: #{e.message}" }
    end
  protocol.puts(JSON.generate(answer, allow_nan: true))
end
driver.reset
exit 0
