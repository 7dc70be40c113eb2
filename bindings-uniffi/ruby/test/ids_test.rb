# frozen_string_literal: true

require_relative 'test_helper'

class IdsTest < Minitest::Test
  def test_snowflake_ids_increase_and_parse_back
    generator = Polylock::Snowflake.new(7)
    ids = Array.new(1000) { generator.next_id } + generator.next_ids(1000)
    assert_equal ids.sort.uniq, ids
    parts = generator.parse(ids.last)
    assert_equal 7, parts.worker
    assert_in_delta Time.now.to_f * 1000, parts.timestamp_ms, 60_000
    assert_equal parts, Polylock.parse_snowflake(ids.last)
    assert_equal 7, generator.worker_id
  end

  def test_snowflake_with_another_epoch
    epoch = 1_600_000_000_000
    generator = Polylock::Snowflake.new(3, epoch_ms: epoch)
    assert_equal epoch, generator.epoch_ms
    id = generator.next_id
    assert_equal 3, Polylock.parse_snowflake(id, epoch_ms: epoch).worker
  end

  def test_snowflake_refuses_a_worker_out_of_range
    assert_raises(Polylock::Error::InvalidArgument) { Polylock::Snowflake.new(1024) }
  end

  def test_uuid7_text_is_version_7_and_increasing
    ids = Array.new(2000) { Polylock.uuid7 }
    ids.each { |id| assert_match(/\A\h{8}-\h{4}-7\h{3}-[89ab]\h{3}-\h{12}\z/, id) }
    assert_equal ids.sort.uniq, ids
    millis = ids.last.delete('-')[0, 12].to_i(16)
    assert_in_delta Time.now.to_f * 1000, millis, 60_000
  end

  def test_ulid_text_is_26_crockford_characters_and_increasing
    ids = Array.new(2000) { Polylock.ulid }
    ids.each { |id| assert_match(/\A[0-9A-HJKMNP-TV-Z]{26}\z/, id) }
    assert_equal ids.sort.uniq, ids
  end

  # The vectors of tests/conformance/scenarios/ids-vectors.json (the ULID spec's example).
  def test_timestamps_and_conversions_of_uuid7_and_ulid
    assert_equal 1_645_557_742_000, Polylock.uuid7_timestamp('017f22e2-79b0-7cc3-98c4-dc0c0c07398f')
    assert_equal 1_469_922_850_259, Polylock.ulid_timestamp('01ARZ3NDEKTSV4RRFFQ69G5FAV')
    assert_equal '01563e3a-b5d3-d676-4c61-efb99302bd5b', Polylock.ulid_to_uuid('01ARZ3NDEKTSV4RRFFQ69G5FAV')
    assert_equal '01FWHE4YDGFK1SHH6W1G60EECF', Polylock.uuid_to_ulid('017f22e2-79b0-7cc3-98c4-dc0c0c07398f')
    ulid = Polylock.ulid
    assert_equal ulid, Polylock.uuid_to_ulid(Polylock.ulid_to_uuid(ulid))
    assert_in_delta Time.now.to_f * 1000, Polylock.uuid7_timestamp(Polylock.uuid7), 60_000
    assert_raises(Polylock::Error::InvalidArgument) { Polylock.uuid7_timestamp('not a uuid') }
    assert_raises(Polylock::Error::InvalidArgument) { Polylock.uuid7_timestamp('01563e3a-b5d3-d676-4c61-efb99302bd5b') }
    assert_raises(Polylock::Error::InvalidArgument) { Polylock.ulid_timestamp('UUUUUUUUUUUUUUUUUUUUUUUUUU') }
  end

  def test_threads_get_distinct_owner_ids_that_are_never_reused
    seen = [Polylock::Owner.current]
    assert_equal seen.first, Polylock::Owner.current, 'stable within a thread'
    50.times { seen << TestSupport.in_thread { Polylock::Owner.current } }
    assert_equal seen.uniq, seen
  end
end
