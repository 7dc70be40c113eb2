# frozen_string_literal: true

require_relative 'test_helper'

# The gem's error classes against the core's table (ErrorKind::ALL), and bad input.
class ErrorsTest < Minitest::Test
  def test_one_class_per_kind_of_the_core_table_with_its_name_and_number
    core = PolylockUniffi.error_kinds.map { |kind| [kind.name, kind.code] }
    gem = Polylock::Error::KINDS.map { |name, code, _| [name, code] }
    assert_equal core, gem, 'Polylock::Error::KINDS differs from the core table'
    core.each do |name, code|
      klass = Polylock::Error.for_kind(name)
      assert_operator klass, :<, Polylock::Error
      assert_equal [name, code], [klass::KIND, klass::CODE]
    end
    assert_equal core.size, Polylock::Error.constants.count { |c| Polylock::Error.const_get(c).is_a?(Class) }
  end

  def test_each_kind_raised_by_the_core_arrives_as_its_class
    PolylockUniffi.error_kinds.each do |kind|
      error = assert_raises(Polylock::Error.for_kind(kind.name)) do
        Polylock::Native.call { PolylockUniffi.fail_with_kind(kind.name) }
      end
      assert_equal kind.name, error.kind
      assert_includes error.message, kind.name
    end
  end

  def test_bad_input_is_a_typed_error
    Polylock.connect('mem://') do |client|
      assert_raises(Polylock::Error::InvalidArgument) { client.lock('') }
      assert_raises(Polylock::Error::InvalidArgument) { client.lock('x' * 100_000) }
      assert_raises(Polylock::Error::InvalidArgument) { client.lock('x', kind: :no_such_kind) }
      lock = client.lock(TestSupport.unique('bad'))
      assert_raises(Polylock::Error::InvalidArgument) { lock.lock(lease: 0) }
      assert_raises(Polylock::Error::InvalidArgument) { lock.lock(lease: -1) }
      assert_raises(Polylock::Error::InvalidArgument) { lock.lock(wait: -1) }
      assert_raises(Polylock::Error::InvalidArgument) { lock.lock(wait: Float::NAN) }
      assert_raises(Polylock::Error::InvalidArgument) { lock.lock(lease: Float::INFINITY) }
      assert_raises(Polylock::Error::InvalidArgument) { client.semaphore(TestSupport.unique('bad'), 0) }
    end
    assert_raises(Polylock::Error::InvalidArgument) { Polylock.connect('nosuchscheme://x') }
    assert_raises(Polylock::Error::InvalidArgument) { Polylock.connect('mem://?no_such_option=1') }
  end

  def test_an_unreachable_server_is_a_connection_error_without_the_password
    error = assert_raises(Polylock::Error::Connection) do
      Polylock.connect('redis://:hunter2-secret@127.0.0.1:1')
    end
    refute_includes error.message, 'hunter2-secret'
  end

  def test_a_closed_client_refuses_new_holds
    client = Polylock.connect('mem://')
    lock = client.lock(TestSupport.unique('closed'))
    client.close
    assert client.closed?
    assert_raises(Polylock::Error::Connection) { lock.lock }
  end
end
